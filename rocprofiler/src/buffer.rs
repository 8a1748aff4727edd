//! Buffers: records collected by the SDK and handed to a closure in batches.

use std::ffi::c_void;
use std::sync::atomic::Ordering;

use rocprofiler_sys as sys;

use crate::guard::Slot;
use crate::{BufferId, BufferRecord, Context, ContextId, Result, Runtime};

/// What a full buffer does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Producers wait until the records were delivered.
    Lossless,
    /// Records that do not fit are dropped and counted.
    Discard,
}

/// Size, delivery threshold and policy of a buffer.
#[derive(Debug, Clone, Copy)]
pub struct BufferOptions {
    /// Bytes.
    pub size: usize,
    /// Fill level in bytes that triggers delivery (0: every record).
    pub watermark: usize,
    /// Full-buffer behaviour.
    pub policy: Policy,
}

impl Default for BufferOptions {
    fn default() -> Self {
        Self {
            size: 4 << 20,
            watermark: 3 << 20,
            policy: Policy::Lossless,
        }
    }
}

/// An SDK thread that delivers buffers.
#[derive(Debug, Clone, Copy)]
pub struct CallbackThread {
    pub(crate) id: sys::rocprofiler_callback_thread_t,
}

/// One delivery of records.
pub struct BufferBatch<'a> {
    context: sys::rocprofiler_context_id_t,
    buffer: sys::rocprofiler_buffer_id_t,
    headers: &'a [*mut sys::rocprofiler_record_header_t],
    drop_count: u64,
    rt: &'a Runtime,
}

impl<'a> BufferBatch<'a> {
    /// Records dropped since the last delivery (DISCARD policy).
    pub fn drop_count(&self) -> u64 {
        self.drop_count
    }
    /// Context of the buffer.
    pub fn context_id(&self) -> ContextId {
        ContextId(self.context.handle)
    }
    /// The buffer.
    pub fn buffer_id(&self) -> BufferId {
        BufferId(self.buffer.handle)
    }
    /// Number of records.
    pub fn len(&self) -> usize {
        self.headers.len()
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty()
    }
    /// The runtime.
    pub fn runtime(&self) -> &'a Runtime {
        self.rt
    }
    /// The records, decoded.
    pub fn records(&self) -> impl Iterator<Item = BufferRecord> + 'a {
        self.headers.iter().filter_map(|h| {
            // SAFETY: headers delivered to the running callback are valid (null ones skipped).
            unsafe { h.as_ref() }.map(|h| unsafe { BufferRecord::decode(h) })
        })
    }
}

/// A buffer. Dropping it destroys it and switches its callback off; [`Buffer::close`] flushes
/// first and reports errors.
pub struct Buffer {
    rt: Runtime,
    id: sys::rocprofiler_buffer_id_t,
    enabled: &'static std::sync::atomic::AtomicBool,
    destroyed: bool,
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer")
            .field("id", &self.id.handle)
            .finish()
    }
}

// SAFETY: a buffer is an integer handle; the SDK's flush/destroy are callable from any thread.
unsafe impl Send for Buffer {}
// SAFETY: as above.
unsafe impl Sync for Buffer {}

