//! Backend-neutral GPU event model and its mapping to Perfetto.
#![forbid(unsafe_code)]
