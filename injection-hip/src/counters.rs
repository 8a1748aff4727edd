//! Per-dispatch hardware counters through the dispatch counting service.
//!
//! Counter ids are per agent: the same name has a different id on each GPU, and two GPUs of
//! different architectures offer different sets. So each selection of names becomes a
//! [`Plan`] holding, per GPU agent, a counter configuration and a map from that agent's ids to
//! the tracer's counters. Plans are built when a counters session asks for names (never at
//! start-up: enumerating counters is not free) and kept for the life of the process, because
//! dispatches counted under an older plan may still complete.
//!
//! rocprofiler reports one record per hardware instance of a counter (one per position along
//! its dimensions: XCC, shader engine, CU, ...). For event counts (waves, instructions, cache
//! hits) each is that instance's share of the dispatch, so the dispatch's value is their sum.
//! Two kinds are not shares:
//! - counters the SDK derives with `reduce(..., max|min|avr)`, named `*_max`, `*_min`,
//!   `*_avr`: they normally arrive reduced to one instance; when several remain (a dimension
//!   the reduction kept) the same reduction is applied across them: max, min, mean;
//! - the GRBM block's clock counters (`GRBM_COUNT`, `GRBM_GUI_ACTIVE`, `GRBM_*_BUSY`): every
//!   XCC counts the same wall-clock cycles, which the SDK's own derived metrics combine with
//!   `reduce(GRBM_GUI_ACTIVE,max)`; summing would multiply the busy time by the XCC count.
//!   They take the largest instance.

use crate::records::GpuRecords;
use arc_swap::ArcSwapOption;
use gpu_trace_model::Recorder;
use gpu_trace_model::filter::{KernelFilter, KernelSelector, SessionFilter};
use gpu_trace_model::model::{
    CounterGroup, CounterId, CounterSpec, DropKind, KernelCounters, Unit,
};
use gpu_trace_model::registry::Counters;
use rocprofiler::{
    Agent, CounterAggregate, CounterConfig, DispatchCountingRequest, DispatchCounts, Runtime,
};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};

/// Collected when a counters session names none.
pub(crate) const DEFAULT_COUNTERS: [&str; 4] = [
    "GRBM_GUI_ACTIVE",
    "SQ_WAVES",
    "SQ_INSTS_VALU",
    "SQ_INSTS_SALU",
];

/// How the instance records of one counter become the dispatch's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    /// Sum (instances are shares of the total).
    Sum,
    /// Largest instance (`*_max`, GRBM clock counters).
    Max,
    /// Smallest instance (`*_min`).
    Min,
    /// Mean of the instances (`*_avr`, `*_avg`, `*_mean`).
    Mean,
}

impl Rule {
    /// The rule a counter's name implies.
    pub(crate) fn for_name(name: &str) -> Rule {
        let lower = name.to_ascii_lowercase();
        if lower.ends_with("_max") || (lower.starts_with("grbm_") && !lower.ends_with("_sum")) {
            Rule::Max
        } else if lower.ends_with("_min") {
            Rule::Min
        } else if lower.ends_with("_avr") || lower.ends_with("_avg") || lower.ends_with("_mean") {
            Rule::Mean
        } else {
            Rule::Sum
        }
    }

    /// Applies the rule to the instances' sum/min/max/count.
    pub(crate) fn apply(self, a: &CounterAggregate) -> f64 {
        match self {
            Rule::Sum => a.sum,
            Rule::Max => a.max,
            Rule::Min => a.min,
            Rule::Mean => a.sum / a.count.max(1) as f64,
        }
    }
}

/// What one agent offers: counter name → (id, description).
type Catalog = FxHashMap<String, (rocprofiler::CounterId, String)>;

struct AgentPlan {
    gpu_id: u32,
    config: CounterConfig,
    /// This agent's counter id → the tracer's counter and its rule.
    ids: FxHashMap<u64, (CounterId, Rule)>,
}

