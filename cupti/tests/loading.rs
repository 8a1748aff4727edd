//! Finding and opening libcupti. Changes environment variables, so it is its
//! own binary with a single test.
//!
//! With `GPU_TRACE_TEST_LIBCUPTI` pointing at a real `libcupti.so.13` (CI
//! extracts the pinned wheel's), it also loads the real library through the
//! pip-wheel search path and checks its version and symbols: libcupti loads
//! and answers those without a GPU or driver.

use std::path::PathBuf;

use cupti::{CUPTI_PATH_ENV, Cupti, Error};

fn set(k: &str, v: Option<&std::ffi::OsStr>) {
    // SAFETY: this binary has one test and no other threads touching the
    // environment while it runs.
    unsafe {
        match v {
            Some(v) => std::env::set_var(k, v),
            None => std::env::remove_var(k),
        }
    }
}

#[test]
fn library_search() {
    let real = std::env::var_os("GPU_TRACE_TEST_LIBCUPTI").map(PathBuf::from);
    for k in [
        "CUDA_HOME",
        "CUDA_PATH",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "PYTHONPATH",
    ] {
        set(k, None);
    }

    // An explicit path that does not exist.
    let err = Cupti::load_from_path("/nonexistent/libcupti.so.13").unwrap_err();
    assert!(matches!(err, Error::LibraryOpen { .. }), "{err:?}");

    // Nothing found: every place tried is listed, override first.
    set(
        CUPTI_PATH_ENV,
        Some("/nonexistent/override/libcupti.so.13".as_ref()),
    );
    set("CUDA_HOME", Some("/nonexistent/cuda".as_ref()));
    match Cupti::load() {
        Err(Error::LibraryNotFound { tried, .. }) => {
            assert_eq!(tried[0], "/nonexistent/override/libcupti.so.13");
            for want in [
                "libcupti.so.13",
                "libcupti.so.12",
                "libcupti.so",
                "/nonexistent/cuda/extras/CUPTI/lib64/libcupti.so.13",
                "/nonexistent/cuda/targets/x86_64-linux/lib/libcupti.so.13",
                "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
                "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcupti.so.13",
            ] {
                assert!(tried.iter().any(|t| t == want), "{want} not in {tried:#?}");
            }
            let msg = Error::LibraryNotFound {
                tried: tried.clone(),
                too_old: vec![("libcupti.so.12".to_owned(), 120800)],
                last_error: None,
            }
            .to_string();
            assert!(
                msg.contains("/nonexistent/override/libcupti.so.13")
                    && msg.contains("libcupti.so.12 (CUPTI version 120800, below the floor)")
            );
        }
        Ok(c) => eprintln!(
            "a system libcupti exists here ({}); not-found case skipped",
            c.path()
        ),
        Err(other) => panic!("unexpected {other:?}"),
    }
    set(CUPTI_PATH_ENV, None);
    set("CUDA_HOME", None);

    let Some(real) = real else {
        eprintln!("skipped real-library checks: GPU_TRACE_TEST_LIBCUPTI not set");
        return;
    };
    // Found through a virtualenv's site-packages, as a pip install lays it out.
    let venv = std::env::temp_dir().join(format!("gpu-trace-venv-{}", std::process::id()));
    let lib_dir = venv.join("lib/python3.12/site-packages/nvidia/cu13/lib");
    std::fs::create_dir_all(&lib_dir).unwrap();
    let link = lib_dir.join("libcupti.so.13");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(std::fs::canonicalize(&real).unwrap(), &link).unwrap();
    set("VIRTUAL_ENV", Some(venv.as_os_str()));
    let c = match Cupti::load() {
        Ok(c) => c,
        Err(e) => panic!("real libcupti not loaded: {e}"),
    };
    set("VIRTUAL_ENV", None);
    if c.path() == link.to_str().unwrap() {
        eprintln!("loaded {} through VIRTUAL_ENV", c.path());
    } else {
        eprintln!("loaded {} (a libcupti on the loader path won)", c.path());
    }
    assert!(c.version() >= cupti::CUPTI_VERSION_FLOOR, "{}", c.version());
    assert_eq!(
        c.result_string(cupti_sys::CUptiResult::CUPTI_ERROR_INSUFFICIENT_PRIVILEGES),
        Some("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES")
    );
    // Without a driver CUPTI refuses to subscribe; that must be an error value.
    match cupti::callback::Subscriber::subscribe(
        &c,
        c"test",
        |_cb: &cupti::callback::Callback<'_>| {},
    ) {
        Ok(_) => eprintln!("subscribed: a CUDA driver is present"),
        Err(e) => {
            eprintln!("subscribe without a driver: {e}");
            assert!(e.code().is_some(), "{e:?}");
        }
    }
    let direct = Cupti::load_from_path(&real).unwrap();
    assert_eq!(direct.version(), c.version());
    // Every symbol we bind is exported by the 13.0 library.
    // SAFETY: resolving names only; nothing is called.
    let lib = unsafe { libloading::Library::new(&real) }.unwrap();
    let missing: Vec<_> = cupti_sys::CuptiApi::SYMBOLS
        .iter()
        // SAFETY: looking a symbol up does not call it.
        .filter(|s| unsafe { lib.get::<*const ()>(s.as_bytes()) }.is_err())
        .collect();
    assert!(missing.is_empty(), "not exported: {missing:?}");
    std::fs::remove_dir_all(&venv).ok();
}
