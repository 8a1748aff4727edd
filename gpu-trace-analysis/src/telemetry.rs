//! Device telemetry (`gpu.telemetry` counter tracks): per GPU, each
//! metric's time-weighted mean, min and max, and the time its clocks were
//! throttled, by NVML clock-event reason.
//!
//! A telemetry track is a step function: each value holds from its sample
//! to the next (the emitter marks the counters forwards-looking). So means
//! weigh each value by the time it held, and only time inside the
//! recording windows counts, when the run had windows.

use crate::read::TelemetryTrack;
use gpu_trace_model::telemetry::Metric;
use gpu_trace_reader::CounterUnits;
use nvml_sys::clocks_event_reasons as cer;
use serde::Serialize;
use std::collections::BTreeMap;

/// A unit as Perfetto's trace processor spells it: numerators joined by
/// `:`, then `/` and the denominators (`B/s`); codes of
/// `GpuCounterDescriptor.MeasureUnit`.
pub(crate) fn unit_text(u: &CounterUnits) -> String {
    let names = |v: &[u64]| {
        v.iter()
            .filter(|&&c| c != 0)
            .map(|&c| unit_name(c))
            .collect::<Vec<_>>()
            .join(":")
    };
    let (num, den) = (names(&u.numerator), names(&u.denominator));
    match (num.is_empty(), den.is_empty()) {
        (_, true) => num,
        (true, false) => format!("1/{den}"),
        (false, false) => format!("{num}/{den}"),
    }
}

fn unit_name(code: u64) -> String {
    let s = match code {
        1 => "bit",
        2 => "kbit",
        3 => "Mbit",
        4 => "Gbit",
        5 => "Tbit",
        6 => "Pbit",
        7 => "B",
        8 => "KB",
        9 => "MB",
        10 => "GB",
        11 => "TB",
        12 => "PB",
        13 => "Hz",
        14 => "kHz",
        15 => "MHz",
        16 => "GHz",
        17 => "THz",
        18 => "PHz",
        19 => "ns",
        20 => "us",
        21 => "ms",
        22 => "s",
        23 => "min",
        24 => "h",
        25 => "vertex",
        26 => "pixel",
        27 => "triangle",
        28 => "mW",
        29 => "W",
        30 => "kW",
        31 => "J",
        32 => "V",
        33 => "A",
        34 => "°C",
        35 => "°F",
        36 => "K",
        37 => "%",
        38 => "primitive",
        39 => "fragment",
        40 => "instruction",
        other => return format!("unit {other}"),
    };
    s.to_owned()
}

/// NVML's clock-event reasons (`nvmlClocksEventReason*`): (bit, name,
/// whether it is throttling). An idle GPU and the applications-clocks
/// setting hold clocks down by choice, not as a limit the work ran into;
/// every other reason, and any bit newer than these (NVML adds reasons),
/// is throttling.
const REASONS: [(u64, &str, bool); 11] = [
    (cer::GPU_IDLE, "GPU idle", false),
    (
        cer::APPLICATIONS_CLOCKS_SETTING,
        "applications clocks setting",
        false,
    ),
    (cer::SW_POWER_CAP, "SW power cap", true),
    (cer::HW_SLOWDOWN, "HW slowdown", true),
    (cer::SYNC_BOOST, "sync boost", true),
    (cer::SW_THERMAL_SLOWDOWN, "SW thermal slowdown", true),
    (cer::HW_THERMAL_SLOWDOWN, "HW thermal slowdown", true),
    (
        cer::HW_POWER_BRAKE_SLOWDOWN,
        "HW power brake slowdown",
        true,
    ),
    (cer::DISPLAY_CLOCK_SETTING, "display clock setting", true),
    (cer::BOARD_LIMIT, "board limit", true),
    (cer::RELIABILITY, "reliability", true),
];

/// The bits that are not throttling.
const NOT_THROTTLING: u64 = cer::GPU_IDLE | cer::APPLICATIONS_CLOCKS_SETTING;

/// A clock-event reason bit's name, and whether it is throttling.
pub fn reason(bit: u64) -> (String, bool) {
    match REASONS.iter().find(|r| r.0 == bit) {
        Some(&(_, name, throttling)) => (name.to_owned(), throttling),
        None => (format!("unknown reason {bit:#x}"), true),
    }
}

