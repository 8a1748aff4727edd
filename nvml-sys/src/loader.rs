//! Finding and opening NVML at run time.
//!
//! NVML ships with the driver as `libnvidia-ml.so.1`. Only the versioned
//! soname is tried through the loader's search path: the unversioned
//! `libnvidia-ml.so` is a development link, and the CUDA toolkit's
//! `stubs/libnvidia-ml.so` loads but answers every call with an error.
//! `GPU_TRACE_NVML_PATH` (a file, or a folder holding `libnvidia-ml.so.1`)
//! replaces the search: only what it names is tried, so that a test pointing
//! it at a simulator (or at nothing) never reaches the host's driver.

use std::fmt;
use std::path::Path;

/// Environment variable naming the NVML to use: a file, or a folder holding
/// `libnvidia-ml.so.1`. When set, nothing else is tried.
pub const NVML_PATH_ENV: &str = "GPU_TRACE_NVML_PATH";

/// The driver's NVML soname.
pub const NVML_SONAME: &str = "libnvidia-ml.so.1";

/// No candidate NVML could be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryNotFound {
    /// Every candidate, in the order tried.
    pub tried: Vec<String>,
    /// The loader's message for the last candidate that failed to open.
    pub last_error: Option<String>,
}

impl fmt::Display for LibraryNotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "libnvidia-ml not found; tried: {}",
            self.tried.join(", ")
        )?;
        if let Some(e) = &self.last_error {
            write!(f, " (last error: {e})")?;
        }
        Ok(())
    }
}

impl std::error::Error for LibraryNotFound {}

/// The candidates for an override value (`None`: not set), in order.
pub fn candidates(override_path: Option<&Path>) -> Vec<String> {
    match override_path {
        Some(p) if p.is_dir() => vec![p.join(NVML_SONAME).to_string_lossy().into_owned()],
        Some(p) => vec![p.to_string_lossy().into_owned()],
        None => vec![NVML_SONAME.to_owned()],
    }
}

/// Opens the first of `candidates` that loads. Absolute paths that do not
/// exist are skipped without asking the loader (they still count as tried).
///
/// # Errors
/// [`LibraryNotFound`] listing every candidate when none opens.
pub fn open_first(candidates: &[String]) -> Result<(libloading::Library, String), LibraryNotFound> {
    let mut last_error = None;
    for c in candidates {
        if c.starts_with('/') && !Path::new(c).exists() {
            continue;
        }
        // SAFETY: loading runs the library's initialisers: the driver's NVML,
        // or the file the user named as NVML. There is no safer way to load a
        // vendor library.
        match unsafe { libloading::Library::new(c) } {
            Ok(lib) => return Ok((lib, c.clone())),
            // The loader's message names the file already.
            Err(e) => last_error = Some(e.to_string()),
        }
    }
    Err(LibraryNotFound {
        tried: candidates.to_vec(),
        last_error,
    })
}

/// Opens NVML for this process: what `GPU_TRACE_NVML_PATH` names, else
/// `libnvidia-ml.so.1`.
///
/// # Errors
/// [`LibraryNotFound`] listing every candidate when none opens.
pub fn open_nvml() -> Result<(libloading::Library, String), LibraryNotFound> {
    let over = std::env::var_os(NVML_PATH_ENV).filter(|v| !v.is_empty());
    open_first(&candidates(over.as_deref().map(Path::new)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_override_replaces_the_versioned_soname() {
        assert_eq!(candidates(None), [NVML_SONAME]);
        assert_eq!(
            candidates(Some(Path::new("/opt/sim/libnvml_sim.so"))),
            ["/opt/sim/libnvml_sim.so"]
        );
        let dir = std::env::temp_dir();
        assert_eq!(
            candidates(Some(&dir))[0],
            dir.join(NVML_SONAME).to_string_lossy()
        );
    }

    #[test]
    fn not_found_names_every_candidate() {
        let c = vec![
            "/nonexistent/libnvidia-ml.so.1".to_owned(),
            "libnvidia-ml-nonexistent.so.9".to_owned(),
        ];
        let e = open_first(&c).unwrap_err();
        assert_eq!(e.tried, c);
        let msg = e.to_string();
        assert!(
            msg.contains("/nonexistent/libnvidia-ml.so.1")
                && msg.contains("libnvidia-ml-nonexistent.so.9")
                && msg.contains("last error"),
            "{msg}"
        );
    }
}
