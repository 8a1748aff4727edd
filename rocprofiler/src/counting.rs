//! Counters and the dispatch counting service.

use std::collections::BTreeMap;
use std::ffi::c_void;

use rocprofiler_sys as sys;

use crate::guard::Slot;
use crate::{AgentId, AsyncCorrelationId, CounterId, CounterRecord, DispatchInfo, Result, Runtime};

/// Description of a counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterInfo {
    /// Id.
    pub id: CounterId,
    /// Name, e.g. `SQ_WAVES`.
    pub name: String,
    /// Description.
    pub description: String,
    /// Hardware block.
    pub block: String,
    /// Expression of a derived counter.
    pub expression: String,
    /// Constant value.
    pub is_constant: bool,
    /// Derived from other counters.
    pub is_derived: bool,
}

/// A dimension of a counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterDimension {
    /// Id for `Runtime::record_dimension_position`.
    pub id: u64,
    /// Name (XCC, SE, ...).
    pub name: String,
    /// Instances along it.
    pub instances: usize,
}

/// A counter configuration for one agent. Dropping it destroys it.
pub struct CounterConfig {
    pub(crate) rt: Runtime,
    pub(crate) id: sys::rocprofiler_counter_config_id_t,
    pub(crate) agent: AgentId,
}

impl std::fmt::Debug for CounterConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CounterConfig")
            .field("id", &self.id.handle)
            .field("agent", &self.agent)
            .finish()
    }
}

impl CounterConfig {
    /// Agent it is for.
    pub fn agent(&self) -> AgentId {
        self.agent
    }
    /// The raw id.
    pub fn raw(&self) -> sys::rocprofiler_counter_config_id_t {
        self.id
    }
}

impl Drop for CounterConfig {
    fn drop(&mut self) {
        // SAFETY: plain value argument; errors are ignored in Drop.
        let _ = unsafe { self.rt.api().rocprofiler_destroy_counter_config(self.id) };
    }
}

/// The dispatch-counting callback's question: which counters for this dispatch?
pub struct DispatchCountingRequest<'a> {
    data: &'a sys::rocprofiler_dispatch_counting_service_data_t,
    config: *mut sys::rocprofiler_counter_config_id_t,
    user_data: *mut sys::rocprofiler_user_data_t,
}

impl DispatchCountingRequest<'_> {
    /// The dispatch (`None` if the SDK's struct is too short).
    pub fn dispatch(&self) -> Option<DispatchInfo> {
        DispatchInfo::from_raw(&self.data.dispatch_info)
    }
    /// Join key with the launching API call.
    pub fn correlation_id(&self) -> AsyncCorrelationId {
        self.data.correlation_id.into()
    }
    /// Count this dispatch with `config` (which must be for the dispatch's agent). Not calling
    /// this leaves the dispatch uninstrumented.
    pub fn set_config(&mut self, config: &CounterConfig) {
        // SAFETY: out-pointer valid during the callback (checked non-null).
        if let Some(c) = unsafe { self.config.as_mut() } {
            *c = config.id;
        }
    }
    /// Data handed back with the records.
    pub fn set_user_data(&mut self, value: u64) {
        // SAFETY: as above.
        if let Some(u) = unsafe { self.user_data.as_mut() } {
            u.value = value;
        }
    }
}

/// Min/max/sum over the instance records of one counter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CounterAggregate {
    /// Sum (the per-dispatch total for most counters).
    pub sum: f64,
    /// Smallest instance value.
    pub min: f64,
    /// Largest instance value.
    pub max: f64,
    /// Instance records.
    pub count: usize,
}

/// A counter record with its counter resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CounterSample {
    /// Counter (from `rocprofiler_query_record_counter_id`).
    pub counter_id: CounterId,
    /// The record.
    pub record: CounterRecord,
}

/// Counter records of one completed dispatch.
pub struct DispatchCounts<'a> {
    data: &'a sys::rocprofiler_dispatch_counting_service_data_t,
    records: &'a [sys::rocprofiler_counter_record_t],
    user_data: u64,
    rt: &'a Runtime,
}

