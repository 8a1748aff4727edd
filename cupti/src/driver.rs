//! The few CUDA driver calls a tracer needs: device description and occupancy.
//!
//! The driver is never loaded by us: [`Driver::from_process`] only succeeds
//! once the application has loaded `libcuda.so.1`, so these calls always go to
//! the driver it uses. Every call here is itself a driver API call, and is
//! seen by CUPTI callbacks enabled for its id: keep them off hot paths and
//! cache the answers (device attributes do not change).

use std::{
    ffi::{CStr, c_char, c_int},
    sync::Arc,
};

use cupti_sys as sys;

use crate::{Error, Result, Stream, callback::KernelFunction};

/// Handle on the application's CUDA driver. Cheap to clone.
#[derive(Clone)]
pub struct Driver {
    api: Arc<sys::DriverApi>,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver").finish_non_exhaustive()
    }
}

/// A CUDA device ordinal as the driver knows it (`CUdevice`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Device(pub i32);

/// A `CUdevice_attribute` (raw value; constants are in `cupti_sys`, e.g.
/// `CUdevice_attribute_enum::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`).
pub type DeviceAttribute = sys::CUdevice_attribute;

/// A `CUfunction_attribute` (e.g. `CU_FUNC_ATTRIBUTE_NUM_REGS`).
pub type FunctionAttribute = sys::CUfunction_attribute;

impl Driver {
    /// Takes a handle on the `libcuda.so.1` already loaded in this process.
    ///
    /// # Errors
    ///
    /// [`Error::DriverNotLoaded`] when the application has not loaded it.
    pub fn from_process() -> Result<Self> {
        let lib = sys::loader::open_loaded_libcuda().ok_or(Error::DriverNotLoaded)?;
        // SAFETY: `lib` is the CUDA driver; it is leaked (never unloaded) so
        // the pointers stay valid.
        let api = unsafe { sys::DriverApi::load_from(&lib) };
        std::mem::forget(lib);
        // SAFETY: the table was just filled from the application's driver,
        // which is never unloaded.
        Ok(unsafe { Self::from_table(api) })
    }

    /// Wraps an already-filled table (custom resolvers, tests).
    ///
    /// # Safety
    ///
    /// Every call through the returned handle trusts the table. Each non-null
    /// entry of `api` must be a function with the C signature and behaviour of
    /// the CUDA driver function it is named after, as the driver API documents
    /// it (e.g. `cuGetErrorString` hands out strings that stay valid for the
    /// process lifetime), and must stay callable, from any thread, for as long
    /// as the handle lives (in practice: the library it came from is never
    /// unloaded).
    pub unsafe fn from_table(api: sys::DriverApi) -> Self {
        Self { api: Arc::new(api) }
    }

    fn check(&self, r: std::result::Result<sys::CUresult, sys::MissingSymbol>) -> Result<()> {
        let code = r?;
        if code == sys::CUresult::CUDA_SUCCESS {
            return Ok(());
        }
        let mut s: *const c_char = std::ptr::null();
        // SAFETY: valid out-pointer; the string is a driver constant.
        let ok = unsafe { self.api.cuGetErrorString(code, &mut s) };
        let message = if ok == Ok(sys::CUresult::CUDA_SUCCESS) && !s.is_null() {
            // SAFETY: non-null NUL-terminated constant.
            unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
        } else {
            "unknown error".to_owned()
        };
        Err(Error::Driver {
            code: code.0,
            message,
        })
    }

    fn int_out(
        &self,
        f: impl FnOnce(*mut c_int) -> std::result::Result<sys::CUresult, sys::MissingSymbol>,
    ) -> Result<i32> {
        let mut v: c_int = 0;
        self.check(f(&mut v))?;
        Ok(v)
    }

    /// Driver version, e.g. 13000 for 13.0.
    ///
    /// # Errors
    ///
    /// [`Error::Driver`], [`Error::MissingSymbol`].
    #[doc(alias = "cuDriverGetVersion")]
    pub fn version(&self) -> Result<i32> {
        // SAFETY: valid out-pointer.
        self.int_out(|p| unsafe { self.api.cuDriverGetVersion(p) })
    }

