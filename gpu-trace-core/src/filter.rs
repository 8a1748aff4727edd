//! The kernel filter's settings: from the environment ([`vars`]), or from
//! a system session's trace config ([`from_sampling_config`]). The
//! matching itself is `gpu_trace_model::filter`'s.

pub use gpu_trace_model::filter::*;

use crate::config::{Problem, env_lookup, parse_var};

/// Environment variables of the kernel filter.
pub mod vars {
    /// Comma-separated name globs (`*`, `?`); see [`super::NameBase`] for
    /// the `mangled:`, `demangled:` and `function:` prefixes.
    pub const KERNELS: &str = "INJECTION_KERNEL_FILTER";
    /// Passing launches to leave out before the first profiled one.
    pub const SKIP: &str = "INJECTION_KERNEL_SKIP";
    /// Passing launches to profile after the skipped ones (then none).
    pub const COUNT: &str = "INJECTION_KERNEL_COUNT";
    /// Comma-separated globs: only launches inside an NVTX/roctx push/pop
    /// range one of them matches.
    pub const NVTX_INCLUDE: &str = "INJECTION_KERNEL_NVTX_INCLUDE";
    /// Comma-separated globs: no launch inside an NVTX/roctx push/pop range
    /// one of them matches.
    pub const NVTX_EXCLUDE: &str = "INJECTION_KERNEL_NVTX_EXCLUDE";
    /// All of them.
    pub const ALL: [&str; 5] = [KERNELS, SKIP, COUNT, NVTX_INCLUDE, NVTX_EXCLUDE];
}

/// Reads the filter through `get` (the environment's variables); a bad
/// value is reported and its part of the filter left out.
pub fn spec_from_lookup(get: &dyn Fn(&str) -> Option<String>) -> (FilterSpec, Vec<Problem>) {
    let mut problems = Vec::new();
    let mut spec = FilterSpec::default();
    let mut report = |r: Result<Option<Vec<String>>, Problem>| match r {
        Ok(v) => v.unwrap_or_default(),
        Err(p) => {
            problems.push(p);
            Vec::new()
        }
    };
    let names = report(parse_var(
        get,
        vars::KERNELS,
        "comma-separated kernel-name globs (`*`, `?`), each optionally prefixed mangled:, demangled: or function:",
        "every kernel name",
        |v| {
            let globs = globs(v)?;
            globs
                .iter()
                .all(|g| !NameBase::split(g).0.is_empty())
                .then_some(globs)
        },
    ));
    spec.names = names
        .iter()
        .map(|g| {
            let (glob, base) = NameBase::split(g);
            NameGlob::new(glob, base)
        })
        .collect();
    for (var, out) in [
        (vars::NVTX_INCLUDE, &mut spec.tx_include),
        (vars::NVTX_EXCLUDE, &mut spec.tx_exclude),
    ] {
        *out = report(parse_var(
            get,
            var,
            "comma-separated NVTX/roctx range-name globs (`*`, `?`)",
            "no range filter",
            globs,
        ));
    }
    let mut number = |var: &'static str| match parse_var(
        get,
        var,
        "a whole number of kernels",
        "no limit",
        |v| v.trim().parse::<u64>().ok(),
    ) {
        Ok(n) => n,
        Err(p) => {
            problems.push(p);
            None
        }
    };
    let skip = number(vars::SKIP).unwrap_or(0);
    let count = number(vars::COUNT);
    if skip > 0 || count.is_some() {
        spec.windows.push(Window { skip, count });
    }
    (spec, problems)
}

/// Reads a trace config's `GpuCounterConfig.instrumented_sampling_config`
/// (its bytes). Values that cannot be used are described in the lines
/// returned (for the log), with what is done instead.
pub fn from_sampling_config(body: &[u8]) -> (FilterSpec, Vec<String>) {
    use gpu_trace_reader::pb::Fields;
    use gpu_trace_reader::wire::config as c;
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

/// The trimmed, non-empty globs of a comma-separated list; `None` when it
/// holds none.
fn globs(v: &str) -> Option<Vec<String>> {
    let g: Vec<String> = v
        .split(',')
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .map(str::to_owned)
        .collect();
    (!g.is_empty()).then_some(g)
}

/// Reads the filter from the environment; a bad value is reported and
/// its part of the filter left out.
pub fn from_env() -> (KernelFilter, Vec<Problem>) {
    from_lookup(&env_lookup)
}

/// As [`from_env`], through `get`.
pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> (KernelFilter, Vec<Problem>) {
    let (spec, problems) = spec_from_lookup(get);
    (KernelFilter::new(spec), problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_trace_reader::wire::config as c;

    fn lookup(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_environment_sets_the_filter_and_bad_values_are_named() {
        let (f, p) = from_lookup(&lookup(&[
            (
                vars::KERNELS,
                " *gemm* ,demangled:void relu<*, function:ns::k*,ns::x*,",
            ),
            (vars::SKIP, "10"),
            (vars::COUNT, "lots"),
            (vars::NVTX_INCLUDE, "train*, eval step"),
            (vars::NVTX_EXCLUDE, "warmup"),
        ]));
        let want = FilterSpec {
            names: vec![
                NameGlob::new("*gemm*", NameBase::Either),
                NameGlob::new("void relu<*", NameBase::Demangled),
                NameGlob::new("ns::k*", NameBase::Function),
                NameGlob::new("ns::x*", NameBase::Either),
            ],
            tx_include: vec!["train*".into(), "eval step".into()],
            tx_exclude: vec!["warmup".into()],
            windows: windows(&[(10, None)]),
        };
        assert_eq!(f.spec(), &want);
        assert_eq!(p.len(), 1);
        let line = p[0].to_string();
        assert!(
            line.contains(vars::COUNT) && line.contains("lots"),
            "{line}"
        );
        assert_eq!(
            f.describe(),
            "names *gemm*,demangled:void relu<*,function:ns::k*,ns::x*, inside ranges train*,eval step, outside ranges warmup, skip 10 then all"
        );
        let (f, p) = from_lookup(&lookup(&[]));
        assert!(f.is_everything() && p.is_empty());
        assert_eq!(f.describe(), "every kernel");

        for (var, value) in [
            (vars::KERNELS, "demangled:"),
            (vars::KERNELS, "gemm, function: "),
            (vars::NVTX_INCLUDE, ","),
            (vars::NVTX_EXCLUDE, " "),
        ] {
            let get = move |k: &str| (k == var).then(|| value.to_owned());
            let (f, p) = from_lookup(&get);
            assert!(f.is_everything(), "{var}={value:?}: left out");
            assert_eq!(p.len(), 1, "{var}={value:?}");
            assert_eq!((p[0].var, p[0].value.as_str()), (var, value));
            assert!(p[0].expected.contains("globs"), "{}", p[0]);
        }
    }

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
}
