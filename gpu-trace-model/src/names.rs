//! Interned strings and kernels, and kernel-name demangling.
//!
//! Interning takes a lock, so backends call it once per distinct name (a
//! CUPTI callback id, a kernel function) and keep the id; the per-event hot
//! path only copies ids.

use crate::model::{KernelDesc, KernelId, NameId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

/// The process's string table. Ids start at 1 so that they can double as
/// Perfetto interning ids.
#[derive(Debug, Default)]
pub struct Names {
    inner: RwLock<NamesInner>,
}

#[derive(Debug, Default)]
struct NamesInner {
    map: HashMap<Arc<str>, NameId>,
    list: Vec<Arc<str>>,
}

impl Names {
    /// Returns the id of `s`, adding it on first use.
    pub fn intern(&self, s: &str) -> NameId {
        if let Some(&id) = self.read().map.get(s) {
            return id;
        }
        let mut w = self.inner.write().unwrap_or_else(|e| e.into_inner());
        if let Some(&id) = w.map.get(s) {
            return id;
        }
        let arc: Arc<str> = Arc::from(s);
        w.list.push(arc.clone());
        let id = NameId(w.list.len() as u32);
        w.map.insert(arc, id);
        id
    }

    /// The string behind `id`; empty for an unknown id.
    pub fn get(&self, id: NameId) -> Arc<str> {
        let r = self.read();
        id.0.checked_sub(1)
            .and_then(|i| r.list.get(i as usize))
            .cloned()
            .unwrap_or_else(|| Arc::from(""))
    }

    /// Number of names interned.
    pub fn len(&self) -> usize {
        self.read().list.len()
    }

    /// Whether nothing was interned yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, NamesInner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }
}

/// Names derived from one mangled kernel name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelNames {
    /// As the vendor reported it.
    pub mangled: NameId,
    /// Demangled, or `mangled` when it is not a mangled name.
    pub demangled: NameId,
    /// Short form for slice names: qualified name without templates,
    /// parameters or return type.
    pub display: NameId,
}

/// Kernel descriptions and a demangling cache.
#[derive(Debug, Default)]
pub struct Kernels {
    list: RwLock<Vec<Arc<KernelDesc>>>,
    demangled: Mutex<HashMap<NameId, KernelNames>>,
}

impl Kernels {
    /// Registers a kernel launch class. Backends de-duplicate with their own
    /// keys (a function handle, a kernel id) and call this once per class.
    pub fn register(&self, desc: KernelDesc) -> KernelId {
        let mut l = self.list.write().unwrap_or_else(|e| e.into_inner());
        l.push(Arc::new(desc));
        KernelId(l.len() as u32)
    }

    /// The description behind `id`.
    pub fn get(&self, id: KernelId) -> Option<Arc<KernelDesc>> {
        let l = self.list.read().unwrap_or_else(|e| e.into_inner());
        id.0.checked_sub(1).and_then(|i| l.get(i as usize)).cloned()
    }

