//! How either injection starts: one place that reads every setting and
//! says every problem with them.

use crate::config::{Config, Problem, env_lookup};
use crate::cuda_config::CudaConfig;
use crate::output::NoOutput;
use crate::telemetry::Telemetry;
use crate::windows::Plan;
use gpu_trace_model::Recorder;
use gpu_trace_model::filter::KernelFilter;
use gpu_trace_model::model::DropKind;
use gpu_trace_model::registry::Counters;
use gpu_trace_model::writer::TraceSettings;
use gpu_trace_reader::ServiceLosses;
use std::sync::Arc;

/// Which backend starts: its own settings are read with the common ones,
/// and the other's are refused in one line each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backend {
    /// The CUDA injection (CUPTI).
    Cuda,
    /// The HIP injection (rocprofiler-sdk).
    Hip,
}

/// The settings a backend starts with, read from the environment once.
#[derive(Debug)]
#[non_exhaustive]
pub struct Startup {
    /// What every backend shares.
    pub config: Config,
    /// The CUDA backend's own settings (the defaults for other backends).
    pub cuda: CudaConfig,
    /// When recording runs: paused, a delay, a duration, a duty cycle, the
    /// control socket.
    pub plan: Plan,
    /// Which kernels get per-kernel counters.
    pub filter: KernelFilter,
}

impl Startup {
    /// Reads every setting `backend` uses and says each problem with them
    /// on stderr, in one line (the default is then used); switches verbose
    /// logging as configured, and keeps the standard library's panic
    /// messages off the application's stderr (the guard reports each panic
    /// in one line of ours). `None`, after one line, in a setuid program:
    /// there the settings are the caller's, and nothing is read.
    pub fn from_env(backend: Backend) -> Option<Startup> {
        if let Some(why) = crate::privilege::refusal() {
            crate::warn!("{why}");
            return None;
        }
        let s = Self::from_lookup(backend, env_lookup);
        for p in &s.1 {
            crate::warn!("{p}");
        }
        for line in &s.2 {
            crate::warn!("{line}");
        }
        crate::log::set_verbose(s.0.config.verbose);
        crate::guard::quiet_panics();
        Some(s.0)
    }

    /// As [`Startup::from_env`], through `get`, without saying anything:
    /// the settings, their problems, and the lines refusing the other
    /// backend's settings.
    pub fn from_lookup(
        backend: Backend,
        get: impl Fn(&str) -> Option<String>,
    ) -> (Startup, Vec<Problem>, Vec<String>) {
        let (config, mut problems) = Config::from_lookup(&get);
        let (cuda, p) = match backend {
            Backend::Cuda => CudaConfig::from_lookup(&get),
            Backend::Hip => (CudaConfig::default(), Vec::new()),
        };
        problems.extend(p);
        let (plan, p) = Plan::from_lookup(&get);
        problems.extend(p);
        let (filter, p) = crate::filter::from_lookup(&get);
        problems.extend(p);
        let refused = match backend {
            Backend::Cuda => Vec::new(),
            Backend::Hip => crate::cuda_config::ignored_by_hip(&get),
        };
        let s = Startup {
            config,
            cuda,
            plan,
            filter,
        };
        (s, problems, refused)
    }

    /// What the writer needs, settled (see [`Config::trace_settings`]).
    ///
    /// # Errors
    ///
    /// In file mode, when no file can be written anywhere.
    pub fn trace_settings(&self) -> Result<TraceSettings, NoOutput> {
        self.config.trace_settings()
    }

    /// The telemetry sampler, recording into `recorder` with counters of
    /// `counters` (the writer's); it samples while the writer says
    /// telemetry is recorded (it is the writer's `WriterListener`).
    pub fn telemetry(&self, recorder: Recorder, counters: Arc<Counters>) -> Telemetry {
        Telemetry::new(recorder, counters, self.config.sampler_config())
    }

    /// The line on stderr when the trace lost anything (see
    /// [`crate::exit::report_losses`]).
    pub fn report_losses(&self, drops: &[(DropKind, u64)], service: Option<ServiceLosses>) {
        crate::exit::report_losses(drops, service, &self.config);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn every_setting_is_read_once_and_each_backend_refuses_the_others() {
        let env = lookup(&[
            ("INJECTION_BUFFER_SIZE", "lots"),
            ("INJECTION_CAPTURE_RANGE", "cudaProfilerApi"),
            ("INJECTION_DELAY", "soon"),
            ("INJECTION_KERNEL_SKIP", "x"),
        ]);
        let (cuda, problems, refused) = Startup::from_lookup(Backend::Cuda, &env);
        let vars: Vec<&str> = problems.iter().map(|p| p.var).collect();
        assert_eq!(
            vars,
            [
                "INJECTION_BUFFER_SIZE",
                "INJECTION_DELAY",
                "INJECTION_KERNEL_SKIP"
            ]
        );
        assert!(refused.is_empty());
        assert_ne!(cuda.cuda, CudaConfig::default(), "the capture range");
        let (hip, problems, refused) = Startup::from_lookup(Backend::Hip, &env);
        assert_eq!(problems.len(), 3);
        assert_eq!(hip.cuda, CudaConfig::default());
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(
            refused[0].starts_with("INJECTION_CAPTURE_RANGE=\"cudaProfilerApi\" is ignored"),
            "{refused:?}"
        );
    }
}
