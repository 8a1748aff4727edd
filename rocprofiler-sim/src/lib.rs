//! A simulated rocprofiler-sdk 1.x runtime for tests, speaking the real ABI of `rocprofiler-sys`.
//!
//! The crate builds twice. As a **cdylib** (`librocprofiler_sim.so`) it is the SDK: it exports
//! the `rocprofiler_*` functions a tool resolves, `dlopen`s the tool, calls its
//! `rocprofiler_configure` and `initialize`, runs a scripted HIP program ([`Scenario`]) on real
//! threads and delivers records in the documented order, then finalises like the SDK's exit
//! handler. As an **rlib** it gives tests the scenario and report types and the host helpers
//! ([`host`]) that load the cdylib RTLD_GLOBAL — the way rocprofiler-register loads the real
//! SDK — in a child process per run.
//!
//! ```ignore
//! rocprofiler_sim::child_entry!();   // once per test file
//!
//! #[test]
//! fn my_tool_counts_kernels() {
//!     let tool = rocprofiler_sim::host::artifact("my_tool").unwrap();
//!     let spec = rocprofiler_sim::RunSpec::new(tool, rocprofiler_sim::Scenario::default_scenario());
//!     let out = rocprofiler_sim::host::run_isolated(&spec).unwrap();
//!     assert!(out.report.violations.is_empty());
//! }
//! ```
#![deny(missing_docs)]

pub mod host;
pub mod report;
mod runtime;
pub mod scenario;

pub use host::{Outcome, RunSpec};
pub use report::{Delivered, Report};
pub use scenario::{Expected, Scenario};
