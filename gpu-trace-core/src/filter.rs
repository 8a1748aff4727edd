//! Which kernels get per-kernel counters.
//!
//! Profiling a kernel replays it, once per pass, and serialises the
//! program, so people pick: name globs (on the mangled or the demangled
//! name), then skip the first N that match and take the next M. Without a
//! filter every kernel is profiled.

use crate::config::{Problem, env_lookup, parse_var};
use std::sync::atomic::{AtomicU64, Ordering};

/// Environment variables of the kernel filter.
pub mod vars {
    /// Comma-separated name globs (`*`, `?`); a kernel matches if any glob
    /// matches its mangled or its demangled name.
    pub const KERNELS: &str = "INJECTION_KERNEL_FILTER";
    /// Matching kernels to leave out before the first profiled one.
    pub const SKIP: &str = "INJECTION_KERNEL_SKIP";
    /// Matching kernels to profile after the skipped ones (then none).
    pub const COUNT: &str = "INJECTION_KERNEL_COUNT";
    /// All of them.
    pub const ALL: [&str; 3] = [KERNELS, SKIP, COUNT];
}

/// The kernel filter: globs, skip, count.
#[derive(Debug, Default)]
pub struct KernelFilter {
    globs: Vec<wildmatch::WildMatch>,
    texts: Vec<String>,
    skip: u64,
    count: Option<u64>,
    /// Launches that matched the globs so far.
    matched: AtomicU64,
}

impl PartialEq for KernelFilter {
    fn eq(&self, other: &Self) -> bool {
        self.texts == other.texts && self.skip == other.skip && self.count == other.count
    }
}

impl KernelFilter {
    /// A filter from its parts (`globs` as the variable takes them).
    pub fn new(globs: &[&str], skip: u64, count: Option<u64>) -> Self {
        let texts: Vec<String> = globs
            .iter()
            .map(|g| g.trim())
            .filter(|g| !g.is_empty())
            .map(str::to_owned)
            .collect();
        Self {
            globs: texts.iter().map(|g| wildmatch::WildMatch::new(g)).collect(),
            texts,
            skip,
            count,
            matched: AtomicU64::new(0),
        }
    }

    /// Reads the filter from the environment; a bad value is reported and
    /// its part of the filter left out.
    pub fn from_env() -> (Self, Vec<Problem>) {
        Self::from_lookup(&env_lookup)
    }

    /// As [`KernelFilter::from_env`], through `get`.
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> (Self, Vec<Problem>) {
        let mut problems = Vec::new();
        let globs: Vec<String> = get(vars::KERNELS)
            .map(|v| v.split(',').map(str::to_owned).collect())
            .unwrap_or_default();
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
        let globs: Vec<&str> = globs.iter().map(String::as_str).collect();
        (Self::new(&globs, skip, count), problems)
    }

    /// Whether the filter lets every kernel through.
    pub fn is_everything(&self) -> bool {
        self.globs.is_empty() && self.skip == 0 && self.count.is_none()
    }

    /// Whether no kernel can be chosen any more (the count is used up).
    pub fn is_done(&self) -> bool {
        self.count
            .is_some_and(|c| self.matched.load(Ordering::Relaxed) >= self.skip.saturating_add(c))
    }

    /// Whether a name matches the globs (every name does without globs).
    pub fn matches(&self, mangled: &str, demangled: Option<&str>) -> bool {
        self.globs.is_empty()
            || self
                .globs
                .iter()
                .any(|g| g.matches(mangled) || demangled.is_some_and(|d| g.matches(d)))
    }

    /// Whether the filter has name globs (without, every name matches).
    pub fn has_globs(&self) -> bool {
        !self.globs.is_empty()
    }

    /// Decides for one launch: counts it if its name matches, and says
    /// whether it falls in the window after `skip`, within `count`.
    pub fn select(&self, mangled: &str, demangled: Option<&str>) -> bool {
        self.matches(mangled, demangled) && self.take()
    }

    /// As [`KernelFilter::select`] for a launch already known to match
    /// (callers that cache [`KernelFilter::matches`] per name).
    pub fn take(&self) -> bool {
        let i = self.matched.fetch_add(1, Ordering::Relaxed);
        i >= self.skip && self.count.is_none_or(|c| i - self.skip < c)
    }

    /// The filter as people read it, for messages.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.texts.is_empty() {
            parts.push(format!("names {}", self.texts.join(",")));
        }
        if self.skip > 0 {
            parts.push(format!("skip {}", self.skip));
        }
        if let Some(c) = self.count {
            parts.push(format!("count {c}"));
        }
        if parts.is_empty() {
            "every kernel".to_owned()
        } else {
            parts.join(", ")
        }
    }
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
    fn globs_match_mangled_or_demangled_names() {
        let f = KernelFilter::new(&["*gemm*", "vadd"], 0, None);
        assert!(f.matches("_Z4gemmPfS_", None));
        assert!(f.matches("_Z4vaddPf", Some("vadd")));
        assert!(!f.matches("_Z4vaddPf", Some("vadd(float*)")));
        assert!(!f.matches("_Z3foov", Some("foo()")));
        assert!(KernelFilter::new(&[], 0, None).matches("anything", None));
    }

    #[test]
    fn skip_and_count_pick_a_window_of_matching_launches() {
        let f = KernelFilter::new(&["k*"], 2, Some(3));
        let picked: Vec<bool> = ["k", "x", "k", "k", "k", "x", "k", "k", "k"]
            .iter()
            .map(|n| f.select(n, None))
            .collect();
        // Matching launches 0..: skip 0 and 1, take 2, 3 and 4.
        assert_eq!(
            picked,
            [false, false, false, true, true, false, true, false, false]
        );
        assert!(f.is_done());
        assert!(!KernelFilter::new(&[], 0, Some(1)).is_done());
    }

    #[test]
    fn the_environment_sets_the_filter_and_bad_numbers_are_named() {
        let (f, p) = KernelFilter::from_lookup(&lookup(&[
            (vars::KERNELS, " *gemm* ,relu*,"),
            (vars::SKIP, "10"),
            (vars::COUNT, "lots"),
        ]));
        assert_eq!(f, KernelFilter::new(&["*gemm*", "relu*"], 10, None));
        assert_eq!(p.len(), 1);
        let line = p[0].to_string();
        assert!(
            line.contains(vars::COUNT) && line.contains("lots"),
            "{line}"
        );
        assert_eq!(f.describe(), "names *gemm*,relu*, skip 10");
        let (f, p) = KernelFilter::from_lookup(&lookup(&[]));
        assert!(f.is_everything() && p.is_empty());
    }
}
