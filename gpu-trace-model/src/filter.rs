//! Which kernels get per-kernel counters.
//!
//! Profiling a kernel replays it, once per pass, and serialises the
//! program, so people pick. A launch is profiled when it passes, in this
//! order (Perfetto's `InstrumentedSamplingConfig` order):
//!
//! 1. the name globs, if any: one matches the kernel's name (see
//!    [`NameBase`] for which form of it);
//! 2. the range globs, if any ([`tx`]): it is launched inside an NVTX or
//!    roctx push/pop range that an include glob matches (or there are no
//!    include globs), and inside none that an exclude glob matches;
//! 3. the launch windows, if any: counting only the launches that passed
//!    1 and 2, each window leaves out `skip` of them and takes the next
//!    `count`, and the next window starts after it.
//!
//! Without any of these every kernel is profiled. This module is the
//! matching engine, and knows nothing of where a filter comes from: the
//! agent reads one from the environment (`INJECTION_KERNEL_FILTER` and its
//! siblings), the Perfetto writer from a system session's trace config
//! (`instrumented_sampling_config`), which then replaces the environment's
//! for the session.

pub mod tx;

use arc_swap::ArcSwap;
use rustc_hash::FxHashMap;
use std::borrow::Borrow;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// Which form of a kernel's name a glob is matched against.
///
/// In the environment a glob may start with `mangled:`, `demangled:` or
/// `function:`; without one it matches either the mangled or the demangled
/// name. A trace config's `name_base` is one of the first three
/// (`MANGLED_KERNEL_NAME`, the default, `DEMANGLED_KERNEL_NAME`,
/// `FUNCTION_NAME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NameBase {
    /// The mangled or the demangled name.
    #[default]
    Either,
    /// The symbol as compiled: `_Z4gemmIfEvPKT_Pf`.
    Mangled,
    /// The demangled signature: `void gemm<float>(float const*, float*)`
    /// (the mangled name when it is not a C++ one).
    Demangled,
    /// The qualified function name, without return type, template
    /// arguments and parameters: `gemm`, `at::native::elementwise_kernel`.
    Function,
}

impl NameBase {
    const PREFIXES: [(&'static str, NameBase); 3] = [
        ("mangled:", NameBase::Mangled),
        ("demangled:", NameBase::Demangled),
        ("function:", NameBase::Function),
    ];

    /// A glob's base prefix, if it has one (`ns::k*` has none), and the
    /// glob without it: `("gemm*", Demangled)` for `demangled:gemm*`.
    pub fn split(glob: &str) -> (&str, NameBase) {
        for (p, base) in Self::PREFIXES {
            if let Some(rest) = glob.strip_prefix(p)
                && !rest.starts_with(':')
            {
                return (rest.trim(), base);
            }
        }
        (glob, NameBase::Either)
    }

    fn prefix(self) -> &'static str {
        Self::PREFIXES
            .iter()
            .find(|(_, b)| *b == self)
            .map_or("", |(p, _)| p)
    }
}

/// A name glob and the form of the name it is matched against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameGlob {
    /// `*` any run of characters, `?` one.
    pub glob: String,
    /// Which name.
    pub base: NameBase,
}

impl NameGlob {
    /// A glob on `base`.
    pub fn new(glob: impl Into<String>, base: NameBase) -> Self {
        Self {
            glob: glob.into(),
            base,
        }
    }
}

/// A launch window: leave out `skip` passing launches, then take `count`
/// (`None`: all the rest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Launches left out first.
    pub skip: u64,
    /// Launches taken then.
    pub count: Option<u64>,
}

/// What a filter selects, as configured (no state).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilterSpec {
    /// Name globs; a kernel passes if one matches (or there are none).
    pub names: Vec<NameGlob>,
    /// Range globs a launch must be inside one of (if any).
    pub tx_include: Vec<String>,
    /// Range globs a launch must be inside none of.
    pub tx_exclude: Vec<String>,
    /// Launch windows, one after the other (none: every passing launch).
    pub windows: Vec<Window>,
}

