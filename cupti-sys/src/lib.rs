//! Raw FFI for NVIDIA CUPTI (CUDA 13.0 headers) and the few CUDA driver calls a
//! tracer needs, plus function-pointer tables filled at run time.
//!
//! # Safety contract
//!
//! Nothing here links against `libcupti` or `libcuda`. [`CuptiApi`] and
//! [`DriverApi`] are tables of `Option<unsafe extern "C" fn>` built from a
//! resolver ([`CuptiApi::load_with`]) or an opened library
//! ([`CuptiApi::load_from`]); each generated caller returns
//! `Err(`[`MissingSymbol`]`)` for a symbol that was not found instead of
//! panicking. Every call is `unsafe` with the C function's own contract. The
//! `libloading::Library` a table came from must outlive the table.
//!
//! C enums are `#[repr(transparent)]` newtypes with associated constants, never
//! Rust enums, so a value written by a newer CUPTI is still a valid value.
//!
//! The layout of every bound struct is checked at compile time against what
//! clang computed for x86_64 Linux (bindgen layout tests).
//!
//! Regenerate with `cupti-sys/regenerate.sh`; see the README.

#[rustfmt::skip]
#[allow(
    missing_docs,
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    unreachable_pub,
    rust_2018_idioms,
    clippy::all,
    clippy::undocumented_unsafe_blocks,
    clippy::missing_safety_doc
)]
mod generated {
    pub mod api;
    pub mod bindings;
    pub mod cbid_names;
}

pub mod loader;
mod struct_size;

pub use generated::api::{CuptiApi, DriverApi};
pub use generated::bindings::*;
pub use generated::cbid_names;

/// A symbol the loaded library does not export, named as in C.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MissingSymbol(pub &'static str);

impl core::fmt::Display for MissingSymbol {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "symbol `{}` not found in the loaded library", self.0)
    }
}

impl std::error::Error for MissingSymbol {}

/// The CUPTI API version of the CUDA 13.0 release (`CUPTI_API_VERSION` of CUDA
/// 13.0 GA; 13.0 Update 1 reports 130001). The record layouts in this crate are
/// those of 13.0.
pub const CUPTI_API_VERSION_13_0: u32 = 130000;

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
struct ReadmeDoctests;