/// Counters for one selection of names.
struct Plan {
    generation: u64,
    names: Vec<String>,
    agents: FxHashMap<u64, AgentPlan>,
}

/// Counting state; one per process.
pub(crate) struct Counting {
    rt: Runtime,
    recorder: Recorder,
    register: Arc<Counters>,
    gpus: Vec<Agent>,
    catalogs: Mutex<Option<FxHashMap<u64, Catalog>>>,
    current: ArcSwapOption<Plan>,
    plans: RwLock<Vec<Arc<Plan>>>,
    reported: Mutex<FxHashSet<String>>,
    /// Which dispatches are counted (kernels known by kernel id).
    selector: KernelSelector<u64>,
}

impl Counting {
    pub(crate) fn new(
        rt: Runtime,
        recorder: Recorder,
        register: Arc<Counters>,
        agents: &[Agent],
        filter: KernelFilter,
    ) -> Self {
        Self {
            selector: KernelSelector::new(filter),
            rt,
            recorder,
            register,
            gpus: agents.iter().filter(|a| a.is_gpu()).cloned().collect(),
            catalogs: Mutex::new(None),
            current: ArcSwapOption::const_empty(),
            plans: RwLock::new(Vec::new()),
            reported: Mutex::new(FxHashSet::default()),
        }
    }

    /// Each agent's counters, enumerated on first use.
    fn with_catalogs<R>(&self, f: impl FnOnce(&FxHashMap<u64, Catalog>) -> R) -> R {
        let mut c = self.catalogs.lock().unwrap_or_else(|e| e.into_inner());
        let catalogs = c.get_or_insert_with(|| {
            self.gpus
                .iter()
                .map(|a| (a.id.0, self.catalog(a)))
                .collect()
        });
        f(catalogs)
    }

    fn catalog(&self, a: &Agent) -> Catalog {
        let ids = match self.rt.supported_counters(a.id) {
            Ok(ids) => ids,
            Err(e) => {
                gpu_trace_model::warn!(
                    "cannot list the counters of GPU {} ({}): {e}; it is not counted",
                    a.logical_node_type_id,
                    a.name
                );
                return Catalog::default();
            }
        };
        ids.into_iter()
            .filter_map(|id| {
                let info = self.rt.counter_info(id).ok()?;
                Some((info.name, (id, info.description)))
            })
            .collect()
    }