    /// Number of registered kernel classes.
    pub fn len(&self) -> usize {
        self.list.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether none is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Interns `mangled` and its demangled and display forms. Each distinct
    /// name is demangled once per process.
    pub fn names(&self, names: &Names, mangled: &str) -> KernelNames {
        let m = names.intern(mangled);
        let mut cache = self.demangled.lock().unwrap_or_else(|e| e.into_inner());
        *cache.entry(m).or_insert_with(|| {
            let demangled = demangle(mangled);
            let d = demangled.as_deref().unwrap_or(mangled);
            KernelNames {
                mangled: m,
                demangled: names.intern(d),
                display: names.intern(&display_name(d)),
            }
        })
    }

    /// How many distinct names were demangled (for tests of the cache).
    pub fn demangled_count(&self) -> usize {
        self.demangled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }
}

/// The longest demangled name kept: far above the longest real kernel
/// names (templated kernels reach a few KB), far below what a hostile name
/// can ask for.
pub const DEMANGLED_LIMIT: usize = 64 * 1024;

/// Demangles an Itanium C++ name; `None` when `name` is not one, or when
/// its demangled form would pass [`DEMANGLED_LIMIT`] (the mangled name is
/// kept then).
///
/// Back-references make the demangled form exponential in the mangled
/// one: a 185-character name whose template arguments each repeat the
/// previous one four times demangles into 52 MB (0.56 s in a release
/// build). The demangler writes into a buffer that refuses to grow past the
/// limit, which stops it there.
pub fn demangle(name: &str) -> Option<String> {
    if !name.starts_with("_Z") {
        return None;
    }
    let sym = cpp_demangle::Symbol::new(name).ok()?;
    let mut out = Bounded(String::new());
    // Deep template nesting in generated kernels can make the demangler give
    // up; keep the mangled name then.
    sym.structured_demangle(&mut out, &cpp_demangle::DemangleOptions::default())
        .ok()?;
    Some(out.0)
}

/// A demangler's output that fails once it would pass [`DEMANGLED_LIMIT`].
struct Bounded(String);

impl std::fmt::Write for Bounded {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.0.len() + s.len() > DEMANGLED_LIMIT {
            return Err(std::fmt::Error);
        }
        self.0.push_str(s);
        Ok(())
    }
}

/// Shortens a demangled signature to the qualified function name:
/// `void at::native::foo<float, 4>(int, float*)` → `at::native::foo`.
pub fn display_name(demangled: &str) -> String {
    let s = demangled.trim();
    let b = s.as_bytes();
    let mut depth = 0i32;
    let mut params_at = s.len();
    let mut last_space = None;
    let mut i = 0;
    while i < b.len() {
        if let Some(skip) = special_token(&s[i..]) {
            i += skip;
            continue;
        }
        match b[i] {
            b'<' | b'[' | b'{' => depth += 1,
            b'>' | b']' | b'}' => depth -= 1,
            b'(' if depth == 0 => {
                params_at = i;
                break;
            }
            b'(' => depth += 1,
            b')' => depth -= 1,
            b' ' if depth == 0 => last_space = Some(i),
            _ => {}
        }
        i += 1;
    }
    let head = &s[..params_at];
    let head = match last_space {
        Some(sp) if sp + 1 < head.len() => &head[sp + 1..],
        _ => head,
    };
    // Drop template arguments at any depth, keeping operator tokens whole.
    let mut out = String::with_capacity(head.len());
    let hb = head.as_bytes();
    let mut depth = 0i32;
    let mut i = 0;
    while i < hb.len() {
        if depth == 0
            && let Some(skip) = special_token(&head[i..])
        {
            out.push_str(&head[i..i + skip]);
            i += skip;
            continue;
        }
        match hb[i] {
            b'<' => depth += 1,
            b'>' => depth -= 1,
            c if depth == 0 => out.push(c as char),
            _ => {}
        }
        i += 1;
    }
    let out = out.trim();
    if out.is_empty() {
        s.to_owned()
    } else {
        out.to_owned()
    }
}

/// Length of a token at the start of `s` that contains brackets but must be
/// kept whole: `(anonymous namespace)` and operator names.
fn special_token(s: &str) -> Option<usize> {
    const ANON: &str = "(anonymous namespace)";
    if s.starts_with(ANON) {
        return Some(ANON.len());
    }
    let rest = s.strip_prefix("operator")?;
    for op in [
        "()", "[]", "<<=", ">>=", "<=>", "->*", "<<", ">>", "<=", ">=", "->", "<", ">", "==", "!=",
        "+=", "-=", "*=", "/=", "&&", "||", "++", "--",
    ] {
        if rest.starts_with(op) {
            return Some("operator".len() + op.len());
        }
    }
    None
}

