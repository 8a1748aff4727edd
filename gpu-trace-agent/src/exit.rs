//! The end of a traced process: the one exit hook both injections run, and
//! the line on stderr that says what the trace lost.

use crate::config::Config;
use gpu_trace_model::model::DropKind;
use gpu_trace_reader::ServiceLosses;

/// The exit handler of either injection: runs `shutdown` (which writes the
/// end of the trace) behind the panic guard, also after a panic switched
/// tracing off, so that the trace still gets its summary and its loss
/// counts; a panic inside it is reported and goes no further.
pub fn on_exit(shutdown: impl FnOnce()) {
    let _ = crate::guard::run("exit handler", shutdown);
}

/// One line on stderr when anything was lost anywhere, with the counts and
/// what would avoid it (from what the writer's shutdown reports).
pub fn report_losses(drops: &[(DropKind, u64)], service: Option<ServiceLosses>, config: &Config) {
    if let Some(l) = loss_report(drops, service, config) {
        crate::warn!("{l}");
    }
}

/// The exit line when anything was lost: the counts, and for each kind the
/// setting that would avoid it. `None` when nothing was.
pub(crate) fn loss_report(
    drops: &[(DropKind, u64)],
    service: Option<ServiceLosses>,
    config: &Config,
) -> Option<String> {
    let counts = gpu_trace_reader::loss_counts(drops, service);
    let lost_service = service.is_some_and(|l| l.lost() > 0);
    if !drops.iter().any(|(_, n)| *n > 0) && !lost_service {
        return None;
    }
    let n = |k: DropKind| drops.iter().find(|(d, _)| *d == k).map_or(0, |x| x.1);
    let mut advice = Vec::new();
    if n(DropKind::ThreadBuffer) > 0 {
        advice.push(if config.queue_full_waits {
            format!(
                "events came faster than they could be written: raise {} (now {} KiB) or trace fewer sources",
                crate::config::vars::QUEUE_SIZE,
                config.queue_kb
            )
        } else {
            format!(
                "events came faster than they could be written: leave {}=drop out (threads then wait briefly for room) or raise {} (now {} KiB)",
                crate::config::vars::QUEUE_FULL,
                crate::config::vars::QUEUE_SIZE,
                config.queue_kb
            )
        });
    }
    if n(DropKind::VendorRecords) > 0 {
        advice.push("the vendor library ran out of record buffers while the writer was behind: trace fewer sources (-t gpu)".to_owned());
    }
    if lost_service {
        advice.push(format!(
            "Perfetto's buffer overflowed: raise {} (now {} KiB)",
            crate::config::vars::BUFFER_SIZE,
            config.buffer_kb
        ));
    }
    if n(DropKind::InvalidRecords) > 0 {
        advice.push("records without an end (work still running at exit) were left out".to_owned());
    }
    if n(DropKind::Counters) > 0 {
        advice.push("some counter values could not be collected".to_owned());
    }
    Some(format!(
        "the trace is incomplete: {}; {}",
        counts.join(" "),
        advice.join("; ")
    ))
}