    /// Reports a problem with a counter name once per process.
    fn report_once(&self, key: String, msg: std::fmt::Arguments<'_>) {
        let first = self
            .reported
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key);
        if first {
            gpu_trace_model::warn!("{msg}");
        }
    }

    /// Selects the counters to collect (empty: the defaults). Names no GPU offers are reported
    /// one by one; the others are kept. Returns whether anything can be counted.
    pub(crate) fn select(&self, requested: &[String]) -> bool {
        let defaults = requested.is_empty();
        let names: Vec<String> = if defaults {
            DEFAULT_COUNTERS.iter().map(|s| s.to_string()).collect()
        } else {
            requested.to_vec()
        };
        if let Some(p) = self.current.load_full()
            && p.names == names
        {
            return !p.agents.is_empty();
        }
        let generation = self.plans.read().unwrap_or_else(|e| e.into_inner()).len() as u64;
        let plan = self.with_catalogs(|catalogs| {
            let mut agents = FxHashMap::default();
            for name in &names {
                let offered = self
                    .gpus
                    .iter()
                    .filter(|a| catalogs.get(&a.id.0).is_some_and(|c| c.contains_key(name)))
                    .count();
                if offered > 0 && offered < self.gpus.len() {
                    gpu_trace_model::verbose!(
                        "counter {} is offered by {offered} of {} GPUs; the others do not count it",
                        gpu_trace_model::log::quoted(name),
                        self.gpus.len()
                    );
                }
                if offered == 0 && !defaults {
                    let archs: Vec<&str> = self.gpus.iter().map(|a| a.name.as_str()).collect();
                    self.report_once(
                        name.clone(),
                        format_args!(
                            "counter {} is not offered by any GPU here ({}); it is skipped, the other counters are collected",
                            gpu_trace_model::log::quoted(name),
                            archs.join(", ")
                        ),
                    );
                }
            }
            for a in &self.gpus {
                let (Some(catalog), Some(gpu_id)) = (
                    catalogs.get(&a.id.0),
                    u32::try_from(a.logical_node_type_id).ok(),
                ) else {
                    continue;
                };
                let mut ids = FxHashMap::default();
                let mut list = Vec::new();
                for name in &names {
                    let Some((id, description)) = catalog.get(name) else {
                        continue;
                    };
                    let mut spec = CounterSpec::new(name.clone(), Unit::None, CounterGroup::Compute);
                    spec.description = description.clone();
                    let core = self.register.register(spec);
                    ids.insert(id.0, (core, Rule::for_name(name)));
                    list.push(*id);
                }
                if list.is_empty() {
                    continue;
                }
                match self.rt.create_counter_config(a.id, &list) {
                    Ok(config) => {
                        agents.insert(
                            a.id.0,
                            AgentPlan {
                                gpu_id,
                                config,
                                ids,
                            },
                        );
                    }
                    Err(e) => self.report_once(
                        format!("config:{}:{}", a.id.0, names.join(",")),
                        format_args!(
                            "the counters asked for cannot be collected together on GPU {gpu_id} ({}): {e}; it is not counted",
                            a.name
                        ),
                    ),
                }
            }
            Arc::new(Plan {
                generation,
                names,
                agents,
            })
        });
        let any = !plan.agents.is_empty();
        self.plans
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(plan.clone());
        self.current.store(Some(plan));
        any
    }

    /// A counters session starts with its own kernel filter (`None`: the
    /// environment's).
    pub(crate) fn set_filter(&self, selection: Option<&SessionFilter>) {
        self.selector.set(selection);
        let current = self.selector.current();
        if !current.filter().is_everything() {
            gpu_trace_model::verbose!("counters for {}", current.filter().describe());
        }
    }

    /// Whether the filter in force looks at roctx ranges (the roctx
    /// callbacks must then run).
    pub(crate) fn needs_ranges(&self) -> bool {
        self.selector.current().filter().has_ranges()
    }

    /// On the launching thread: count this dispatch with its agent's configuration, if the
    /// filter picks it (name, then the thread's roctx ranges, then the launch windows).
    pub(crate) fn on_dispatch(&self, req: &mut DispatchCountingRequest<'_>, gpu: &GpuRecords) {
        let Some(plan) = self.current.load_full() else {
            return;
        };
        let Some(d) = req.dispatch() else { return };
        let sel = self.selector.current();
        let chosen = !sel.filter().is_done()
            && sel.choose(
                || d.kernel_id,
                |&id: &u64| match gpu.kernel_names(id) {
                    Some((m, d)) => (m.to_string(), (m != d).then(|| d.to_string())),
                    None => (format!("kernel#{id}"), None),
                },
            );
        if !chosen {
            return;
        }
        if gpu_trace_model::log::verbose() && !sel.filter().is_everything() {
            let name = gpu.kernel_names(d.kernel_id).map(|(m, _)| m);
            gpu_trace_model::log::line(format_args!(
                "counters: the filter picks {} (correlation id {})",
                name.as_deref().unwrap_or("a kernel"),
                req.correlation_id().internal
            ));
        }
        if let Some(a) = plan.agents.get(&d.agent_id.0) {
            req.set_config(&a.config);
            req.set_user_data(plan.generation);
        }
    }

    /// When a counted dispatch completed: its instance records, aggregated per counter.
    pub(crate) fn on_counts(&self, counts: &DispatchCounts<'_>, gpu: &GpuRecords) {
        let plan = {
            let plans = self.plans.read().unwrap_or_else(|e| e.into_inner());
            plans.get(counts.user_data() as usize).cloned()
        };
        let (Some(plan), Some(d)) = (plan, counts.dispatch()) else {
            self.recorder.dropped(DropKind::Counters, 1);
            return;
        };
        let Some(agent) = plan.agents.get(&d.agent_id.0) else {
            self.recorder.dropped(DropKind::Counters, 1);
            return;
        };
        let (start, end) = (counts.start_ns(), counts.end_ns());
        if start == 0 || end < start {
            self.recorder.dropped(DropKind::Counters, 1);
            return;
        }
        let aggregates = match counts.aggregate() {
            Ok(a) => a,
            Err(e) => {
                gpu_trace_model::warn_once!("counter records could not be read: {e}");
                self.recorder.dropped(DropKind::Counters, 1);
                return;
            }
        };
        let values = values(&aggregates, &agent.ids);
        if values.is_empty() {
            return;
        }
        let device = gpu
            .agent(d.agent_id.0)
            .and_then(|a| a.gpu_id)
            .unwrap_or(agent.gpu_id);
        self.recorder.kernel_counters(KernelCounters::new(
            device,
            counts.correlation_id().internal,
            start,
            end,
            values.into(),
        ));
    }
}

