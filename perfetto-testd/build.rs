//! Builds `perfetto-testd`, Perfetto's tracing service and a recording
//! client, from the amalgamated SDK source that the crates.io package
//! `perfetto-sdk-sys` ships (`libperfetto_c/perfetto_c.cc`): one C++ unit,
//! `cc/main.cc`, which includes that source whole.
//!
//! The binary is kept in `<target>/perfetto-testd/<key>/`, keyed by
//! everything that goes into it (the SDK source, our C++, the compiler and
//! its flags), so that a second profile or `cargo clippy`, which rerun this
//! script, find it built instead of spending a minute compiling it again.
//!
//! The text-format configs of the `perfetto` sub-command need the
//! TraceConfig schema. The amalgamation has no descriptors, but it holds the
//! protozero classes generated from the protos: each field's number, kind,
//! repetition and type (`FieldMetadata<...>`) followed by its accessor,
//! whose name carries the field's proto name (`set_size_kb`,
//! `add_buffers`). [`schema`] reads those for every message reachable from
//! TraceConfig, and the enums they use, into `schema.inc`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=cc/main.cc");
    println!("cargo:rerun-if-changed=cc/textproto.h");
    println!("cargo:rerun-if-env-changed=CXX");

    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("manifest"));
    let sdk = sdk_dir(&manifest_dir);
    let source = sdk.join("libperfetto_c/perfetto_c.cc");
    println!("cargo:rerun-if-changed={}", source.display());
    let text = std::fs::read_to_string(&source)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", source.display()));

    let schema = schema::generate(&text, "TraceConfig")
        .unwrap_or_else(|e| panic!("TraceConfig's schema from {}: {e}", source.display()));

    let compiler = cc::Build::new()
        .cpp(true)
        .cargo_metadata(false)
        .get_compiler();
    let flags = ["-std=c++17", "-O1", "-DNDEBUG", "-pthread", "-w", "-s"];
    let main_cc = std::fs::read(manifest_dir.join("cc/main.cc")).expect("cc/main.cc");
    let textproto_h = std::fs::read(manifest_dir.join("cc/textproto.h")).expect("cc/textproto.h");
    let version = Command::new(compiler.path())
        .arg("--version")
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    // The key is of contents only: this script runs in more than one
    // OUT_DIR (one per set of dependency features), and all of them share
    // the binary.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (
        &text,
        &main_cc,
        &textproto_h,
        &schema,
        compiler.path(),
        &version,
        &flags,
    )
        .hash(&mut h);
    let key = format!("{:016x}", h.finish());

    let cache = target_dir(&out_dir).join("perfetto-testd").join(&key);
    let binary = cache.join("perfetto-testd");
    std::fs::create_dir_all(&cache).expect("the binary's directory");
    // Two runs of this script in one build (two OUT_DIRs) wait for each
    // other instead of both compiling.
    let lock = std::fs::File::create(cache.join("lock")).expect("the lock file");
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).expect("flock");
    if !binary.is_file() {
        std::fs::write(cache.join("schema.inc"), &schema).expect("schema.inc");
        let tmp = cache.join(format!("perfetto-testd.{}.tmp", std::process::id()));
        let status = Command::new(compiler.path())
            .args(flags)
            .arg(format!("-I{}", sdk.join("libperfetto_c").display()))
            .arg(format!("-I{}", cache.display()))
            .arg(manifest_dir.join("cc/main.cc"))
            .arg("-o")
            .arg(&tmp)
            .status()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", compiler.path().display()));
        assert!(
            status.success(),
            "{} failed ({status}) building perfetto-testd",
            compiler.path().display()
        );
        std::fs::rename(&tmp, &binary).expect("the built binary in place");
    }
    println!("cargo:rustc-env=PERFETTO_TESTD_BIN={}", binary.display());
    println!(
        "cargo:rustc-env=PERFETTO_TESTD_SDK={}",
        sdk.file_name().unwrap_or_default().to_string_lossy()
    );
}

