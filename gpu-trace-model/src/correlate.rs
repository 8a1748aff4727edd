//! Which GPU work a synchronisation waited for.
//!
//! Every backend sees the same calls: submissions to streams (queues),
//! events recorded on streams, and waits on a stream, an event or a whole
//! device. The [`Correlator`] remembers the last submission per stream and
//! the work behind each recorded event, and answers a wait with the
//! correlation ids it covers, which become the wait arrows of the API
//! slice ([`crate::model::ApiCall::waits`]).
//!
//! Streams are plain `u64` handles in a backend-chosen handle space (see
//! [`StreamKey`]); the backend converts its own stream type at its boundary.

use crate::model::Timestamp;
use crate::sharded::Sharded;
use smallvec::SmallVec;

/// A stream as the correlator keys it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamKey {
    /// The space in which `stream` is unique. CUDA: the context. HIP: one
    /// process-wide space for stream handles, and each device's own for its
    /// null stream.
    pub space: u64,
    /// The stream (queue) handle.
    pub stream: u64,
}

impl StreamKey {
    /// A stream in `space`.
    pub const fn new(space: u64, stream: u64) -> Self {
        Self { space, stream }
    }
}

/// What a synchronisation waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// One stream (`cudaStreamSynchronize`, `hipStreamSynchronize`).
    Stream(StreamKey),
    /// Every stream of a scope, as given to [`Correlator::submitted`]
    /// (`cudaDeviceSynchronize`, `cuCtxSynchronize`, `hipDeviceSynchronize`).
    Scope(u64),
    /// A recorded event (`cudaEventSynchronize`, `hipEventSynchronize`).
    Event(u64),
}

/// The last submission to a stream.
#[derive(Debug, Clone, Copy)]
struct Last {
    /// The device-wide synchronisation that covers it.
    scope: u64,
    correlation: u64,
    /// When the submitting call returned.
    returned: Timestamp,
}

impl Last {
    /// A wait that began at `began` covers work whose submitting call had
    /// returned by then; what another thread submitted meanwhile is not what
    /// it waited for.
    fn before(self, began: Timestamp) -> Option<u64> {
        (self.returned <= began).then_some(self.correlation)
    }
}

/// Wait arrows drawn from one device-wide synchronisation, by default: more
/// hide the slice under its arrows.
pub const DEFAULT_WAIT_LIMIT: usize = 8;

/// Submit/wait bookkeeping shared by the API callbacks of all threads.
/// Sharded, so that threads on different streams rarely share a lock.
#[derive(Debug)]
pub struct Correlator {
    last_on_stream: Sharded<StreamKey, Last>,
    /// event → correlation of the last work before it was recorded.
    event_targets: Sharded<u64, u64>,
    wait_limit: usize,
}

impl Default for Correlator {
    fn default() -> Self {
        Self::new(DEFAULT_WAIT_LIMIT)
    }
}

impl Correlator {
    /// Empty; a device-wide wait points at the newest `wait_limit`
    /// submissions at most.
    pub fn new(wait_limit: usize) -> Self {
        Self {
            last_on_stream: Sharded::new(),
            event_targets: Sharded::new(),
            wait_limit,
        }
    }

    /// Work with `correlation` was submitted to `stream`, under the
    /// device-wide `scope` (CUDA context, HIP device), by a call that
    /// returned at `returned`.
    pub fn submitted(&self, stream: StreamKey, scope: u64, correlation: u64, returned: Timestamp) {
        self.last_on_stream.set(
            stream,
            Last {
                scope,
                correlation,
                returned,
            },
        );
    }

    /// An event was recorded on `stream` by a call that began at `began`: a
    /// later wait on it waits for the stream's last work before then (or
    /// for nothing, if there was none).
    pub fn event_recorded(&self, event: u64, stream: StreamKey, began: Timestamp) {
        match self
            .last_on_stream
            .get(&stream)
            .and_then(|l| l.before(began))
        {
            Some(c) => self.event_targets.set(event, c),
            None => self.event_targets.remove(&event),
        }
    }

    /// The correlation ids a synchronisation that began at `began` waited
    /// for; the newest first for a device-wide one.
    pub fn waits(&self, wait: Wait, began: Timestamp) -> SmallVec<[u64; 2]> {
        let mut out = SmallVec::new();
        match wait {
            Wait::Stream(s) => {
                out.extend(self.last_on_stream.get(&s).and_then(|l| l.before(began)));
            }
            Wait::Event(e) => out.extend(self.event_targets.get(&e)),
            Wait::Scope(scope) => {
                let mut all: SmallVec<[u64; 8]> = SmallVec::new();
                self.last_on_stream.collect(|_, l| {
                    if l.scope == scope
                        && let Some(c) = l.before(began)
                    {
                        all.push(c);
                    }
                });
                all.sort_unstable_by(|a, b| b.cmp(a));
                out.extend(all.into_iter().take(self.wait_limit));
            }
        }
        out
    }