/// The dispatch's value of each counter of the plan, by the counter's rule.
fn values(
    aggregates: &BTreeMap<rocprofiler::CounterId, CounterAggregate>,
    ids: &FxHashMap<u64, (CounterId, Rule)>,
) -> Vec<(CounterId, f64)> {
    let mut v: Vec<(CounterId, f64)> = aggregates
        .iter()
        .filter_map(|(id, a)| ids.get(&id.0).map(|(c, rule)| (*c, rule.apply(a))))
        .collect();
    v.sort_by_key(|(c, _)| *c);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agg(values: &[f64]) -> CounterAggregate {
        CounterAggregate {
            sum: values.iter().sum(),
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            count: values.len(),
        }
    }

    #[test]
    fn rules_follow_the_name() {
        assert_eq!(Rule::for_name("SQ_WAVES"), Rule::Sum);
        assert_eq!(Rule::for_name("TA_BUSY_max"), Rule::Max);
        assert_eq!(Rule::for_name("TA_BUSY_min"), Rule::Min);
        assert_eq!(Rule::for_name("TA_BUSY_avr"), Rule::Mean);
        assert_eq!(Rule::for_name("TCC_HIT_sum"), Rule::Sum);
        assert_eq!(Rule::for_name("GRBM_GUI_ACTIVE"), Rule::Max);
        assert_eq!(Rule::for_name("GRBM_COUNT"), Rule::Max);
        let a = agg(&[4.0, 9.0, 2.0, 5.0]);
        assert_eq!(Rule::Sum.apply(&a), 20.0);
        assert_eq!(Rule::Max.apply(&a), 9.0);
        assert_eq!(Rule::Min.apply(&a), 2.0);
        assert_eq!(Rule::Mean.apply(&a), 5.0);
    }

    #[test]
    fn values_are_mapped_through_the_agents_ids() {
        // The same counter has id 7 on this agent; id 9 is not in the plan.
        let mut ids = FxHashMap::default();
        ids.insert(7, (CounterId(2), Rule::Max));
        ids.insert(8, (CounterId(1), Rule::Sum));
        let mut aggs = BTreeMap::new();
        aggs.insert(rocprofiler::CounterId(7), agg(&[1.0, 3.0]));
        aggs.insert(rocprofiler::CounterId(8), agg(&[1.0, 3.0]));
        aggs.insert(rocprofiler::CounterId(9), agg(&[5.0]));
        assert_eq!(
            values(&aggs, &ids),
            vec![(CounterId(1), 4.0), (CounterId(2), 3.0)]
        );
    }
}
