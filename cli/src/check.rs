//! `gpu-trace check`: what this machine offers for tracing, and where each
//! library was found (as `nsys status -e`). `record` asks the same probes
//! why a run left no trace.
//!
//! The CUDA libraries are opened the way the injection opens them: CUPTI
//! through `cupti::Cupti::load` (the same search order and version floor),
//! the driver and NVML by soname through the loader. Nothing is
//! initialised: no `cuInit`, so no device is touched. rocprofiler-sdk is
//! looked for as a file, never loaded: loading it runs its set-up.

use crate::libs::{self, Libs};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// A library looked for: where it is, or where it was looked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// Opened (or present) at this file, with details.
    At(PathBuf, String),
    /// Not there; what was tried (and the loader's last message).
    Missing(String),
}

impl Found {
    pub(crate) fn is_found(&self) -> bool {
        matches!(self, Found::At(..))
    }

    fn describe(&self) -> String {
        match self {
            Found::At(p, extra) if extra.is_empty() => p.display().to_string(),
            Found::At(p, extra) => format!("{} ({extra})", p.display()),
            Found::Missing(why) => format!("not found: {why}"),
        }
    }
}

/// The file a library opened by soname came from: the first mapping of
/// this process whose name starts as the soname does (`libcuda.so.1` is
/// mapped as `libcuda.so.580.65.06`).
fn mapped_path(soname: &str) -> Option<PathBuf> {
    let stem = match soname.find(".so") {
        Some(i) => &soname[..i + 3],
        None => soname,
    };
    cupti_sys::loader::SearchEnv::from_process()
        .mapped_files
        .into_iter()
        .find(|f| {
            f.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(stem))
        })
}

/// Opens `soname` through the loader's own search (`LD_LIBRARY_PATH`, the
/// cache, the system folders) and keeps it loaded.
fn open_soname(soname: &str) -> Found {
    match cupti_sys::loader::open_path(soname) {
        Ok(lib) => {
            // Kept: the driver table below points into it.
            std::mem::forget(lib);
            match mapped_path(soname) {
                Some(p) => Found::At(p, String::new()),
                None => Found::At(PathBuf::from(soname), String::new()),
            }
        }
        Err(e) => {
            use std::error::Error as _;
            Found::Missing(
                e.source()
                    .map_or_else(|| format!("{soname}: {e}"), |s| s.to_string()),
            )
        }
    }
}

/// The CUDA driver: `libcuda.so.1`, with the CUDA version it supports.
pub(crate) fn cuda_driver() -> Found {
    match open_soname(cupti_sys::loader::LIBCUDA_SONAME) {
        Found::At(p, _) => {
            let version = cupti::driver::Driver::from_process()
                .and_then(|d| d.version())
                .map(|v| format!("supports CUDA {}.{}", v / 1000, (v % 1000) / 10))
                .unwrap_or_else(|e| format!("cuDriverGetVersion failed: {e}"));
            Found::At(p, version)
        }
        m => m,
    }
}

/// CUPTI, found as the injection finds it.
pub(crate) fn cupti() -> Found {
    match cupti::Cupti::load() {
        Ok(c) => {
            let v = c.version();
            Found::At(
                PathBuf::from(c.path()),
                format!(
                    "CUPTI API version {v}, CUDA {}.{}",
                    v / 10000,
                    (v % 10000) / 100
                ),
            )
        }
        Err(cupti::Error::LibraryNotFound { tried, too_old, .. }) => {
            let mut why = format!(
                "{} places tried, from {} on; {} names one",
                tried.len(),
                tried.first().map_or("nowhere", String::as_str),
                cupti::CUPTI_PATH_ENV
            );
            for (p, v) in &too_old {
                let _ = write!(why, "; {p} is CUPTI {v}, older than CUDA 13.0");
            }
            Found::Missing(why)
        }
        Err(e) => Found::Missing(e.to_string()),
    }
}

