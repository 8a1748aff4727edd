//! Finding the injection libraries `record` points the program at.

use std::path::{Path, PathBuf};

pub(crate) const CUDA_LIB: &str = "libgpu_trace_cuda.so";
pub(crate) const HIP_LIB: &str = "libgpu_trace_hip.so";

/// The injection libraries found.
#[derive(Debug, Clone, Default)]
pub(crate) struct Libs {
    pub(crate) cuda: Option<PathBuf>,
    pub(crate) hip: Option<PathBuf>,
}

impl Libs {
    /// With `lib_dir` (`--lib-dir`, `GPU_TRACE_LIB_DIR`), only there, and
    /// an error if it holds neither; otherwise in the folders
    /// [`beside_executable`] names for this executable.
    pub(crate) fn find(lib_dir: Option<&Path>) -> Result<Libs, String> {
        let dirs: Vec<PathBuf> = match lib_dir {
            Some(d) => vec![d.to_path_buf()],
            None => {
                let exe_dir = std::env::current_exe()
                    .ok()
                    .and_then(|e| e.canonicalize().ok())
                    .and_then(|e| e.parent().map(Path::to_path_buf));
                exe_dir
                    .as_deref()
                    .map(beside_executable)
                    .unwrap_or_default()
            }
        };
        let find = |name: &str| {
            dirs.iter()
                .map(|d| d.join(name))
                .find(|p| p.is_file())
                .and_then(|p| p.canonicalize().ok())
        };
        let libs = Libs {
            cuda: find(CUDA_LIB),
            hip: find(HIP_LIB),
        };
        if let Some(d) = lib_dir
            && libs.cuda.is_none()
            && libs.hip.is_none()
        {
            return Err(format!(
                "--lib-dir {}: holds neither {CUDA_LIB} nor {HIP_LIB}",
                d.display()
            ));
        }
        Ok(libs)
    }

    pub(crate) fn any(&self) -> bool {
        self.cuda.is_some() || self.hip.is_some()
    }
}

/// Where the libraries are looked for, in order, when the executable is in
/// `exe_dir` (resolved through links, so that a link to it on the PATH, as
/// pipx and `uv tool` make, finds them too):
///
/// - `exe_dir` itself: a cargo build (`target/<profile>/`);
/// - `exe_dir/../lib/gpu-trace` and `exe_dir/../lib`: an install into a
///   prefix (`<prefix>/bin`, `<prefix>/lib`);
/// - the `gpu-trace` wheel's install: the executable is the wheel's script
///   (`<prefix>/bin/gpu-trace`) and the libraries are in the `gpu_trace`
///   package ([`WHEEL_LIB_DIR`]), in the site-packages of the same prefix
///   (`<prefix>/lib/python3.X/site-packages`, `dist-packages` on Debian,
///   `lib64` where platform files go there), or beside `bin` with
///   `pip install --target DIR`. Where several Python versions installed
///   it into one prefix, the newest's is taken first.
fn beside_executable(exe_dir: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![
        exe_dir.to_path_buf(),
        exe_dir.join("../lib/gpu-trace"),
        exe_dir.join("../lib"),
        exe_dir.join("..").join(WHEEL_LIB_DIR),
    ];
    for lib in ["lib", "lib64"] {
        let mut pythons: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir(exe_dir.join("..").join(lib))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let version = name.strip_prefix("python")?;
                let key = version
                    .split('.')
                    .map(|n| n.parse().ok())
                    .collect::<Option<Vec<u32>>>()?;
                Some((key, e.path()))
            })
            .collect();
        pythons.sort_by(|a, b| b.0.cmp(&a.0));
        for (_, py) in pythons {
            for packages in ["site-packages", "dist-packages"] {
                dirs.push(py.join(packages).join(WHEEL_LIB_DIR));
            }
        }
    }
    dirs
}

/// The libraries' folder in the wheel: `_lib` of the `gpu_trace` package
/// (`python/build-wheel.sh` puts them there).
pub(crate) const WHEEL_LIB_DIR: &str = "gpu_trace/_lib";

#[cfg(test)]
mod tests {
    use super::*;

    fn found(exe_dir: &Path) -> Vec<PathBuf> {
        beside_executable(exe_dir)
            .into_iter()
            .map(|d| d.join(CUDA_LIB))
            .filter(|p| p.is_file())
            .map(|p| p.canonicalize().unwrap())
            .collect()
    }

    /// The wheel installed into a venv (or with `--prefix`, `--user`):
    /// `bin/gpu-trace` and `lib/python3.X/site-packages/gpu_trace/_lib`;
    /// with two Python versions, the newest's first. With `--target DIR`:
    /// `DIR/bin` and `DIR/gpu_trace/_lib`.
    #[test]
    fn the_wheels_install_layouts_are_searched() {
        let tmp = std::env::temp_dir().join(format!("gpu-trace-libs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let lib_in = |dir: &Path| {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join(CUDA_LIB), b"").unwrap();
            dir.join(CUDA_LIB).canonicalize().unwrap()
        };
        let venv = tmp.join("venv");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::create_dir_all(venv.join("lib/python3.9")).unwrap();
        let old = lib_in(&venv.join("lib/python3.9/site-packages").join(WHEEL_LIB_DIR));
        let new = lib_in(
            &venv
                .join("lib/python3.12/site-packages")
                .join(WHEEL_LIB_DIR),
        );
        assert_eq!(found(&venv.join("bin")), [new, old]);

        let debian = tmp.join("usr-local");
        std::fs::create_dir_all(debian.join("bin")).unwrap();
        let dist = lib_in(
            &debian
                .join("lib/python3.11/dist-packages")
                .join(WHEEL_LIB_DIR),
        );
        assert_eq!(found(&debian.join("bin")), [dist]);

        let target = tmp.join("target");
        std::fs::create_dir_all(target.join("bin")).unwrap();
        let t = lib_in(&target.join(WHEEL_LIB_DIR));
        assert_eq!(found(&target.join("bin")), [t]);

        // An install into a prefix comes first.
        let prefix = lib_in(&venv.join("lib/gpu-trace"));
        assert_eq!(found(&venv.join("bin"))[0], prefix);
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