    /// The correlation id of the last submission to each stream whose call
    /// returned at `since` or later: once each has run, so has everything
    /// submitted since then (a stream runs its work in order).
    pub fn last_submissions_since(&self, since: Timestamp) -> Vec<u64> {
        let mut out = Vec::new();
        self.last_on_stream.collect(|_, l| {
            if l.returned >= since {
                out.push(l.correlation);
            }
        });
        out.sort_unstable();
        out
    }

    /// A scope (CUDA context) went away: its stream handles may be reused.
    pub fn forget_scope(&self, scope: u64) {
        self.last_on_stream.remove_if(|_, l| l.scope == scope);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S1: StreamKey = StreamKey::new(0, 0x10);
    const S2: StreamKey = StreamKey::new(0, 0x20);

    #[test]
    fn the_last_submissions_since_a_time_are_one_per_stream() {
        let c = Correlator::default();
        c.submitted(S1, 0, 1, 10);
        c.submitted(S2, 0, 2, 20);
        c.submitted(S1, 0, 3, 30);
        assert_eq!(c.last_submissions_since(0), [2, 3]);
        assert_eq!(c.last_submissions_since(25), [3]);
        assert!(c.last_submissions_since(31).is_empty());
    }

    #[test]
    fn a_stream_wait_points_at_the_last_work_on_that_stream() {
        let c = Correlator::default();
        c.submitted(S1, 0, 1, 10);
        c.submitted(S1, 0, 2, 20);
        c.submitted(S2, 0, 3, 30);
        assert_eq!(c.waits(Wait::Stream(S1), 40).as_slice(), [2]);
        assert_eq!(c.waits(Wait::Stream(S2), 40).as_slice(), [3]);
        assert!(
            c.waits(Wait::Stream(StreamKey::new(1, 0x10)), 40)
                .is_empty()
        );
    }

    #[test]
    fn an_event_wait_points_at_the_work_before_the_record() {
        let c = Correlator::default();
        c.submitted(S1, 0, 7, 10);
        c.event_recorded(0xe, S1, 15);
        // Work after the record is not what the event stands for.
        c.submitted(S1, 0, 8, 20);
        assert_eq!(c.waits(Wait::Event(0xe), 30).as_slice(), [7]);
        // Recording again on an empty stream makes the event wait for nothing.
        c.event_recorded(0xe, S2, 40);
        assert!(c.waits(Wait::Event(0xe), 50).is_empty());
        assert!(c.waits(Wait::Event(0xf), 50).is_empty());
    }

    #[test]
    fn a_device_wide_wait_points_at_the_last_work_of_every_stream_in_its_scope() {
        let c = Correlator::default();
        c.submitted(S1, 0, 1, 10);
        c.submitted(S1, 0, 4, 11);
        c.submitted(S2, 0, 5, 12);
        c.submitted(StreamKey::new(9, 0x10), 9, 6, 13);
        assert_eq!(c.waits(Wait::Scope(0), 20).as_slice(), [5, 4]);
        assert_eq!(c.waits(Wait::Scope(9), 20).as_slice(), [6]);
        c.forget_scope(0);
        assert!(c.waits(Wait::Scope(0), 20).is_empty());
        assert_eq!(c.waits(Wait::Scope(9), 20).as_slice(), [6]);
    }

    #[test]
    fn the_wait_limit_keeps_the_newest_arrows() {
        let c = Correlator::new(3);
        for s in 0..10u64 {
            c.submitted(StreamKey::new(0, s), 0, 100 + s, 5);
        }
        assert_eq!(c.waits(Wait::Scope(0), 10).as_slice(), [109, 108, 107]);
        let c = Correlator::default();
        for s in 0..20u64 {
            c.submitted(StreamKey::new(0, s), 0, s, 5);
        }
        assert_eq!(c.waits(Wait::Scope(0), 10).len(), DEFAULT_WAIT_LIMIT);
    }

    #[test]
    fn work_submitted_after_a_wait_began_is_not_waited_for() {
        let c = Correlator::default();
        c.submitted(S1, 0, 1, 100);
        assert!(c.waits(Wait::Stream(S1), 50).is_empty());
        assert!(c.waits(Wait::Scope(0), 50).is_empty());
        c.event_recorded(0xe, S1, 50);
        assert!(c.waits(Wait::Event(0xe), 200).is_empty());
        assert_eq!(c.waits(Wait::Stream(S1), 100).as_slice(), [1]);
    }
}