/// The part of `[a, b)` inside the windows (all of it without windows).
fn inside(a: u64, b: u64, windows: Option<&[(u64, u64)]>) -> u64 {
    if b <= a {
        return 0;
    }
    match windows {
        None => b - a,
        Some(w) => w
            .iter()
            .map(|&(s, e)| e.min(b).saturating_sub(s.max(a)))
            .sum(),
    }
}

/// Whether instant `t` is inside a window (closed at both ends: a sample
/// at a window's end that holds no time still counts for min and max).
fn at(t: u64, windows: Option<&[(u64, u64)]>) -> bool {
    windows.is_none_or(|w| w.iter().any(|&(s, e)| s <= t && t <= e))
}

/// The median gap between consecutive samples (sorted), if there are two.
fn period(samples: &[(u64, f64)]) -> Option<u64> {
    let mut gaps: Vec<u64> = samples
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .filter(|&g| g > 0)
        .collect();
    if gaps.is_empty() {
        return None;
    }
    gaps.sort_unstable();
    Some(gaps[gaps.len() / 2])
}

/// Each sample with the time it holds: `[ts, until)`, the time inside the
/// windows, and its value.
///
/// A value holds until the track's next sample. The last one holds one
/// sample period (the median gap between the track's samples, else
/// `fallback`, the GPU's shortest), but never past `end`, the trace's last
/// event: the sampler stops with the tracer, so the last value lasted about
/// one more period, and nothing is known after the trace ends.
fn steps<'a>(
    samples: &'a [(u64, f64)],
    fallback: Option<u64>,
    end: u64,
    windows: Option<&'a [(u64, u64)]>,
) -> impl Iterator<Item = (u64, u64, f64)> + 'a {
    let last_hold = period(samples).or(fallback).unwrap_or(0);
    samples.iter().enumerate().map(move |(i, &(ts, v))| {
        let until = match samples.get(i + 1) {
            Some(next) => next.0,
            None => ts.saturating_add(last_hold).min(end.max(ts)),
        };
        (ts, inside(ts, until, windows), v)
    })
}

/// One metric of one GPU, as it accumulates (over files, for a GPU that
/// several traces sampled).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MetricAcc {
    pub(crate) unit: String,
    /// Samples inside the windows.
    pub(crate) samples: u64,
    /// Time the values held inside the windows, ns.
    pub(crate) time: u64,
    /// Σ value × time held (ns).
    weighted: f64,
    /// Σ value, for the mean of samples that held no time.
    sum: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
}

impl MetricAcc {
    fn new(unit: String) -> MetricAcc {
        MetricAcc {
            unit,
            samples: 0,
            time: 0,
            weighted: 0.0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }

    fn join(&mut self, o: MetricAcc) {
        self.samples += o.samples;
        self.time += o.time;
        self.weighted += o.weighted;
        self.sum += o.sum;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        if self.unit.is_empty() {
            self.unit = o.unit;
        }
    }

    /// The time-weighted mean; the plain mean when no value held any time
    /// (one sample at the trace's end).
    pub(crate) fn mean(&self) -> f64 {
        if self.time > 0 {
            self.weighted / self.time as f64
        } else {
            self.sum / self.samples.max(1) as f64
        }
    }
}

/// A GPU's clock-event reasons, as they accumulate.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ThrottleAcc {
    /// Time the reasons were sampled inside the windows, ns.
    pub(crate) sampled: u64,
    /// Of it, time with any throttling reason, ns.
    pub(crate) throttled: u64,
    /// Time each reason bit was set, ns.
    pub(crate) by_bit: BTreeMap<u64, u64>,
}

impl ThrottleAcc {
    fn join(&mut self, o: ThrottleAcc) {
        self.sampled += o.sampled;
        self.throttled += o.throttled;
        for (b, t) in o.by_bit {
            *self.by_bit.entry(b).or_default() += t;
        }
    }
}

/// One GPU's telemetry, as it accumulates.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct DeviceAcc {
    /// By metric name.
    pub(crate) metrics: BTreeMap<String, MetricAcc>,
    pub(crate) throttle: Option<ThrottleAcc>,
}

