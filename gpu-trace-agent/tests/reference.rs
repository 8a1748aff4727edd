//! The environment reference page is generated from
//! `gpu_trace_agent::environment::VARIABLES`, and that table lists exactly
//! the variables the product reads. Regenerate the page with
//! `GPU_TRACE_BLESS=1 cargo test -p gpu-trace-agent --test reference`.

use gpu_trace_agent::environment::{VARIABLES, markdown};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn the_environment_reference_is_current() {
    let path = workspace().join("docs/src/reference/environment.md");
    let want = markdown();
    if std::env::var_os("GPU_TRACE_BLESS").is_some() {
        std::fs::write(&path, &want).expect("the reference page written");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} differs from what gpu-trace-agent/src/environment.rs generates; \
         regenerate it with `GPU_TRACE_BLESS=1 cargo test -p gpu-trace-agent --test reference`",
        path.display()
    );
}

/// The crates that ship, whose sources may read a variable.
const SHIPPED: [&str; 14] = [
    "gpu-trace-model/src",
    "gpu-trace-agent/src",
    "gpu-trace-perfetto/src",
    "gpu-trace-analysis/src",
    "gpu-trace-core/src",
    "gpu-trace-reader/src",
    "injection-cuda/src",
    "injection-hip/src",
    "cupti/src",
    "cupti-sys/src",
    "nvml/src",
    "nvml-sys/src",
    "rocprofiler/src",
    "cli/src",
];

/// Variables the shipped sources name that only tests and test builds use.
const TEST_ONLY: [&str; 3] = [
    // Read by the injections' fault-injection features, built for tests only.
    "GPU_TRACE_HIP_FAILPOINT",
    "GPU_TRACE_CUDA_FAILPOINT",
    // The prefix itself, which the CLI matches to find variables to check.
    "INJECTION_",
];

/// Every string literal of the shipped sources that looks like one of our
/// variables (`"INJECTION_..."`, `"GPU_TRACE_..."`), or a launcher's rank
/// variable, outside the test helpers.
fn variables_in_sources() -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut files = Vec::new();
    for dir in SHIPPED {
        collect(&workspace().join(dir), &mut files);
    }
    for f in files {
        // The test helpers (`testing.rs` and `testing/`) are not what ships.
        if f.ends_with("testing.rs")
            || f.components()
                .any(|c| c.as_os_str() == "tests" || c.as_os_str() == "testing")
        {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        // Unit tests at the end of a file are not what ships.
        let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
        for (i, _) in text.match_indices('"') {
            let rest = &text[i + 1..];
            let end = rest
                .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                .unwrap_or(0);
            let word = &rest[..end];
            if rest[end..].starts_with('"')
                && (word.starts_with("INJECTION_")
                    || word.starts_with("GPU_TRACE_")
                    || matches!(word, "RANK" | "LOCAL_RANK" | "WORLD_SIZE"))
            {
                found.insert(word.to_owned());
            }
        }
    }
    found
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn the_table_lists_exactly_the_variables_the_code_reads() {
    let read: BTreeSet<String> = variables_in_sources()
        .into_iter()
        .filter(|v| !TEST_ONLY.contains(&v.as_str()))
        .collect();
    let listed: BTreeSet<String> = VARIABLES.iter().map(|v| v.name.to_owned()).collect();
    let unlisted: Vec<&String> = read.difference(&listed).collect();
    let unread: Vec<&String> = listed.difference(&read).collect();
    assert!(
        unlisted.is_empty() && unread.is_empty(),
        "read but not in gpu-trace-agent/src/environment.rs: {unlisted:?}; \
         listed there but read nowhere: {unread:?}"
    );
}