impl DispatchCounts<'_> {
    /// The dispatch.
    pub fn dispatch(&self) -> Option<DispatchInfo> {
        DispatchInfo::from_raw(&self.data.dispatch_info)
    }
    /// Join key with the launching API call.
    pub fn correlation_id(&self) -> AsyncCorrelationId {
        self.data.correlation_id.into()
    }
    /// Start, ns.
    pub fn start_ns(&self) -> u64 {
        self.data.start_timestamp
    }
    /// End, ns.
    pub fn end_ns(&self) -> u64 {
        self.data.end_timestamp
    }
    /// What the dispatch callback stored.
    pub fn user_data(&self) -> u64 {
        self.user_data
    }
    /// Raw instance records.
    pub fn records(&self) -> impl Iterator<Item = CounterRecord> + '_ {
        self.records.iter().map(CounterRecord::from)
    }
    /// Instance records with their counter resolved through the SDK.
    ///
    /// # Errors
    ///
    /// [`Runtime::record_counter_id`]'s error for the first record whose counter the SDK cannot
    /// name.
    pub fn samples(&self) -> Result<Vec<CounterSample>> {
        self.records()
            .map(|record| {
                Ok(CounterSample {
                    counter_id: self.rt.record_counter_id(record.instance_id)?,
                    record,
                })
            })
            .collect()
    }
    /// Sum/min/max per counter over its instance records.
    ///
    /// # Errors
    ///
    /// [`DispatchCounts::samples`]' error.
    pub fn aggregate(&self) -> Result<BTreeMap<CounterId, CounterAggregate>> {
        let mut out: BTreeMap<CounterId, CounterAggregate> = BTreeMap::new();
        for s in self.samples()? {
            let v = s.record.value;
            out.entry(s.counter_id)
                .and_modify(|a| {
                    a.sum += v;
                    a.min = a.min.min(v);
                    a.max = a.max.max(v);
                    a.count += 1;
                })
                .or_insert(CounterAggregate {
                    sum: v,
                    min: v,
                    max: v,
                    count: 1,
                });
        }
        Ok(out)
    }
}

pub(crate) unsafe extern "C" fn dispatch_trampoline<D>(
    dispatch_data: sys::rocprofiler_dispatch_counting_service_data_t,
    config: *mut sys::rocprofiler_counter_config_id_t,
    user_data: *mut sys::rocprofiler_user_data_t,
    data: *mut c_void,
) where
    D: Fn(&mut DispatchCountingRequest<'_>) + Send + Sync + 'static,
{
    // SAFETY: `data` is the `Slot<D>` registered with this trampoline; never freed.
    let slot = unsafe { &*data.cast::<Slot<D>>() };
    // On panic the config stays as the SDK gave it (0: not counted).
    slot.run(|| {
        let mut req = DispatchCountingRequest {
            data: &dispatch_data,
            config,
            user_data,
        };
        (slot.f)(&mut req)
    });
}

pub(crate) unsafe extern "C" fn record_trampoline<R>(
    dispatch_data: sys::rocprofiler_dispatch_counting_service_data_t,
    records: *mut sys::rocprofiler_counter_record_t,
    count: usize,
    user_data: sys::rocprofiler_user_data_t,
    data: *mut c_void,
) where
    R: Fn(&DispatchCounts<'_>) + Send + Sync + 'static,
{
    // SAFETY: `data` is the `Slot<R>` registered with this trampoline; never freed.
    let slot = unsafe { &*data.cast::<Slot<R>>() };
    slot.run(|| {
        let records = if records.is_null() || count == 0 {
            &[][..]
        } else {
            // SAFETY: the SDK passes `count` records valid during the callback.
            unsafe { std::slice::from_raw_parts(records, count) }
        };
        // SAFETY: both union members are 8 plain bytes.
        let user_data = unsafe { user_data.value };
        let counts = DispatchCounts {
            data: &dispatch_data,
            records,
            user_data,
            rt: &slot.rt,
        };
        (slot.f)(&counts)
    });
}
