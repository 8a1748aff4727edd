//! Errors: the runtime's status (raw value kept, text from `rocprofiler_get_status_string`),
//! missing symbols, unsupported versions.

use std::fmt;

use rocprofiler_sys as sys;

use crate::Version;

/// Result of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error from the rocprofiler-sdk or from this wrapper.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An SDK call returned a status other than success.
    #[error("{call}: {status}")]
    Status {
        /// The C function.
        call: &'static str,
        /// What it returned.
        status: Status,
    },
    /// The running SDK lacks a function.
    #[error(transparent)]
    MissingSymbol(#[from] sys::MissingSymbol),
    /// The SDK is not in the process.
    #[error(transparent)]
    Load(#[from] sys::LoadError),
    /// The running SDK speaks another ABI than the one bound here.
    #[error(
        "rocprofiler-sdk {found} is not supported: this build speaks the SDK 1.x ABI (ROCm 7.x); \
         SDK 0.x (ROCm 6.x) lays out client ids, callback records and correlation ids differently"
    )]
    UnsupportedVersion {
        /// Version the SDK announced.
        found: Version,
    },
    /// An argument this wrapper cannot pass on (e.g. a name with a NUL byte).
    #[error("invalid argument: {0}")]
    InvalidArgument(&'static str),
}

impl Error {
    /// The status classification, when the error came from an SDK call.
    pub fn status(&self) -> Option<StatusKind> {
        match self {
            Error::Status { status, .. } => Some(status.kind()),
            _ => None,
        }
    }
}

/// A `rocprofiler_status_t` with the runtime's description.
#[derive(Clone, Copy)]
pub struct Status {
    pub(crate) raw: sys::rocprofiler_status_t,
    pub(crate) message: Option<&'static str>,
}

impl Status {
    /// The raw value (release specific; 1.x numbering).
    pub fn raw(&self) -> sys::rocprofiler_status_t {
        self.raw
    }
    /// The runtime's description (`rocprofiler_get_status_string`), if it gave one.
    pub fn message(&self) -> Option<&'static str> {
        self.message
    }
    /// Classification.
    pub fn kind(&self) -> StatusKind {
        StatusKind::from(self.raw)
    }
}

impl fmt::Debug for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Status")
            .field("raw", &self.raw)
            .field("message", &self.message)
            .finish()
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.message {
            Some(m) => write!(f, "{m} ({:?} = {})", self.raw, self.raw.0),
            None => write!(f, "{:?} ({})", self.raw, self.raw.0),
        }
    }
}

/// The statuses this project acts on; everything else is `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StatusKind {
    /// Generic error.
    Error,
    /// Unknown context.
    ContextNotFound,
    /// Unknown buffer.
    BufferNotFound,
    /// Unknown tracing kind.
    KindNotFound,
    /// Unknown operation.
    OperationNotFound,
    /// Unknown agent.
    AgentNotFound,
    /// Unknown counter.
    CounterNotFound,
    /// Context conflicts with another (e.g. two counting services).
    ContextConflict,
    /// `create_context` got a non-zero handle.
    ContextIdNotZero,
    /// Buffer is being flushed (e.g. flush from inside its own callback).
    BufferBusy,
    /// Kind configured twice in one context.
    ServiceAlreadyConfigured,
    /// Configuration outside the tool's `initialize` window.
    ConfigurationLocked,
    /// Not implemented by this SDK.
    NotImplemented,
    /// Struct size or version mismatch.
    IncompatibleAbi,
    /// Bad argument.
    InvalidArgument,
    /// SDK finalised.
    Finalized,
    /// Any other status.
    Other(u32),
}

impl From<sys::rocprofiler_status_t> for StatusKind {
    fn from(s: sys::rocprofiler_status_t) -> Self {
        type S = sys::rocprofiler_status_t;
        match s {
            S::ERROR => Self::Error,
            S::ERROR_CONTEXT_NOT_FOUND => Self::ContextNotFound,
            S::ERROR_BUFFER_NOT_FOUND => Self::BufferNotFound,
            S::ERROR_KIND_NOT_FOUND => Self::KindNotFound,
            S::ERROR_OPERATION_NOT_FOUND => Self::OperationNotFound,
            S::ERROR_AGENT_NOT_FOUND => Self::AgentNotFound,
            S::ERROR_COUNTER_NOT_FOUND => Self::CounterNotFound,
            S::ERROR_CONTEXT_CONFLICT => Self::ContextConflict,
            S::ERROR_CONTEXT_ID_NOT_ZERO => Self::ContextIdNotZero,
            S::ERROR_BUFFER_BUSY => Self::BufferBusy,
            S::ERROR_SERVICE_ALREADY_CONFIGURED => Self::ServiceAlreadyConfigured,
            S::ERROR_CONFIGURATION_LOCKED => Self::ConfigurationLocked,
            S::ERROR_NOT_IMPLEMENTED => Self::NotImplemented,
            S::ERROR_INCOMPATIBLE_ABI => Self::IncompatibleAbi,
            S::ERROR_INVALID_ARGUMENT => Self::InvalidArgument,
            S::ERROR_FINALIZED => Self::Finalized,
            other => Self::Other(other.0),
        }
    }
}
