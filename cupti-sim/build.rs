//! The cdylib answers to `libcuda.so.1` as its soname, so that the injection's
//! `dlopen("libcuda.so.1", RTLD_NOLOAD)` (how it finds the application's driver)
//! finds the fake once the host has loaded it.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcuda.so.1");
}