impl FilterSpec {
    /// Whether it lets every kernel through.
    pub fn is_everything(&self) -> bool {
        self.names.is_empty()
            && self.tx_include.is_empty()
            && self.tx_exclude.is_empty()
            && self.windows.is_empty()
    }

    /// The filter as people read it, for messages.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.names.is_empty() {
            let names: Vec<String> = self
                .names
                .iter()
                .map(|n| format!("{}{}", n.base.prefix(), n.glob))
                .collect();
            parts.push(format!("names {}", names.join(",")));
        }
        if !self.tx_include.is_empty() {
            parts.push(format!("inside ranges {}", self.tx_include.join(",")));
        }
        if !self.tx_exclude.is_empty() {
            parts.push(format!("outside ranges {}", self.tx_exclude.join(",")));
        }
        for w in &self.windows {
            let mut s = Vec::new();
            if w.skip > 0 {
                s.push(format!("skip {}", w.skip));
            }
            s.push(match w.count {
                Some(c) => format!("count {c}"),
                None => "then all".to_owned(),
            });
            parts.push(s.join(" "));
        }
        if parts.is_empty() {
            "every kernel".to_owned()
        } else {
            parts.join(", ")
        }
    }
}

/// A counters session's own kernel selection (its trace config's
/// `instrumented_sampling_config`), which replaces the environment's
/// filter while it runs. `session` tells two sessions with the same
/// selection apart: each counts its launch windows from its start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionFilter {
    /// Which session set it up.
    pub session: u64,
    /// What it selects.
    pub spec: Arc<FilterSpec>,
}

/// The kernel filter: a [`FilterSpec`] ready to decide launches, with the
/// count of launches that passed so far.
#[derive(Debug)]
pub struct KernelFilter {
    spec: FilterSpec,
    names: Vec<(wildmatch::WildMatch, NameBase)>,
    tx: Option<tx::TxGlobs>,
    /// Launch windows as `[start, end)` over the passing launches (`None`:
    /// no end).
    windows: Vec<(u64, Option<u64>)>,
    /// Passing launches so far.
    passed: AtomicU64,
}

impl Default for KernelFilter {
    fn default() -> Self {
        Self::new(FilterSpec::default())
    }
}

impl KernelFilter {
    /// A filter that selects what `spec` says. Its range globs see only
    /// ranges opened after [`tx::start`] ([`KernelSelector::set`] calls it).
    pub fn new(spec: FilterSpec) -> Self {
        let names = spec
            .names
            .iter()
            .map(|n| (wildmatch::WildMatch::new(&n.glob), n.base))
            .collect();
        let tx = (!spec.tx_include.is_empty() || !spec.tx_exclude.is_empty())
            .then(|| tx::TxGlobs::new(&spec.tx_include, &spec.tx_exclude));
        let mut windows = Vec::new();
        let mut at = 0u64;
        for w in &spec.windows {
            let start = at.saturating_add(w.skip);
            match w.count {
                Some(c) => {
                    at = start.saturating_add(c);
                    windows.push((start, Some(at)));
                }
                None => {
                    // Takes all the rest: later windows are never reached.
                    windows.push((start, None));
                    break;
                }
            }
        }
        Self {
            spec,
            names,
            tx,
            windows,
            passed: AtomicU64::new(0),
        }
    }

    /// What it selects.
    pub fn spec(&self) -> &FilterSpec {
        &self.spec
    }

    /// Whether the filter lets every kernel through.
    pub fn is_everything(&self) -> bool {
        self.spec.is_everything()
    }

    /// Whether no kernel can be chosen any more (the windows are used up).
    pub fn is_done(&self) -> bool {
        match self.windows.last() {
            Some(&(_, Some(end))) => self.passed.load(Ordering::Relaxed) >= end,
            _ => false,
        }
    }