/// NVML, which nvidia-smi uses: present with every NVIDIA driver.
fn nvml() -> Found {
    open_soname("libnvidia-ml.so.1")
}

/// The NVIDIA kernel module's version line, and its GPUs.
fn nvidia_module() -> (Option<String>, Vec<String>) {
    let version = std::fs::read_to_string("/proc/driver/nvidia/version")
        .ok()
        .and_then(|v| {
            v.lines()
                .next()
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        });
    let mut gpus: Vec<String> = std::fs::read_dir("/proc/driver/nvidia/gpus")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| {
            let info = std::fs::read_to_string(e.path().join("information")).unwrap_or_default();
            let model = info
                .lines()
                .find_map(|l| l.strip_prefix("Model:"))
                .map_or("unknown model", str::trim)
                .to_owned();
            format!("{model} at {}", e.file_name().to_string_lossy())
        })
        .collect();
    gpus.sort();
    (version, gpus)
}

/// Whether per-kernel counters are open to this user: the driver's
/// `RmProfilingAdminOnly` (NVreg_RestrictProfilingToAdminUsers).
fn counter_permission() -> String {
    let root = rustix::process::geteuid().is_root();
    match std::fs::read_to_string("/proc/driver/nvidia/params") {
        Ok(p) => match p
            .lines()
            .find_map(|l| l.strip_prefix("RmProfilingAdminOnly:"))
            .map(str::trim)
        {
            Some("0") => "open to every user (RmProfilingAdminOnly: 0)".to_owned(),
            Some(_) if root => "admin only (RmProfilingAdminOnly: 1); this user is root".to_owned(),
            Some(_) => "admin only (RmProfilingAdminOnly: 1): run as root, or load the driver with NVreg_RestrictProfilingToAdminUsers=0".to_owned(),
            None => "unknown (the driver does not say)".to_owned(),
        },
        Err(_) => "unknown (no NVIDIA kernel module)".to_owned(),
    }
}

/// Where rocprofiler-sdk may be: `ROCM_PATH`, the default ROCm folders,
/// `LD_LIBRARY_PATH` and the system library folders.
fn rocm_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(r) = std::env::var_os("ROCM_PATH").filter(|r| !r.is_empty()) {
        dirs.push(Path::new(&r).join("lib"));
    }
    dirs.push("/opt/rocm/lib".into());
    let mut versioned: Vec<PathBuf> = std::fs::read_dir("/opt")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("rocm-"))
        })
        .map(|p| p.join("lib"))
        .collect();
    versioned.sort();
    dirs.extend(versioned.into_iter().rev());
    if let Some(l) = std::env::var_os("LD_LIBRARY_PATH") {
        dirs.extend(std::env::split_paths(&l).filter(|p| !p.as_os_str().is_empty()));
    }
    for d in [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/lib64",
        "/lib",
    ] {
        dirs.push(d.into());
    }
    let mut seen = Vec::new();
    dirs.retain(|d| {
        let new = !seen.contains(d);
        seen.push(d.clone());
        new
    });
    dirs
}

