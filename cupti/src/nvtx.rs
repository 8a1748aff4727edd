//! Typed views of NVTX-domain callbacks (`CUPTI_CB_DOMAIN_NVTX`).
//!
//! NVTX callbacks have no entry/exit pair: CUPTI calls once per NVTX call,
//! passing the call's parameters and a pointer to its return value
//! (`CUpti_NvtxData::functionReturnValue`, "see nvToolsExt.h for each NVTX API
//! function's return value"): the range id of `nvtxRangeStart*`, the handle of
//! `nvtxDomainCreate*` / `nvtxDomainRegisterString*`. Those are read when the
//! pointer is non-null and `None` otherwise.

use std::{ffi::CStr, fmt, marker::PhantomData};

use cupti_sys as sys;
use sys::CUpti_nvtx_api_trace_cbid as N;

/// An NVTX message.
#[derive(Clone, Copy, Debug)]
pub enum NvtxMessage<'a> {
    /// An ASCII (`A` functions / `NVTX_MESSAGE_TYPE_ASCII`) string.
    Ascii(&'a CStr),
    /// A wide (`W` functions / `NVTX_MESSAGE_TYPE_UNICODE`) string, decoded on demand.
    Unicode(WideStr<'a>),
    /// A string registered with `nvtxDomainRegisterString*` (its handle).
    Registered(u64),
    /// No message.
    None,
}

impl fmt::Display for NvtxMessage<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ascii(s) => write!(f, "{}", s.to_string_lossy()),
            Self::Unicode(w) => write!(f, "{w}"),
            Self::Registered(h) => write!(f, "<registered string {h:#x}>"),
            Self::None => Ok(()),
        }
    }
}

/// A NUL-terminated `wchar_t` string (UTF-32 on Linux), borrowed from NVTX.
#[derive(Clone, Copy)]
pub struct WideStr<'a> {
    ptr: *const u32,
    _life: PhantomData<&'a [u32]>,
}

impl WideStr<'_> {
    /// Wraps a NUL-terminated `wchar_t` string.
    ///
    /// # Safety
    ///
    /// `ptr` is non-null, NUL-terminated and valid for the borrow.
    pub(crate) unsafe fn from_ptr(ptr: *const u32) -> Self {
        WideStr {
            ptr,
            _life: PhantomData,
        }
    }

    /// The code units, without the terminator.
    pub fn units(&self) -> &[u32] {
        let mut n = 0;
        // SAFETY: NVTX strings are NUL-terminated and valid during the callback
        // (the lifetime of `self`).
        unsafe {
            while *self.ptr.add(n) != 0 {
                n += 1;
            }
            std::slice::from_raw_parts(self.ptr, n)
        }
    }

    /// Decodes to a `String`, replacing invalid code points.
    pub fn to_string_lossy(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for WideStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for &u in self.units() {
            fmt::Write::write_char(f, char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER))?;
        }
        Ok(())
    }
}

impl fmt::Debug for WideStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_string())
    }
}

/// An `Ex` call's payload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Payload {
    /// `NVTX_PAYLOAD_TYPE_UNSIGNED_INT64`.
    U64(u64),
    /// `NVTX_PAYLOAD_TYPE_INT64`.
    I64(i64),
    /// `NVTX_PAYLOAD_TYPE_DOUBLE`.
    F64(f64),
    /// `NVTX_PAYLOAD_TYPE_UNSIGNED_INT32`.
    U32(u32),
    /// `NVTX_PAYLOAD_TYPE_INT32`.
    I32(i32),
    /// `NVTX_PAYLOAD_TYPE_FLOAT`.
    F32(f32),
}

/// The attributes of an `Ex` call besides its message.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Attributes {
    /// ARGB color, when one is given.
    pub color: Option<u32>,
    /// Category (0 = none).
    pub category: u32,
    /// Payload, when one is given.
    pub payload: Option<Payload>,
}

