//! Finding and opening `libcupti` and the application's `libcuda` at run time.
//!
//! `libcupti` is searched in a fixed order ([`cupti_candidates`]) and the first
//! one that opens wins; a failure lists every place tried. `libcuda` is never
//! loaded by us: [`open_loaded_libcuda`] only takes a handle on the copy the
//! application already has (`RTLD_NOLOAD`), so our driver calls go to the very
//! driver the application uses.

use std::{
    collections::HashSet,
    env, fmt,
    path::{Path, PathBuf},
};

/// Environment variable naming the `libcupti` to use: a file, or a directory
/// holding `libcupti.so*`. Tried before anything else.
pub const CUPTI_PATH_ENV: &str = "GPU_TRACE_CUPTI_PATH";

/// Sonames tried, newest first. The unversioned name comes last because a stale
/// `libcupti.so` symlink can point at a CUPTI that loads but instruments nothing.
pub const CUPTI_SONAMES: [&str; 3] = ["libcupti.so.13", "libcupti.so.12", "libcupti.so"];

/// The driver's soname.
pub const LIBCUDA_SONAME: &str = "libcuda.so.1";

#[cfg(target_arch = "aarch64")]
const TARGET_DIR: &str = "targets/sbsa-linux/lib";
#[cfg(not(target_arch = "aarch64"))]
const TARGET_DIR: &str = "targets/x86_64-linux/lib";

/// No candidate `libcupti` could be opened.
#[derive(Debug, Clone)]
pub struct LibraryNotFound {
    /// Every candidate, in the order tried.
    pub tried: Vec<String>,
    /// The loader's message for the last candidate that exists but failed to
    /// open, if any did (e.g. a wrong-architecture file).
    pub last_error: Option<String>,
}

impl fmt::Display for LibraryNotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "libcupti not found; tried: {}", self.tried.join(", "))?;
        if let Some(e) = &self.last_error {
            write!(f, " (last error: {e})")?;
        }
        Ok(())
    }
}

impl std::error::Error for LibraryNotFound {}

/// Where the search looks, taken from the environment of this process.
#[derive(Debug, Clone, Default)]
pub struct SearchEnv {
    /// `GPU_TRACE_CUPTI_PATH`.
    pub override_path: Option<PathBuf>,
    /// `CUDA_HOME` (then `CUDA_PATH`).
    pub cuda_home: Option<PathBuf>,
    /// `VIRTUAL_ENV` and `CONDA_PREFIX`.
    pub python_prefixes: Vec<PathBuf>,
    /// `PYTHONPATH` entries.
    pub python_path: Vec<PathBuf>,
    /// Paths of files mapped into this process (`/proc/self/maps`).
    pub mapped_files: Vec<PathBuf>,
}

impl SearchEnv {
    /// Reads the variables and `/proc/self/maps` of the running process.
    pub fn from_process() -> Self {
        let var = |k: &str| env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        Self {
            override_path: var(CUPTI_PATH_ENV),
            cuda_home: var("CUDA_HOME").or_else(|| var("CUDA_PATH")),
            python_prefixes: ["VIRTUAL_ENV", "CONDA_PREFIX"]
                .iter()
                .filter_map(|k| var(k))
                .collect(),
            python_path: env::var_os("PYTHONPATH")
                .map(|p| {
                    env::split_paths(&p)
                        .filter(|p| !p.as_os_str().is_empty())
                        .collect()
                })
                .unwrap_or_default(),
            mapped_files: mapped_files(),
        }
    }
}

fn mapped_files() -> Vec<PathBuf> {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return Vec::new();
    };
    let mut seen = HashSet::new();
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| p.starts_with('/'))
        .filter(|p| seen.insert(*p))
        .map(PathBuf::from)
        .collect()
}

