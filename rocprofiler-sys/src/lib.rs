//! Raw, hand-written bindings to the rocprofiler-sdk **1.x** tool API (ROCm 7.x,
//! `librocprofiler-sdk.so.1`), written from AMD's documentation and checked field by field
//! against the project's ABI table (`tests/abi.rs`, `abi/rocprofiler-sdk.json.gz`).
//!
//! * Types keep their C names (`rocprofiler_status_t`, ...). C enums the SDK writes are
//!   `#[repr(transparent)]` integer newtypes with associated constants ([`CEnum`]), never Rust
//!   enums.
//! * Nothing is linked. Functions are resolved at run time into an [`Api`] table:
//!   [`Api::from_process`] looks them up in the process's global scope, where the SDK already is
//!   when it calls a tool's `rocprofiler_configure`; [`Api::load_with`] takes any resolver (a
//!   fake table in tests). A missing symbol is an `Err(MissingSymbol)` when called.
//! * Only the 1.x ABI is bound. SDK 0.x (ROCm 6.2–6.4, `.so.0`) moved fields of
//!   `rocprofiler_client_id_t`, the by-value callback record and every correlation id; a tool
//!   must check the `version` argument of `rocprofiler_configure` with [`abi_supported`] before
//!   touching `client_id`.
#![allow(non_camel_case_types, non_snake_case)]

#[macro_use]
mod macros;

mod agent;
mod api;
mod callbacks;
mod counters;
mod fwd;
mod hip;
mod marker;
mod registration;
mod tracing;

pub use agent::*;
pub use api::*;
pub use callbacks::*;
pub use counters::*;
pub use fwd::*;
pub use hip::*;
pub use marker::*;
pub use registration::*;
pub use tracing::*;

/// SDK major version whose ABI these bindings describe.
pub const ROCPROFILER_VERSION_MAJOR: u32 = 1;
/// SDK minor version of the headers the bindings were checked against (1.0.0, ROCm 7.0).
pub const ROCPROFILER_VERSION_MINOR: u32 = 0;
/// SDK patch version of the headers the bindings were checked against.
pub const ROCPROFILER_VERSION_PATCH: u32 = 0;
/// `ROCPROFILER_SDK_BETA_COMPAT` of the headers (old type names kept as aliases).
pub const ROCPROFILER_SDK_BETA_COMPAT: u32 = 1;

/// Encodes a version the way `rocprofiler_configure`'s `version` argument does
/// (`10000 * major + 100 * minor + patch`).
pub const fn encode_version(major: u32, minor: u32, patch: u32) -> u32 {
    10000 * major + 100 * minor + patch
}

/// Splits a `rocprofiler_configure` `version` argument into (major, minor, patch).
pub const fn decode_version(version: u32) -> (u32, u32, u32) {
    (version / 10000, (version / 100) % 100, version % 100)
}

/// Whether a running SDK that announced `version` in `rocprofiler_configure` speaks the ABI
/// bound here: any 1.x. 0.x (ROCm 6.x) has other layouts for `rocprofiler_client_id_t`, the
/// callback record and correlation ids; 2.x is unknown.
pub const fn abi_supported(version: u32) -> bool {
    decode_version(version).0 == ROCPROFILER_VERSION_MAJOR
}

/// Implemented by every C-enum newtype of this crate.
pub trait CEnum: Copy + Eq + 'static {
    /// The C type name.
    const C_NAME: &'static str;
    /// Every bound enumerator as (full C name, value).
    const CONSTANTS: &'static [(&'static str, i64)];
    /// The raw value, widened.
    fn raw(self) -> i64;
    /// The C name of `value` if it is a known enumerator (the first one for aliases).
    fn name_of(value: Self) -> Option<&'static str> {
        let raw = value.raw();
        Self::CONSTANTS
            .iter()
            .find(|(_, v)| *v == raw)
            .map(|(n, _)| *n)
    }
}

/// A C prototype as text: what the ABI test compares with the table's `functions`/`types`.
#[derive(Debug, Clone, Copy)]
pub struct Signature {
    /// Function or typedef name.
    pub name: &'static str,
    /// Rust return type as written (`""` for none).
    pub ret: &'static str,
    /// Rust parameter types as written.
    pub params: &'static [&'static str],
}

/// A function the running SDK does not export (or the resolver did not find).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MissingSymbol(pub &'static str);

impl core::fmt::Display for MissingSymbol {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "rocprofiler-sdk symbol `{}` is not available", self.0)
    }
}

impl std::error::Error for MissingSymbol {}