/// What an NVTX call did.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum NvtxEvent<'a> {
    /// `nvtxMark{A,W,Ex}`, `nvtxDomainMarkEx`.
    Mark {
        /// Domain handle (`None`: the default domain).
        domain: Option<u64>,
        /// Message.
        message: NvtxMessage<'a>,
        /// `Ex` attributes.
        attributes: Attributes,
    },
    /// `nvtxRangeStart{A,W,Ex}`, `nvtxDomainRangeStartEx`.
    RangeStart {
        /// Domain handle.
        domain: Option<u64>,
        /// Message.
        message: NvtxMessage<'a>,
        /// `Ex` attributes.
        attributes: Attributes,
        /// The returned range id.
        id: Option<u64>,
    },
    /// `nvtxRangeEnd`, `nvtxDomainRangeEnd`.
    RangeEnd {
        /// Domain handle.
        domain: Option<u64>,
        /// The id from the matching start.
        id: u64,
    },
    /// `nvtxRangePush{A,W,Ex}`, `nvtxDomainRangePushEx`.
    Push {
        /// Domain handle.
        domain: Option<u64>,
        /// Message.
        message: NvtxMessage<'a>,
        /// `Ex` attributes.
        attributes: Attributes,
    },
    /// `nvtxRangePop`, `nvtxDomainRangePop`.
    Pop {
        /// Domain handle.
        domain: Option<u64>,
    },
    /// `nvtxDomainCreate{A,W}`.
    DomainCreate {
        /// The domain's name.
        name: NvtxMessage<'a>,
        /// The returned handle.
        handle: Option<u64>,
    },
    /// `nvtxDomainDestroy`.
    DomainDestroy {
        /// The handle.
        domain: u64,
    },
    /// `nvtxDomainRegisterString{A,W}`.
    RegisterString {
        /// Domain handle.
        domain: Option<u64>,
        /// The registered string.
        string: NvtxMessage<'a>,
        /// The returned string handle.
        handle: Option<u64>,
    },
    /// Any other NVTX callback (naming calls, sync users, …).
    Other {
        /// The `CUpti_nvtx_api_trace_cbid`.
        cbid: u32,
    },
}

/// An NVTX-domain callback.
pub struct NvtxCallback<'a> {
    cbid: u32,
    data: &'a sys::CUpti_NvtxData,
}

impl fmt::Debug for NvtxCallback<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NvtxCallback")
            .field("cbid", &self.cbid)
            .field("event", &self.event())
            .finish()
    }
}

fn handle<T>(p: *mut T) -> Option<u64> {
    (!p.is_null()).then_some(p as u64)
}

fn ascii<'a>(p: *const std::ffi::c_char) -> NvtxMessage<'a> {
    if p.is_null() {
        NvtxMessage::None
    } else {
        // SAFETY: NVTX messages are NUL-terminated, valid during the callback.
        NvtxMessage::Ascii(unsafe { CStr::from_ptr(p) })
    }
}

fn wide<'a>(p: *const u32) -> NvtxMessage<'a> {
    if p.is_null() {
        NvtxMessage::None
    } else {
        NvtxMessage::Unicode(WideStr {
            ptr: p,
            _life: PhantomData,
        })
    }
}

/// Message and attributes of an `nvtxEventAttributes_t`, honouring its `size`.
///
/// # Safety
///
/// `a` is null or points to the caller's attributes, valid during the callback.
pub(crate) unsafe fn attributes<'a>(
    a: *const sys::nvtxEventAttributes_t,
) -> (NvtxMessage<'a>, Attributes) {
    // SAFETY: caller contract.
    let Some(a) = (unsafe { a.as_ref() }) else {
        return (NvtxMessage::None, Attributes::default());
    };
    // Older/partial structs declare a smaller `size`; read only what is there.
    if usize::from(a.size) < sys::struct_size!(sys::nvtxEventAttributes_t, message) {
        return (NvtxMessage::None, Attributes::default());
    }
    let color = (a.colorType == sys::nvtxColorType_t::NVTX_COLOR_ARGB.0 as i32).then_some(a.color);
    type P = sys::nvtxPayloadType_t;
    // SAFETY: union reads; `payloadType` says which member is set.
    let payload = unsafe {
        match a.payloadType as u32 {
            x if x == P::NVTX_PAYLOAD_TYPE_UNSIGNED_INT64.0 => {
                Some(Payload::U64(a.payload.ullValue))
            }
            x if x == P::NVTX_PAYLOAD_TYPE_INT64.0 => Some(Payload::I64(a.payload.llValue)),
            x if x == P::NVTX_PAYLOAD_TYPE_DOUBLE.0 => Some(Payload::F64(a.payload.dValue)),
            x if x == P::NVTX_PAYLOAD_TYPE_UNSIGNED_INT32.0 => {
                Some(Payload::U32(a.payload.uiValue))
            }
            x if x == P::NVTX_PAYLOAD_TYPE_INT32.0 => Some(Payload::I32(a.payload.iValue)),
            x if x == P::NVTX_PAYLOAD_TYPE_FLOAT.0 => Some(Payload::F32(a.payload.fValue)),
            _ => None,
        }
    };
    type M = sys::nvtxMessageType_t;
    // SAFETY: union reads; `messageType` says which member is set.
    let message = unsafe {
        match a.messageType as u32 {
            x if x == M::NVTX_MESSAGE_TYPE_ASCII.0 => ascii(a.message.ascii),
            x if x == M::NVTX_MESSAGE_TYPE_UNICODE.0 => wide(a.message.unicode),
            x if x == M::NVTX_MESSAGE_TYPE_REGISTERED.0 => {
                NvtxMessage::Registered(a.message.registered as u64)
            }
            _ => NvtxMessage::None,
        }
    };
    (
        message,
        Attributes {
            color,
            category: a.category,
            payload,
        },
    )
}

