//! The CUDA backend's own settings. They are parsed by the agent
//! ([`gpu_trace_agent::cuda_config`]), where `gpu-trace record` checks them
//! too, with the same messages.

pub(crate) use gpu_trace_agent::cuda_config::*;