impl DeviceAcc {
    /// Adds `o`'s: the same GPU in another trace.
    pub(crate) fn join(&mut self, o: DeviceAcc) {
        for (name, m) in o.metrics {
            match self.metrics.get_mut(&name) {
                Some(x) => x.join(m),
                None => {
                    self.metrics.insert(name, m);
                }
            }
        }
        if let Some(t) = o.throttle {
            self.throttle.get_or_insert_with(Default::default).join(t);
        }
    }
}

/// Each GPU's telemetry in one trace, by `gpu_id`; `end` is the trace's
/// last event, `windows` its recording windows.
pub(crate) fn of_tracks(
    tracks: &mut [TelemetryTrack],
    end: u64,
    windows: Option<&[(u64, u64)]>,
) -> BTreeMap<i64, DeviceAcc> {
    for t in tracks.iter_mut() {
        t.samples.sort_by_key(|s| s.0);
    }
    // The shortest sample period of each GPU, for a track of one sample.
    let mut fastest: BTreeMap<i64, u64> = BTreeMap::new();
    for t in tracks.iter() {
        if let Some(p) = period(&t.samples) {
            let f = fastest.entry(t.gpu).or_insert(p);
            *f = (*f).min(p);
        }
    }
    let reasons = Metric::ClockEventReasons.name();
    let mut out: BTreeMap<i64, DeviceAcc> = BTreeMap::new();
    for t in tracks.iter() {
        let dev = out.entry(t.gpu).or_default();
        let fallback = fastest.get(&t.gpu).copied();
        let steps = steps(&t.samples, fallback, end, windows);
        if t.name == reasons {
            let th = dev.throttle.get_or_insert_with(Default::default);
            for (ts, held, v) in steps {
                if held == 0 && !at(ts, windows) {
                    continue;
                }
                th.sampled += held;
                // A bit mask, written as a double.
                let bits = if v.is_finite() && v >= 0.0 {
                    v as u64
                } else {
                    0
                };
                if bits & !NOT_THROTTLING != 0 {
                    th.throttled += held;
                }
                let mut rest = bits;
                while rest != 0 {
                    let bit = rest & rest.wrapping_neg();
                    *th.by_bit.entry(bit).or_default() += held;
                    rest &= !bit;
                }
            }
            continue;
        }
        let m = dev
            .metrics
            .entry(t.name.clone())
            .or_insert_with(|| MetricAcc::new(t.unit.clone()));
        for (ts, held, v) in steps {
            if held == 0 && !at(ts, windows) {
                continue;
            }
            m.samples += 1;
            m.time += held;
            m.weighted += v * held as f64;
            m.sum += v;
            m.min = m.min.min(v);
            m.max = m.max.max(v);
        }
    }
    // A metric with no sample inside the windows has nothing to say.
    for d in out.values_mut() {
        d.metrics.retain(|_, m| m.samples > 0);
    }
    out.retain(|_, d| !d.metrics.is_empty() || d.throttle.is_some());
    out
}

/// One metric's row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TelemetryRow {
    /// The metric's name (`clocks.sm`, `power.draw` ...).
    #[serde(rename = "name")]
    pub metric: String,
    /// Its unit (`MHz`, `W` ...; empty: none).
    pub unit: String,
    /// Samples inside the recording windows.
    pub samples: u64,
    /// Time its values held inside the windows, ns.
    #[serde(rename = "sampled_ns")]
    pub sampled: u64,
    /// Time-weighted mean.
    pub mean: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

/// One clock-event reason's row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReasonRow {
    /// The reason's bit.
    pub bit: u64,
    /// Its name.
    pub reason: String,
    /// Whether it is throttling (idle and the applications-clocks setting
    /// are not).
    pub throttling: bool,
    /// Time it was set, ns.
    #[serde(rename = "time_ns")]
    pub time: u64,
    /// Of the sampled time, %.
    #[serde(rename = "time_pct")]
    pub pct: f64,
}