/// rocprofiler-sdk 1.x (`librocprofiler-sdk.so.1`), the file itself.
pub(crate) fn rocprofiler_sdk() -> Found {
    let dirs = rocm_dirs();
    for d in &dirs {
        let p = d.join(rocprofiler_sys::SONAME);
        if p.exists() {
            let real = p.canonicalize().unwrap_or_else(|_| p.clone());
            let extra = if real == p {
                String::new()
            } else {
                format!("{}", real.display())
            };
            return Found::At(p, extra);
        }
    }
    Found::Missing(format!(
        "{} in {}",
        rocprofiler_sys::SONAME,
        dirs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// Everything `check` reports.
pub(crate) struct Report {
    pub(crate) driver: Found,
    pub(crate) cupti: Found,
    nvml: Found,
    module: (Option<String>, Vec<String>),
    counters: String,
    pub(crate) rocprofiler: Found,
    kfd: bool,
    libs: Libs,
}

impl Report {
    pub(crate) fn probe(libs: Libs) -> Report {
        Report {
            driver: cuda_driver(),
            cupti: cupti(),
            nvml: nvml(),
            module: nvidia_module(),
            counters: counter_permission(),
            rocprofiler: rocprofiler_sdk(),
            kfd: Path::new("/dev/kfd").exists(),
            libs,
        }
    }

    /// Why CUDA programs cannot be traced here, if they cannot.
    pub(crate) fn cuda_blocker(&self) -> Option<String> {
        if !self.driver.is_found() {
            Some("no CUDA driver (libcuda.so.1)".to_owned())
        } else if !self.cupti.is_found() {
            Some("no CUPTI of CUDA 13 or newer".to_owned())
        } else if self.libs.cuda.is_none() {
            Some(format!("{} was not found", libs::CUDA_LIB))
        } else {
            None
        }
    }

    /// Why HIP programs cannot be traced here, if they cannot.
    pub(crate) fn hip_blocker(&self) -> Option<String> {
        if !self.rocprofiler.is_found() {
            Some("no ROCm rocprofiler-sdk (librocprofiler-sdk.so.1)".to_owned())
        } else if self.libs.hip.is_none() {
            Some(format!("{} was not found", libs::HIP_LIB))
        } else {
            None
        }
    }

    fn render(&self) -> String {
        let lib = |l: &Option<PathBuf>, name: &str| match l {
            Some(p) => p.display().to_string(),
            None => format!(
                "not found: {name} beside gpu-trace, in ../lib/gpu-trace, ../lib, the gpu_trace package or --lib-dir"
            ),
        };
        let mut s = String::from("CUDA\n");
        let add = |s: &mut String, k: &str, v: String| {
            let _ = writeln!(s, "  {k:<16}{v}");
        };
        add(&mut s, "driver", self.driver.describe());
        add(
            &mut s,
            "kernel module",
            self.module
                .0
                .clone()
                .unwrap_or_else(|| "not loaded (no /proc/driver/nvidia/version)".to_owned()),
        );
        add(
            &mut s,
            "GPUs",
            if self.module.1.is_empty() {
                "none listed in /proc/driver/nvidia/gpus".to_owned()
            } else {
                self.module.1.join("; ")
            },
        );
        add(&mut s, "CUPTI", self.cupti.describe());
        add(&mut s, "NVML", self.nvml.describe());
        add(&mut s, "counters", self.counters.clone());
        add(&mut s, "injection", lib(&self.libs.cuda, libs::CUDA_LIB));
        s.push_str("ROCm\n");
        add(&mut s, "rocprofiler-sdk", self.rocprofiler.describe());
        add(
            &mut s,
            "kernel driver",
            if self.kfd {
                "/dev/kfd".to_owned()
            } else {
                "not loaded (no /dev/kfd)".to_owned()
            },
        );
        add(&mut s, "injection", lib(&self.libs.hip, libs::HIP_LIB));
        s.push('\n');
        let verdict = |what: &str, blocker: Option<String>| match blocker {
            None => format!("{what} programs can be traced here\n"),
            Some(b) => format!("{what} programs cannot be traced here: {b}\n"),
        };
        s.push_str(&verdict("CUDA", self.cuda_blocker()));
        s.push_str(&verdict("HIP", self.hip_blocker()));
        s
    }
}

/// `gpu-trace check`: the report on stdout; exit 0 when at least one kind
/// of program can be traced, 1 otherwise.
pub(crate) fn check_cmd(lib_dir: Option<&Path>) -> ExitCode {
    let libs = match Libs::find(lib_dir) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("gpu-trace: {e}");
            return ExitCode::from(2);
        }
    };
    let r = Report::probe(libs);
    print!("{}", r.render());
    if r.cuda_blocker().is_none() || r.hip_blocker().is_none() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
