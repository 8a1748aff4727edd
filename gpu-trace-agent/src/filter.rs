//! The kernel filter's settings from the environment ([`vars`]). The
//! matching is `gpu_trace_model::filter`'s; a system session's own filter
//! (its trace config's `instrumented_sampling_config`) is the Perfetto
//! writer's to read.

use gpu_trace_model::filter::{FilterSpec, KernelFilter, NameBase, NameGlob, Window};

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
pub(crate) fn spec_from_lookup(get: &dyn Fn(&str) -> Option<String>) -> (FilterSpec, Vec<Problem>) {
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

    fn windows(w: &[(u64, Option<u64>)]) -> Vec<Window> {
        w.iter()
            .map(|&(skip, count)| Window { skip, count })
            .collect()
    }
}
