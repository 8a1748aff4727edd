//! Declarative helpers that keep each binding next to the data the ABI test needs.

/// A C enum the SDK may write: a `#[repr(transparent)]` integer newtype with one associated
/// constant per enumerator, never a Rust `enum` (a newer SDK may send values we do not know).
///
/// Every enumerator is listed in `CONSTANTS` under its full C name, so `tests/abi.rs` can
/// compare them with the ABI table.
macro_rules! c_enum {
    (
        $(#[$meta:meta])*
        pub struct $name:ident($repr:ty) = $prefix:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $value:expr $(=> $cname:literal)? , )*
        }
    ) => {
        $(#[$meta])*
        #[repr(transparent)]
        #[derive(Copy, Clone, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
        pub struct $name(pub $repr);

        #[allow(non_upper_case_globals)]
        impl $name {
            $(
                $(#[$vmeta])*
                #[doc = concat!("`", c_enum!(@cname $prefix $variant $($cname)?), "`")]
                pub const $variant: Self = Self($value);
            )*
        }

        impl $crate::CEnum for $name {
            const C_NAME: &'static str = stringify!($name);
            const CONSTANTS: &'static [(&'static str, i64)] = &[
                $( (c_enum!(@cname $prefix $variant $($cname)?), $value as i64), )*
            ];
            fn raw(self) -> i64 {
                self.0 as i64
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match <Self as $crate::CEnum>::name_of(*self) {
                    Some(n) => f.write_str(n),
                    None => write!(f, "{}({})", stringify!($name), self.0),
                }
            }
        }
    };
    (@cname $prefix:literal $variant:ident $cname:literal) => { $cname };
    (@cname $prefix:literal $variant:ident) => { concat!($prefix, stringify!($variant)) };
}

/// Function-pointer typedefs. Besides the `Option<unsafe extern "C" fn>` alias this records
/// each parameter type as text in `FN_TYPE_SIGNATURES` for the ABI test.
macro_rules! c_fn_types {
    (
        $(
            $(#[$meta:meta])*
            pub type $name:ident = fn($($pname:ident : $pty:ty),* $(,)?) $(-> $ret:ty)?;
        )*
    ) => {
        $(
            $(#[$meta])*
            pub type $name = Option<unsafe extern "C" fn($($pname: $pty),*) $(-> $ret)?>;
        )*

        /// Prototype text of every function-pointer typedef above (for `tests/abi.rs`).
        pub const FN_TYPE_SIGNATURES: &[$crate::Signature] = &[
            $( $crate::Signature {
                name: stringify!($name),
                ret: concat!("" $(, stringify!($ret))?),
                params: &[$(stringify!($pty)),*],
            }, )*
        ];
    };
}

/// The run-time symbol table: one optional pointer per exported SDK function, a resolver-based
/// constructor and one checked `unsafe fn` per symbol that returns `Err(MissingSymbol)` instead
/// of panicking when the running SDK lacks it.
macro_rules! api_table {
    (
        $(
            $(#[$meta:meta])*
            fn $name:ident($($pname:ident : $pty:ty),* $(,)?) $(-> $ret:ty)?;
        )*
    ) => {
        /// Function pointers of the rocprofiler-sdk API, resolved at run time.
        ///
        /// Build it with [`Api::load_with`] (any resolver, e.g. a fake table in tests),
        /// [`Api::from_process`] (the SDK already loaded into the process) or [`Api::load`].
        /// A symbol that could not be resolved makes its method return
        /// `Err(MissingSymbol(name))`; nothing panics.
        #[allow(non_snake_case)]
        pub struct Api {
            $( $name: Option<unsafe extern "C" fn($($pty),*) $(-> $ret)?>, )*
            _library: Option<libloading::os::unix::Library>,
        }

        /// The prototype of every function in [`Api`] as a function-pointer type, so that an
        /// implementation (a simulator, a fake) can be checked against it at compile time:
        /// `const _: pfn::rocprofiler_flush_buffer = my_flush_buffer;`.
        pub mod pfn {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[doc = concat!("Prototype of `", stringify!($name), "`.")]
                pub type $name = unsafe extern "C" fn($($pty),*) $(-> $ret)?;
            )*
        }

        impl Api {
            /// Name and prototype text of every function in the table (for `tests/abi.rs`).
            pub const SIGNATURES: &'static [$crate::Signature] = &[
                $( $crate::Signature {
                    name: stringify!($name),
                    ret: concat!("" $(, stringify!($ret))?),
                    params: &[$(stringify!($pty)),*],
                }, )*
            ];

            /// Builds the table by asking `resolve` for each symbol; a null pointer marks the
            /// symbol as missing.
            ///
            /// # Safety
            /// Every non-null pointer returned for a name must be that rocprofiler-sdk 1.x
            /// function (or one with exactly its C prototype, as listed in [`Api::SIGNATURES`]),
            /// and stay valid for as long as the table is used.
            pub unsafe fn load_with(mut resolve: impl FnMut(&core::ffi::CStr) -> *const core::ffi::c_void) -> Self {
                Self {
                    $( $name: {
                        const NAME: &core::ffi::CStr = match core::ffi::CStr::from_bytes_with_nul(
                            concat!(stringify!($name), "\0").as_bytes(),
                        ) {
                            Ok(name) => name,
                            Err(_) => panic!("symbol name with interior NUL"),
                        };
                        let ptr = resolve(NAME);
                        if ptr.is_null() {
                            None
                        } else {
                            // SAFETY: non-null, and the caller promised that it points at this
                            // function with this prototype; data and function pointers have the
                            // same size on every target the SDK supports.
                            Some(unsafe {
                                core::mem::transmute::<*const core::ffi::c_void, unsafe extern "C" fn($($pty),*) $(-> $ret)?>(ptr)
                            })
                        }
                    }, )*
                    _library: None,
                }
            }

            /// Names of the functions the resolver did not find.
            pub fn missing(&self) -> Vec<&'static str> {
                let mut out = Vec::new();
                $( if self.$name.is_none() { out.push(stringify!($name)); } )*
                out
            }

            /// Whether the function called `name` was resolved.
            pub fn has(&self, name: &str) -> bool {
                match name {
                    $( stringify!($name) => self.$name.is_some(), )*
                    _ => false,
                }
            }

            $(
                $(#[$meta])*
                ///
                /// # Safety
                /// The arguments must satisfy the C function's contract (valid pointers etc.).
                #[allow(non_snake_case, clippy::too_many_arguments)]
                #[inline]
                pub unsafe fn $name(&self, $($pname: $pty),*) -> Result<api_table!(@ret $($ret)?), $crate::MissingSymbol> {
                    match self.$name {
                        // SAFETY: the pointer was resolved for this prototype; the caller upholds
                        // the function's contract.
                        Some(f) => Ok(unsafe { f($($pname),*) }),
                        None => Err($crate::MissingSymbol(stringify!($name))),
                    }
                }
            )*
        }
    };
    (@ret $ret:ty) => { $ret };
    (@ret) => { () };
}
