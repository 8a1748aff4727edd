//! What a system session's trace config asks of a counters data source:
//! its counter names and, in `instrumented_sampling_config`, its own
//! kernel filter ([`from_sampling_config`]), which replaces the
//! environment's while the session runs.

use gpu_trace_model::filter::{FilterSpec, NameBase, NameGlob, Window};
use std::sync::Arc;

/// Reads a trace config's `GpuCounterConfig.instrumented_sampling_config`
/// (its bytes). Values that cannot be used are described in the lines
/// returned (for the log), with what is done instead.
pub(crate) fn from_sampling_config(body: &[u8]) -> (FilterSpec, Vec<String>) {
    use gpu_trace_model::schema::config as c;
    use gpu_trace_reader::pb::Fields;
    let mut spec = FilterSpec::default();
    let mut problems = Vec::new();
    let mut text = |what: &str, v: &gpu_trace_reader::pb::Value<'_>| match v.as_str() {
        Some(s) => Some(s.to_owned()),
        None => {
            problems.push(format!(
                "trace config {what}: expected UTF-8 text; this glob is ignored"
            ));
            None
        }
    };
    let mut filters = Vec::new();
    for (n, v) in Fields::new(body).map_while(Result::ok) {
        match n {
            c::ISC_ACTIVITY_NAME_FILTERS => filters.push(v.as_bytes().unwrap_or_default()),
            c::ISC_ACTIVITY_TX_INCLUDE_GLOBS => {
                spec.tx_include
                    .extend(text("activity_tx_include_globs", &v));
            }
            c::ISC_ACTIVITY_TX_EXCLUDE_GLOBS => {
                spec.tx_exclude
                    .extend(text("activity_tx_exclude_globs", &v));
            }
            c::ISC_ACTIVITY_RANGES => {
                let mut w = Window {
                    skip: 0,
                    count: None,
                };
                for (f, x) in Fields::new(v.as_bytes().unwrap_or_default()).map_while(Result::ok) {
                    match (f, x.as_u64()) {
                        (c::AR_SKIP, Some(s)) => w.skip = s,
                        // UINT32_MAX, the default, means all the rest.
                        (c::AR_COUNT, Some(n)) => w.count = (n < u64::from(u32::MAX)).then_some(n),
                        _ => {}
                    }
                }
                spec.windows.push(w);
            }
            _ => {}
        }
    }
    for body in filters {
        let (mut glob, mut base) = (None, NameBase::Mangled);
        for (f, x) in Fields::new(body).map_while(Result::ok) {
            match f {
                c::ANF_NAME_GLOB => match x.as_str() {
                    Some(s) => glob = Some(s.to_owned()),
                    None => problems.push(
                        "trace config activity_name_filters name_glob: expected UTF-8 text; the filter matches no kernel"
                            .to_owned(),
                    ),
                },
                c::ANF_NAME_BASE => {
                    base = match x.as_u64() {
                        Some(c::NAME_BASE_MANGLED_KERNEL_NAME) => NameBase::Mangled,
                        Some(c::NAME_BASE_DEMANGLED_KERNEL_NAME) => NameBase::Demangled,
                        Some(c::NAME_BASE_FUNCTION_NAME) => NameBase::Function,
                        other => {
                            problems.push(format!(
                                "trace config activity_name_filters name_base {}: expected MANGLED_KERNEL_NAME, DEMANGLED_KERNEL_NAME or FUNCTION_NAME; matching the mangled name",
                                other.map_or("?".to_owned(), |o| o.to_string())
                            ));
                            NameBase::Mangled
                        }
                    }
                }
                _ => {}
            }
        }
        if glob.is_none() {
            problems.push(
                "trace config activity_name_filters: a filter without name_glob matches no kernel"
                    .to_owned(),
            );
        }
        spec.names
            .push(NameGlob::new(glob.unwrap_or_default(), base));
    }
    (spec, problems)
}

