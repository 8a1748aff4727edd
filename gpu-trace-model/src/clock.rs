//! The clocks and ids gpu-trace stamps events with: one implementation for
//! the whole workspace (the CUPTI wrapper's timestamp callback and the
//! simulators read the same clock), without `unsafe`.

use rustix::time::{ClockId, clock_gettime};

fn read(id: ClockId) -> u64 {
    let t = clock_gettime(id);
    // Wrapping: never a panic, even where a caller is an `extern "C"`
    // callback (CUPTI's timestamp callback).
    (t.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(t.tv_nsec as u64)
}

/// CLOCK_BOOTTIME in nanoseconds: Perfetto's trace clock on Linux.
pub fn boottime_ns() -> u64 {
    read(ClockId::Boottime)
}

/// CPU time the calling thread has used, ns (CLOCK_THREAD_CPUTIME_ID).
pub fn thread_cpu_ns() -> u64 {
    read(ClockId::ThreadCPUTime)
}

/// The calling thread's OS id (what `gettid` returns).
pub fn thread_id() -> u32 {
    rustix::thread::gettid().as_raw_nonzero().get() as u32
}

/// The process id.
pub fn process_id() -> u32 {
    std::process::id()
}
