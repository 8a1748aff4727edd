//! A fake CUPTI 13 and CUDA driver for tests, speaking the real C ABI of `cupti-sys`.
//!
//! The crate builds twice. As a **cdylib** (`libcupti_sim.so`, soname `libcuda.so.1`) it is
//! both the driver an application loads and the `libcupti` the injection opens: it `dlopen`s
//! the library named by `CUDA_INJECTION64_PATH` and calls its `InitializeInjection` (as
//! `cuInit` does), then runs a scripted CUDA program ([`Scenario`]) on real threads: API
//! callbacks (runtime calls with their driver calls nested inside, same correlation id),
//! resource callbacks, NVTX calls through the library named by `NVTX_INJECTION64_PATH`
//! (`InitializeInjectionNvtx2`, as libnvToolsExt does), activity records in the tool's
//! own buffers (CUPTI 13.0 struct layouts), and CUPTI's range profiler and profiler host with
//! values derived from the script ([`counters`]). As an **rlib** it gives tests the scenario and
//! report types and the host helpers ([`host`]), which run each program in a child process,
//! and the same fake called in-process ([`inproc`]) for tests of the safe layer.
//!
//! ```ignore
//! cupti_sim::child_entry!();   // once per test file
//!
//! #[test]
//! fn traced() {
//!     let tool = cupti_sim::host::artifact("gpu_trace_cuda").unwrap();
//!     let out = cupti_sim::host::run_isolated(&cupti_sim::RunSpec::new(tool, scenario())).unwrap();
//!     assert!(out.report.violations.is_empty());
//! }
//! ```
#![deny(missing_docs)]

pub mod counters;
pub mod host;
pub mod inproc;
pub mod report;
mod runtime;
pub mod scenario;

pub use counters::ProfilerSpec;
pub use host::{Outcome, RunSpec};
pub use report::Report;
pub use scenario::{Expected, Scenario};
