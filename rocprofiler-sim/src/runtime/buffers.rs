//! Buffers and the SDK threads that deliver them.

use std::cell::Cell;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rocprofiler_sys as sys;

use super::{SendPtr, lock, sim};

/// A record owned by a buffer until delivery.
pub(crate) enum Rec {
    Dispatch(Box<sys::rocprofiler_buffer_tracing_kernel_dispatch_record_t>),
    Copy(Box<sys::rocprofiler_buffer_tracing_memory_copy_record_t>),
    Hip(Box<sys::rocprofiler_buffer_tracing_hip_api_record_t>),
    CountHeader(Box<sys::rocprofiler_dispatch_counting_service_record_t>),
    CountValue(Box<sys::rocprofiler_counter_record_t>),
}

impl Rec {
    /// Bytes it occupies in the buffer (header + payload).
    fn bytes(&self) -> usize {
        std::mem::size_of::<sys::rocprofiler_record_header_t>()
            + match self {
                Rec::Dispatch(_) => {
                    std::mem::size_of::<sys::rocprofiler_buffer_tracing_kernel_dispatch_record_t>()
                }
                Rec::Copy(_) => {
                    std::mem::size_of::<sys::rocprofiler_buffer_tracing_memory_copy_record_t>()
                }
                Rec::Hip(_) => {
                    std::mem::size_of::<sys::rocprofiler_buffer_tracing_hip_api_record_t>()
                }
                Rec::CountHeader(_) => {
                    std::mem::size_of::<sys::rocprofiler_dispatch_counting_service_record_t>()
                }
                Rec::CountValue(_) => std::mem::size_of::<sys::rocprofiler_counter_record_t>(),
            }
    }

    fn header(&mut self) -> (sys::rocprofiler_record_header_t, &'static str) {
        type C = sys::rocprofiler_buffer_category_t;
        type K = sys::rocprofiler_buffer_tracing_kind_t;
        type CK = sys::rocprofiler_counter_record_kind_t;
        let (category, kind, payload, name): (u32, u32, *mut std::ffi::c_void, &'static str) =
            match self {
                Rec::Dispatch(r) => (
                    C::TRACING.0,
                    K::KERNEL_DISPATCH.0,
                    (&mut **r as *mut _ as *mut _),
                    "KERNEL_DISPATCH",
                ),
                Rec::Copy(r) => (
                    C::TRACING.0,
                    K::MEMORY_COPY.0,
                    (&mut **r as *mut _ as *mut _),
                    "MEMORY_COPY",
                ),
                Rec::Hip(r) => (
                    C::TRACING.0,
                    K::HIP_RUNTIME_API.0,
                    (&mut **r as *mut _ as *mut _),
                    "HIP_RUNTIME_API",
                ),
                Rec::CountHeader(r) => (
                    C::COUNTERS.0,
                    CK::PROFILE_COUNTING_DISPATCH_HEADER.0,
                    (&mut **r as *mut _ as *mut _),
                    "COUNTER_HEADER",
                ),
                Rec::CountValue(r) => (
                    C::COUNTERS.0,
                    CK::VALUE.0,
                    (&mut **r as *mut _ as *mut _),
                    "COUNTER_VALUE",
                ),
            };
        (
            sys::rocprofiler_record_header_t {
                u: sys::rocprofiler_record_header_u {
                    ck: sys::rocprofiler_record_header_category_kind_t { category, kind },
                },
                payload,
            },
            name,
        )
    }
}

// SAFETY: records are plain data; their pointer-typed union members are values (addresses,
// user data) that the SDK hands to the tool on its delivery thread anyway.
unsafe impl Send for Rec {}

pub(crate) type BufferCb = unsafe extern "C" fn(
    sys::rocprofiler_context_id_t,
    sys::rocprofiler_buffer_id_t,
    *mut *mut sys::rocprofiler_record_header_t,
    usize,
    *mut std::ffi::c_void,
    u64,
);

#[derive(Default)]
struct Inner {
    records: Vec<Rec>,
    bytes: usize,
    drops: u64,
    destroyed: bool,
}

pub(crate) struct Buf {
    pub(crate) id: u64,
    pub(crate) context: u64,
    size: usize,
    watermark: usize,
    lossless: bool,
    cb: BufferCb,
    data: SendPtr,
    inner: Mutex<Inner>,
    pub(crate) delivery: Mutex<Arc<Delivery>>,
    /// Serialises deliveries of this buffer (the SDK never runs one buffer's callback twice at once).
    delivering: Mutex<()>,
}

thread_local! {
    /// Buffer whose callback runs on this thread right now.
    static DELIVERING: Cell<u64> = const { Cell::new(0) };
}

impl Buf {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        id: u64,
        context: u64,
        size: usize,
        watermark: usize,
        lossless: bool,
        cb: BufferCb,
        data: SendPtr,
        delivery: Arc<Delivery>,
    ) -> Self {
        Buf {
            id,
            context,
            size,
            watermark,
            lossless,
            cb,
            data,
            inner: Mutex::new(Inner::default()),
            delivery: Mutex::new(delivery),
            delivering: Mutex::new(()),
        }
    }

