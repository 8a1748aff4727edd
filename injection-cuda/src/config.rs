//! The CUDA backend's own settings. They are parsed in core
//! ([`gpu_trace_core::cuda_config`]), where `gpu-trace record` checks them
//! too, with the same messages.

pub use gpu_trace_core::cuda_config::*;
