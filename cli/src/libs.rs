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
    /// an error if it holds neither; otherwise beside this executable (a
    /// cargo build), in `../lib/gpu-trace` and in `../lib` (an install
    /// into a prefix).
    pub(crate) fn find(lib_dir: Option<&Path>) -> Result<Libs, String> {
        let dirs: Vec<PathBuf> = match lib_dir {
            Some(d) => vec![d.to_path_buf()],
            None => {
                let exe_dir = std::env::current_exe()
                    .ok()
                    .and_then(|e| e.canonicalize().ok())
                    .and_then(|e| e.parent().map(Path::to_path_buf));
                match exe_dir {
                    Some(d) => vec![d.clone(), d.join("../lib/gpu-trace"), d.join("../lib")],
                    None => Vec::new(),
                }
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
