//! Errors: CUPTI result codes (raw code kept), loading failures, driver errors.

use std::fmt;

use cupti_sys as sys;

/// A `CUptiResult` with CUPTI's own message for it (`cuptiGetResultString`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Status {
    code: sys::CUptiResult,
    message: Option<&'static str>,
}

impl Status {
    /// A status from a code and its message.
    pub fn new(code: sys::CUptiResult, message: Option<&'static str>) -> Self {
        Self { code, message }
    }

    /// The raw result code.
    pub fn code(&self) -> sys::CUptiResult {
        self.code
    }

    /// CUPTI's message for the code, when the library provided one.
    pub fn message(&self) -> Option<&'static str> {
        self.message
    }
}

impl fmt::Debug for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Status({}, {:?})", self.code.0, self.message)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.message {
            Some(m) => write!(f, "{m} (CUPTI error {})", self.code.0),
            None => write!(f, "CUPTI error {}", self.code.0),
        }
    }
}

/// Everything this crate can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `CUPTI_ERROR_NOT_INITIALIZED`: CUPTI could not initialise (often: no driver).
    #[error("{0}")]
    NotInitialized(Status),
    /// `CUPTI_ERROR_INVALID_PARAMETER`.
    #[error("{0}")]
    InvalidParameter(Status),
    /// `CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED`: another tool (Nsight
    /// Systems/Compute, torch.profiler, kineto, cuda-gdb…) already holds CUPTI.
    #[error("{status}: CUPTI is already in use by {}", holder.as_deref().unwrap_or("another profiler"))]
    MultipleSubscribers {
        /// The raw status.
        status: Status,
        /// The other subscriber's name, when CUPTI reported it (`cuptiSubscribe_v2`).
        holder: Option<String>,
    },
    /// `CUPTI_ERROR_INSUFFICIENT_PRIVILEGES` (and the virtualised-device variant):
    /// performance counters need `NVreg_RestrictProfilingToAdminUsers=0` or
    /// `CAP_SYS_ADMIN` (ERR_NVGPUCTRPERM). Tracing still works without them.
    #[error(
        "{0}; GPU performance counters need admin rights or NVreg_RestrictProfilingToAdminUsers=0 (ERR_NVGPUCTRPERM)"
    )]
    InsufficientPrivileges(Status),
    /// `CUPTI_ERROR_NOT_COMPATIBLE`, `_NOT_SUPPORTED` and the other
    /// "this device / setup is not supported" codes.
    #[error("{0}")]
    NotSupported(Status),
    /// `CUPTI_ERROR_MAX_LIMIT_REACHED` outside record iteration (where it means
    /// "end of buffer" and is not an error).
    #[error("{0}")]
    MaxLimitReached(Status),
    /// `CUPTI_ERROR_INVALID_METRIC_NAME` and friends from the profiler host.
    #[error("{0}")]
    InvalidMetric(Status),
    /// Any other CUPTI code.
    #[error("{0}")]
    Other(Status),
    /// The loaded library does not export a function we need.
    #[error(transparent)]
    MissingSymbol(#[from] sys::MissingSymbol),
    /// No `libcupti` at or above [`crate::CUPTI_VERSION_FLOOR`] could be opened.
    #[error("{}", sys::loader::not_found_message(tried, too_old, last_error.as_deref()))]
    LibraryNotFound {
        /// Every candidate, in the order tried.
        tried: Vec<String>,
        /// Candidates that opened but were older than the floor, with their
        /// `cuptiGetVersion`.
        too_old: Vec<(String, u32)>,
        /// The loader's message for the last existing candidate that failed.
        last_error: Option<String>,
    },
    /// An explicit path could not be opened.
    #[error("cannot open {path}: {source}")]
    LibraryOpen {
        /// The path given.
        path: String,
        /// The loader's error.
        source: libloading::Error,
    },
    /// The library's `cuptiGetVersion` is below what this crate decodes.
    #[error("CUPTI API version {found} is older than the supported floor {floor} (CUDA 13.0)")]
    VersionTooOld {
        /// `cuptiGetVersion`.
        found: u32,
        /// [`crate::CUPTI_VERSION_FLOOR`].
        floor: u32,
    },
    /// A CUDA driver call failed (`CUresult`, with `cuGetErrorString`'s text).
    #[error("CUDA driver error {code}: {message}")]
    Driver {
        /// The raw `CUresult`.
        code: u32,
        /// The driver's description.
        message: String,
    },
    /// The application has not loaded `libcuda.so.1` (we never load it ourselves).
    #[error("libcuda.so.1 is not loaded in this process")]
    DriverNotLoaded,
    /// The process-wide activity buffer handler is already registered.
    #[error("the activity buffer handler is already registered in this process")]
    ActivityAlreadyRegistered,
    /// `register_timestamp_callback` after an activity kind was enabled.
    #[error("the timestamp callback must be registered before any activity kind is enabled")]
    TimestampAfterEnable,
    /// An activity record extends past the buffer's valid bytes.
    #[error("activity record of kind {kind} is truncated")]
    TruncatedRecord {
        /// The raw `CUpti_ActivityKind`.
        kind: u32,
    },
    /// A metric name was empty or held a NUL byte.
    #[error("metric name {0:?} is not a valid C string")]
    BadMetricName(String),
    /// No metric of a configuration was accepted.
    #[error("none of the requested metrics is valid for this chip: {}", rejected.iter().map(|(n, e)| format!("{n} ({e})")).collect::<Vec<_>>().join(", "))]
    NoValidMetrics {
        /// Each rejected name with CUPTI's reason.
        rejected: Vec<(String, String)>,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Classifies a non-success `CUptiResult`.
    pub fn from_status(status: Status) -> Self {
        type R = sys::CUptiResult;
        match status.code {
            R::CUPTI_ERROR_NOT_INITIALIZED => Self::NotInitialized(status),
            R::CUPTI_ERROR_INVALID_PARAMETER => Self::InvalidParameter(status),
            R::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED => Self::MultipleSubscribers {
                status,
                holder: None,
            },
            R::CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
            | R::CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES => {
                Self::InsufficientPrivileges(status)
            }
            R::CUPTI_ERROR_NOT_COMPATIBLE
            | R::CUPTI_ERROR_NOT_SUPPORTED
            | R::CUPTI_ERROR_API_NOT_IMPLEMENTED
            | R::CUPTI_ERROR_CDP_TRACING_NOT_SUPPORTED
            | R::CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED
            | R::CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE
            | R::CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED
            | R::CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED
            | R::CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED
            | R::CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED
            | R::CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED
            | R::CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED
            | R::CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED
            | R::CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_DEVICE
            | R::CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_NON_P2P_DEVICES
            | R::CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS
            | R::CUPTI_ERROR_INVALID_CHIP_NAME => Self::NotSupported(status),
            R::CUPTI_ERROR_MAX_LIMIT_REACHED => Self::MaxLimitReached(status),
            R::CUPTI_ERROR_INVALID_METRIC_NAME | R::CUPTI_ERROR_INVALID_METRIC_ID => {
                Self::InvalidMetric(status)
            }
            _ => Self::Other(status),
        }
    }

    /// The CUPTI status, for errors that came from a CUPTI call.
    pub fn status(&self) -> Option<Status> {
        match self {
            Self::NotInitialized(s)
            | Self::InvalidParameter(s)
            | Self::InsufficientPrivileges(s)
            | Self::NotSupported(s)
            | Self::MaxLimitReached(s)
            | Self::InvalidMetric(s)
            | Self::Other(s)
            | Self::MultipleSubscribers { status: s, .. } => Some(*s),
            _ => None,
        }
    }

    /// The raw `CUptiResult` value, for errors that came from a CUPTI call.
    pub fn code(&self) -> Option<u32> {
        self.status().map(|s| s.code().0)
    }

    /// Whether CUPTI said `CUPTI_ERROR_NOT_READY`: the object is not yet
    /// ready for the call, which may work later.
    pub fn is_not_ready(&self) -> bool {
        self.code() == Some(sys::CUptiResult::CUPTI_ERROR_NOT_READY.0)
    }

    /// Whether the error means "no permission for performance counters": the
    /// caller should keep tracing and skip counters.
    pub fn is_permission_denied(&self) -> bool {
        matches!(self, Self::InsufficientPrivileges(_))
    }
}

impl From<sys::loader::LibraryNotFound> for Error {
    fn from(e: sys::loader::LibraryNotFound) -> Self {
        Self::LibraryNotFound {
            tried: e.tried,
            too_old: e.too_old,
            last_error: e.last_error,
        }
    }
}