impl<'a> NvtxCallback<'a> {
    pub(crate) fn new(cbid: u32, data: &'a sys::CUpti_NvtxData) -> Self {
        Self { cbid, data }
    }

    /// The `CUpti_nvtx_api_trace_cbid`.
    pub fn cbid(&self) -> u32 {
        self.cbid
    }

    /// The NVTX function's name.
    pub fn function_name(&self) -> &'a CStr {
        if self.data.functionName.is_null() {
            c""
        } else {
            // SAFETY: a constant string inside CUPTI.
            unsafe { CStr::from_ptr(self.data.functionName) }
        }
    }

    fn ret_u64(&self) -> Option<u64> {
        // SAFETY: for the calls that use this, the return value is a 64-bit
        // id or pointer-sized handle (nvToolsExt.h); null when absent.
        unsafe { self.data.functionReturnValue.cast::<u64>().as_ref() }.copied()
    }

    /// The typed event.
    pub fn event(&self) -> NvtxEvent<'a> {
        let p = self.data.functionParams;
        if p.is_null() && self.cbid != N::CUPTI_CBID_NVTX_nvtxRangePop.0 {
            return NvtxEvent::Other { cbid: self.cbid };
        }
        macro_rules! params {
            ($ty:ident) => {
                // SAFETY: for this id CUPTI passes a `$ty` (generated_nvtx_meta.h);
                // non-null (checked above), valid during the callback.
                unsafe { &*p.cast::<sys::$ty>() }
            };
        }
        let none = Attributes::default();
        match N(self.cbid) {
            N::CUPTI_CBID_NVTX_nvtxMarkA => NvtxEvent::Mark {
                domain: None,
                message: ascii(params!(nvtxMarkA_params).message),
                attributes: none,
            },
            N::CUPTI_CBID_NVTX_nvtxMarkW => NvtxEvent::Mark {
                domain: None,
                message: wide(params!(nvtxMarkW_params).message),
                attributes: none,
            },
            N::CUPTI_CBID_NVTX_nvtxMarkEx => {
                let q = params!(nvtxMarkEx_params);
                // SAFETY: the caller's attributes, valid during the callback.
                let (message, attributes) = unsafe { attributes(q.eventAttrib) };
                NvtxEvent::Mark {
                    domain: None,
                    message,
                    attributes,
                }
            }
            N::CUPTI_CBID_NVTX_nvtxDomainMarkEx => {
                let q = params!(nvtxDomainMarkEx_params);
                // SAFETY: as above.
                let (message, attributes) = unsafe { attributes(q.core.eventAttrib) };
                NvtxEvent::Mark {
                    domain: handle(q.domain),
                    message,
                    attributes,
                }
            }
            N::CUPTI_CBID_NVTX_nvtxRangeStartA => NvtxEvent::RangeStart {
                domain: None,
                message: ascii(params!(nvtxRangeStartA_params).message),
                attributes: none,
                id: self.ret_u64(),
            },
            N::CUPTI_CBID_NVTX_nvtxRangeStartW => NvtxEvent::RangeStart {
                domain: None,
                message: wide(params!(nvtxRangeStartW_params).message),
                attributes: none,
                id: self.ret_u64(),
            },
            N::CUPTI_CBID_NVTX_nvtxRangeStartEx => {
                let q = params!(nvtxRangeStartEx_params);
                // SAFETY: as above.
                let (message, attributes) = unsafe { attributes(q.eventAttrib) };
                NvtxEvent::RangeStart {
                    domain: None,
                    message,
                    attributes,
                    id: self.ret_u64(),
                }
            }
            N::CUPTI_CBID_NVTX_nvtxDomainRangeStartEx => {
                let q = params!(nvtxDomainRangeStartEx_params);
                // SAFETY: as above.
                let (message, attributes) = unsafe { attributes(q.core.eventAttrib) };
                NvtxEvent::RangeStart {
                    domain: handle(q.domain),
                    message,
                    attributes,
                    id: self.ret_u64(),
                }
            }
            N::CUPTI_CBID_NVTX_nvtxRangeEnd => NvtxEvent::RangeEnd {
                domain: None,
                id: params!(nvtxRangeEnd_params).id,
            },
            N::CUPTI_CBID_NVTX_nvtxDomainRangeEnd => {
                let q = params!(nvtxDomainRangeEnd_params);
                NvtxEvent::RangeEnd {
                    domain: handle(q.domain),
                    id: q.core.id,
                }
            }
            N::CUPTI_CBID_NVTX_nvtxRangePushA => NvtxEvent::Push {
                domain: None,
                message: ascii(params!(nvtxRangePushA_params).message),
                attributes: none,
            },
            N::CUPTI_CBID_NVTX_nvtxRangePushW => NvtxEvent::Push {
                domain: None,
                message: wide(params!(nvtxRangePushW_params).message),
                attributes: none,
            },
            N::CUPTI_CBID_NVTX_nvtxRangePushEx => {
                let q = params!(nvtxRangePushEx_params);
                // SAFETY: as above.
                let (message, attributes) = unsafe { attributes(q.eventAttrib) };
                NvtxEvent::Push {
                    domain: None,
                    message,
                    attributes,
                }
            }
            N::CUPTI_CBID_NVTX_nvtxDomainRangePushEx => {
                let q = params!(nvtxDomainRangePushEx_params);
                // SAFETY: as above.
                let (message, attributes) = unsafe { attributes(q.core.eventAttrib) };
                NvtxEvent::Push {
                    domain: handle(q.domain),
                    message,
                    attributes,
                }
            }
            N::CUPTI_CBID_NVTX_nvtxRangePop => NvtxEvent::Pop { domain: None },
            N::CUPTI_CBID_NVTX_nvtxDomainRangePop => NvtxEvent::Pop {
                domain: handle(params!(nvtxDomainRangePop_params).domain),
            },
            N::CUPTI_CBID_NVTX_nvtxDomainCreateA => NvtxEvent::DomainCreate {
                name: ascii(params!(nvtxDomainCreateA_params).name),
                handle: self.ret_u64(),
            },
            N::CUPTI_CBID_NVTX_nvtxDomainCreateW => NvtxEvent::DomainCreate {
                // generated_nvtx_meta.h has no `W` struct; it is the `A` one with
                // a `const wchar_t*` name (nvToolsExt.h, nvtxDomainCreateW).
                name: wide(params!(nvtxDomainCreateA_params).name.cast()),
                handle: self.ret_u64(),
            },
            N::CUPTI_CBID_NVTX_nvtxDomainDestroy => NvtxEvent::DomainDestroy {
                domain: params!(nvtxDomainDestroy_params).domain as u64,
            },
            N::CUPTI_CBID_NVTX_nvtxDomainRegisterStringA => {
                let q = params!(nvtxDomainRegisterStringA_params);
                NvtxEvent::RegisterString {
                    domain: handle(q.domain),
                    string: ascii(q.string),
                    handle: self.ret_u64(),
                }
            }
            N::CUPTI_CBID_NVTX_nvtxDomainRegisterStringW => {
                let q = params!(nvtxDomainRegisterStringW_params);
                // The meta header declares `const char*`, but nvtxDomainRegisterStringW
                // takes `const wchar_t*`.
                NvtxEvent::RegisterString {
                    domain: handle(q.domain),
                    string: wide(q.string.cast()),
                    handle: self.ret_u64(),
                }
            }
            _ => NvtxEvent::Other { cbid: self.cbid },
        }
    }
}