    /// Whether the filter has name globs (without, every name matches).
    pub fn has_globs(&self) -> bool {
        !self.names.is_empty()
    }

    /// Whether the filter has range globs.
    pub fn has_ranges(&self) -> bool {
        self.tx.is_some()
    }

    /// Whether a name matches the name globs (every name does without
    /// globs). `demangled` is `None` when the name is not a C++ one; the
    /// function name is worked out only for `function:` globs. Callers
    /// that see a name often keep the answer.
    pub fn matches(&self, mangled: &str, demangled: Option<&str>) -> bool {
        if self.names.is_empty() {
            return true;
        }
        let demangled_or_mangled = demangled.unwrap_or(mangled);
        let mut function: Option<String> = None;
        self.names.iter().any(|(g, base)| match base {
            NameBase::Either => g.matches(mangled) || demangled.is_some_and(|d| g.matches(d)),
            NameBase::Mangled => g.matches(mangled),
            NameBase::Demangled => g.matches(demangled_or_mangled),
            NameBase::Function => g.matches(
                function.get_or_insert_with(|| crate::names::display_name(demangled_or_mangled)),
            ),
        })
    }

    /// Whether a launch on the calling thread passes the range globs
    /// (always, without them): costs a look at the thread's open ranges,
    /// never an allocation.
    pub fn in_ranges(&self) -> bool {
        self.tx.as_ref().is_none_or(tx::TxGlobs::passes)
    }

    /// Decides for one launch on the calling thread: its name and ranges
    /// pass, and it falls in a launch window (it is counted if it passes).
    pub fn select(&self, mangled: &str, demangled: Option<&str>) -> bool {
        self.matches(mangled, demangled) && self.in_ranges() && self.take()
    }

    /// Counts a launch that passed the name and range globs (callers that
    /// cache [`KernelFilter::matches`]) and says whether it falls in a
    /// launch window.
    pub fn take(&self) -> bool {
        if self.windows.is_empty() {
            return true;
        }
        let i = self.passed.fetch_add(1, Ordering::Relaxed);
        self.windows
            .iter()
            .any(|&(start, end)| i >= start && end.is_none_or(|e| i < e))
    }

    /// The filter as people read it, for messages.
    pub fn describe(&self) -> String {
        self.spec.describe()
    }
}

/// The kernel filter a backend applies: the environment's, or that of the
/// counters session running ([`SessionFilter`]), with the answers of its
/// name globs kept per kernel. `K` is how the backend knows a kernel (its
/// mangled name, a kernel id).
pub struct KernelSelector<K> {
    /// Kept, with its counts, while sessions bring their own.
    env: Arc<Selection<K>>,
    current: ArcSwap<Selection<K>>,
}

/// A filter in force (see [`KernelSelector::current`]).
pub struct Selection<K> {
    /// The session whose filter it is (`None`: the environment's).
    session: Option<u64>,
    filter: KernelFilter,
    /// Kernel → whether its name matches the name globs.
    names: RwLock<FxHashMap<K, bool>>,
}

impl<K: Eq + Hash> Selection<K> {
    fn new(session: Option<u64>, filter: KernelFilter) -> Arc<Self> {
        Arc::new(Selection {
            session,
            filter,
            names: RwLock::new(FxHashMap::default()),
        })
    }

    /// The filter.
    pub fn filter(&self) -> &KernelFilter {
        &self.filter
    }

    /// Decides for one launch on the calling thread (whose ranges it may
    /// look at): name, ranges, then launch windows. `kernel` gives the key
    /// of the launched kernel and `names` its mangled and demangled names;
    /// the key is asked only when the filter has name globs, the names
    /// once per kernel.
    pub fn choose<Q, B>(
        &self,
        kernel: impl FnOnce() -> B,
        names: impl FnOnce(&Q) -> (String, Option<String>),
    ) -> bool
    where
        B: Borrow<Q>,
        K: Borrow<Q>,
        Q: Eq + Hash + ToOwned + ?Sized,
        Q::Owned: Into<K>,
    {
        let f = &self.filter;
        f.is_everything()
            || ((!f.has_globs() || self.name_matches(kernel().borrow(), names))
                && f.in_ranges()
                && f.take())
    }

