//! Call-site capture over a real CPython (the system's libpython3.11,
//! `GPU_TRACE_TEST_LIBPYTHON` to name another): the frames of a nested
//! Python call chain, named once per code location; nothing from a thread
//! that runs no Python; the same stack read by layout once the GIL is
//! released, after the self-check, with names read by layout too.

use cpython_sys::embed;
use gpu_trace_agent::callsites::{CallSites, Layout};
use gpu_trace_model::callstack::Callstacks;
use gpu_trace_model::names::Names;
use std::sync::{Arc, Mutex};

#[test]
fn the_stack_of_a_nested_call_names_each_function_and_line_and_other_threads_get_none() {
    let lib = std::env::var("GPU_TRACE_TEST_LIBPYTHON")
        .unwrap_or_else(|_| embed::DEFAULT_LIBPYTHON.to_owned());
    let names = Arc::new(Names::default());
    let stacks = Arc::new(Callstacks::default());
    // Before the interpreter is loaded: no Python, nothing to capture.
    assert!(
        CallSites::from_process(names.clone(), stacks.clone(), 8)
            .unwrap()
            .is_none()
    );
    embed::start(&lib).unwrap();
    let sites = Arc::new(
        CallSites::from_process(names.clone(), stacks.clone(), 4)
            .unwrap()
            .expect("the interpreter is found"),
    );
    assert_eq!(sites.version().0, 3);
    // Another capture over the same tables, with its own location caches.
    let fresh = Arc::new(
        CallSites::from_process(names.clone(), stacks.clone(), 4)
            .unwrap()
            .unwrap(),
    );
    let got = Arc::new(Mutex::new(Vec::new()));
    let (s, g, f) = (sites.clone(), got.clone(), fresh.clone());
    embed::run_nested(6, "nested.py", move || {
        // Not yet checked: the GIL released, no stack.
        assert_eq!(s.layout(), Layout::Pending);
        assert_eq!(embed::without_gil(|| s.capture()).unwrap(), None);
        let a = s.capture();
        let b = s.capture();
        // That capture held the GIL and ran the self-check.
        assert_eq!(s.layout(), Layout::Trusted);
        let released = embed::without_gil(|| s.capture()).unwrap();
        // A check alone caches no location: every frame named by layout.
        f.check_layout();
        assert_eq!(f.layout(), Layout::Trusted);
        let by_layout = embed::without_gil(|| f.capture()).unwrap();
        // A thread of ours, never attached to Python.
        let s2 = s.clone();
        let other = std::thread::spawn(move || s2.capture()).join().unwrap();
        g.lock().unwrap().push((a, b, other, released, by_layout));
    })
    .unwrap();
    let (a, b, other, released, by_layout) = got.lock().unwrap()[0];
    assert_eq!(released, a, "the GIL released, the same stack");
    assert_eq!(by_layout, a, "named by layout, the same frames");
    assert_eq!(other, None, "a thread that runs no Python has no stack");
    let a = a.expect("a stack from inside Python");
    assert_eq!(Some(a), b, "the same place gives the same stack");
    let frames: Vec<(String, String, u32)> = stacks
        .get_stack(a)
        .unwrap()
        .iter()
        .map(|&f| {
            let f = stacks.get_frame(f).unwrap();
            (
                names.get(f.function).to_string(),
                names.get(f.file).to_string(),
                f.line,
            )
        })
        .collect();
    // Depth 4 keeps the innermost four of f0..f5 and <module>; the program
    // is `import ctypes`, `cb = ...`, then `def fI():` / `    call` pairs
    // from line 3, so fI's call is on line 4 + 2I.
    let want: Vec<(String, String, u32)> = (2..6)
        .map(|i| (format!("f{i}"), "nested.py".to_owned(), 4 + 2 * i))
        .collect();
    assert_eq!(frames, want);
}
