//! Short kernel names that stay distinct.
//!
//! A demangled C++ kernel name is mostly template arguments and parameter
//! types: `void at::native::vectorized_elementwise_kernel<4,
//! at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, ...)`.
//! Its *base name* ([`base_name`]), as nsys's `:base` and LLVM's
//! `getFunctionBaseName` have it, is the function's own name without its
//! return type, namespaces, template arguments and parameters:
//! `vectorized_elementwise_kernel`.
//!
//! Base names of different kernels collide. [`short_names`] gives each
//! name of a set a short name that no other name of the set has:
//!
//! 1. a base name that only one full name has is the short name;
//! 2. names that share a base name keep the fewest template arguments that
//!    tell them apart, chosen greedily (the argument position that splits
//!    the most names first, then the leftmost), each argument shown
//!    without its namespaces, and `…` for each run of arguments left out:
//!    `vectorized_elementwise_kernel<…, FillFunctor<float>, …>`;
//! 3. names still alike (overloads, or the same name in two namespaces)
//!    keep their parameter list without namespaces: `gemm(float)`;
//! 4. what is still alike after that gets a suffix of four hex digits of
//!    a hash of its full name (FNV-1a, so the same name has the same
//!    suffix in every trace and run), eight where four collide:
//!    `kernel [3fa2]`.
//!
//! Names that are not C++ signatures (`ampere_sgemm_128x64_nn`, a
//! driver's `Memcpy HtoD`) are their own base names.

use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// How names are shown in the kernels tables (`--names`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NameStyle {
    /// The unique short name ([`short_names`]).
    #[default]
    Short,
    /// The base name alone ([`base_name`]); kernels that share one show
    /// the same name on separate rows.
    Base,
    /// The whole demangled name.
    Full,
    /// The mangled name, as the binary has it (the demangled one where the
    /// trace has none).
    Mangled,
}

impl NameStyle {
    /// Every style, as `--names` spells them.
    pub const ALL: [(&'static str, NameStyle); 4] = [
        ("short", NameStyle::Short),
        ("base", NameStyle::Base),
        ("full", NameStyle::Full),
        ("mangled", NameStyle::Mangled),
    ];

    /// The style named `s` (any case).
    ///
    /// # Errors
    /// A message that names `s` and the styles.
    pub fn parse(s: &str) -> Result<NameStyle, String> {
        NameStyle::ALL
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(s.trim()))
            .map(|(_, v)| *v)
            .ok_or_else(|| format!("--names {s:?}: expected short, base, full or mangled"))
    }
}

/// The parts of a demangled function name.
#[derive(Debug, PartialEq, Eq)]
struct Parts<'a> {
    /// The function's own name, without template arguments.
    base: &'a str,
    /// Its template arguments, top level, trimmed.
    targs: Vec<&'a str>,
    /// Its parameter list, parentheses included.
    params: Option<&'a str>,
}

/// Bracket depth change of a character: `<(<[{` open, `>)]}` close.
fn depth_step(c: u8) -> i32 {
    match c {
        b'<' | b'(' | b'[' | b'{' => 1,
        b'>' | b')' | b']' | b'}' => -1,
        _ => 0,
    }
}

/// Whether `s[i..]` starts an `operator` name (whose `<`, `(` ... are not
/// brackets).
fn operator_at(s: &[u8], i: usize) -> Option<usize> {
    const OP: &[u8] = b"operator";
    if !s[i..].starts_with(OP) || (i > 0 && (s[i - 1].is_ascii_alphanumeric() || s[i - 1] == b'_'))
    {
        return None;
    }
    let mut j = i + OP.len();
    match s.get(j) {
        Some(c) if c.is_ascii_alphanumeric() || *c == b'_' => return None,
        _ => {}
    }
    // `operator()`, `operator<<`, `operator<`, `operator new[]`, a
    // conversion `operator bool`: the symbols right after it belong to it.
    while j < s.len() && matches!(s[j], b' ') {
        j += 1;
    }
    if s[j..].starts_with(b"()") || s[j..].starts_with(b"[]") {
        return Some(j + 2);
    }
    while j < s.len() && b"<>=!+-*/%^&|~,".contains(&s[j]) {
        j += 1;
    }
    Some(j)
}