    fn name_matches<Q>(
        &self,
        kernel: &Q,
        names: impl FnOnce(&Q) -> (String, Option<String>),
    ) -> bool
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ToOwned + ?Sized,
        Q::Owned: Into<K>,
    {
        if let Some(&m) = self
            .names
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(kernel)
        {
            return m;
        }
        let (mangled, demangled) = names(kernel);
        let m = self.filter.matches(&mangled, demangled.as_deref());
        self.names
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(kernel.to_owned().into(), m);
        m
    }
}

impl<K: Eq + Hash> KernelSelector<K> {
    /// Applies `env` (the environment's filter) until a session brings
    /// its own.
    pub fn new(env: KernelFilter) -> Self {
        let env = Selection::new(None, env);
        Self {
            current: ArcSwap::new(env.clone()),
            env,
        }
    }

    /// A counters session starts: its own filter from now on (a fresh one,
    /// counting its windows from zero, for each new session), or the
    /// environment's with `None`. A filter with range globs starts the
    /// range tracking ([`tx::start`]).
    pub fn set(&self, session: Option<&SessionFilter>) {
        let key = session.map(|s| s.session);
        if self.current.load().session != key {
            self.current.store(match session {
                Some(s) => Selection::new(key, KernelFilter::new((*s.spec).clone())),
                None => self.env.clone(),
            });
        }
        if self.current.load().filter.has_ranges() {
            tx::start();
        }
    }

