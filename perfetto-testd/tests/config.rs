//! The text-format parser of `perfetto-testd` (`config-to-pb`): configs
//! as the workspace's tests write them, checked field by field, against
//! Python protobuf's own text-format parser with Perfetto's schema where a
//! Python with `perfetto` is at hand, and bad configs named by line and
//! column.

use gpu_trace_reader::pb::Fields;
use perfetto_testd::config_to_pb;
use std::process::Command;

const CONFIG: &str = r#"
# A comment.
buffers { size_kb: 32768 fill_policy: RING_BUFFER }
buffers: { size_kb: 0x100; fill_policy: DISCARD }
duration_ms: 60000
write_into_file: true
file_write_period_ms: 200
incremental_state_config < clear_period_ms: 100 >
data_sources { config { name: "gpu.renderstages.nv" target_buffer: 1 } }
data_sources {
  config {
    name: "gpu.counters.amd"
    gpu_counter_config {
      counter_names: "SQ_WAVES" counter_names: 'GRBM_GUI_ACTIVE'
      counter_ids: [1, 2, 3]
      instrumented_sampling_config {
        activity_name_filters { name_glob: "*ns::gemm<*" name_base: DEMANGLED_KERNEL_NAME }
        activity_tx_include_globs: "train" "*"
        activity_ranges { skip: 1 count: 1 }
      }
    }
  }
}
data_sources {
  config {
    name: "track_event"
    track_event_config { enabled_categories: ["cuda", "nvtx"] disabled_categories: "*" }
  }
}
"#;

/// The values of field `n` of message `m`.
fn all(m: &[u8], n: u32) -> Vec<gpu_trace_reader::pb::Value<'_>> {
    Fields::new(m)
        .map(|f| f.expect("well-formed"))
        .filter(|(f, _)| *f == n)
        .map(|(_, v)| v)
        .collect()
}

fn one<'a>(m: &'a [u8], path: &[u32]) -> gpu_trace_reader::pb::Value<'a> {
    let (last, outer) = path.split_last().unwrap();
    let mut m = m;
    for &n in outer {
        m = all(m, n)[0].as_bytes().unwrap();
    }
    all(m, *last).into_iter().next().expect("the field")
}

#[test]
fn a_config_is_encoded_field_by_field() {
    let pb = config_to_pb(CONFIG).unwrap();
    let buffers = all(&pb, 1);
    assert_eq!(buffers.len(), 2);
    let b1 = buffers[1].as_bytes().unwrap();
    assert_eq!(one(b1, &[1]).as_u64(), Some(256), "size_kb in hex");
    assert_eq!(one(b1, &[4]).as_u64(), Some(2), "DISCARD");
    assert_eq!(one(&pb, &[3]).as_u64(), Some(60000), "duration_ms");
    assert_eq!(one(&pb, &[8]).as_u64(), Some(1), "write_into_file");
    assert_eq!(one(&pb, &[21, 1]).as_u64(), Some(100), "clear_period_ms");
    let sources = all(&pb, 2);
    assert_eq!(sources.len(), 3);
    let config = |i: usize| {
        one(sources[i].as_bytes().unwrap(), &[1])
            .as_bytes()
            .unwrap()
    };
    assert_eq!(one(config(0), &[1]).as_str(), Some("gpu.renderstages.nv"));
    assert_eq!(one(config(0), &[2]).as_u64(), Some(1), "target_buffer");
    // gpu_counter_config (108): names, packed ids, the sampling filters.
    let gpu = one(config(1), &[108]).as_bytes().unwrap();
    let names: Vec<&str> = all(gpu, 6).iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(names, ["SQ_WAVES", "GRBM_GUI_ACTIVE"]);
    let ids: Vec<u64> = all(gpu, 2).iter().map(|v| v.as_u64().unwrap()).collect();
    assert_eq!(
        ids,
        [1, 2, 3],
        "counter_ids, a repeated field given as a list"
    );
    let sampling = one(gpu, &[5]).as_bytes().unwrap();
    let filter = one(sampling, &[3]).as_bytes().unwrap();
    assert_eq!(one(filter, &[1]).as_str(), Some("*ns::gemm<*"));
    assert_eq!(one(filter, &[2]).as_u64(), Some(1), "DEMANGLED_KERNEL_NAME");
    assert_eq!(
        one(sampling, &[6]).as_str(),
        Some("train*"),
        "strings joined"
    );
    let range = one(sampling, &[5]).as_bytes().unwrap();
    assert_eq!(
        (one(range, &[1]).as_u64(), one(range, &[2]).as_u64()),
        (Some(1), Some(1))
    );
    // track_event_config (113): a list of categories.
    let te = one(config(2), &[113]).as_bytes().unwrap();
    let cats: Vec<&str> = all(te, 2).iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(cats, ["cuda", "nvtx"]);
}

/// The Python the schema check uses, if any: one with `perfetto`.
fn python() -> Option<String> {
    let py = std::env::var("GPU_TRACE_PYTHON")
        .unwrap_or_else(|_| format!("{}/../.venv/bin/python", env!("CARGO_MANIFEST_DIR")));
    let ok = Command::new(&py)
        .args([
            "-c",
            "import perfetto.protos.perfetto.trace.perfetto_trace_pb2",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(py)
}

/// Python protobuf parses the same text with Perfetto's own schema (v59.1)
/// into the same message as our binary decodes to.
#[test]
fn python_protobuf_reads_the_same_config() {
    let Some(py) = python() else {
        eprintln!("skipped: no Python with perfetto (GPU_TRACE_PYTHON)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("perfetto-testd-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("c.pbtx"), CONFIG).unwrap();
    std::fs::write(dir.join("c.pb"), config_to_pb(CONFIG).unwrap()).unwrap();
    let script = r#"
import sys
from google.protobuf import text_format
from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import TraceConfig
want = text_format.Parse(open(sys.argv[1]).read(), TraceConfig())
got = TraceConfig()
got.ParseFromString(open(sys.argv[2], 'rb').read())
if want != got:
    print(want, got, sep='\n----\n')
    sys.exit(1)
"#;
    let out = Command::new(py)
        .arg("-c")
        .arg(script)
        .arg(dir.join("c.pbtx"))
        .arg(dir.join("c.pb"))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_bad_config_is_named_by_line_and_column() {
    let cases = [
        (
            "buffers { size_kb: 1 }\nbufers { }",
            "line 2, column 1: no field 'bufers' in TraceConfig",
        ),
        (
            "buffers { fill_policy: RING }",
            "line 1, column 24: 'RING' is not a value of TraceConfig_BufferConfig_FillPolicy (field fill_policy; one of: UNSPECIFIED, RING_BUFFER, DISCARD)",
        ),
        (
            "duration_ms: -5",
            "line 1, column 14: '-5' is not an unsigned 32-bit integer (field duration_ms)",
        ),
        (
            "data_sources { config { name: \"x\" }",
            "line 1, column 36: expected '}' to close TraceConfig_DataSource, found the end of the config",
        ),
        (
            "data_sources { config { name: \"x }",
            "line 1, column 31: string not closed",
        ),
        (
            "duration_ms 5",
            "line 1, column 13: expected ':' after duration_ms, found '5'",
        ),
    ];
    for (text, want) in cases {
        let err = config_to_pb(text).unwrap_err();
        assert!(err.ends_with(want), "{text:?}: {err}");
    }
}