/// `site-packages` (or `dist-packages`) folders derivable without running Python.
fn site_packages(env: &SearchEnv) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut lib_dirs = |prefix: &Path| {
        let lib = prefix.join("lib");
        let mut found: Vec<PathBuf> = std::fs::read_dir(&lib)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("python3"))
            })
            .map(|p| p.join("site-packages"))
            .collect();
        found.sort();
        out.extend(found);
    };
    for p in &env.python_prefixes {
        lib_dirs(p);
    }
    let mut out2 = out;
    out2.extend(env.python_path.iter().cloned());
    for f in &env.mapped_files {
        // A library loaded from a wheel: keep everything up to `site-packages`.
        let mut acc = PathBuf::new();
        for c in f.components() {
            acc.push(c);
            let name = c.as_os_str();
            if name == "site-packages" || name == "dist-packages" {
                out2.push(acc.clone());
                break;
            }
        }
        // libpythonX.Y.so in PREFIX/lib: PREFIX/lib/pythonX.Y/site-packages.
        if let (Some(name), Some(dir)) = (f.file_name().and_then(|n| n.to_str()), f.parent())
            && let Some(ver) = name
                .strip_prefix("libpython")
                .and_then(|r| r.split(".so").next())
            && !ver.is_empty()
        {
            out2.push(dir.join(format!("python{ver}")).join("site-packages"));
        }
    }
    out2
}

/// The ordered, de-duplicated list of `libcupti` candidates for `env`: the
/// override, the sonames through the loader's own search path, `$CUDA_HOME`,
/// the default CUDA install folders, then pip wheels (`nvidia/cu13/lib`,
/// `nvidia/cuda_cupti/lib`) under each `site-packages` we can find.
pub fn cupti_candidates(env: &SearchEnv) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |s: String| {
        if !out.contains(&s) {
            out.push(s);
        }
    };
    let in_dir = |dir: &Path| -> Vec<String> {
        CUPTI_SONAMES
            .iter()
            .map(|n| dir.join(n).to_string_lossy().into_owned())
            .collect()
    };
    if let Some(p) = &env.override_path {
        if p.is_dir() {
            in_dir(p).into_iter().for_each(&mut push);
        } else {
            push(p.to_string_lossy().into_owned());
        }
    }
    CUPTI_SONAMES.iter().for_each(|n| push((*n).to_owned()));
    let mut roots: Vec<PathBuf> = env.cuda_home.iter().cloned().collect();
    roots.push("/usr/local/cuda".into());
    roots.push("/usr/local/cuda-13.0".into());
    for root in &roots {
        in_dir(&root.join("extras/CUPTI/lib64"))
            .into_iter()
            .for_each(&mut push);
        in_dir(&root.join(TARGET_DIR))
            .into_iter()
            .for_each(&mut push);
    }
    for sp in site_packages(env) {
        for sub in ["nvidia/cu13/lib", "nvidia/cuda_cupti/lib"] {
            in_dir(&sp.join(sub)).into_iter().for_each(&mut push);
        }
    }
    out
}

/// Opens the first `libcupti` of [`cupti_candidates`] for this process.
///
/// Returns the library and the candidate that opened.
///
/// # Errors
///
/// [`LibraryNotFound`] listing every candidate when none opens.
pub fn open_cupti() -> Result<(libloading::Library, String), LibraryNotFound> {
    open_first(&cupti_candidates(&SearchEnv::from_process()))
}

/// Opens the first of `candidates` that loads. Absolute paths that do not exist
/// are skipped without asking the loader (they still count as tried).
///
/// # Errors
///
/// [`LibraryNotFound`] listing every candidate when none opens.
pub fn open_first(candidates: &[String]) -> Result<(libloading::Library, String), LibraryNotFound> {
    let mut last_error = None;
    for c in candidates {
        if c.starts_with('/') && !Path::new(c).exists() {
            continue;
        }
        match open_path(c) {
            Ok(lib) => return Ok((lib, c.clone())),
            Err(e) => {
                if c.starts_with('/') {
                    last_error = Some(e.to_string());
                }
            }
        }
    }
    Err(LibraryNotFound {
        tried: candidates.to_vec(),
        last_error,
    })
}

