//! The traced program's own control of recording: what the C API of
//! `gpu_trace.h` (`gpu_trace_start`, `gpu_trace_window_begin`, ...) does.
//! Each injection library exports those functions from its `ffi` module and
//! calls its [`ProgramControl`] here.
//!
//! Windows the program opens are windows of the process's controller
//! ([`crate::windows`]), opened and closed as `gpu-trace start|stop` does
//! over the socket ([`WindowsHandle`]): the program, the socket and the
//! time plan switch one recording, and each window is a `recording window
//! N opened (why)` line of the trace's log, `why` being the name the
//! program gave.
//!
//! **Before the tool starts** (CUDA starts it in `cuInit`, HIP when its
//! runtime loads; a program may call earlier, having loaded the library
//! itself) a request is kept, the latest one winning, and decides how
//! recording starts: `start` or a window opens it at once under its name,
//! `stop` or a window that already ended starts the run paused (as
//! `INJECTION_PAUSED=1`). Such calls return [`status::PENDING`].

use crate::windows::{Plan, Windows, WindowsHandle};
use gpu_trace_model::Recorder;
use gpu_trace_model::capture::RecordingSwitch;
use gpu_trace_model::log::plain;
use std::sync::{Arc, Mutex};

/// What the control functions return (the `GPU_TRACE_*` values of
/// `gpu_trace.h`).
pub mod status {
    /// Done.
    pub const OK: i32 = 0;
    /// The tool has not started yet: the request is kept and applied when
    /// it starts (ranges: not recorded, nothing is yet).
    pub const PENDING: i32 = 1;
    /// gpu-trace is off in this process: it could not start, or would not.
    pub const OFF: i32 = -1;
    /// Recording cannot be switched in this process: it records the whole
    /// run (`INJECTION_CONTROL=off` without a time plan), or tracing ended.
    pub const FIXED: i32 = -2;
    /// A bad argument: a null name, or a window end without its begin.
    pub const INVALID: i32 = -3;
}

/// The version of the C API this library implements
/// (`GPU_TRACE_API_VERSION`); a new function raises it.
pub const API_VERSION: i32 = 1;

/// The process's one control (a `static` of each injection library).
#[derive(Debug)]
pub struct ProgramControl {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
enum State {
    /// The tool has not started: what the program asked meanwhile.
    NotStarted(Option<Request>),
    /// The tool runs; its controller, if recording can be switched.
    Running(Option<Handle>),
    /// gpu-trace is off in this process.
    Off,
}

#[derive(Clone)]
struct Handle {
    windows: WindowsHandle,
    switch: Arc<dyn RecordingSwitch>,
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("open", &self.windows.is_open())
            .finish()
    }
}

/// A request made before the tool started.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Request {
    /// Recording on from the start, the window named so.
    Open(String),
    /// Recording off at the start.
    Close,
}

#[derive(Debug)]
struct Inner {
    state: State,
    /// Windows begun and not yet ended, outermost first: the name, and
    /// whether its begin opened recording (then its end closes it).
    nest: Vec<(String, bool)>,
}

/// Why a `gpu_trace_start` window opened, in the trace's log.
const START: &str = "gpu_trace_start";
/// Why a `gpu_trace_stop` closed the window.
const STOP: &str = "gpu_trace_stop";

impl Default for ProgramControl {
    fn default() -> Self {
        Self::new()
    }
}

