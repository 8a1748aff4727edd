//! Finding and opening `libcupti` and the application's `libcuda` at run time.
//!
//! `libcupti` is searched in a fixed order ([`cupti_candidates`]) and the first
//! one that opens *and* reports a version at or above the caller's floor wins
//! ([`select`]): an older CUPTI found first (a system `libcupti.so.12` ahead of
//! a virtualenv's CUDA 13 wheel) is skipped, and named with its version if
//! nothing suitable is found. A failure lists every place tried. `libcuda` is never
//! loaded by us: [`open_loaded_libcuda`] only takes a handle on the copy the
//! application already has (`RTLD_NOLOAD`), so our driver calls go to the very
//! driver the application uses.

use std::{
    collections::HashSet,
    env, fmt,
    path::{Component, Path, PathBuf},
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

/// No candidate `libcupti` could be opened (at or above the version floor).
#[derive(Debug, Clone)]
pub struct LibraryNotFound {
    /// Every candidate, in the order tried.
    pub tried: Vec<String>,
    /// The candidates that opened but reported a `cuptiGetVersion` below the
    /// floor, with that version, in the order tried.
    pub too_old: Vec<(String, u32)>,
    /// The loader's message for the last candidate that exists but failed to
    /// open, if any did (e.g. a wrong-architecture file).
    pub last_error: Option<String>,
}

impl fmt::Display for LibraryNotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&not_found_message(
            &self.tried,
            &self.too_old,
            self.last_error.as_deref(),
        ))
    }
}

