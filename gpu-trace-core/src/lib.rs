#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub use gpu_trace_model::*;
pub use gpu_trace_perfetto::*;
pub use gpu_trace_reader as reader;