    /// Adds a record; delivers asynchronously at the watermark. A full LOSSLESS buffer makes the
    /// producer wait for a delivery; a full DISCARD buffer drops the record.
    pub(crate) fn push(self: &Arc<Self>, rec: Rec) {
        loop {
            let mut inner = lock(&self.inner);
            if inner.destroyed {
                return;
            }
            if inner.bytes + rec.bytes() > self.size && !inner.records.is_empty() {
                if self.lossless {
                    drop(inner);
                    self.flush_and_wait();
                    continue;
                }
                inner.drops += 1;
                if let Some(s) = sim() {
                    lock(&s.report).delivered.dropped_records += 1;
                }
                return;
            }
            inner.bytes += rec.bytes();
            inner.records.push(rec);
            let trigger = inner.bytes >= self.watermark;
            drop(inner);
            if trigger {
                lock(&self.delivery).request(self.clone(), None);
            }
            return;
        }
    }

    /// `rocprofiler_flush_buffer`: deliver and wait. BUSY from inside this buffer's callback.
    pub(crate) fn flush(self: &Arc<Self>) -> sys::rocprofiler_status_t {
        match DELIVERING.with(|d| d.get()) {
            id if id == self.id => return sys::rocprofiler_status_t::ERROR_BUFFER_BUSY,
            // Inside another buffer's callback on a delivery thread: deliver here rather than
            // queue behind the callback that is waiting for us.
            0 => self.flush_and_wait(),
            _ => self.deliver(),
        }
        sys::rocprofiler_status_t::SUCCESS
    }

    fn flush_and_wait(self: &Arc<Self>) {
        let (tx, rx) = channel();
        let d = lock(&self.delivery).clone();
        d.request(self.clone(), Some(tx));
        let _ = rx.recv();
    }

    pub(crate) fn destroy(&self) -> sys::rocprofiler_status_t {
        if DELIVERING.with(|d| d.get()) == self.id {
            return sys::rocprofiler_status_t::ERROR_BUFFER_BUSY;
        }
        let mut inner = lock(&self.inner);
        inner.destroyed = true;
        inner.records.clear();
        inner.bytes = 0;
        sys::rocprofiler_status_t::SUCCESS
    }

    pub(crate) fn pending_records(&self) -> u64 {
        lock(&self.inner).records.len() as u64
    }

    /// Runs the tool's callback with everything buffered (on a delivery thread).
    fn deliver(&self) {
        let _serial = lock(&self.delivering);
        let (mut records, drops) = {
            let mut inner = lock(&self.inner);
            inner.bytes = 0;
            (
                std::mem::take(&mut inner.records),
                std::mem::take(&mut inner.drops),
            )
        };
        if records.is_empty() && drops == 0 {
            return;
        }
        let mut headers = Vec::with_capacity(records.len());
        let mut kinds: Vec<&'static str> = Vec::with_capacity(records.len());
        for r in records.iter_mut() {
            let (h, name) = r.header();
            headers.push(h);
            kinds.push(name);
        }
        let mut ptrs: Vec<*mut sys::rocprofiler_record_header_t> =
            headers.iter_mut().map(|h| h as *mut _).collect();
        if let Some(s) = sim() {
            let mut rep = lock(&s.report);
            rep.delivered.buffer_batches += 1;
            for k in &kinds {
                *rep.delivered
                    .buffer_records
                    .entry((*k).to_owned())
                    .or_default() += 1;
            }
            rep.delivered.counter_records +=
                kinds.iter().filter(|k| **k == "COUNTER_VALUE").count() as u64;
            let tid = super::gettid();
            if !rep.delivered.delivery_thread_ids.contains(&tid) {
                rep.delivered.delivery_thread_ids.push(tid);
            }
        }
        let outer = DELIVERING.with(|d| d.replace(self.id));
        // SAFETY: the tool's buffer callback with headers/payloads alive for the call.
        unsafe {
            (self.cb)(
                sys::rocprofiler_context_id_t {
                    handle: self.context,
                },
                sys::rocprofiler_buffer_id_t { handle: self.id },
                ptrs.as_mut_ptr(),
                ptrs.len(),
                self.data.0,
                drops,
            )
        };
        DELIVERING.with(|d| d.set(outer));
        drop(records);
    }
}

type Request = (Arc<Buf>, Option<Sender<()>>);

/// An SDK thread running buffer callbacks.
pub(crate) struct Delivery {
    tx: Mutex<Option<Sender<Request>>>,
    join: Mutex<Option<JoinHandle<()>>>,
}

impl Delivery {
    pub(crate) fn spawn(name: &str) -> Arc<Delivery> {
        let (tx, rx) = channel::<Request>();
        let join = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                for (buf, done) in rx {
                    buf.deliver();
                    if let Some(done) = done {
                        let _ = done.send(());
                    }
                }
            })
            .expect("spawn delivery thread");
        Arc::new(Delivery {
            tx: Mutex::new(Some(tx)),
            join: Mutex::new(Some(join)),
        })
    }

    fn request(&self, buf: Arc<Buf>, done: Option<Sender<()>>) {
        if let Some(tx) = lock(&self.tx).as_ref() {
            let _ = tx.send((buf, done));
        }
    }

    pub(crate) fn shutdown(&self) {
        lock(&self.tx).take();
        if let Some(j) = lock(&self.join).take() {
            let _ = j.join();
        }
    }
}
