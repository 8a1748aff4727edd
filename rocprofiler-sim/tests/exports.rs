//! The simulator exports every function `rocprofiler-sys` resolves (their prototypes are checked
//! at compile time in `src/runtime/exports.rs`).

use rocprofiler_sys as sys;

#[test]
fn every_bound_function_is_exported() {
    use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
    let path = rocprofiler_sim::host::simulator_library().expect("simulator built");
    // SAFETY: loading the simulator runs no initialisers of consequence.
    let lib = unsafe { Library::open(Some(&path), RTLD_NOW | RTLD_LOCAL) }.expect("load simulator");
    // SAFETY: the simulator's exports have the prototypes of the same names (checked at compile time).
    let api = unsafe {
        sys::Api::load_with(|name| {
            match lib.get::<*const std::ffi::c_void>(name.to_bytes_with_nul()) {
                Ok(s) => s.into_raw() as *const std::ffi::c_void,
                Err(_) => std::ptr::null(),
            }
        })
    };
    assert_eq!(api.missing(), Vec::<&str>::new());
    assert_eq!(sys::Api::SIGNATURES.len(), 45);
    std::mem::forget(lib);
}
