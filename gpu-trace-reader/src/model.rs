//! What a trace decodes into.

use std::fmt;
use std::sync::Arc;

/// Text that many events share, such as an interned name: one allocation
/// per distinct string in a trace, so cloning is a reference count. Derefs
/// to and compares with `str`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Str(Arc<str>);

impl Str {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether both are the same allocation (so the same text).
    #[inline]
    pub(crate) fn ptr_eq(a: &Str, b: &Str) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }

    /// UTF-8 text, with invalid sequences replaced.
    pub(crate) fn from_utf8_lossy(b: &[u8]) -> Str {
        match std::str::from_utf8(b) {
            Ok(s) => Str(s.into()),
            Err(_) => Str(String::from_utf8_lossy(b).into()),
        }
    }
}

impl std::ops::Deref for Str {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Str {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for Str {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Str {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl fmt::Debug for Str {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl From<&str> for Str {
    fn from(s: &str) -> Str {
        Str(s.into())
    }
}

impl From<String> for Str {
    fn from(s: String) -> Str {
        Str(s.into())
    }
}

impl From<Str> for String {
    fn from(s: Str) -> String {
        s.0.as_ref().to_owned()
    }
}

macro_rules! str_eq {
    ($($t:ty),*) => {$(
        impl PartialEq<$t> for Str {
            fn eq(&self, o: &$t) -> bool {
                *self.0 == **o
            }
        }
        impl PartialEq<Str> for $t {
            fn eq(&self, o: &Str) -> bool {
                **self == *o.0
            }
        }
    )*};
}
str_eq!(&str, String);

impl PartialEq<str> for Str {
    fn eq(&self, o: &str) -> bool {
        *self.0 == *o
    }
}

impl PartialEq<Str> for str {
    fn eq(&self, o: &Str) -> bool {
        *self == *o.0
    }
}

/// An argument value.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgVal {
    /// Signed integer.
    Int(i64),
    /// Unsigned integer.
    Uint(u64),
    /// Floating point.
    Double(f64),
    /// Text.
    Str(String),
}

impl ArgVal {
    /// The value as an unsigned integer, if it is an integer ≥ 0.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            ArgVal::Uint(u) => Some(u),
            ArgVal::Int(i) if i >= 0 => Some(i as u64),
            _ => None,
        }
    }

    /// The value as a double.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            ArgVal::Uint(u) => Some(u as f64),
            ArgVal::Int(i) => Some(i as f64),
            ArgVal::Double(d) => Some(d),
            ArgVal::Str(_) => None,
        }
    }

    /// The value as text.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            ArgVal::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// Named arguments: (name, value) in the order the trace has them.
pub type Args = Vec<(Str, ArgVal)>;

pub(crate) fn arg<'a>(args: &'a Args, name: &str) -> Option<&'a ArgVal> {
    args.iter().find(|(n, _)| n == name).map(|(_, v)| v)
}

/// Render-stage kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    /// Kernel execution.
    Kernel,
    /// Memory copy.
    Memcpy,
    /// Memory set.
    Memset,
    /// Anything else (by stage name).
    Other(Str),
}

impl Stage {
    pub(crate) fn from_name(name: &Str) -> Stage {
        match name.as_str() {
            "Kernel" => Stage::Kernel,
            "Memcpy" => Stage::Memcpy,
            "Memset" => Stage::Memset,
            _ => Stage::Other(name.clone()),
        }
    }
}

/// An interned compute kernel (`InternedComputeKernel`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KernelInfo {
    /// Mangled name.
    pub name: String,
    /// Demangled name.
    pub demangled: String,
    /// Architecture.
    pub arch: String,
    /// Per-kernel args.
    pub args: Args,
}

/// The graphics context a GPU event names (`InternedGraphicsContext`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Context {
    /// The context's iid on its sequence.
    pub iid: u64,
    /// Process that owns it.
    pub pid: i64,
    /// `InternedGraphicsContext.Api` value (4 CUDA, 5 HIP).
    pub api: u64,
}

/// One `GpuRenderStageEvent`.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuEvent {
    /// `event_id`.
    pub event_id: u64,
    /// Start, ns in the trace clock.
    pub ts: u64,
    /// Duration, ns.
    pub dur: u64,
    /// `gpu_id`.
    pub gpu_id: Option<i64>,
    /// Stage kind.
    pub stage: Stage,
    /// Slice name as the UI shows it.
    pub name: Str,
    /// Hardware queue (track) name.
    pub queue: Str,
    /// Hardware queue description.
    pub queue_description: Str,
    /// The context, if the event names one that resolves.
    pub context: Option<Context>,
    /// The interned kernel, for kernels (shared by every launch of it).
    pub kernel: Option<Arc<KernelInfo>>,
    /// Grid size.
    pub grid: Option<[u32; 3]>,
    /// Workgroup (block) size.
    pub block: Option<[u32; 3]>,
    /// Launch args.
    pub args: Args,
    /// Sequence it was written on.
    pub sequence: u32,
}

