//! `gpu-trace metrics`: the per-kernel metrics a GPU offers.

use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub(crate) struct MetricsArgs {
    /// The chip (e.g. GH100, AD102); default: that of CUDA device 0.
    #[arg(long)]
    pub(crate) chip: Option<String>,
    /// Only metrics whose name or description contains this text.
    pub(crate) filter: Option<String>,
}

pub(crate) fn metrics_cmd(a: MetricsArgs) -> ExitCode {
    let cupti = match cupti::Cupti::load() {
        Ok(c) => c,
        Err(e) => {
            // One line, whatever GPU_TRACE_CUPTI_PATH holds.
            gpu_trace_model::warn!("CUPTI is not usable ({e}); cannot list metrics");
            return ExitCode::FAILURE;
        }
    };
    let chip = match a.chip {
        Some(c) => c,
        None => match cupti::profiler::Profiler::initialize(&cupti).and_then(|p| p.chip_name(0)) {
            Ok(c) => c,
            Err(e) => {
                eprintln!(
                    "gpu-trace: cannot read the chip of CUDA device 0 ({e}); name it with --chip (e.g. GH100)"
                );
                return ExitCode::FAILURE;
            }
        },
    };
    let list =
        match cupti::profiler::MetricCatalog::new(&cupti, &chip).and_then(|c| c.base_metrics()) {
            Ok(l) => l,
            Err(e) => {
                eprintln!(
                    "gpu-trace: cannot list the metrics of chip {}: {e}",
                    gpu_trace_model::log::quoted(&chip)
                );
                return ExitCode::FAILURE;
            }
        };
    let needle = a.filter.as_deref().map(str::to_ascii_lowercase);
    let shown: Vec<_> = list
        .iter()
        .filter(|m| {
            needle.as_deref().is_none_or(|n| {
                m.name.to_ascii_lowercase().contains(n)
                    || m.description.to_ascii_lowercase().contains(n)
            })
        })
        .collect();
    println!(
        "{} metrics of {chip} (base names: add a rollup such as .sum, .avg, .max, .pct_of_peak_sustained_elapsed)",
        shown.len()
    );
    let width = shown.iter().map(|m| m.name.len()).max().unwrap_or(0);
    for m in shown {
        let kind = match m.kind {
            cupti::profiler::MetricKind::Counter => "counter",
            cupti::profiler::MetricKind::Ratio => "ratio",
            cupti::profiler::MetricKind::Throughput => "throughput",
            _ => "other",
        };
        println!(
            "{:width$}  {:10}  {:8}  {}",
            m.name, kind, m.dim_unit, m.description
        );
    }
    ExitCode::SUCCESS
}