    /// The filter in force; cheap enough for every launch (no lock, no
    /// reference count in the common case).
    pub fn current(&self) -> arc_swap::Guard<Arc<Selection<K>>> {
        self.current.load()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(globs: &[(&str, NameBase)]) -> FilterSpec {
        FilterSpec {
            names: globs.iter().map(|(g, b)| NameGlob::new(*g, *b)).collect(),
            ..Default::default()
        }
    }

    fn windows(w: &[(u64, Option<u64>)]) -> Vec<Window> {
        w.iter()
            .map(|&(skip, count)| Window { skip, count })
            .collect()
    }

    #[test]
    fn globs_match_the_name_base_they_ask_for() {
        let either = KernelFilter::new(names(&[
            ("*gemm*", NameBase::Either),
            ("vadd", NameBase::Either),
        ]));
        assert!(either.matches("_Z4gemmPfS_", None));
        assert!(either.matches("_Z4vaddPf", Some("vadd")));
        assert!(!either.matches("_Z4vaddPf", Some("vadd(float*)")));
        assert!(!either.matches("_Z3foov", Some("foo()")));
        assert!(KernelFilter::default().matches("anything", None));

        let m = "_ZN2ns4gemmIfEEvPKT_Pf";
        let d = Some("void ns::gemm<float>(float const*, float*)");
        let base = |glob: &str, b| KernelFilter::new(names(&[(glob, b)])).matches(m, d);
        assert!(base("_ZN2ns4gemm*", NameBase::Mangled));
        assert!(!base("*ns::gemm*", NameBase::Mangled));
        assert!(base("void ns::gemm<float>(*", NameBase::Demangled));
        assert!(!base("_ZN2ns4gemm*", NameBase::Demangled));
        assert!(base("ns::gemm", NameBase::Function));
        assert!(!base("ns::gemm<float>", NameBase::Function));
        assert!(!base("void ns::gemm*", NameBase::Function));
        // A C kernel's demangled and function names are its own name.
        let c_kernel = |glob: &str, b| KernelFilter::new(names(&[(glob, b)])).matches("relu", None);
        assert!(c_kernel("relu", NameBase::Demangled) && c_kernel("relu", NameBase::Function));
    }

    #[test]
    fn windows_count_only_launches_that_passed_the_globs() {
        let f = KernelFilter::new(FilterSpec {
            windows: windows(&[(2, Some(3))]),
            ..names(&[("k*", NameBase::Either)])
        });
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
        let unlimited = KernelFilter::new(FilterSpec {
            windows: windows(&[(0, None)]),
            ..Default::default()
        });
        assert!(!unlimited.is_done());
    }

    #[test]
    fn windows_follow_one_another() {
        // Perfetto's ActivityRange list: skip 1 take 2, then skip 3 take 1,
        // then (a zero-length window changes nothing) skip 1 take the rest.
        let f = KernelFilter::new(FilterSpec {
            windows: windows(&[
                (1, Some(2)),
                (3, Some(1)),
                (0, Some(0)),
                (1, None),
                (5, Some(1)),
            ]),
            ..Default::default()
        });
        let picked: Vec<usize> = (0..12).filter(|_| f.take()).collect();
        assert_eq!(picked, [1, 2, 6, 8, 9, 10, 11]);
        assert!(!f.is_done());
        let done = KernelFilter::new(FilterSpec {
            windows: windows(&[(0, Some(1)), (1, Some(1))]),
            ..Default::default()
        });
        assert_eq!((0..5).filter(|_| done.take()).count(), 2);
        assert!(done.is_done());
    }

    #[test]
    fn windows_count_only_launches_inside_the_ranges_and_excludes_win() {
        tx::start();
        std::thread::spawn(|| {
            let f = KernelFilter::new(FilterSpec {
                tx_include: vec!["train*".into()],
                tx_exclude: vec!["*backward*".into()],
                windows: windows(&[(1, Some(2))]),
                ..names(&[("gemm*", NameBase::Demangled)])
            });
            let mut picked = Vec::new();
            let mut launch = |tag: &'static str, name: &str| {
                if f.select(name, None) {
                    picked.push(tag);
                }
            };
            launch("outside", "gemm");
            tx::push(0, "training");
            launch("first", "gemm"); // skipped: the window's skip
            launch("other name", "relu");
            tx::push(0, "backward");
            launch("excluded", "gemm");
            tx::pop(0);
            tx::push(3, "inner"); // nested, another domain
            launch("second", "gemm");
            tx::pop(3);
            launch("third", "gemm");
            launch("past the window", "gemm");
            tx::pop(0);
            assert_eq!(picked, ["second", "third"]);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_selector_keeps_name_answers_and_each_session_counts_afresh() {
        let env = KernelFilter::new(FilterSpec {
            windows: windows(&[(0, Some(1))]),
            ..names(&[("*gemm*", NameBase::Either)])
        });
        let sel: KernelSelector<Box<str>> = KernelSelector::new(env);
        let asked = std::cell::Cell::new(0);
        let choose = |name: &str| {
            sel.current().choose(
                || name,
                |n: &str| {
                    asked.set(asked.get() + 1);
                    (n.to_owned(), None)
                },
            )
        };
        assert!(!choose("relu"));
        assert!(choose("_Z4gemmv"));
        assert!(!choose("_Z4gemmv"), "the environment's window is used up");
        assert_eq!(asked.get(), 2, "each name is asked for once");
        let session = |n| SessionFilter {
            session: n,
            spec: Arc::new(FilterSpec {
                windows: windows(&[(1, Some(1))]),
                ..Default::default()
            }),
        };
        sel.set(Some(&session(1)));
        assert_eq!(
            [choose("relu"), choose("relu"), choose("relu")],
            [false, true, false]
        );
        sel.set(Some(&session(1)));
        assert!(!choose("relu"), "the same session: its counts go on");
        sel.set(Some(&session(2)));
        assert_eq!(
            [choose("relu"), choose("relu")],
            [false, true],
            "a new session starts afresh"
        );
        sel.set(None);
        assert!(
            !choose("_Z4gemmv"),
            "the environment's filter, with its counts"
        );
    }
}
