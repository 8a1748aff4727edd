//! Decoding a completed buffer: the records iterator, the [`Record`] enum,
//! and the macros the per-kind views are made with.

use std::{ffi::CStr, marker::PhantomData};

use cupti_sys as sys;

use super::{
    ActivityKind, ApiRecord, ExternalCorrelationRecord, KernelRecord, MarkerDataRecord,
    MarkerRecord, MemcpyPeerRecord, MemcpyRecord, MemsetRecord, SyncRecord, UnifiedMemoryRecord,
};
use crate::{Cupti, Error, Result};

/// The records of one completed buffer. Iterating yields each record in order;
/// the end of the buffer ends the iteration (it is not an error). A CUPTI
/// error is yielded once, then iteration stops.
pub struct Records<'a> {
    pub(super) cupti: &'a Cupti,
    pub(super) buffer: *mut u8,
    pub(super) valid_size: usize,
    pub(super) cursor: *mut sys::CUpti_Activity,
    pub(super) done: bool,
    pub(super) context: u64,
    pub(super) stream_id: u32,
    pub(super) dropped: u64,
    pub(super) _buffer: PhantomData<&'a mut [u8]>,
}

impl std::fmt::Debug for Records<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records")
            .field("valid_size", &self.valid_size)
            .field("dropped", &self.dropped)
            .finish()
    }
}

impl<'a> Records<'a> {
    /// Iterates the records in `buffer[..valid_size]`.
    ///
    /// # Safety
    ///
    /// The bytes must be activity records as CUPTI writes them (a buffer CUPTI
    /// completed, or one laid out the same way) and 8-byte aligned; any name
    /// pointers inside must be valid for `'a`.
    pub unsafe fn from_buffer(cupti: &'a Cupti, buffer: &'a mut [u8], valid_size: usize) -> Self {
        Self {
            cupti,
            buffer: buffer.as_mut_ptr(),
            valid_size: valid_size.min(buffer.len()),
            cursor: std::ptr::null_mut(),
            done: false,
            context: 0,
            stream_id: 0,
            dropped: 0,
            _buffer: PhantomData,
        }
    }

    /// Records CUPTI dropped for this buffer's context/stream so far
    /// (`cuptiActivityGetNumDroppedRecords` when the buffer completed).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The buffer's context (0 for CUPTI's global buffers).
    pub fn context_handle(&self) -> u64 {
        self.context
    }

    /// The buffer's stream id (0 for global buffers).
    pub fn stream_id(&self) -> u32 {
        self.stream_id
    }

    /// Bytes of records in the buffer.
    pub fn valid_size(&self) -> usize {
        self.valid_size
    }

    /// Copies a `T` at `p` after checking it lies inside the valid bytes.
    fn read<T: Copy>(&self, p: *const sys::CUpti_Activity) -> Option<T> {
        let start = p as usize;
        let base = self.buffer as usize;
        let end = start.checked_add(std::mem::size_of::<T>())?;
        if start < base || end > base + self.valid_size {
            return None;
        }
        // SAFETY: in bounds of the valid bytes (checked); records are plain
        // data; unaligned read so a misplaced record cannot be UB.
        Some(unsafe { std::ptr::read_unaligned(p.cast::<T>()) })
    }