    /// Number of visible devices.
    ///
    /// # Errors
    ///
    /// [`Error::Driver`], [`Error::MissingSymbol`].
    #[doc(alias = "cuDeviceGetCount")]
    pub fn device_count(&self) -> Result<i32> {
        // SAFETY: valid out-pointer.
        self.int_out(|p| unsafe { self.api.cuDeviceGetCount(p) })
    }

    /// The device of an ordinal.
    ///
    /// # Errors
    ///
    /// [`Error::Driver`] (e.g. invalid ordinal), [`Error::MissingSymbol`].
    #[doc(alias = "cuDeviceGet")]
    pub fn device(&self, ordinal: i32) -> Result<Device> {
        // SAFETY: valid out-pointer; the driver validates the ordinal.
        self.int_out(|p| unsafe { self.api.cuDeviceGet(p, ordinal) })
            .map(Device)
    }

    /// The device of the calling thread's current context.
    ///
    /// # Errors
    ///
    /// [`Error::Driver`] (no current context), [`Error::MissingSymbol`].
    #[doc(alias = "cuCtxGetDevice")]
    pub fn current_device(&self) -> Result<Device> {
        // SAFETY: valid out-pointer.
        self.int_out(|p| unsafe { self.api.cuCtxGetDevice(p) })
            .map(Device)
    }

    /// One device attribute.
    ///
    /// # Errors
    ///
    /// [`Error::Driver`], [`Error::MissingSymbol`].
    #[doc(alias = "cuDeviceGetAttribute")]
    pub fn device_attribute(&self, dev: Device, attr: DeviceAttribute) -> Result<i32> {
        // SAFETY: valid out-pointer; the driver validates device and attribute.
        self.int_out(|p| unsafe { self.api.cuDeviceGetAttribute(p, attr, dev.0) })
    }

    /// The device's marketing name.
    ///
    /// # Errors
    ///
    /// [`Error::Driver`], [`Error::MissingSymbol`].
    #[doc(alias = "cuDeviceGetName")]
    pub fn device_name(&self, dev: Device) -> Result<String> {
        let mut buf = [0 as c_char; 256];
        // SAFETY: the driver writes at most `len` bytes, NUL-terminated.
        self.check(unsafe {
            self.api
                .cuDeviceGetName(buf.as_mut_ptr(), buf.len() as c_int, dev.0)
        })?;
        Ok(c_buf_to_string(&buf))
    }

    /// The device's UUID (the one `nvidia-smi -L` shows, as 16 bytes).
    ///
    /// # Errors
    ///
    /// [`Error::Driver`], [`Error::MissingSymbol`].
    #[doc(alias = "cuDeviceGetUuid_v2")]
    pub fn device_uuid(&self, dev: Device) -> Result<[u8; 16]> {
        let mut u = sys::CUuuid::default();
        // SAFETY: valid out-pointer.
        self.check(unsafe { self.api.cuDeviceGetUuid_v2(&mut u, dev.0) })?;
        Ok(u.bytes.map(|b| b as u8))
    }

    /// PCI bus id, `domain:bus:device.function`.
    ///
    /// # Errors
    ///
    /// [`Error::Driver`], [`Error::MissingSymbol`].
    #[doc(alias = "cuDeviceGetPCIBusId")]
    pub fn device_pci_bus_id(&self, dev: Device) -> Result<String> {
        // `c_char` keeps this right on aarch64, where it is unsigned.
        let mut buf = [0 as c_char; 64];
        // SAFETY: the driver writes at most `len` bytes, NUL-terminated.
        self.check(unsafe {
            self.api
                .cuDeviceGetPCIBusId(buf.as_mut_ptr(), buf.len() as c_int, dev.0)
        })?;
        Ok(c_buf_to_string(&buf))
    }

    /// Total device memory in bytes.
    ///
    /// # Errors
    ///
    /// [`Error::Driver`], [`Error::MissingSymbol`].
    #[doc(alias = "cuDeviceTotalMem_v2")]
    pub fn device_total_mem(&self, dev: Device) -> Result<u64> {
        let mut b = 0usize;
        // SAFETY: valid out-pointer.
        self.check(unsafe { self.api.cuDeviceTotalMem_v2(&mut b, dev.0) })?;
        Ok(b as u64)
    }

