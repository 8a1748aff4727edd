//! Declarative helpers: C enums as newtypes, and the run-time symbol table.

/// A C enum NVML may write: a `#[repr(transparent)]` integer newtype with one associated
/// constant per enumerator, never a Rust `enum` (a newer driver may return values we do not
/// know). Every enumerator is listed in `CONSTANTS` under its full C name.
macro_rules! c_enum {
    (
        $(#[$meta:meta])*
        pub struct $name:ident($repr:ty) = $prefix:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $value:expr , )*
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
                #[doc = concat!("`", $prefix, stringify!($variant), "`")]
                pub const $variant: Self = Self($value);
            )*

            /// Every bound enumerator as (full C name, value).
            pub const CONSTANTS: &'static [(&'static str, $repr)] = &[
                $( (concat!($prefix, stringify!($variant)), $value), )*
            ];

            /// The C name of this value, if it is a bound enumerator.
            pub fn name(self) -> Option<&'static str> {
                Self::CONSTANTS.iter().find(|(_, v)| *v == self.0).map(|(n, _)| *n)
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match self.name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, "{}({})", stringify!($name), self.0),
                }
            }
        }
    };
}

/// The run-time symbol table: one optional pointer per function, a resolver-based
/// constructor, and one checked `unsafe fn` per symbol that returns `Err(MissingSymbol)`
/// instead of panicking when the running driver lacks it.
macro_rules! api_table {
    (
        $(
            $(#[$meta:meta])*
            fn $name:ident($($pname:ident : $pty:ty),* $(,)?) $(-> $ret:ty)?;
        )*
    ) => {
        /// NVML's functions, resolved at run time.
        ///
        /// Build it with [`Api::load_with`] (any resolver: a fake table in tests) or
        /// [`Api::load`] (`libnvidia-ml.so.1`). A symbol that was not resolved makes its method
        /// return `Err(MissingSymbol(name))`; nothing panics.
        #[allow(non_snake_case)]
        pub struct Api {
            $( $name: Option<unsafe extern "C" fn($($pty),*) $(-> $ret)?>, )*
            _library: Option<libloading::Library>,
        }

        impl core::fmt::Debug for Api {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct("Api").field("missing", &self.missing()).finish_non_exhaustive()
            }
        }

        /// The prototype of every function in [`Api`] as a function-pointer type, so that an
        /// implementation (a simulator) can be checked against it at compile time:
        /// `const _: pfn::nvmlInit_v2 = my_init;`.
        pub mod pfn {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[doc = concat!("Prototype of `", stringify!($name), "`.")]
                #[allow(non_camel_case_types)]
                pub type $name = unsafe extern "C" fn($($pty),*) $(-> $ret)?;
            )*
        }

        impl Api {
            /// Every function name in the table, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$(stringify!($name)),*];

            /// Builds the table by asking `resolve` for each symbol; a null pointer marks the
            /// symbol as missing.
            ///
            /// # Safety
            /// Every non-null pointer returned for a name must be that NVML function (or one
            /// with exactly its C prototype, see [`pfn`]), and stay valid for as long as the
            /// table is used.
            pub unsafe fn load_with(
                mut resolve: impl FnMut(&core::ffi::CStr) -> *const core::ffi::c_void,
            ) -> Self {
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
                            // same size on every target NVML supports.
                            Some(unsafe {
                                core::mem::transmute::<
                                    *const core::ffi::c_void,
                                    unsafe extern "C" fn($($pty),*) $(-> $ret)?,
                                >(ptr)
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
                /// The arguments must satisfy the C function's contract (valid pointers, a
                /// device handle from this library, NVML initialised where it says so).
                #[allow(non_snake_case, clippy::too_many_arguments)]
                #[inline]
                pub unsafe fn $name(
                    &self,
                    $($pname: $pty),*
                ) -> Result<api_table!(@ret $($ret)?), $crate::MissingSymbol> {
                    match self.$name {
                        // SAFETY: the pointer was resolved for this prototype; the caller
                        // upholds the function's contract.
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