impl ProgramControl {
    /// Before the tool starts, with no request.
    pub const fn new() -> Self {
        Self {
            inner: Mutex::new(Inner {
                state: State::NotStarted(None),
                nest: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The tool is starting with `plan`: a request the program made before
    /// starts it paused, so that the tool opens no window of its own
    /// ([`ProgramControl::attach`] then opens the program's). Returns
    /// whether there was one.
    pub fn before_start(&self, plan: &mut Plan) -> bool {
        let g = self.lock();
        let State::NotStarted(Some(r)) = &g.state else {
            return false;
        };
        gpu_trace_model::verbose!(
            "the program switched recording {} before gpu-trace started; starting {}",
            if matches!(r, Request::Open(_)) {
                "on"
            } else {
                "off"
            },
            if matches!(r, Request::Open(_)) {
                "with its window open"
            } else {
                "paused"
            }
        );
        plan.paused = true;
        true
    }

    /// Starts the recording windows of `plan` (its schedule and control
    /// socket) and attaches the program's own window to them, as each
    /// injection does once its tracer runs. Returns the windows (`None`:
    /// recording is never switched) and whether recording is open now:
    /// the plan opens at start, or the program asked for a window before
    /// the tool started.
    pub fn start_windows<S: RecordingSwitch + Clone + 'static>(
        &self,
        plan: &Plan,
        switch: S,
        recorder: Recorder,
    ) -> (Option<Windows>, bool) {
        let windows = Windows::start(plan, switch.clone(), recorder);
        let opened = self.attach(windows.as_ref().map(Windows::handle), switch);
        (windows, plan.open_at_start() || opened)
    }

    /// The tool started; `windows` switches its recording (`None`: it
    /// cannot be switched). The program's request, if it made one
    /// meanwhile, is applied now. Returns whether that opened a window.
    pub fn attach(
        &self,
        windows: Option<WindowsHandle>,
        switch: impl RecordingSwitch + 'static,
    ) -> bool {
        let switch: Arc<dyn RecordingSwitch> = Arc::new(switch);
        let mut g = self.lock();
        let request = match &mut g.state {
            State::NotStarted(r) => r.take(),
            _ => None,
        };
        let handle = windows.map(|windows| Handle { windows, switch });
        let opened = match (&request, &handle) {
            (Some(Request::Open(why)), Some(h)) => h.windows.switch(true, why),
            (Some(Request::Open(_)), None) => {
                gpu_trace_model::warn!(
                    "the program's window cannot open: recording cannot be switched in this process (INJECTION_CONTROL=off)"
                );
                false
            }
            (Some(Request::Close) | None, _) => false,
        };
        g.state = State::Running(handle);
        opened
    }

    /// gpu-trace will not run in this process: calls say so from now on.
    pub fn off(&self) {
        self.lock().state = State::Off;
    }

    /// `gpu_trace_start`: opens a window, unless one is open.
    pub fn start(&self) -> i32 {
        self.switch(true, START)
    }

    /// `gpu_trace_stop`: closes the window, if one is open.
    pub fn stop(&self) -> i32 {
        self.switch(false, STOP)
    }

    fn switch(&self, open: bool, why: &str) -> i32 {
        let mut g = self.lock();
        match &mut g.state {
            State::NotStarted(r) => {
                *r = Some(if open {
                    Request::Open(why.to_owned())
                } else {
                    Request::Close
                });
                status::PENDING
            }
            State::Off => status::OFF,
            State::Running(None) => status::FIXED,
            State::Running(Some(h)) => {
                if h.windows.switch(open, why) {
                    status::OK
                } else {
                    status::FIXED
                }
            }
        }
    }

    /// `gpu_trace_window_begin`: opens a window named `name`, unless one
    /// is open (then this one only nests in it, and its end closes
    /// nothing).
    pub fn window_begin(&self, name: Option<&str>) -> i32 {
        let Some(name) = name else {
            return status::INVALID;
        };
        let name = plain(name).to_string();
        let mut g = self.lock();
        let (rc, opened) = match &mut g.state {
            State::NotStarted(r) => {
                let opens = !matches!(r, Some(Request::Open(_)));
                if opens {
                    *r = Some(Request::Open(name.clone()));
                }
                (status::PENDING, opens)
            }
            State::Off => return status::OFF,
            State::Running(None) => return status::FIXED,
            State::Running(Some(h)) => {
                if h.windows.is_open() {
                    (status::OK, false)
                } else if h.windows.switch(true, &name) {
                    (status::OK, true)
                } else {
                    return status::FIXED;
                }
            }
        };
        g.nest.push((name, opened));
        rc
    }

    /// `gpu_trace_window_end`: ends the innermost window begun, closing
    /// recording when its begin opened it.
    pub fn window_end(&self) -> i32 {
        let mut g = self.lock();
        let Some((name, opened)) = g.nest.pop() else {
            return status::INVALID;
        };
        match &mut g.state {
            State::NotStarted(r) => {
                if opened {
                    *r = Some(Request::Close);
                }
                status::PENDING
            }
            State::Off => status::OFF,
            State::Running(None) => status::FIXED,
            State::Running(Some(h)) => {
                if opened && !h.windows.switch(false, &name) {
                    return status::FIXED;
                }
                status::OK
            }
        }
    }

    /// `gpu_trace_is_active`: 1 while recording is on, 0 while it is off
    /// (and before the tool starts: nothing is recorded yet), or
    /// [`status::OFF`].
    pub fn is_active(&self) -> i32 {
        match &self.lock().state {
            State::NotStarted(_) => 0,
            State::Off => status::OFF,
            State::Running(None) => 1,
            State::Running(Some(h)) => i32::from(h.switch.is_open()),
        }
    }

    /// Where the tool is, for the calls that need it running (ranges):
    /// [`status::OK`] when it runs, else [`status::PENDING`] or
    /// [`status::OFF`].
    pub fn running(&self) -> i32 {
        match &self.lock().state {
            State::NotStarted(_) => status::PENDING,
            State::Off => status::OFF,
            State::Running(_) => status::OK,
        }
    }
}

#[doc(hidden)]
pub use gpu_trace_model::guard::catch as __catch;

/// The C API of `gpu_trace.h`, exported by the injection library whose
/// `ffi` module invokes it (the one place its `unsafe` code may be):
/// `program` is the library's [`ProgramControl`], `range` pushes
/// (`Some(name)`) or pops (`None`) a range on the calling thread and
/// returns a [`status`]. Every function returns at once, never unwinds
/// (a panic is reported once and the call says gpu-trace is off), and does
/// nothing harmful when gpu-trace is off.
#[macro_export]
macro_rules! c_api {
    (program: $program:expr, range: $range:expr $(,)?) => {
        /// The crate version, NUL-terminated, for `gpu_trace_version`.
        const VERSION: &::std::ffi::CStr = match ::std::ffi::CStr::from_bytes_with_nul(
            concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes(),
        ) {
            Ok(v) => v,
            Err(_) => panic!("the crate version holds a NUL"),
        };

        /// Runs a control function inside the panic guard.
        fn control(what: &'static str, f: impl FnOnce() -> i32) -> ::std::ffi::c_int {
            $crate::program::__catch(what, f).unwrap_or($crate::program::status::OFF)
        }

        /// `name` as a string, or `None` when null.
        ///
        /// # Safety
        /// `name` is null or a NUL-terminated string valid for the call.
        unsafe fn name_arg<'a>(name: *const ::std::ffi::c_char) -> Option<&'a ::std::ffi::CStr> {
            if name.is_null() {
                return None;
            }
            // SAFETY: the caller's NUL-terminated string, read during the call only.
            Some(unsafe { ::std::ffi::CStr::from_ptr(name) })
        }

        /// This library's version (the crate version, e.g. `0.1.0`); a static string.
        #[unsafe(no_mangle)]
        pub extern "C" fn gpu_trace_version() -> *const ::std::ffi::c_char {
            VERSION.as_ptr()
        }

        /// The version of the C API this library implements (`GPU_TRACE_API_VERSION`).
        #[unsafe(no_mangle)]
        pub extern "C" fn gpu_trace_api_version() -> ::std::ffi::c_int {
            $crate::program::API_VERSION
        }

        /// Opens a recording window, unless one is open.
        #[unsafe(no_mangle)]
        pub extern "C" fn gpu_trace_start() -> ::std::ffi::c_int {
            control("gpu_trace_start", || $program.start())
        }

        /// Closes the recording window, if one is open.
        #[unsafe(no_mangle)]
        pub extern "C" fn gpu_trace_stop() -> ::std::ffi::c_int {
            control("gpu_trace_stop", || $program.stop())
        }

        /// Opens a recording window named `name`, unless one is open (then it nests).
        ///
        /// # Safety
        /// `name` is null (refused) or a NUL-terminated string.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn gpu_trace_window_begin(
            name: *const ::std::ffi::c_char,
        ) -> ::std::ffi::c_int {
            // SAFETY: as this function's contract says.
            let name = unsafe { name_arg(name) };
            control("gpu_trace_window_begin", || {
                $program.window_begin(name.map(|n| n.to_string_lossy()).as_deref())
            })
        }

        /// Ends the innermost window begun; closes recording if its begin opened it.
        #[unsafe(no_mangle)]
        pub extern "C" fn gpu_trace_window_end() -> ::std::ffi::c_int {
            control("gpu_trace_window_end", || $program.window_end())
        }

        /// 1 while recording, 0 while not, negative when gpu-trace is off.
        #[unsafe(no_mangle)]
        pub extern "C" fn gpu_trace_is_active() -> ::std::ffi::c_int {
            control("gpu_trace_is_active", || $program.is_active())
        }

        /// Pushes a range named `name` on the calling thread, as `nvtxRangePushA`.
        ///
        /// # Safety
        /// `name` is null (refused) or a NUL-terminated string.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn gpu_trace_range_push(
            name: *const ::std::ffi::c_char,
        ) -> ::std::ffi::c_int {
            // SAFETY: as this function's contract says.
            let Some(name) = (unsafe { name_arg(name) }) else {
                return $crate::program::status::INVALID;
            };
            control("gpu_trace_range_push", || ($range)(Some(name)))
        }

        /// Pops the calling thread's innermost range, as `nvtxRangePop`.
        #[unsafe(no_mangle)]
        pub extern "C" fn gpu_trace_range_pop() -> ::std::ffi::c_int {
            control("gpu_trace_range_pop", || ($range)(None))
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_before_the_start_are_kept_the_latest_winning() {
        let p = ProgramControl::new();
        let mut plan = Plan::default();
        assert!(!p.before_start(&mut plan));
        assert!(!plan.paused, "no request: the plan is the environment's");
        assert_eq!(p.is_active(), 0);
        assert_eq!(p.start(), status::PENDING);
        assert_eq!(p.stop(), status::PENDING);
        assert_eq!(p.running(), status::PENDING);
        assert!(p.before_start(&mut plan));
        assert!(plan.paused);
        // A window that began and ended before the start leaves it paused.
        let p = ProgramControl::new();
        assert_eq!(p.window_begin(Some("init")), status::PENDING);
        assert_eq!(p.window_end(), status::PENDING);
        assert!(matches!(
            p.lock().state,
            State::NotStarted(Some(Request::Close))
        ));
        // One still open starts the run with it, under its name.
        assert_eq!(p.window_begin(Some("load\n")), status::PENDING);
        assert_eq!(
            p.lock().nest,
            vec![("load\\n".to_owned(), true)],
            "names are escaped as values are"
        );
        assert!(matches!(
            &p.lock().state,
            State::NotStarted(Some(Request::Open(n))) if n == "load\\n"
        ));
        // A nested one opens nothing of its own.
        assert_eq!(p.window_begin(Some("inner")), status::PENDING);
        assert_eq!(p.window_end(), status::PENDING);
        assert!(matches!(
            p.lock().state,
            State::NotStarted(Some(Request::Open(_)))
        ));
    }

    #[test]
    fn bad_calls_and_an_off_tool_say_so() {
        let p = ProgramControl::new();
        assert_eq!(p.window_begin(None), status::INVALID);
        assert_eq!(p.window_end(), status::INVALID);
        p.off();
        assert_eq!(p.start(), status::OFF);
        assert_eq!(p.stop(), status::OFF);
        assert_eq!(p.window_begin(Some("x")), status::OFF);
        assert_eq!(p.is_active(), status::OFF);
        assert_eq!(p.running(), status::OFF);
    }
}