/// Opens one library file or soname.
///
/// # Errors
///
/// The loader's error.
pub fn open_path(path: &str) -> Result<libloading::Library, libloading::Error> {
    // SAFETY: loading runs the library's initialisers. CUPTI's and the other
    // candidates' are the vendor's; there is no safer way to load a vendor
    // library, and the caller asked for this one.
    unsafe { libloading::Library::new(path) }
}

/// A handle on the `libcuda.so.1` the application already loaded, or `None`
/// when it has not loaded one (we never load the driver ourselves).
pub fn open_loaded_libcuda() -> Option<libloading::Library> {
    open_loaded(LIBCUDA_SONAME)
}

/// A handle on an already-loaded library (`RTLD_NOLOAD`), or `None`.
pub fn open_loaded(soname: &str) -> Option<libloading::Library> {
    // SAFETY: with RTLD_NOLOAD nothing new is mapped and no initialiser runs;
    // we only take another reference on a library that is already loaded.
    let lib = unsafe {
        libloading::os::unix::Library::open(Some(soname), libc::RTLD_NOLOAD | libc::RTLD_LAZY)
    };
    lib.ok().map(Into::into)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_override_sonames_cuda_home_defaults_then_wheels() {
        let tmp = std::env::temp_dir().join(format!("cupti-sys-loader-{}", std::process::id()));
        let venv = tmp.join("venv");
        std::fs::create_dir_all(venv.join("lib/python3.12/site-packages")).unwrap();
        let env = SearchEnv {
            override_path: Some("/opt/x/libcupti.so.13".into()),
            cuda_home: Some("/opt/cuda".into()),
            python_prefixes: vec![venv.clone()],
            python_path: vec!["/pp".into()],
            mapped_files: vec![
                "/conda/lib/python3.11/site-packages/torch/lib/libtorch.so".into(),
                "/usr/lib/libpython3.11.so.1.0".into(),
            ],
        };
        let c = cupti_candidates(&env);
        assert_eq!(c[0], "/opt/x/libcupti.so.13");
        assert_eq!(&c[1..4], &CUPTI_SONAMES.map(String::from));
        assert_eq!(c[4], "/opt/cuda/extras/CUPTI/lib64/libcupti.so.13");
        assert_eq!(c[7], format!("/opt/cuda/{TARGET_DIR}/libcupti.so.13"));
        let pos = |s: &str| {
            c.iter()
                .position(|x| x == s)
                .unwrap_or_else(|| panic!("{s} in {c:#?}"))
        };
        assert!(pos("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13") > 7);
        assert!(pos("/usr/local/cuda-13.0/extras/CUPTI/lib64/libcupti.so") > 7);
        let venv_sp = venv.join("lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13");
        assert!(
            pos(venv_sp.to_str().unwrap())
                > pos("/usr/local/cuda-13.0/extras/CUPTI/lib64/libcupti.so")
        );
        pos("/pp/nvidia/cuda_cupti/lib/libcupti.so.12");
        pos("/conda/lib/python3.11/site-packages/nvidia/cu13/lib/libcupti.so.13");
        pos("/usr/lib/python3.11/site-packages/nvidia/cu13/lib/libcupti.so");
        let mut dedup = c.clone();
        dedup.dedup();
        assert_eq!(dedup.len(), c.len());
        std::fs::remove_dir_all(tmp).ok();
    }

    #[test]
    fn not_found_lists_every_candidate() {
        let cands = vec![
            "/nonexistent/libcupti.so.13".to_owned(),
            "libcupti-nonexistent.so.99".to_owned(),
        ];
        let err = open_first(&cands).unwrap_err();
        assert_eq!(err.tried, cands);
        let msg = err.to_string();
        assert!(
            msg.contains("/nonexistent/libcupti.so.13")
                && msg.contains("libcupti-nonexistent.so.99")
        );
    }

    #[test]
    fn libcuda_is_never_loaded_by_us() {
        // No CUDA here: the application has not loaded libcuda, so we get None.
        if !Path::new("/proc/driver/nvidia").exists() {
            assert!(open_loaded_libcuda().is_none());
        }
        assert!(open_loaded("libc.so.6").is_some());
    }
}
