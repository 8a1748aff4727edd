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
/// pipx makes, finds them too):
///
/// - `exe_dir` itself: a cargo build (`target/<profile>/`);
/// - `exe_dir/../lib/gpu-trace`: an install into a prefix (`<prefix>/bin`
///   and `<prefix>/lib/gpu-trace`), which is also what the `gpu-trace`
///   wheel installs: its executable is a script (`<scheme scripts>`, the
///   venv's `bin`) and the libraries are data files under
///   `lib/gpu-trace` of the scheme's data folder, the same prefix in
///   every install scheme (a venv, `--user`, `--prefix`, `--target`);
/// - `exe_dir/../lib`.
fn beside_executable(exe_dir: &Path) -> Vec<PathBuf> {
    vec![
        exe_dir.to_path_buf(),
        exe_dir.join("../lib/gpu-trace"),
        exe_dir.join("../lib"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A venv with the wheel installed: `bin/gpu-trace` and
    /// `lib/gpu-trace/*.so` under one prefix (the wheel's `scripts` and
    /// `data` folders), beside `lib/python3.X/site-packages/gpu_trace`.
    #[test]
    fn the_wheels_install_layout_is_searched() {
        let venv = std::env::temp_dir().join(format!("gpu-trace-libs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&venv);
        let libs = venv.join("lib/gpu-trace");
        std::fs::create_dir_all(&libs).unwrap();
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::create_dir_all(venv.join("lib/python3.11/site-packages/gpu_trace")).unwrap();
        std::fs::write(libs.join(CUDA_LIB), b"").unwrap();
        let found: Vec<PathBuf> = beside_executable(&venv.join("bin"))
            .into_iter()
            .map(|d| d.join(CUDA_LIB))
            .filter(|p| p.is_file())
            .collect();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            found[0].canonicalize().unwrap(),
            libs.join(CUDA_LIB).canonicalize().unwrap()
        );
        let _ = std::fs::remove_dir_all(&venv);
    }
}