/// The directory of the `perfetto-sdk-sys` package this crate depends on,
/// from `cargo metadata` (the package has no `links` key that would pass
/// it to dependants).
fn sdk_dir(manifest_dir: &Path) -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            // Only the packages this platform builds are downloaded; without
            // the filter, metadata asks for every platform's (and fails
            // offline once a dependency has an Android-only one).
            "--filter-platform",
            &std::env::var("TARGET").expect("cargo sets TARGET"),
            "--manifest-path",
        ])
        .arg(manifest_dir.join("Cargo.toml"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let ours = packages
        .iter()
        .find(|p| p["name"] == "perfetto-testd")
        .expect("this package in cargo metadata");
    let wanted = ours["dependencies"]
        .as_array()
        .and_then(|d| d.iter().find(|d| d["name"] == "perfetto-sdk-sys"))
        .and_then(|d| d["req"].as_str())
        .expect("a dependency on perfetto-sdk-sys");
    // The resolved package: the one node our package's resolve entry names.
    let id = meta["resolve"]["nodes"]
        .as_array()
        .and_then(|nodes| nodes.iter().find(|n| n["id"] == ours["id"]))
        .and_then(|n| n["deps"].as_array())
        .and_then(|deps| deps.iter().find(|d| d["name"] == "perfetto_sdk_sys"))
        .and_then(|d| d["pkg"].as_str())
        .unwrap_or_else(|| panic!("perfetto-sdk-sys {wanted} is not resolved"));
    let pkg = packages
        .iter()
        .find(|p| p["id"] == id)
        .expect("the resolved perfetto-sdk-sys package");
    let manifest = PathBuf::from(pkg["manifest_path"].as_str().expect("manifest_path"));
    manifest
        .parent()
        .expect("a package directory")
        .to_path_buf()
}

/// The target directory (`target/`, or `target/<triple>/`): `OUT_DIR` is
/// `<it>/<profile>/build/<pkg>-<hash>/out`.
fn target_dir(out_dir: &Path) -> PathBuf {
    out_dir
        .ancestors()
        .nth(4)
        .expect("OUT_DIR under a target directory")
        .to_path_buf()
}

mod schema {
    //! The TraceConfig schema, read from the protozero classes of the
    //! amalgamation, as a C++ table (`schema.inc`) for the text-format
    //! parser in `cc/textproto.h`.

    use super::*;

    /// A field as its `FieldMetadata` and accessor give it.
    #[derive(Debug)]
    struct Field {
        name: String,
        number: u32,
        repetition: String,
        kind: String,
        cpp_type: String,
    }

    /// Reads the protozero classes and enums of `text` and writes the
    /// table for `root` and every message and enum reachable from it.
    pub(super) fn generate(text: &str, root: &str) -> Result<String, String> {
        let messages = messages(text);
        let enums = enums(text);
        // Walk from the root, in a stable order.
        let mut order: Vec<String> = vec![root.to_string()];
        let mut seen: BTreeSet<String> = order.iter().cloned().collect();
        let mut used_enums: BTreeSet<String> = BTreeSet::new();
        let mut i = 0;
        while i < order.len() {
            let fields = messages
                .get(&order[i])
                .ok_or_else(|| format!("no protozero class {}", order[i]))?;
            for f in fields {
                match f.kind.as_str() {
                    "kMessage"
                        if messages.contains_key(&f.cpp_type)
                            && seen.insert(f.cpp_type.clone()) =>
                    {
                        order.push(f.cpp_type.clone());
                    }
                    "kEnum" => {
                        used_enums.insert(f.cpp_type.clone());
                    }
                    _ => {}
                }
            }
            i += 1;
        }
        let enum_index: HashMap<&str, usize> = used_enums
            .iter()
            .filter(|e| enums.contains_key(e.as_str()))
            .enumerate()
            .map(|(i, e)| (e.as_str(), i))
            .collect();
        let message_index: HashMap<&str, usize> = order
            .iter()
            .enumerate()
            .map(|(i, m)| (m.as_str(), i))
            .collect();

        let mut out = String::new();
        let mut dropped = Vec::new();
        out.push_str("// Generated by build.rs from the SDK's protozero classes.\n");
        let mut enum_names: Vec<&str> = enum_index.keys().copied().collect();
        enum_names.sort_by_key(|e| enum_index[e]);
        for (i, e) in enum_names.iter().enumerate() {
            let _ = write!(out, "static const EnumValue kEnum{i}[] = {{");
            for (name, value) in &enums[*e] {
                let _ = write!(out, "{{\"{name}\", {value}}}, ");
            }
            out.push_str("};\n");
        }
        out.push_str("static const Enum kEnums[] = {\n");
        for (i, e) in enum_names.iter().enumerate() {
            let _ = writeln!(
                out,
                "  {{\"{e}\", kEnum{i}, sizeof(kEnum{i}) / sizeof(EnumValue)}},"
            );
        }
        if enum_names.is_empty() {
            out.push_str("  {\"\", nullptr, 0},\n");
        }
        out.push_str("};\n");
        for (i, m) in order.iter().enumerate() {
            let _ = writeln!(out, "static const Field kFields{i}[] = {{");
            for f in &messages[m] {
                let (message, enumeration) = match f.kind.as_str() {
                    "kMessage" => match message_index.get(f.cpp_type.as_str()) {
                        Some(&m) => (m as i32, -1),
                        // A field whose message has no protozero class
                        // here cannot be written in text; leave it out.
                        None => {
                            dropped.push(format!("{m}.{} ({})", f.name, f.cpp_type));
                            continue;
                        }
                    },
                    "kEnum" => match enum_index.get(f.cpp_type.as_str()) {
                        Some(&e) => (-1, e as i32),
                        None => {
                            dropped.push(format!("{m}.{} ({})", f.name, f.cpp_type));
                            continue;
                        }
                    },
                    _ => (-1, -1),
                };
                let _ = writeln!(
                    out,
                    "  {{\"{}\", {}, Kind::{}, Rep::{}, {message}, {enumeration}}},",
                    f.name, f.number, f.kind, f.repetition
                );
            }
            out.push_str("};\n");
        }
        out.push_str("static const Message kMessages[] = {\n");
        for (i, m) in order.iter().enumerate() {
            let _ = writeln!(
                out,
                "  {{\"{m}\", kFields{i}, sizeof(kFields{i}) / sizeof(Field)}},"
            );
        }
        out.push_str("};\n");
        for d in dropped {
            let _ = writeln!(out, "// Left out (no protozero type): {d}");
        }
        Ok(out)
    }

    /// Every protozero message class (`class X : public ::protozero::Message`)
    /// with its fields.
    fn messages(text: &str) -> HashMap<String, Vec<Field>> {
        let lines: Vec<&str> = text.lines().collect();
        let mut out: HashMap<String, Vec<Field>> = HashMap::new();
        let mut current: Option<String> = None;
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i];
            if let Some(rest) = line.strip_prefix("class ") {
                current = rest
                    .strip_suffix(" : public ::protozero::Message {")
                    .map(str::to_string);
                if let Some(c) = &current {
                    out.entry(c.clone()).or_default();
                }
            } else if let (Some(class), Some(meta)) = (
                &current,
                line.trim()
                    .strip_prefix("using FieldMetadata_")
                    .and_then(|r| r.strip_suffix(" =")),
            ) {
                // number, repetition, kind, C++ type, owner: one a line.
                let arg = |k: usize| -> &str {
                    lines
                        .get(i + 2 + k)
                        .map(|l| l.trim().trim_end_matches([',', '>', ';']))
                        .unwrap_or("")
                };
                let number: u32 = match arg(0).parse() {
                    Ok(n) => n,
                    Err(_) => {
                        i += 1;
                        continue;
                    }
                };
                let repetition = arg(1).rsplit("::").next().unwrap_or("").to_string();
                let kind = arg(2).rsplit("::").next().unwrap_or("").to_string();
                let cpp_type = arg(3).rsplit("::").next().unwrap_or("").to_string();
                let name = accessor_name(&lines[i + 1..(i + 16).min(lines.len())])
                    .unwrap_or_else(|| snake(meta));
                out.entry(class.clone()).or_default().push(Field {
                    name,
                    number,
                    repetition,
                    kind,
                    cpp_type,
                });
                i += 6;
                continue;
            }
            i += 1;
        }
        out
    }

    /// The proto name of a field, from the first accessor after its
    /// metadata (`set_NAME(`, `add_NAME(`).
    fn accessor_name(lines: &[&str]) -> Option<String> {
        for l in lines {
            for prefix in [" set_", " add_", "*set_", "*add_"] {
                if let Some(at) = l.find(prefix) {
                    let rest = &l[at + prefix.len()..];
                    let end = rest.find('(')?;
                    let name = &rest[..end];
                    if !name.is_empty()
                        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                    {
                        return Some(name.to_string());
                    }
                }
            }
        }
        None
    }

    /// `SizeKb` → `size_kb`: only where no accessor follows.
    fn snake(camel: &str) -> String {
        let mut s = String::new();
        for (i, c) in camel.chars().enumerate() {
            if c.is_ascii_uppercase() {
                if i > 0 {
                    s.push('_');
                }
                s.push(c.to_ascii_lowercase());
            } else {
                s.push(c);
            }
        }
        s
    }

    /// The protozero enums: `namespace perfetto_pbzero_enum_M { enum E :
    /// int32_t { ... } }` is `M_E`, a bare `enum E : int32_t { ... }` is `E`.
    /// Where one name is defined twice with different values, neither is
    /// kept.
    fn enums(text: &str) -> BTreeMap<String, Vec<(String, i64)>> {
        let mut out: BTreeMap<String, Vec<(String, i64)>> = BTreeMap::new();
        let mut clash: BTreeSet<String> = BTreeSet::new();
        let mut scope: Option<&str> = None;
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            if let Some(m) = line
                .strip_prefix("namespace perfetto_pbzero_enum_")
                .and_then(|r| r.strip_suffix(" {"))
            {
                scope = Some(m);
                continue;
            }
            if line.starts_with('}') && line.contains("namespace perfetto_pbzero_enum_") {
                scope = None;
                continue;
            }
            let Some(name) = line
                .strip_prefix("enum ")
                .and_then(|r| r.strip_suffix(" : int32_t {"))
            else {
                continue;
            };
            let full = match scope {
                Some(m) => format!("{m}_{name}"),
                None => name.to_string(),
            };
            let mut values = Vec::new();
            for l in lines.by_ref() {
                let l = l.trim();
                if l.starts_with('}') {
                    break;
                }
                if let Some((n, v)) = l.trim_end_matches(',').split_once(" = ")
                    && let Ok(v) = v.trim().parse::<i64>()
                {
                    values.push((n.trim().to_string(), v));
                }
            }
            match out.get(&full) {
                Some(old) if *old != values => {
                    clash.insert(full);
                }
                Some(_) => {}
                None => {
                    out.insert(full, values);
                }
            }
        }
        for c in clash {
            out.remove(&c);
        }
        out
    }
}
