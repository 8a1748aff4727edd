//! The layout tables against `offsetof` over each version's own headers:
//! a C program built against every CPython 3.10-3.13 include directory
//! found (pyenv's, which carry the `internal/` headers, and the system's)
//! prints the offsets the walk by layout uses; each must equal the table's.
//! `GPU_TRACE_TEST_PYTHON_INCLUDES` (colon-separated) replaces the search.

use cpython_sys::layout::{self, Layout};
use std::path::{Path, PathBuf};
use std::process::Command;

const PROGRAM: &str = r#"
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>
#include <stdio.h>
#if PY_MINOR_VERSION >= 11
#include "internal/pycore_frame.h"
#endif
#define P(name, expr) printf("%s=%zu\n", name, (size_t)(expr))
int main(void) {
    P("minor", PY_MINOR_VERSION);
#if PY_MINOR_VERSION == 10
    P("tstate_frame", offsetof(PyThreadState, frame));
    P("previous", offsetof(PyFrameObject, f_back));
    P("code", offsetof(PyFrameObject, f_code));
    P("instr", offsetof(PyFrameObject, f_lasti));
    P("lineno", offsetof(PyFrameObject, f_lineno));
#else
#if PY_MINOR_VERSION <= 12
    P("tstate_frame", offsetof(PyThreadState, cframe));
    P("cframe_current", offsetof(_PyCFrame, current_frame));
    P("code", offsetof(_PyInterpreterFrame, f_code));
    P("instr", offsetof(_PyInterpreterFrame, prev_instr));
#else
    P("tstate_frame", offsetof(PyThreadState, current_frame));
    P("code", offsetof(_PyInterpreterFrame, f_executable));
    P("instr", offsetof(_PyInterpreterFrame, instr_ptr));
#endif
    P("previous", offsetof(_PyInterpreterFrame, previous));
    P("owner", offsetof(_PyInterpreterFrame, owner));
    P("co_code", offsetof(PyCodeObject, co_code_adaptive));
    P("co_firsttraceable", offsetof(PyCodeObject, _co_firsttraceable));
    P("co_qualname", offsetof(PyCodeObject, co_qualname));
    P("generator", FRAME_OWNED_BY_GENERATOR);
#endif
#if PY_MINOR_VERSION >= 12
    P("cstack", FRAME_OWNED_BY_CSTACK);
#endif
    P("co_name", offsetof(PyCodeObject, co_name));
    P("co_filename", offsetof(PyCodeObject, co_filename));
    P("ascii_size", sizeof(PyASCIIObject));
    P("compact_size", sizeof(PyCompactUnicodeObject));
    P("ob_type", offsetof(PyObject, ob_type));
    P("ob_size", offsetof(PyVarObject, ob_size));
    P("str_length", offsetof(PyASCIIObject, length));
    P("str_state", offsetof(PyASCIIObject, state));
    return 0;
}
"#;

fn include_dirs() -> Vec<PathBuf> {
    if let Ok(v) = std::env::var("GPU_TRACE_TEST_PYTHON_INCLUDES") {
        return v.split(':').map(PathBuf::from).collect();
    }
    let mut out = Vec::new();
    let home = std::env::var("HOME").unwrap_or_default();
    for root in [format!("{home}/.pyenv/versions"), "/usr".to_owned()] {
        let Ok(entries) = std::fs::read_dir(&root) else {
            continue;
        };
        let mut bases: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        if root == "/usr" {
            bases = vec![PathBuf::from("/usr")];
        }
        for base in bases {
            for minor in 10..=13 {
                let inc = base.join(format!("include/python3.{minor}"));
                if inc.join("internal/pycore_frame.h").exists()
                    || minor == 10 && inc.join("Python.h").exists()
                {
                    out.push(inc);
                }
            }
        }
    }
    out
}

fn offsets(inc: &Path, dir: &Path) -> Option<Vec<(String, usize)>> {
    let src = dir.join("offsets.c");
    let exe = dir.join("offsets");
    std::fs::write(&src, PROGRAM).unwrap();
    let built = Command::new("cc")
        .arg(format!("-I{}", inc.display()))
        .arg(format!("-I{}", inc.join("internal").display()))
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .status()
        .ok()?;
    assert!(
        built.success(),
        "the offsets program does not build against {}",
        inc.display()
    );
    let out = Command::new(&exe).output().unwrap();
    Some(
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.parse().unwrap()))
            .collect(),
    )
}

fn field(l: &Layout, name: &str) -> Option<usize> {
    Some(match name {
        "minor" => l.version.1 as usize,
        "tstate_frame" => l.tstate_frame,
        "cframe_current" => l.cframe_current?,
        "previous" => l.previous,
        "code" => l.code,
        "instr" => l.instr,
        "lineno" => l.lineno?,
        "owner" => l.owner?,
        "co_code" => l.co_code?,
        "co_firsttraceable" => l.co_firsttraceable?,
        "co_qualname" => l.co_qualname?,
        "co_name" => l.co_name,
        "co_filename" => l.co_filename,
        "ascii_size" => l.ascii_size,
        "compact_size" => l.compact_size,
        "generator" => layout::OWNED_BY_GENERATOR as usize,
        "cstack" => layout::OWNED_BY_CSTACK as usize,
        "ob_type" => layout::OB_TYPE,
        "ob_size" => layout::OB_SIZE,
        "str_length" => layout::STR_LENGTH,
        "str_state" => layout::STR_STATE,
        _ => return None,
    })
}

#[test]
fn every_offset_of_the_tables_is_the_headers_offsetof() {
    let dirs = include_dirs();
    if dirs.is_empty() {
        eprintln!("skipped: no CPython 3.10-3.13 headers found");
        return;
    }
    let tmp = std::env::temp_dir().join(format!("cpython-layout-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let mut checked = 0;
    for inc in dirs {
        let Some(got) = offsets(&inc, &tmp) else {
            eprintln!("skipped: no C compiler");
            return;
        };
        let minor = got.iter().find(|(k, _)| k == "minor").unwrap().1 as u8;
        let l = layout::layout((3, minor)).expect("a table for every version 3.10-3.13");
        for (name, off) in &got {
            let want =
                field(&l, name).unwrap_or_else(|| panic!("3.{minor}: {name} not in the table"));
            assert_eq!(want, *off, "3.{minor} ({}): {name}", inc.display());
        }
        checked += 1;
    }
    let _ = std::fs::remove_dir_all(&tmp);
    eprintln!("{checked} include directories checked");
    assert!(checked > 0);
}