/// The text of a [`LibraryNotFound`]: every candidate, each one that was too
/// old followed by its version.
pub fn not_found_message(
    tried: &[String],
    too_old: &[(String, u32)],
    last_error: Option<&str>,
) -> String {
    let entries: Vec<String> = tried
        .iter()
        .map(|t| match too_old.iter().find(|(p, _)| p == t) {
            Some((_, v)) => format!("{t} (CUPTI version {v}, below the floor)"),
            None => t.clone(),
        })
        .collect();
    let mut msg = format!("libcupti not found; tried: {}", entries.join(", "));
    if let Some(e) = last_error {
        msg.push_str(&format!(" (last error: {e})"));
    }
    msg
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

/// Removes `.` and `..` components without touching the file system (the
/// paths come from `/proc/self/maps`, already free of symlinks).
fn lexical_normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push(c);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Folders where the CUPTI matching a CUDA library in `dir` lives: `dir`
/// itself (CUDA 13 wheels' `nvidia/cu13/lib`, toolkits that copy CUPTI next to
/// the runtime), `<dir>/../extras/CUPTI/lib64` (toolkit `lib64`), the same
/// from a toolkit's `targets/<arch>/lib`, and for a CUDA 12-style wheel
/// `nvidia/cuda_runtime/lib` its sibling `nvidia/cuda_cupti/lib`.
pub fn cupti_dirs_near(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    out.push(lexical_normalize(&dir.join("../extras/CUPTI/lib64")));
    let names: Vec<&std::ffi::OsStr> = dir.iter().collect();
    let n = names.len();
    if n >= 3 && names[n - 3] == "targets" && names[n - 1] == "lib" {
        out.push(lexical_normalize(&dir.join("../../../extras/CUPTI/lib64")));
    }
    if n >= 3 && names[n - 3] == "nvidia" && names[n - 2] == "cuda_runtime" && names[n - 1] == "lib"
    {
        out.push(lexical_normalize(&dir.join("../../cuda_cupti/lib")));
    }
    out
}

/// Candidates taken from the CUDA libraries already mapped into the process,
/// best first: a `libcupti` already loaded (by path: a second copy would be a
/// second CUPTI), then the folders near each `libcudart.so*`, then near each
/// `libcuda.so*` (see [`cupti_dirs_near`]).
pub fn candidates_near_loaded_cuda(mapped_files: &[PathBuf]) -> Vec<String> {
    let named = |prefix: &'static str| {
        mapped_files.iter().filter(move |f| {
            f.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
    };
    let mut out: Vec<String> = named("libcupti.so")
        .map(|f| f.to_string_lossy().into_owned())
        .collect();
    for lib in named("libcudart.so").chain(named("libcuda.so")) {
        if let Some(dir) = lib.parent() {
            for d in cupti_dirs_near(dir) {
                out.extend(
                    CUPTI_SONAMES
                        .iter()
                        .map(|n| d.join(n).to_string_lossy().into_owned()),
                );
            }
        }
    }
    out
}

/// The ordered, de-duplicated list of `libcupti` candidates for `env`: the
/// override, then what the CUDA libraries already in the process point at
/// ([`candidates_near_loaded_cuda`]), the sonames through the loader's own
/// search path, `$CUDA_HOME`, the default CUDA install folders, then pip
/// wheels (`nvidia/cu13/lib`, `nvidia/cuda_cupti/lib`) under each
/// `site-packages` we can find.
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
    candidates_near_loaded_cuda(&env.mapped_files)
        .into_iter()
        .for_each(&mut push);
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

/// What trying one candidate found.
#[derive(Debug)]
pub enum Probe<L> {
    /// Nothing there (no such file, or a soname the loader does not find).
    Missing,
    /// It exists but could not be used; the reason.
    Failed(String),
    /// It opened and reported this `cuptiGetVersion`.
    Opened(L, u32),
}

/// Tries `candidates` in order with `probe` and returns the first that opens
/// with a version of at least `floor`, with its path and version. Candidates
/// below the floor are skipped (and their libraries dropped) and listed in the
/// error's `too_old` if nothing suitable follows.
///
/// # Errors
///
/// [`LibraryNotFound`] listing every candidate when none qualifies.
pub fn select<L>(
    candidates: &[String],
    floor: u32,
    mut probe: impl FnMut(&str) -> Probe<L>,
) -> Result<(L, String, u32), LibraryNotFound> {
    let mut too_old = Vec::new();
    let mut last_error = None;
    for c in candidates {
        match probe(c) {
            Probe::Missing => {}
            Probe::Failed(e) => last_error = Some(format!("{c}: {e}")),
            Probe::Opened(lib, v) if v >= floor => return Ok((lib, c.clone(), v)),
            Probe::Opened(_, v) => too_old.push((c.clone(), v)),
        }
    }
    Err(LibraryNotFound {
        tried: candidates.to_vec(),
        too_old,
        last_error,
    })
}

type GetVersion = unsafe extern "C" fn(*mut u32) -> crate::CUptiResult;

/// Opens one candidate and asks it for its version.
fn probe_cupti(c: &str) -> Probe<libloading::Library> {
    let absolute = c.starts_with('/');
    if absolute && !Path::new(c).exists() {
        return Probe::Missing;
    }
    let lib = match open_path(c) {
        Ok(lib) => lib,
        // A soname the loader cannot find is simply absent.
        Err(_) if !absolute => return Probe::Missing,
        Err(e) => return Probe::Failed(e.to_string()),
    };
    // SAFETY: `cuptiGetVersion` has this C signature in every CUPTI
    // (cupti_version.h); the symbol is used only while `lib` is alive.
    let get = match unsafe { lib.get::<GetVersion>(b"cuptiGetVersion\0") } {
        Ok(f) => f,
        Err(e) => return Probe::Failed(e.to_string()),
    };
    let mut v = 0u32;
    // SAFETY: valid out-pointer; the call only reports a constant and needs
    // no CUPTI initialisation.
    let r = unsafe { get(&mut v) };
    if r != crate::CUptiResult::CUPTI_SUCCESS {
        return Probe::Failed(format!("cuptiGetVersion returned {}", r.0));
    }
    Probe::Opened(lib, v)
}

/// Opens the first `libcupti` of [`cupti_candidates`] for this process whose
/// `cuptiGetVersion` is at least `floor` (see [`select`]).
///
/// Returns the library and the candidate that opened.
///
/// # Errors
///
/// [`LibraryNotFound`] listing every candidate, and those below the floor
/// with their versions, when none qualifies.
pub fn open_cupti(floor: u32) -> Result<(libloading::Library, String), LibraryNotFound> {
    let candidates = cupti_candidates(&SearchEnv::from_process());
    select(&candidates, floor, probe_cupti).map(|(lib, path, _)| (lib, path))
}

/// Opens the first of `candidates` that loads, whatever its version. Absolute
/// paths that do not exist are skipped without asking the loader (they still
/// count as tried).
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
        too_old: Vec::new(),
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

    const FLOOR: u32 = crate::CUPTI_API_VERSION_13_0;

    #[test]
    fn loaded_cuda_runtime_folders_come_right_after_the_override() {
        let wheel12 = "/venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib";
        let env = SearchEnv {
            override_path: Some("/opt/x/libcupti.so.13".into()),
            mapped_files: vec![
                "/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06".into(),
                "/usr/lib/x86_64-linux-gnu/libc.so.6".into(),
                format!("{wheel12}/libcudart.so.12").into(),
                "/opt/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13.0.48".into(),
                "/torch/lib/libcupti.so.13".into(),
            ],
            ..SearchEnv::default()
        };
        let c = cupti_candidates(&env);
        let pos = |s: &str| {
            c.iter()
                .position(|x| x == s)
                .unwrap_or_else(|| panic!("{s} not in {c:#?}"))
        };
        assert_eq!(c[0], "/opt/x/libcupti.so.13");
        // A CUPTI already in the process beats everything it did not name.
        assert_eq!(c[1], "/torch/lib/libcupti.so.13");
        // Runtimes in the order mapped, each with its derived folders.
        assert_eq!(c[2], format!("{wheel12}/libcupti.so.13"));
        let wheel_cupti =
            pos("/venv/lib/python3.12/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12");
        let toolkit = pos("/opt/cuda-13.0/targets/x86_64-linux/lib/libcupti.so.13");
        let extras = pos("/opt/cuda-13.0/extras/CUPTI/lib64/libcupti.so.13");
        assert!(wheel_cupti < toolkit && toolkit < extras, "{c:#?}");
        // The driver's folder after every runtime's.
        let driver = pos("/usr/lib/x86_64-linux-gnu/libcupti.so.13");
        assert!(extras < driver, "{c:#?}");
        pos("/usr/lib/extras/CUPTI/lib64/libcupti.so.13");
        // All of them before the loader's own search.
        assert!(driver < pos("libcupti.so.13"), "{c:#?}");
        // Derived folders are normalised, never `..` paths.
        assert!(!c.iter().any(|x| x.contains("/../")), "{c:#?}");
    }

    #[test]
    fn folders_near_a_cuda_library() {
        let d = |s: &str| cupti_dirs_near(Path::new(s));
        assert_eq!(
            d("/usr/local/cuda-13.0/lib64"),
            [
                PathBuf::from("/usr/local/cuda-13.0/lib64"),
                "/usr/local/cuda-13.0/extras/CUPTI/lib64".into(),
            ]
        );
        assert_eq!(
            d("/sp/nvidia/cuda_runtime/lib")[2],
            PathBuf::from("/sp/nvidia/cuda_cupti/lib")
        );
        assert_eq!(
            d("/cuda/targets/sbsa-linux/lib")[2],
            PathBuf::from("/cuda/extras/CUPTI/lib64")
        );
        assert_eq!(
            d("/sp/nvidia/cu13/lib")[0],
            PathBuf::from("/sp/nvidia/cu13/lib")
        );
    }

    /// A fake probe over (path, outcome) pairs; records what was asked.
    fn fake<'a>(
        libs: &'a [(&'a str, Option<u32>)],
        asked: &'a mut Vec<String>,
    ) -> impl FnMut(&str) -> Probe<String> + 'a {
        move |c: &str| {
            asked.push(c.to_owned());
            match libs.iter().find(|(p, _)| *p == c) {
                None => Probe::Missing,
                Some((_, None)) => Probe::Failed("wrong ELF class".into()),
                Some((_, Some(v))) => Probe::Opened(format!("lib:{c}"), *v),
            }
        }
    }

    #[test]
    fn a_cupti_below_the_floor_is_skipped_for_a_later_one() {
        let cands: Vec<String> = [
            "libcupti.so.13",
            "libcupti.so.12",
            "/broken/libcupti.so.13",
            "/venv/nvidia/cu13/lib/libcupti.so.13",
            "/later/libcupti.so.13",
        ]
        .map(String::from)
        .to_vec();
        let libs = [
            ("libcupti.so.12", Some(120800)),
            ("/broken/libcupti.so.13", None),
            ("/venv/nvidia/cu13/lib/libcupti.so.13", Some(130001)),
            ("/later/libcupti.so.13", Some(130100)),
        ];
        let mut asked = Vec::new();
        let (lib, path, v) = select(&cands, FLOOR, fake(&libs, &mut asked)).unwrap();
        assert_eq!(path, "/venv/nvidia/cu13/lib/libcupti.so.13");
        assert_eq!(
            (lib.as_str(), v),
            ("lib:/venv/nvidia/cu13/lib/libcupti.so.13", 130001)
        );
        // The search stops at the first good one.
        assert_eq!(asked, &cands[..4]);
        // The same old library first is still taken when it is new enough.
        let mut asked = Vec::new();
        let (_, path, _) = select(&cands, 120000, fake(&libs, &mut asked)).unwrap();
        assert_eq!(path, "libcupti.so.12");
    }

    #[test]
    fn only_old_cuptis_are_reported_with_their_versions() {
        let cands: Vec<String> = ["libcupti.so.12", "/x/libcupti.so", "/y/libcupti.so.13"]
            .map(String::from)
            .to_vec();
        let libs = [
            ("libcupti.so.12", Some(120800)),
            ("/x/libcupti.so", Some(110000)),
            ("/y/libcupti.so.13", None),
        ];
        let mut asked = Vec::new();
        let err = select(&cands, FLOOR, fake(&libs, &mut asked)).unwrap_err();
        assert_eq!(err.tried, cands);
        assert_eq!(
            err.too_old,
            [
                ("libcupti.so.12".to_owned(), 120800),
                ("/x/libcupti.so".to_owned(), 110000)
            ]
        );
        assert_eq!(
            err.last_error.as_deref(),
            Some("/y/libcupti.so.13: wrong ELF class")
        );
        let msg = err.to_string();
        assert!(
            msg.contains("libcupti.so.12 (CUPTI version 120800, below the floor)")
                && msg.contains("/x/libcupti.so (CUPTI version 110000, below the floor)")
                && msg.contains("(last error: /y/libcupti.so.13: wrong ELF class)"),
            "{msg}"
        );
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