/// The end of the bracket group that opens at `s[i]` (one past its
/// closing bracket), or `s.len()` when it does not close.
fn group_end(s: &[u8], i: usize) -> usize {
    let mut depth = 0;
    let mut j = i;
    while j < s.len() {
        if let Some(after) = operator_at(s, j) {
            j = after;
            continue;
        }
        depth += depth_step(s[j]);
        j += 1;
        if depth == 0 {
            return j;
        }
    }
    s.len()
}

/// Splits `s` at its top-level commas, each part trimmed.
fn top_level_split(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let (mut out, mut depth, mut start, mut i) = (Vec::new(), 0, 0, 0);
    while i < b.len() {
        if let Some(after) = operator_at(b, i) {
            i = after;
            continue;
        }
        match b[i] {
            b',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            c => depth += depth_step(c),
        }
        i += 1;
    }
    let last = s[start..].trim();
    if !last.is_empty() || !out.is_empty() {
        out.push(last);
    }
    out
}

/// The parts of `full`: its last top-level `(...)` is the parameter list
/// (when only qualifiers such as ` const` follow it); before it, the last
/// top-level space ends the return type and the last top-level `::` the
/// namespaces; the base name ends at its first top-level `<`.
fn parts(full: &str) -> Parts<'_> {
    let s = full.trim();
    let b = s.as_bytes();
    // Top-level groups and separators, left to right.
    let (mut i, mut last_paren, mut last_space, mut last_colons) = (0, None, None, None);
    while i < b.len() {
        if let Some(after) = operator_at(b, i) {
            i = after;
            continue;
        }
        match b[i] {
            b'(' | b'<' | b'[' | b'{' => {
                let end = group_end(b, i);
                if b[i] == b'(' {
                    last_paren = Some((i, end));
                }
                i = end;
                continue;
            }
            b' ' => last_space = Some(i),
            b':' if b.get(i + 1) == Some(&b':') => {
                last_colons = Some(i);
                i += 2;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    // The parameter list: the last top-level group, followed only by
    // qualifiers, and not an `(anonymous namespace)` before a `::`.
    let params = last_paren.filter(|&(start, end)| {
        start > 0
            && s[end..]
                .split_whitespace()
                .all(|w| matches!(w, "const" | "volatile" | "&" | "&&" | "noexcept"))
            && !s[end..].trim_start().starts_with("::")
    });
    let head_end = params.map_or(s.len(), |(start, _)| start);
    let head = &s[..head_end];
    // The qualified name: after the return type (a top-level space before
    // the name), then after its last top-level `::`.
    // A name without a parameter list is no signature: its spaces are
    // its own (`Memcpy HtoD`).
    let name_start = [
        last_space
            .filter(|&p| p < head_end && params.is_some())
            .map(|p| p + 1),
        last_colons.filter(|&p| p < head_end).map(|p| p + 2),
    ]
    .into_iter()
    .flatten()
    .max()
    .unwrap_or(0);
    let name = &head[name_start.min(head.len())..];
    let nb = name.as_bytes();
    // The base ends at its first top-level `<` (not an operator's).
    let mut j = 0;
    let mut targs = Vec::new();
    let mut base_end = nb.len();
    while j < nb.len() {
        if let Some(after) = operator_at(nb, j) {
            j = after;
            continue;
        }
        if nb[j] == b'<' {
            base_end = j;
            let end = group_end(nb, j);
            let inner = &name[j + 1..end.saturating_sub(1).max(j + 1)];
            targs = top_level_split(inner);
            break;
        }
        j += 1;
    }
    let base = name[..base_end].trim();
    Parts {
        base: if base.is_empty() { s } else { base },
        targs,
        params: params.map(|(start, end)| &s[start..end]),
    }
}

/// The base name of a (demangled) kernel name: the function's own name,
/// without return type, namespaces, template arguments and parameters.
///
/// ```
/// use gpu_trace_analysis::names::base_name;
/// assert_eq!(
///     base_name("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"),
///     "vectorized_elementwise_kernel"
/// );
/// assert_eq!(base_name("gemm()"), "gemm");
/// assert_eq!(base_name("ampere_sgemm_128x64_nn"), "ampere_sgemm_128x64_nn");
/// ```
pub fn base_name(full: &str) -> &str {
    parts(full).base
}

/// `s` with every namespace and enclosing scope left out: `a::b::C<x::y>`
/// → `C<y>`, `f(int)::{lambda()#1}` → `{lambda()#1}`.
pub fn without_namespaces(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b':' && b.get(i + 1) == Some(&b':') {
            // Drop the scope just written: back to the delimiter before
            // it, a whole bracket group where it ends in one.
            let mut depth = 0i32;
            while let Some(&c) = out.as_bytes().last() {
                match c {
                    b')' | b'>' | b'}' | b']' => depth += 1,
                    b'(' | b'<' | b'{' | b'[' if depth > 0 => depth -= 1,
                    b'<' | b'(' | b',' | b' ' | b'{' | b'[' | b'*' | b'&' if depth == 0 => break,
                    _ => {}
                }
                out.pop();
            }
            i += 2;
            continue;
        }
        let ch = s[i..].chars().next().expect("in bounds");
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// 64-bit FNV-1a of `s`.
fn fnv1a(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The short name of `p`, keeping the template arguments at `keep`.
fn with_args(p: &Parts<'_>, keep: &[usize]) -> String {
    if keep.is_empty() {
        return p.base.to_owned();
    }
    let mut shown: Vec<String> = Vec::new();
    let mut skipping = false;
    for (i, a) in p.targs.iter().enumerate() {
        if keep.contains(&i) {
            shown.push(without_namespaces(a));
            skipping = false;
        } else if !skipping {
            shown.push("…".to_owned());
            skipping = true;
        }
    }
    format!("{}<{}>", p.base, shown.join(", "))
}

/// For each of `names` (full demangled names, each once), a short name
/// that no other of them has; see the module's rules. Deterministic: the
/// same set gives the same names, whatever its order.
pub fn short_names<S: AsRef<str>>(names: &[S]) -> Vec<String> {
    let parsed: Vec<Parts<'_>> = names.iter().map(|n| parts(n.as_ref())).collect();
    let mut out: Vec<String> = parsed.iter().map(|p| p.base.to_owned()).collect();
    let mut by_base: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, p) in parsed.iter().enumerate() {
        by_base.entry(p.base).or_default().push(i);
    }
    for (_, group) in by_base {
        if group.len() < 2 {
            continue;
        }
        // Rule 2: the fewest template arguments that tell them apart.
        let width = group
            .iter()
            .map(|&i| parsed[i].targs.len())
            .max()
            .unwrap_or(0);
        let key = |i: usize, keep: &[usize]| -> Vec<&str> {
            keep.iter()
                .map(|&k| parsed[i].targs.get(k).copied().unwrap_or("\u{0}"))
                .collect()
        };
        let distinct = |keep: &[usize]| -> usize {
            let mut seen: Vec<Vec<&str>> = group.iter().map(|&i| key(i, keep)).collect();
            seen.sort();
            seen.dedup();
            seen.len()
        };
        let mut keep: Vec<usize> = Vec::new();
        let mut have = 1;
        while have < group.len() {
            let best = (0..width)
                .filter(|k| !keep.contains(k))
                .map(|k| {
                    let mut with = keep.clone();
                    with.push(k);
                    (distinct(&with), std::cmp::Reverse(k))
                })
                .max();
            match best {
                Some((n, std::cmp::Reverse(k))) if n > have => {
                    keep.push(k);
                    have = n;
                }
                _ => break,
            }
        }
        keep.sort_unstable();
        for &i in &group {
            out[i] = with_args(&parsed[i], &keep);
        }
        // Rule 3: the parameter list where that is still not enough.
        let mut count: FxHashMap<&str, usize> = FxHashMap::default();
        for &i in &group {
            *count.entry(out[i].as_str()).or_default() += 1;
        }
        let alike: Vec<usize> = group
            .iter()
            .copied()
            .filter(|&i| count[out[i].as_str()] > 1)
            .collect();
        for &i in &alike {
            if let Some(params) = parsed[i].params {
                out[i] = format!("{}{}", out[i], without_namespaces(params));
            }
        }
    }
    // Rule 4: a hash of the full name for whatever is still alike.
    for digits in [4usize, 8, 16] {
        let mut count: FxHashMap<String, usize> = FxHashMap::default();
        for s in &out {
            *count.entry(s.clone()).or_default() += 1;
        }
        let alike: Vec<usize> = (0..out.len()).filter(|&i| count[&out[i]] > 1).collect();
        if alike.is_empty() {
            break;
        }
        for i in alike {
            let h = fnv1a(names[i].as_ref()) >> (64 - 4 * digits as u32);
            let base = out[i].split(" [").next().unwrap_or("").to_owned();
            out[i] = format!("{base} [{h:0digits$x}]");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILL: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)";

    #[test]
    fn base_names_drop_return_type_namespaces_template_arguments_and_parameters() {
        assert_eq!(base_name(FILL), "vectorized_elementwise_kernel");
        assert_eq!(base_name("gemm()"), "gemm");
        assert_eq!(
            base_name("ampere_sgemm_128x64_nn"),
            "ampere_sgemm_128x64_nn"
        );
        assert_eq!(
            base_name(
                "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>(float*, float const*, int, int, int, bool const*, int, bool)"
            ),
            "softmax_warp_forward"
        );
        assert_eq!(
            base_name(
                "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4::Params)"
            ),
            "Kernel2"
        );
        assert_eq!(
            base_name(
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
            ),
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
        );
        assert_eq!(base_name("Foo<int>::operator()(int) const"), "operator()");
        assert_eq!(base_name("unsigned int ns::k<(char)1>(int)"), "k");
        assert_eq!(base_name("Memcpy HtoD"), "Memcpy HtoD");
    }

    #[test]
    fn namespaces_go_at_any_depth() {
        assert_eq!(
            without_namespaces("at::native::FillFunctor<at::Half>"),
            "FillFunctor<Half>"
        );
        assert_eq!(
            without_namespaces("at::native::(anonymous namespace)::f(int)::{lambda(float)#1}"),
            "{lambda(float)#1}"
        );
        assert_eq!(without_namespaces("char*"), "char*");
    }

    #[test]
    fn names_that_share_a_base_keep_the_template_argument_that_differs() {
        let names = [
            FILL.to_owned(),
            FILL.replace("FillFunctor<float>", "FillFunctor<c10::Half>"),
            "gemm()".to_owned(),
        ];
        assert_eq!(
            short_names(&names),
            [
                "vectorized_elementwise_kernel<…, FillFunctor<float>, …>",
                "vectorized_elementwise_kernel<…, FillFunctor<Half>, …>",
                "gemm",
            ]
        );
    }

    #[test]
    fn overloads_keep_their_parameters_and_the_rest_a_hash() {
        let names = ["k(float)", "k(int)", "a::f()", "b::f()"];
        let short = short_names(&names);
        assert_eq!(short[..2], ["k(float)", "k(int)"]);
        assert!(short[2].starts_with("f() ["), "{short:?}");
        assert_ne!(short[2], short[3]);
        // The same in any order.
        let rev: Vec<&str> = names.iter().rev().copied().collect();
        let mut back = short_names(&rev);
        back.reverse();
        assert_eq!(back, short);
    }
}