/// A GPU's throttling.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Throttle {
    /// Time the reasons were sampled, ns.
    #[serde(rename = "sampled_ns")]
    pub sampled: u64,
    /// Time with any throttling reason, ns.
    #[serde(rename = "throttled_ns")]
    pub throttled: u64,
    /// Of the sampled time, %.
    #[serde(rename = "throttled_pct")]
    pub pct: f64,
    /// Every reason seen, by bit.
    pub reasons: Vec<ReasonRow>,
}

/// One GPU's telemetry table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceTelemetry {
    /// Its `gpu_id` (in the first trace that sampled it).
    pub gpu: i64,
    /// Its name, where the trace describes it.
    pub device: String,
    /// The traces it comes from.
    pub files: Vec<String>,
    /// Its metrics, in gpu-trace's track order, others after them by name.
    pub metrics: Vec<TelemetryRow>,
    /// Its clock-event reasons, where sampled.
    pub throttle: Option<Throttle>,
}

fn pct(part: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * part as f64 / of as f64
    }
}

/// The table of one GPU: metrics in gpu-trace's track order, others (a
/// newer tool's, another vendor's) after them by name.
pub(crate) fn table(gpu: i64, device: String, files: Vec<String>, d: DeviceAcc) -> DeviceTelemetry {
    let order = |name: &str| {
        Metric::ALL
            .iter()
            .position(|m| m.name() == name)
            .unwrap_or(Metric::ALL.len())
    };
    let mut metrics: Vec<TelemetryRow> = d
        .metrics
        .into_iter()
        .map(|(metric, m)| TelemetryRow {
            mean: m.mean(),
            metric,
            unit: m.unit,
            samples: m.samples,
            sampled: m.time,
            min: m.min,
            max: m.max,
        })
        .collect();
    metrics.sort_by(|a, b| (order(&a.metric), &a.metric).cmp(&(order(&b.metric), &b.metric)));
    let throttle = d.throttle.map(|t| Throttle {
        sampled: t.sampled,
        throttled: t.throttled,
        pct: pct(t.throttled, t.sampled),
        reasons: t
            .by_bit
            .into_iter()
            .map(|(bit, time)| {
                let (reason, throttling) = reason(bit);
                ReasonRow {
                    bit,
                    reason,
                    throttling,
                    time,
                    pct: pct(time, t.sampled),
                }
            })
            .collect(),
    });
    DeviceTelemetry {
        gpu,
        device,
        files,
        metrics,
        throttle,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn track(gpu: i64, name: &str, unit: &str, samples: &[(u64, f64)]) -> TelemetryTrack {
        TelemetryTrack {
            gpu,
            name: name.to_owned(),
            unit: unit.to_owned(),
            samples: samples.to_vec(),
        }
    }

    #[test]
    fn means_weigh_each_value_by_the_time_it_held() {
        // Samples at 0, 10, 30 and 60 (given out of order): gaps of 10, 20
        // and 30, whose median, 20, the last one holds, well before the end.
        let mut t = [track(
            0,
            "clocks.sm",
            "MHz",
            &[(30, 200.0), (0, 100.0), (10, 150.0), (60, 400.0)],
        )];
        let d = &of_tracks(&mut t, 1_000, None)[&0];
        let m = &d.metrics["clocks.sm"];
        assert_eq!((m.samples, m.time), (4, 80));
        let want = (100.0 * 10.0 + 150.0 * 20.0 + 200.0 * 30.0 + 400.0 * 20.0) / 80.0;
        assert_eq!(m.mean(), want);
        assert_eq!((m.min, m.max), (100.0, 400.0));
        assert_eq!(m.unit, "MHz");
    }

    #[test]
    fn the_last_sample_holds_no_longer_than_the_trace() {
        let mut t = [track(0, "power.draw", "W", &[(0, 100.0), (100, 300.0)])];
        // The period is 100; the trace ends 40 ns after the last sample.
        let m = of_tracks(&mut t, 140, None)[&0].metrics["power.draw"].clone();
        assert_eq!(m.time, 140);
        assert_eq!(m.mean(), (100.0 * 100.0 + 300.0 * 40.0) / 140.0);
        // A last sample at the very end holds nothing, but counts for
        // min and max.
        let mut t = [track(0, "power.draw", "W", &[(0, 100.0), (100, 300.0)])];
        let m = of_tracks(&mut t, 100, None)[&0].metrics["power.draw"].clone();
        assert_eq!((m.time, m.samples, m.max), (100, 2, 300.0));
        assert_eq!(m.mean(), 100.0);
        // One sample alone holds the GPU's fastest period.
        let mut t = [
            track(0, "power.draw", "W", &[(0, 1.0), (10, 1.0), (20, 1.0)]),
            track(0, "energy.total", "J", &[(5, 7.0)]),
        ];
        let d = of_tracks(&mut t, 1_000, None);
        assert_eq!(d[&0].metrics["energy.total"].time, 10);
    }

    #[test]
    fn only_time_inside_the_windows_counts() {
        // Samples every 100 ns from 0 to 900 (values 0..9); windows
        // [150, 250) and [700, 1000).
        let samples: Vec<(u64, f64)> = (0..10).map(|i| (100 * i, i as f64)).collect();
        let mut t = [track(0, "temperature.gpu", "°C", &samples)];
        let w = [(150, 250), (700, 1_000)];
        let m = of_tracks(&mut t, 10_000, Some(&w))[&0].metrics["temperature.gpu"].clone();
        // 1 for 50, 2 for 50; 7, 8, 9 for 100 each.
        assert_eq!(m.time, 400);
        assert_eq!(m.mean(), (50.0 + 100.0 + 700.0 + 800.0 + 900.0) / 400.0);
        assert_eq!((m.samples, m.min, m.max), (5, 1.0, 9.0));
    }

    #[test]
    fn throttling_is_any_reason_but_idle_and_application_clocks() {
        let (idle, app, power, hw) = (
            cer::GPU_IDLE as f64,
            cer::APPLICATIONS_CLOCKS_SETTING as f64,
            cer::SW_POWER_CAP as f64,
            cer::HW_SLOWDOWN as f64,
        );
        let mut t = [track(
            1,
            "clocks_event_reasons.active",
            "",
            &[
                (0, idle),           // 10 idle
                (10, 0.0),           // 10 nothing
                (20, power),         // 10 power cap
                (30, power + hw),    // 10 both
                (40, app),           // 10 app clocks
                (50, 4096.0 + idle), // 10 an unknown bit, and idle
            ],
        )];
        let d = &of_tracks(&mut t, 1_000, None)[&1];
        assert!(d.metrics.is_empty(), "a bit mask has no mean");
        let th = d.throttle.clone().unwrap();
        assert_eq!((th.sampled, th.throttled), (60, 30));
        let by: Vec<(u64, u64)> = th.by_bit.into_iter().collect();
        assert_eq!(by, [(1, 20), (2, 10), (4, 20), (8, 10), (4096, 10)]);
        assert_eq!(reason(4096), ("unknown reason 0x1000".to_owned(), true));
        assert_eq!(reason(1), ("GPU idle".to_owned(), false));
    }

    #[test]
    fn units_read_as_the_trace_processor_writes_them() {
        let u = |n: &[u64], d: &[u64]| {
            unit_text(&CounterUnits {
                numerator: n.to_vec(),
                denominator: d.to_vec(),
            })
        };
        assert_eq!(u(&[7], &[22]), "B/s");
        assert_eq!(u(&[15], &[]), "MHz");
        assert_eq!(u(&[], &[]), "");
        assert_eq!(u(&[99], &[]), "unit 99");
    }

    #[test]
    fn unknown_metrics_come_after_the_known_ones_by_name() {
        let mut t = [
            track(0, "zz.custom", "", &[(0, 1.0), (10, 3.0)]),
            track(0, "power.draw", "W", &[(0, 1.0), (10, 1.0)]),
            track(0, "aa.custom", "%", &[(0, 1.0), (10, 1.0)]),
            track(0, "clocks.sm", "MHz", &[(0, 1.0), (10, 1.0)]),
        ];
        let d = of_tracks(&mut t, 100, None).remove(&0).unwrap();
        let tb = table(0, String::new(), vec![], d);
        let names: Vec<&str> = tb.metrics.iter().map(|m| m.metric.as_str()).collect();
        assert_eq!(names, ["clocks.sm", "power.draw", "aa.custom", "zz.custom"]);
        assert_eq!(tb.metrics[3].mean, 2.0);
    }
}