    fn decode(&self, p: *const sys::CUpti_Activity) -> Result<Record<'a>> {
        type K = sys::CUpti_ActivityKind;
        let head: sys::CUpti_Activity = self.read(p).ok_or(Error::TruncatedRecord { kind: 0 })?;
        let kind = head.kind;
        let trunc = || Error::TruncatedRecord { kind: kind.0 };
        macro_rules! rec {
            ($variant:ident, $view:ident) => {
                Record::$variant($view {
                    raw: self.read(p).ok_or_else(trunc)?,
                    _buffer: PhantomData,
                })
            };
        }
        Ok(match kind {
            K::CUPTI_ACTIVITY_KIND_KERNEL | K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL => {
                rec!(Kernel, KernelRecord)
            }
            K::CUPTI_ACTIVITY_KIND_MEMCPY => rec!(Memcpy, MemcpyRecord),
            K::CUPTI_ACTIVITY_KIND_MEMCPY2 => rec!(MemcpyPeer, MemcpyPeerRecord),
            K::CUPTI_ACTIVITY_KIND_MEMSET => rec!(Memset, MemsetRecord),
            K::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION => rec!(Synchronization, SyncRecord),
            K::CUPTI_ACTIVITY_KIND_RUNTIME | K::CUPTI_ACTIVITY_KIND_DRIVER => rec!(Api, ApiRecord),
            K::CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION => {
                rec!(ExternalCorrelation, ExternalCorrelationRecord)
            }
            K::CUPTI_ACTIVITY_KIND_MARKER => rec!(Marker, MarkerRecord),
            K::CUPTI_ACTIVITY_KIND_MARKER_DATA => rec!(MarkerData, MarkerDataRecord),
            K::CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER => {
                rec!(UnifiedMemory, UnifiedMemoryRecord)
            }
            other => Record::Other {
                kind: ActivityKind::from_raw(other),
            },
        })
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>>;

    #[doc(alias = "cuptiActivityGetNextRecord")]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        // SAFETY: the buffer and its valid size come from CUPTI (or the
        // `from_buffer` contract); `cursor` is CUPTI's own iteration state.
        let r = unsafe {
            self.cupti.api().cuptiActivityGetNextRecord(
                self.buffer,
                self.valid_size,
                &mut self.cursor,
            )
        };
        match r {
            Ok(sys::CUptiResult::CUPTI_SUCCESS) => {
                let rec = self.decode(self.cursor);
                if rec.is_err() {
                    self.done = true;
                }
                Some(rec)
            }
            Ok(sys::CUptiResult::CUPTI_ERROR_MAX_LIMIT_REACHED) => {
                self.done = true;
                None
            }
            Ok(code) => {
                self.done = true;
                Some(Err(self.cupti.error(code)))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e.into()))
            }
        }
    }
}

/// A decoded activity record. Copies of CUPTI's structs; name strings are
/// borrowed and valid while the buffer is (`'a`).
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Record<'a> {
    /// `KERNEL` / `CONCURRENT_KERNEL`.
    Kernel(KernelRecord<'a>),
    /// `MEMCPY`.
    Memcpy(MemcpyRecord<'a>),
    /// `MEMCPY2` (peer to peer).
    MemcpyPeer(MemcpyPeerRecord<'a>),
    /// `MEMSET`.
    Memset(MemsetRecord<'a>),
    /// `SYNCHRONIZATION`.
    Synchronization(SyncRecord<'a>),
    /// `RUNTIME` / `DRIVER`.
    Api(ApiRecord<'a>),
    /// `EXTERNAL_CORRELATION`.
    ExternalCorrelation(ExternalCorrelationRecord<'a>),
    /// `MARKER`.
    Marker(MarkerRecord<'a>),
    /// `MARKER_DATA`.
    MarkerData(MarkerDataRecord<'a>),
    /// `UNIFIED_MEMORY_COUNTER`.
    UnifiedMemory(UnifiedMemoryRecord<'a>),
    /// Any kind not decoded here.
    Other {
        /// Its kind.
        kind: ActivityKind,
    },
}

macro_rules! view {
    ($(#[$m:meta])* $name:ident, $raw:ty) => {
        $(#[$m])*
        #[derive(Clone, Copy)]
        pub struct $name<'a> {
            pub(super) raw: $raw,
            pub(super) _buffer: PhantomData<&'a [u8]>,
        }

        impl $name<'_> {
            /// The raw record (CUDA 13.0 layout).
            pub fn raw(&self) -> &$raw {
                &self.raw
            }
        }
    };
}

macro_rules! getters {
    ($name:ident { $($(#[$m:meta])* $get:ident: $ty:ty = $field:ident $(. $inner:tt)?;)* }) => {
        impl $name<'_> {
            $(
                $(#[$m])*
                pub fn $get(&self) -> $ty {
                    self.raw.$field $(. $inner)? as $ty
                }
            )*
        }
    };
}

pub(super) fn cstr<'a>(p: *const std::ffi::c_char) -> Option<&'a CStr> {
    // SAFETY: CUPTI's name strings are NUL-terminated and outlive the buffer.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) })
}