impl GpuEvent {
    /// A launch arg by name.
    pub fn arg(&self, name: &str) -> Option<&ArgVal> {
        arg(&self.args, name)
    }

    /// Bytes moved or set (memory operations).
    pub fn bytes(&self) -> Option<u64> {
        self.arg("bytes").and_then(ArgVal::as_u64)
    }

    /// Whether the id is from the second id space (GPU work after the first
    /// of one correlation, such as graph nodes).
    pub fn is_secondary(&self) -> bool {
        self.event_id & crate::SECONDARY_EVENT_ID_BIT != 0
    }
}

/// A completed track-event slice (API call or marker range).
#[derive(Debug, Clone, PartialEq)]
pub struct Slice {
    /// Track uuid.
    pub track: u64,
    /// Name.
    pub name: Str,
    /// Start, ns.
    pub ts: u64,
    /// Duration, ns.
    pub dur: u64,
    /// Nesting depth on its track (0 = outermost).
    pub depth: u32,
    /// GpuCorrelation submission event ids.
    pub submissions: Vec<u64>,
    /// GpuCorrelation wait event ids.
    pub waits: Vec<u64>,
    /// `gpu_api` value, if set.
    pub gpu_api: Option<u64>,
    /// Debug annotations.
    pub args: Args,
    /// The source call stack that made the call (`callstack_iid`), outermost
    /// frame first.
    pub callstack: Option<Callstack>,
}

/// A source call stack, outermost frame first.
pub type Callstack = Arc<[CallFrame]>;

/// One frame of a [`Callstack`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CallFrame {
    /// The function (`Model.forward`).
    pub function: Str,
    /// Its source file.
    pub file: Str,
    /// The line, from 1 (0: unknown).
    pub line: u32,
}

impl Slice {
    /// A debug annotation by name.
    pub fn arg(&self, name: &str) -> Option<&ArgVal> {
        arg(&self.args, name)
    }
}

/// An instant track event.
#[derive(Debug, Clone, PartialEq)]
pub struct Instant {
    /// Track uuid.
    pub track: u64,
    /// Name.
    pub name: Str,
    /// When.
    pub ts: u64,
    /// Debug annotations.
    pub args: Args,
}

/// The thread a thread track belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thread {
    /// Process id.
    pub pid: i64,
    /// Thread id.
    pub tid: i64,
}

/// A process as the trace describes it (`ProcessDescriptor`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProcessInfo {
    /// Process id.
    pub pid: i64,
    /// Its name: that of its latest descriptor (by timestamp, then file
    /// order), as trace_processor names it.
    pub name: String,
    /// `process_labels` (`key=value` in gpu-trace's traces, such as
    /// `rank=1`) of the latest descriptor that has labels.
    pub labels: Vec<String>,
    /// When the named descriptor was written (0: no timestamp).
    pub(crate) named_at: u64,
}

impl ProcessInfo {
    /// The value of label `key=value`.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find_map(|l| l.split_once('=').filter(|(k, _)| *k == key).map(|(_, v)| v))
    }
}

/// A thread or named track.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrackInfo {
    /// Name (thread name for thread tracks).
    pub name: String,
    /// The thread, for thread tracks.
    pub thread: Option<Thread>,
    /// Parent track.
    pub parent: Option<u64>,
}

/// A counter's unit: `GpuCounterDescriptor.MeasureUnit` codes, multiplied.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CounterUnits {
    /// Numerator units.
    pub numerator: Vec<u64>,
    /// Denominator units.
    pub denominator: Vec<u64>,
}

/// One counter value.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterValue {
    /// `gpu_id`.
    pub gpu_id: i64,
    /// Counter name.
    pub name: Str,
    /// When, ns.
    pub ts: u64,
    /// Value.
    pub value: f64,
    /// `GpuCounterGroup` values of the counter.
    pub groups: Vec<u64>,
    /// Units.
    pub units: CounterUnits,
    /// Description.
    pub description: Str,
}

/// A device from `GpuInfo`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DeviceInfo {
    /// Position in the list: the `gpu_id`.
    pub gpu_id: usize,
    /// Name.
    pub name: String,
    /// Vendor.
    pub vendor: String,
    /// Model / ISA.
    pub model: String,
    /// Architecture.
    pub architecture: String,
    /// PCI bus id.
    pub pci_bdf: String,
    /// UUID bytes.
    pub uuid: Vec<u8>,
    /// Extra (key, value) pairs.
    pub extra: Vec<(String, String)>,
}

/// A `GpuLog` line.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    /// When, ns (the packet's timestamp).
    pub ts: u64,
    /// Severity code.
    pub severity: u64,
    /// Tag.
    pub tag: String,
    /// Message.
    pub message: String,
}