    /// One attribute of a launched kernel (registers, shared memory, …).
    ///
    /// # Errors
    ///
    /// [`Error::Driver`], [`Error::MissingSymbol`].
    #[doc(alias = "cuFuncGetAttribute")]
    pub fn function_attribute(
        &self,
        f: &KernelFunction<'_>,
        attr: FunctionAttribute,
    ) -> Result<i32> {
        // SAFETY: `f` came from a live launch callback (its lifetime); out-pointer valid.
        self.int_out(|p| unsafe { self.api.cuFuncGetAttribute(p, attr, f.raw) })
    }

    /// Maximum resident blocks per SM for a launch of `f` with `block_size`
    /// threads and `dynamic_smem` bytes: the numerator of achieved occupancy.
    ///
    /// # Errors
    ///
    /// [`Error::Driver`], [`Error::MissingSymbol`].
    #[doc(alias = "cuOccupancyMaxActiveBlocksPerMultiprocessor")]
    pub fn max_active_blocks_per_sm(
        &self,
        f: &KernelFunction<'_>,
        block_size: i32,
        dynamic_smem: usize,
    ) -> Result<i32> {
        // SAFETY: as in `function_attribute`.
        self.int_out(|p| unsafe {
            self.api
                .cuOccupancyMaxActiveBlocksPerMultiprocessor(p, f.raw, block_size, dynamic_smem)
        })
    }
}

impl Driver {
    /// Waits until all work queued in `ctx` has finished: makes it current on
    /// the calling thread for the duration and restores the previous one.
    /// Used at process exit so that work still running there is recorded.
    ///
    /// # Errors
    ///
    /// [`Error::Driver`] (e.g. the context was destroyed), [`Error::MissingSymbol`].
    #[doc(alias = "cuCtxSynchronize")]
    pub fn synchronize(&self, ctx: crate::Context) -> Result<()> {
        // SAFETY: `ctx` came from CUPTI (type invariant of `Context`).
        self.check(unsafe { self.api.cuCtxPushCurrent_v2(ctx.0) })?;
        // SAFETY: plain call on the current context.
        let r = self.check(unsafe { self.api.cuCtxSynchronize() });
        let mut popped: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: pops what was pushed above; valid out-pointer.
        let _ = unsafe { self.api.cuCtxPopCurrent_v2(&mut popped) };
        r
    }

    /// Runs `f` with `ctx` current on the calling thread, then restores the
    /// previous current context.
    ///
    /// # Errors
    ///
    /// [`Error::Driver`] when `ctx` cannot be made current (e.g. it was
    /// destroyed); `f` does not run then.
    #[doc(alias = "cuCtxPushCurrent")]
    pub fn with_current<R>(&self, ctx: crate::Context, f: impl FnOnce() -> R) -> Result<R> {
        // SAFETY: `ctx` came from CUPTI (type invariant of `Context`).
        self.check(unsafe { self.api.cuCtxPushCurrent_v2(ctx.0) })?;
        let r = f();
        let mut popped: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: pops what was pushed above; valid out-pointer.
        let _ = unsafe { self.api.cuCtxPopCurrent_v2(&mut popped) };
        Ok(r)
    }

    /// Whether `stream` (a handle from a callback) is being captured into a
    /// graph: work "launched" there runs only when the graph does.
    ///
    /// # Errors
    ///
    /// [`Error::Driver`] (e.g. capture in another stream forbids asking about
    /// the legacy default stream), [`Error::MissingSymbol`].
    #[doc(alias = "cuStreamIsCapturing")]
    pub fn stream_is_capturing(&self, stream: Stream<'_>) -> Result<bool> {
        let mut status = sys::CUstreamCaptureStatus_enum(0);
        // SAFETY: `stream` is the default stream or one the application is
        // using during the callback that produced it (type invariant of
        // `Stream`); valid out-pointer.
        self.check(unsafe { self.api.cuStreamIsCapturing(stream.raw(), &mut status) })?;
        Ok(status != sys::CUstreamCaptureStatus_enum::CU_STREAM_CAPTURE_STATUS_NONE)
    }
}

fn c_buf_to_string(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}