/// Splits a metric list on `,` and `;`, trims, drops empties, de-duplicates
/// in first-seen order. Names with characters no metric uses are returned
/// separately so that each can be reported alone.
pub fn parse_metric_list(v: &str) -> (Vec<String>, Vec<String>) {
    let mut good: Vec<String> = Vec::new();
    let mut bad = Vec::new();
    for m in v.split([',', ';']).map(str::trim).filter(|m| !m.is_empty()) {
        let ok = m
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b));
        if !ok {
            bad.push(m.to_owned());
        } else if !good.iter().any(|g| g == m) {
            good.push(m.to_owned());
        }
    }
    (good, bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_is_stable_and_starts_at_one() {
        let n = Names::default();
        let a = n.intern("cudaLaunchKernel");
        let b = n.intern("cudaMemcpy");
        assert_eq!(a, NameId(1));
        assert_eq!(n.intern("cudaLaunchKernel"), a);
        assert_ne!(a, b);
        assert_eq!(&*n.get(b), "cudaMemcpy");
        assert_eq!(&*n.get(NameId(0)), "");
    }

    #[test]
    fn demangles_once_per_name() {
        let names = Names::default();
        let k = Kernels::default();
        let a = k.names(&names, "_Z6vecAddPfS_S_i");
        let b = k.names(&names, "_Z6vecAddPfS_S_i");
        assert_eq!(a, b);
        assert_eq!(k.demangled_count(), 1);
        assert_eq!(
            &*names.get(a.demangled),
            "vecAdd(float*, float*, float*, int)"
        );
        assert_eq!(&*names.get(a.display), "vecAdd");
        let c = k.names(&names, "plain_c_kernel");
        assert_eq!(c.mangled, c.demangled);
        assert_eq!(&*names.get(c.display), "plain_c_kernel");
    }

    /// `_Z1f1aIiE` then `S_I<Sn_ x4>E` for each earlier argument: each
    /// template argument holds the previous one four times.
    fn exploding_name() -> String {
        let mut name = String::from("_Z1f1aIiE");
        let digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
        for n in 0..11 {
            let r = format!("S{}_", &digits[n..n + 1]);
            name.push_str(&format!("S_I{r}{r}{r}{r}E"));
        }
        name
    }

    #[test]
    fn a_name_that_demangles_into_megabytes_stays_mangled() {
        let name = exploding_name();
        assert_eq!(name.len(), 185);
        assert_eq!(demangle(&name).map(|d| d.len()), None);
        let names = Names::default();
        let k = Kernels::default();
        let n = k.names(&names, &name);
        assert_eq!(n.demangled, n.mangled);
        // Long real names are kept: a kernel of about 10 KB of templates.
        let long = format!(
            "_ZN2at6native29vectorized_elementwise_kernelILi4E{}EEvv",
            "NS0_11FillFunctorIfEE".repeat(300)
        );
        let d = demangle(&long).expect("demangled");
        assert!(d.len() > 9_000 && d.len() < DEMANGLED_LIMIT, "{}", d.len());
    }

    #[test]
    fn display_names() {
        for (input, want) in [
            (
                "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
                "at::native::vectorized_elementwise_kernel",
            ),
            (
                "void (anonymous namespace)::softmax_warp_forward<float, float, 4>(float*, float const*, int)",
                "(anonymous namespace)::softmax_warp_forward",
            ),
            ("foo::operator()(int, float)", "foo::operator()"),
            (
                "bool ns::operator<(ns::A const&, ns::A const&)",
                "ns::operator<",
            ),
            ("kernel", "kernel"),
            (
                "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x3_nn_align4>(cutlass_80_tensorop_s1688gemm_64x64_16x3_nn_align4::Params)",
                "cutlass::Kernel2",
            ),
            (
                "void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, 4, {lambda(curandStatePhilox4_32_10*)#1}>(long, at::PhiloxCudaState)",
                "at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel",
            ),
        ] {
            assert_eq!(display_name(input), want, "{input}");
        }
    }

    #[test]
    fn bad_mangled_names_are_kept() {
        assert_eq!(demangle("_Z"), None);
        assert_eq!(demangle("not_mangled"), None);
        assert_eq!(display_name(""), "");
    }
}
