//! Errors that keep NVML's code.

use nvml_sys as sys;

/// NVML status codes this crate acts on; anything else is `Other(raw)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Code {
    /// `NVML_ERROR_UNINITIALIZED`.
    Uninitialized,
    /// `NVML_ERROR_INVALID_ARGUMENT`.
    InvalidArgument,
    /// `NVML_ERROR_NOT_SUPPORTED`: the device has no such reading.
    NotSupported,
    /// `NVML_ERROR_NO_PERMISSION`.
    NoPermission,
    /// `NVML_ERROR_NOT_FOUND`: no device with that UUID or bus id.
    NotFound,
    /// `NVML_ERROR_DRIVER_NOT_LOADED`.
    DriverNotLoaded,
    /// `NVML_ERROR_GPU_IS_LOST`: the GPU fell off the bus.
    GpuIsLost,
    /// `NVML_ERROR_LIB_RM_VERSION_MISMATCH`: library and kernel module differ.
    LibRmVersionMismatch,
    /// `NVML_ERROR_ARGUMENT_VERSION_MISMATCH`: a struct version word was refused.
    ArgumentVersionMismatch,
    /// `NVML_ERROR_FUNCTION_NOT_FOUND`.
    FunctionNotFound,
    /// `NVML_ERROR_NO_DATA`.
    NoData,
    /// Any other code.
    Other(u32),
}

impl Code {
    /// The code of a non-success status.
    pub fn from_raw(r: sys::nvmlReturn_t) -> Self {
        match r {
            sys::nvmlReturn_t::ERROR_UNINITIALIZED => Code::Uninitialized,
            sys::nvmlReturn_t::ERROR_INVALID_ARGUMENT => Code::InvalidArgument,
            sys::nvmlReturn_t::ERROR_NOT_SUPPORTED => Code::NotSupported,
            sys::nvmlReturn_t::ERROR_NO_PERMISSION => Code::NoPermission,
            sys::nvmlReturn_t::ERROR_NOT_FOUND => Code::NotFound,
            sys::nvmlReturn_t::ERROR_DRIVER_NOT_LOADED => Code::DriverNotLoaded,
            sys::nvmlReturn_t::ERROR_GPU_IS_LOST => Code::GpuIsLost,
            sys::nvmlReturn_t::ERROR_LIB_RM_VERSION_MISMATCH => Code::LibRmVersionMismatch,
            sys::nvmlReturn_t::ERROR_ARGUMENT_VERSION_MISMATCH => Code::ArgumentVersionMismatch,
            sys::nvmlReturn_t::ERROR_FUNCTION_NOT_FOUND => Code::FunctionNotFound,
            sys::nvmlReturn_t::ERROR_NO_DATA => Code::NoData,
            other => Code::Other(other.0),
        }
    }
}

/// A failed NVML call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// NVML returned an error status.
    #[error("{message} ({raw:?})")]
    Nvml {
        /// What we act on.
        code: Code,
        /// The status as returned.
        raw: sys::nvmlReturn_t,
        /// NVML's own text for it (`nvmlErrorString`).
        message: &'static str,
    },
    /// The loaded NVML does not export the function (an older driver).
    #[error(transparent)]
    MissingSymbol(#[from] sys::MissingSymbol),
}

impl Error {
    /// NVML's code, if NVML answered.
    pub fn code(&self) -> Option<Code> {
        match self {
            Error::Nvml { code, .. } => Some(*code),
            Error::MissingSymbol(_) => None,
        }
    }

    /// Whether asking again can never succeed on this device: the reading is
    /// not supported, not permitted, or not in this driver.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            Error::MissingSymbol(_)
                | Error::Nvml {
                    code: Code::NotSupported
                        | Code::NoPermission
                        | Code::FunctionNotFound
                        | Code::ArgumentVersionMismatch
                        | Code::GpuIsLost,
                    ..
                }
        )
    }
}

/// A `Result` of this crate.
pub type Result<T> = std::result::Result<T, Error>;
