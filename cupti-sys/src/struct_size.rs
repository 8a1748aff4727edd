//! `structSize` for CUPTI's size-versioned parameter blocks.

/// Size of a CUPTI parameter block up to and including `field`, the value the
/// C `*_STRUCT_SIZE(type, lastField)` macros compute (bindgen cannot expand
/// them). CUPTI reads `structSize` to learn which fields the caller knows, so
/// pass the last field of the version the caller was written against.
///
/// ```
/// use cupti_sys::{struct_size, CUpti_Profiler_Initialize_Params};
/// const N: usize = struct_size!(CUpti_Profiler_Initialize_Params, pPriv);
/// assert_eq!(N, 16);
/// ```
#[macro_export]
macro_rules! struct_size {
    ($ty:ty, $field:ident) => {{
        const fn field_size<T, F>(_: fn(&T) -> &F) -> usize {
            ::core::mem::size_of::<F>()
        }
        ::core::mem::offset_of!($ty, $field) + field_size::<$ty, _>(|s: &$ty| &s.$field)
    }};
}