/// What a counters session asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CounterRequest {
    /// `GpuCounterConfig.counter_names`; empty means the tool's defaults.
    pub names: Vec<String>,
    /// Whether per-kernel (instrumented) sampling was asked for.
    pub instrumented: bool,
    /// `instrumented_sampling_config`: which kernels (`None`: the
    /// environment's filter decides).
    pub selection: Option<Arc<FilterSpec>>,
    /// Tells sessions apart (set up one after the other).
    pub session: u64,
}

/// Numbers the counters sessions set up in this process.
pub(crate) static NEXT_SESSION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Reads `GpuCounterConfig` out of a `DataSourceConfig`.
pub(crate) fn parse_counter_config(cfg: &[u8]) -> CounterRequest {
    use gpu_trace_model::schema::config as c;
    use gpu_trace_reader::pb::Fields;
    let mut req = CounterRequest::default();
    for f in Fields::new(cfg).map_while(Result::ok) {
        if f.0 != c::DSC_GPU_COUNTER_CONFIG {
            continue;
        }
        let Some(body) = f.1.as_bytes() else { continue };
        for (n, v) in Fields::new(body).map_while(Result::ok) {
            match n {
                c::GCC_COUNTER_NAMES => match v.as_str() {
                    Some(s) => {
                        let (good, bad) = gpu_trace_model::names::parse_metric_list(s);
                        for b in bad {
                            crate::warn!(
                                "trace config counter_names {b:?}: expected a metric name of letters, digits, '_', '.', ':' or '-'; ignored"
                            );
                        }
                        for g in good {
                            if !req.names.contains(&g) {
                                req.names.push(g);
                            }
                        }
                    }
                    None => {
                        crate::warn!("trace config counter_names: expected UTF-8 text; ignored")
                    }
                },
                c::GCC_INSTRUMENTED_SAMPLING_CONFIG => {
                    req.instrumented = true;
                    let (spec, problems) = from_sampling_config(v.as_bytes().unwrap_or_default());
                    for p in problems {
                        crate::warn!("{p}");
                    }
                    req.selection = Some(Arc::new(spec));
                }
                // The other arm of the oneof: every kernel again.
                c::GCC_INSTRUMENTED_SAMPLING => {
                    req.instrumented = v.as_u64() == Some(1);
                    req.selection = None;
                }
                _ => {}
            }
        }
    }
    req
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_trace_model::filter::KernelFilter;
    use gpu_trace_model::schema::config as c;

    fn sampling_config(f: impl FnOnce(&mut gpu_trace_reader::pb::Writer)) -> Vec<u8> {
        let mut w = gpu_trace_reader::pb::Writer::new();
        f(&mut w);
        w.as_bytes().to_vec()
    }

    #[test]
    fn a_trace_configs_sampling_config_is_read_whole() {
        let body = sampling_config(|w| {
            w.nested(c::ISC_ACTIVITY_NAME_FILTERS, |n| {
                n.string(c::ANF_NAME_GLOB, "myKernel*")
                    .varint(c::ANF_NAME_BASE, c::NAME_BASE_DEMANGLED_KERNEL_NAME);
            })
            .nested(c::ISC_ACTIVITY_NAME_FILTERS, |n| {
                n.string(c::ANF_NAME_GLOB, "_Z4gemm*");
            })
            .nested(c::ISC_ACTIVITY_NAME_FILTERS, |n| {
                n.string(c::ANF_NAME_GLOB, "relu")
                    .varint(c::ANF_NAME_BASE, c::NAME_BASE_FUNCTION_NAME);
            })
            .string(c::ISC_ACTIVITY_TX_INCLUDE_GLOBS, "training*")
            .string(c::ISC_ACTIVITY_TX_EXCLUDE_GLOBS, "*backward*")
            .string(c::ISC_ACTIVITY_TX_EXCLUDE_GLOBS, "warmup")
            .nested(c::ISC_ACTIVITY_RANGES, |r| {
                r.varint(c::AR_SKIP, 10).varint(c::AR_COUNT, 5);
            })
            .nested(c::ISC_ACTIVITY_RANGES, |r| {
                r.varint(c::AR_SKIP, 2);
            })
            .nested(c::ISC_ACTIVITY_RANGES, |r| {
                r.varint(c::AR_COUNT, u64::from(u32::MAX));
            });
        });
        let (spec, problems) = from_sampling_config(&body);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            spec,
            FilterSpec {
                names: vec![
                    NameGlob::new("myKernel*", NameBase::Demangled),
                    NameGlob::new("_Z4gemm*", NameBase::Mangled),
                    NameGlob::new("relu", NameBase::Function),
                ],
                tx_include: vec!["training*".into()],
                tx_exclude: vec!["*backward*".into(), "warmup".into()],
                windows: windows(&[(10, Some(5)), (2, None), (0, None)]),
            }
        );
        let (empty, problems) = from_sampling_config(&[]);
        assert!(empty.is_everything() && problems.is_empty());
    }

    #[test]
    fn unusable_sampling_config_values_are_said() {
        let body = sampling_config(|w| {
            w.nested(c::ISC_ACTIVITY_NAME_FILTERS, |n| {
                n.string(c::ANF_NAME_GLOB, "k*").varint(c::ANF_NAME_BASE, 7);
            })
            .nested(c::ISC_ACTIVITY_NAME_FILTERS, |n| {
                n.varint(c::ANF_NAME_BASE, c::NAME_BASE_DEMANGLED_KERNEL_NAME);
            })
            .bytes(c::ISC_ACTIVITY_TX_INCLUDE_GLOBS, &[0xff, 0xfe]);
        });
        let (spec, problems) = from_sampling_config(&body);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("UTF-8"), "{}", problems[0]);
        assert!(
            problems[1].contains("name_base 7") && problems[1].contains("mangled"),
            "{}",
            problems[1]
        );
        assert!(problems[2].contains("without name_glob"), "{}", problems[2]);
        assert_eq!(
            spec.names,
            [
                NameGlob::new("k*", NameBase::Mangled),
                NameGlob::new("", NameBase::Demangled)
            ]
        );
        assert!(spec.tx_include.is_empty());
        let f = KernelFilter::new(spec);
        assert!(f.matches("k1", None) && !f.matches("x", Some("x()")));
    }

    fn windows(w: &[(u64, Option<u64>)]) -> Vec<Window> {
        w.iter()
            .map(|&(skip, count)| Window { skip, count })
            .collect()
    }

    fn data_source_config(f: impl FnOnce(&mut gpu_trace_reader::pb::Writer)) -> Vec<u8> {
        let mut w = gpu_trace_reader::pb::Writer::new();
        w.string(c::DSC_NAME, "gpu.counters.nv")
            .nested(c::DSC_GPU_COUNTER_CONFIG, f);
        w.as_bytes().to_vec()
    }

    #[test]
    fn a_sampling_config_selects_kernels_and_the_bool_does_not() {
        let cfg = data_source_config(|g| {
            g.string(c::GCC_COUNTER_NAMES, "sm__cycles_elapsed.avg")
                .nested(c::GCC_INSTRUMENTED_SAMPLING_CONFIG, |isc| {
                    isc.string(c::ISC_ACTIVITY_TX_INCLUDE_GLOBS, "train*")
                        .nested(c::ISC_ACTIVITY_RANGES, |r| {
                            r.varint(c::AR_SKIP, 1).varint(c::AR_COUNT, 2);
                        });
                });
        });
        let req = parse_counter_config(&cfg);
        assert!(req.instrumented);
        assert_eq!(req.names, ["sm__cycles_elapsed.avg"]);
        let spec = req.selection.expect("a selection");
        assert_eq!(spec.tx_include, ["train*"]);
        assert_eq!(
            spec.windows,
            [Window {
                skip: 1,
                count: Some(2)
            }]
        );

        let plain = parse_counter_config(&data_source_config(|g| {
            g.bool(c::GCC_INSTRUMENTED_SAMPLING, true);
        }));
        assert!(plain.instrumented && plain.selection.is_none());
        // An empty sampling config is a selection of every kernel (it
        // replaces the environment's filter).
        let empty = parse_counter_config(&data_source_config(|g| {
            g.bytes(c::GCC_INSTRUMENTED_SAMPLING_CONFIG, &[]);
        }));
        assert!(empty.instrumented);
        assert!(empty.selection.is_some_and(|s| s.is_everything()));
    }
}