impl Buffer {
    /// Creates a buffer in `context` (only inside `initialize`). `f` runs on an SDK thread for
    /// each batch (when the watermark is reached and on flush); a panic in it is caught,
    /// reported once and switches it off.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when `rocprofiler_create_buffer` fails, and
    /// [`crate::Error::MissingSymbol`] when the running SDK lacks it; outside the tool's `initialize`
    /// the status is `ConfigurationLocked`.
    #[doc(alias = "rocprofiler_create_buffer")]
    pub fn new<F>(context: &Context, options: BufferOptions, f: F) -> Result<Buffer>
    where
        F: Fn(&BufferBatch<'_>) + Send + Sync + 'static,
    {
        let rt = context.runtime();
        let slot = Slot::leak("buffer callback", rt, f);
        let policy = match options.policy {
            Policy::Lossless => sys::rocprofiler_buffer_policy_t::LOSSLESS,
            Policy::Discard => sys::rocprofiler_buffer_policy_t::DISCARD,
        };
        let mut id = sys::rocprofiler_buffer_id_t::default();
        // SAFETY: trampoline matches the C prototype; `slot` lives for the process; valid
        // out-pointer.
        let r = unsafe {
            rt.api().rocprofiler_create_buffer(
                context.raw(),
                options.size,
                options.watermark,
                policy,
                Some(buffer_trampoline::<F>),
                slot.as_c(),
                &mut id,
            )
        };
        rt.check("rocprofiler_create_buffer", r)?;
        Ok(Buffer {
            rt: rt.clone(),
            id,
            enabled: &slot.enabled,
            destroyed: false,
        })
    }

    /// Id.
    pub fn id(&self) -> BufferId {
        BufferId(self.id.handle)
    }

    /// The raw id.
    pub fn raw(&self) -> sys::rocprofiler_buffer_id_t {
        self.id
    }

    /// Delivers everything buffered and waits until the callback returned. Fails with
    /// `BufferBusy` when called from inside this buffer's own callback.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when `rocprofiler_flush_buffer` fails, and
    /// [`crate::Error::MissingSymbol`] when the running SDK lacks it; from inside this buffer's own
    /// callback the status is `BufferBusy`.
    #[doc(alias = "rocprofiler_flush_buffer")]
    pub fn flush(&self) -> Result<()> {
        // SAFETY: plain value argument.
        let r = unsafe { self.rt.api().rocprofiler_flush_buffer(self.id) };
        self.rt.check("rocprofiler_flush_buffer", r)
    }

    /// Delivers this buffer on `thread`.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Status`] with the SDK's status when `rocprofiler_assign_callback_thread` fails,
    /// and [`crate::Error::MissingSymbol`] when the running SDK lacks it.
    #[doc(alias = "rocprofiler_assign_callback_thread")]
    pub fn assign_callback_thread(&self, thread: CallbackThread) -> Result<()> {
        // SAFETY: plain value arguments.
        let r = unsafe {
            self.rt
                .api()
                .rocprofiler_assign_callback_thread(self.id, thread.id)
        };
        self.rt.check("rocprofiler_assign_callback_thread", r)
    }

    /// Flushes, destroys and switches the callback off.
    ///
    /// # Errors
    ///
    /// The flush's error (see [`Buffer::flush`]) if it failed, else
    /// `rocprofiler_destroy_buffer`'s; the callback is switched off either way.
    pub fn close(mut self) -> Result<()> {
        let flushed = self.flush();
        // SAFETY: plain value argument.
        let r = unsafe { self.rt.api().rocprofiler_destroy_buffer(self.id) };
        self.destroyed = true;
        let destroyed = self.rt.check("rocprofiler_destroy_buffer", r);
        flushed.and(destroyed)
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if !self.destroyed {
            // SAFETY: plain value argument; errors are ignored in Drop (use `close`).
            let _ = unsafe { self.rt.api().rocprofiler_destroy_buffer(self.id) };
        }
        self.enabled.store(false, Ordering::Relaxed);
    }
}

unsafe extern "C" fn buffer_trampoline<F>(
    context: sys::rocprofiler_context_id_t,
    buffer: sys::rocprofiler_buffer_id_t,
    headers: *mut *mut sys::rocprofiler_record_header_t,
    num_headers: usize,
    data: *mut c_void,
    drop_count: u64,
) where
    F: Fn(&BufferBatch<'_>) + Send + Sync + 'static,
{
    // SAFETY: `data` is the `Slot<F>` registered with this trampoline; it is never freed.
    let slot = unsafe { &*data.cast::<Slot<F>>() };
    slot.run(|| {
        let headers = if headers.is_null() || num_headers == 0 {
            &[][..]
        } else {
            // SAFETY: the SDK passes `num_headers` header pointers valid during the callback.
            unsafe { std::slice::from_raw_parts(headers, num_headers) }
        };
        let batch = BufferBatch {
            context,
            buffer,
            headers,
            drop_count,
            rt: &slot.rt,
        };
        (slot.f)(&batch)
    });
}
