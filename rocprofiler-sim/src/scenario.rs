//! The scripted HIP program: agents, kernels and host threads doing HIP/roctx calls.
//!
//! Scenarios are JSON (see `scenarios/default.json`, [`Scenario::default_scenario`]). Every op
//! names its device by HIP ordinal (index among the GPU agents).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// A whole scripted program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Agents, CPUs and GPUs, in SDK order.
    pub agents: Vec<AgentSpec>,
    /// Kernels in the program's code object (loaded on every GPU).
    pub kernels: Vec<KernelSpec>,
    /// Host threads; they run concurrently.
    pub threads: Vec<ThreadSpec>,
}

/// CPU or GPU agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// `cpu` or `gpu`.
    pub kind: AgentKind,
    /// GPU: ISA name (`gfx90a`); CPU: model.
    pub name: String,
    /// Marketing name.
    #[serde(default)]
    pub product_name: String,
    /// e.g. 90010.
    #[serde(default)]
    pub gfx_target_version: u32,
    /// Compute units.
    #[serde(default)]
    pub cu_count: u32,
    /// Hardware counters (GPU).
    #[serde(default)]
    pub counters: Vec<CounterSpec>,
}

/// Agent kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentKind {
    /// CPU.
    Cpu,
    /// GPU.
    Gpu,
}

/// A hardware counter of a GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CounterSpec {
    /// Name, e.g. `SQ_WAVES`.
    pub name: String,
    /// Block.
    #[serde(default)]
    pub block: String,
    /// Description.
    #[serde(default)]
    pub description: String,
    /// Hardware instances (one record each per dispatch).
    pub instances: usize,
}

/// A kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelSpec {
    /// Short name used by launch ops.
    pub name: String,
    /// Mangled symbol name reported by the SDK.
    pub symbol: String,
    /// Scalar registers.
    pub sgpr: u32,
    /// Architected vector registers.
    pub vgpr: u32,
    /// Accumulation vector registers.
    #[serde(default)]
    pub accum_vgpr: u32,
    /// Static LDS bytes per work-group.
    #[serde(default)]
    pub lds: u32,
    /// Static scratch bytes per work-item.
    #[serde(default)]
    pub scratch: u32,
    /// Kernel-argument bytes.
    #[serde(default)]
    pub kernarg_size: u32,
    /// Simulated GPU time.
    pub duration_us: u64,
}

/// One host thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadSpec {
    /// Ops in order.
    pub ops: Vec<Op>,
}

/// Memory copy direction as HIP's `hipMemcpyKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum CopyKind {
    /// Host to device.
    H2D,
    /// Device to host.
    D2H,
    /// Device to device (same GPU).
    D2D,
}

/// One scripted call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Op {
    /// `hipMalloc`.
    Malloc {
        /// Bytes.
        bytes: u64,
        /// HIP device.
        #[serde(default)]
        device: usize,
    },
    /// `hipFree`.
    Free {
        /// HIP device.
        #[serde(default)]
        device: usize,
    },
    /// `hipMemcpy` (or `hipMemcpyAsync` when `stream` is set).
    Memcpy {
        /// Bytes.
        bytes: u64,
        /// Direction.
        kind: CopyKind,
        /// HIP device.
        #[serde(default)]
        device: usize,
        /// Async on this stream (`hipMemcpyAsync`); synchronous `hipMemcpy` when absent.
        #[serde(default)]
        stream: Option<u32>,
        /// Simulated copy time.
        #[serde(default = "default_copy_us")]
        duration_us: u64,
    },
    /// `hipLaunchKernel`.
    Launch {
        /// Kernel short name.
        kernel: String,
        /// Grid in blocks, as passed to HIP.
        grid: [u32; 3],
        /// Block size.
        block: [u32; 3],
        /// Dynamic LDS bytes.
        #[serde(default)]
        shared_mem: u32,
        /// HIP device.
        #[serde(default)]
        device: usize,
        /// Stream (0 = null stream).
        #[serde(default)]
        stream: u32,
        /// Per counter name, one value per hardware instance (missing counters read 0).
        #[serde(default)]
        counters: BTreeMap<String, Vec<f64>>,
    },
    /// `hipStreamSynchronize`.
    StreamSync {
        /// HIP device.
        #[serde(default)]
        device: usize,
        /// Stream.
        stream: u32,
    },
    /// `hipDeviceSynchronize`.
    DeviceSync {
        /// HIP device.
        #[serde(default)]
        device: usize,
    },
    /// `hipEventRecord` of a new event (remembered under `event` on this thread) on `stream`.
    EventRecord {
        /// Name to synchronise on it by.
        event: String,
        /// HIP device.
        #[serde(default)]
        device: usize,
        /// Stream (0 = null stream).
        #[serde(default)]
        stream: u32,
    },
    /// `hipEventSynchronize` of an event recorded earlier on this thread: waits for the work
    /// submitted to its device before the record.
    EventSync {
        /// Name given at record.
        event: String,
    },
    /// `roctxMarkA`.
    Mark {
        /// Message.
        message: String,
    },
    /// `roctxRangePushA`.
    RangePush {
        /// Message.
        message: String,
    },
    /// `roctxRangePop`.
    RangePop,
    /// `roctxRangeStartA`; the id is remembered under `slot` on this thread.
    RangeStart {
        /// Message.
        message: String,
        /// Name to stop it by.
        slot: String,
    },
    /// `roctxRangeStop` of a range started on this thread.
    RangeStop {
        /// Name given at start.
        slot: String,
    },
    /// Host work.
    SleepUs {
        /// Microseconds.
        us: u64,
    },
    /// Writes this process's pid into `path`, for a test that acts on the
    /// running program (its control socket) at this point.
    Announce {
        /// File to write.
        path: String,
    },
    /// Waits until `path` exists (at most `timeout_ms`), for a test that
    /// acts on the running program in between.
    WaitFile {
        /// File to wait for.
        path: String,
        /// Longest wait, ms.
        timeout_ms: u64,
    },
    /// Waits (at most `timeout_ms`) until the tool records kernel dispatches
    /// and, with `counting`, also counts them, and with `markers` also
    /// traces roctx calls: a program that a running `traced` session traces
    /// cannot know when the session's data sources start (the service
    /// starts them one after another), but a test can wait for it here
    /// instead of guessing a delay.
    WaitTraced {
        /// Also wait for a dispatch-counting service.
        #[serde(default)]
        counting: bool,
        /// Also wait for a roctx (marker API) callback service.
        #[serde(default)]
        markers: bool,
        /// Longest wait, ms.
        timeout_ms: u64,
    },
    /// A call of the gpu-trace C API (`gpu_trace.h`) that the tool library exports:
    /// `gpu_trace_<call>` (`start`, `stop`, `window_begin`, `window_end`, `is_active`,
    /// `range_push`, `range_pop`), with `name` for the two that take one (null without it).
    /// What it returned is appended to `Report::gpu_trace_calls`.
    GpuTrace {
        /// The function, without its `gpu_trace_` prefix.
        call: String,
        /// The name argument.
        #[serde(default)]
        name: Option<String>,
    },
    /// The ops, `times` times.
    Repeat {
        /// Count.
        times: u32,
        /// Ops.
        ops: Vec<Op>,
    },
}

fn default_copy_us() -> u64 {
    5
}

/// What a tool that traces everything must see for a scenario.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Expected {
    /// HIP runtime API calls by name (one ENTER and one EXIT each).
    pub hip_calls: BTreeMap<String, u64>,
    /// roctx calls by name.
    pub marker_calls: BTreeMap<String, u64>,
    /// Messages of mark/push/start.
    pub marker_messages: BTreeSet<String>,
    /// Kernel dispatch records.
    pub kernel_dispatches: u64,
    /// Kernel dispatches by kernel symbol.
    pub dispatches_by_symbol: BTreeMap<String, u64>,
    /// Memory copy records by direction (`HOST_TO_DEVICE`, ...).
    pub memory_copies: BTreeMap<String, u64>,
    /// Bytes copied.
    pub memory_copy_bytes: u64,
    /// Code objects loaded (one per GPU).
    pub code_objects: u64,
    /// Kernel symbols registered (kernels × GPUs).
    pub kernel_symbols: u64,
    /// Per counter name: instance records and the sum of their values over all dispatches,
    /// assuming every counter is collected for every dispatch.
    pub counter_records: BTreeMap<String, u64>,
    /// See `counter_records`.
    pub counter_sums: BTreeMap<String, f64>,
    /// Host threads.
    pub threads: u64,
}

impl Scenario {
    /// The built-in scenario (`scenarios/default.json`).
    pub fn default_scenario() -> Scenario {
        Self::from_json(include_str!("../scenarios/default.json"))
            .expect("default scenario is valid")
    }

    /// Parses and validates a scenario.
    pub fn from_json(text: &str) -> Result<Scenario, String> {
        let s: Scenario = serde_json::from_str(text).map_err(|e| e.to_string())?;
        s.validate()?;
        Ok(s)
    }

    /// GPU agents in HIP ordinal order.
    pub fn gpus(&self) -> Vec<&AgentSpec> {
        self.agents
            .iter()
            .filter(|a| a.kind == AgentKind::Gpu)
            .collect()
    }

    /// Checks references (kernels, devices, counters, range slots).
    pub fn validate(&self) -> Result<(), String> {
        let gpus = self.gpus();
        if gpus.is_empty() {
            return Err("a scenario needs at least one GPU agent".into());
        }
        if !self.agents.iter().any(|a| a.kind == AgentKind::Cpu) {
            return Err("a scenario needs a CPU agent".into());
        }
        fn walk(
            s: &Scenario,
            gpus: &[&AgentSpec],
            ops: &[Op],
            slots: &mut BTreeSet<String>,
        ) -> Result<(), String> {
            for op in ops {
                let dev = match op {
                    Op::Malloc { device, .. }
                    | Op::Free { device }
                    | Op::Memcpy { device, .. }
                    | Op::StreamSync { device, .. }
                    | Op::DeviceSync { device }
                    | Op::EventRecord { device, .. }
                    | Op::Launch { device, .. } => Some(*device),
                    _ => None,
                };
                if let Some(d) = dev.filter(|d| *d >= gpus.len()) {
                    return Err(format!("device {d} does not exist"));
                }
                match op {
                    Op::Launch {
                        kernel,
                        counters,
                        device,
                        block,
                        ..
                    } => {
                        if !s.kernels.iter().any(|k| &k.name == kernel) {
                            return Err(format!("unknown kernel {kernel}"));
                        }
                        if block.contains(&0) {
                            return Err("block size 0".into());
                        }
                        for (name, values) in counters {
                            let Some(c) = gpus[*device].counters.iter().find(|c| &c.name == name)
                            else {
                                return Err(format!("device {device} has no counter {name}"));
                            };
                            if values.len() != c.instances {
                                return Err(format!(
                                    "{name}: {} values for {} instances",
                                    values.len(),
                                    c.instances
                                ));
                            }
                        }
                    }
                    Op::RangeStart { slot, .. } => {
                        slots.insert(slot.clone());
                    }
                    Op::RangeStop { slot } if !slots.contains(slot) => {
                        return Err(format!("range slot {slot} stopped before it started"));
                    }
                    Op::EventRecord { event, .. } => {
                        slots.insert(format!("event:{event}"));
                    }
                    Op::EventSync { event } if !slots.contains(&format!("event:{event}")) => {
                        return Err(format!("event {event} synchronised before it was recorded"));
                    }
                    Op::Repeat { ops, .. } => walk(s, gpus, ops, slots)?,
                    _ => {}
                }
            }
            Ok(())
        }
        for t in &self.threads {
            walk(self, &gpus, &t.ops, &mut BTreeSet::new())?;
        }
        Ok(())
    }

    /// What a tool that traces everything (and counts every counter) must receive.
    pub fn expected(&self) -> Expected {
        let gpus = self.gpus();
        let mut e = Expected {
            code_objects: gpus.len() as u64,
            kernel_symbols: (gpus.len() * self.kernels.len()) as u64,
            threads: self.threads.len() as u64,
            ..Default::default()
        };
        fn bump(m: &mut BTreeMap<String, u64>, k: &str, n: u64) {
            *m.entry(k.to_owned()).or_default() += n;
        }
        fn walk(s: &Scenario, gpus: &[&AgentSpec], ops: &[Op], times: u64, e: &mut Expected) {
            for op in ops {
                match op {
                    Op::Malloc { .. } => bump(&mut e.hip_calls, "hipMalloc", times),
                    Op::Free { .. } => bump(&mut e.hip_calls, "hipFree", times),
                    Op::Memcpy {
                        bytes,
                        kind,
                        stream,
                        ..
                    } => {
                        bump(
                            &mut e.hip_calls,
                            if stream.is_some() {
                                "hipMemcpyAsync"
                            } else {
                                "hipMemcpy"
                            },
                            times,
                        );
                        let dir = match kind {
                            CopyKind::H2D => "HOST_TO_DEVICE",
                            CopyKind::D2H => "DEVICE_TO_HOST",
                            CopyKind::D2D => "DEVICE_TO_DEVICE",
                        };
                        bump(&mut e.memory_copies, dir, times);
                        e.memory_copy_bytes += bytes * times;
                    }
                    Op::Launch {
                        kernel,
                        device,
                        counters,
                        ..
                    } => {
                        bump(&mut e.hip_calls, "hipLaunchKernel", times);
                        e.kernel_dispatches += times;
                        let k = s
                            .kernels
                            .iter()
                            .find(|k| &k.name == kernel)
                            .expect("validated");
                        bump(&mut e.dispatches_by_symbol, &k.symbol, times);
                        for c in &gpus[*device].counters {
                            bump(&mut e.counter_records, &c.name, c.instances as u64 * times);
                            let sum: f64 =
                                counters.get(&c.name).map(|v| v.iter().sum()).unwrap_or(0.0);
                            *e.counter_sums.entry(c.name.clone()).or_default() +=
                                sum * times as f64;
                        }
                    }
                    Op::StreamSync { .. } => bump(&mut e.hip_calls, "hipStreamSynchronize", times),
                    Op::DeviceSync { .. } => bump(&mut e.hip_calls, "hipDeviceSynchronize", times),
                    Op::EventRecord { .. } => bump(&mut e.hip_calls, "hipEventRecord", times),
                    Op::EventSync { .. } => bump(&mut e.hip_calls, "hipEventSynchronize", times),
                    Op::Mark { message } => {
                        bump(&mut e.marker_calls, "roctxMarkA", times);
                        e.marker_messages.insert(message.clone());
                    }
                    Op::RangePush { message } => {
                        bump(&mut e.marker_calls, "roctxRangePushA", times);
                        e.marker_messages.insert(message.clone());
                    }
                    Op::RangePop => bump(&mut e.marker_calls, "roctxRangePop", times),
                    Op::RangeStart { message, .. } => {
                        bump(&mut e.marker_calls, "roctxRangeStartA", times);
                        e.marker_messages.insert(message.clone());
                    }
                    Op::RangeStop { .. } => bump(&mut e.marker_calls, "roctxRangeStop", times),
                    Op::SleepUs { .. }
                    | Op::Announce { .. }
                    | Op::WaitFile { .. }
                    | Op::WaitTraced { .. }
                    | Op::GpuTrace { .. } => {}
                    Op::Repeat { times: n, ops } => walk(s, gpus, ops, times * u64::from(*n), e),
                }
            }
        }
        for t in &self.threads {
            walk(self, &gpus, &t.ops, 1, &mut e);
            let switches = device_switches(&t.ops, &mut 0);
            if switches > 0 {
                bump(&mut e.hip_calls, "hipSetDevice", switches);
            }
        }
        e
    }
}

/// The HIP device an op runs on, if it names one (these ops make a thread switch devices).
pub(crate) fn op_device(op: &Op) -> Option<usize> {
    match op {
        Op::Malloc { device, .. }
        | Op::Free { device }
        | Op::Memcpy { device, .. }
        | Op::Launch { device, .. }
        | Op::StreamSync { device, .. }
        | Op::DeviceSync { device }
        | Op::EventRecord { device, .. } => Some(*device),
        _ => None,
    }
}

/// `hipSetDevice` calls a thread makes for `ops` (it starts on device 0 and switches whenever
/// an op names another device), updating `current`.
fn device_switches(ops: &[Op], current: &mut usize) -> u64 {
    let mut n = 0;
    for op in ops {
        match op {
            Op::Repeat { times, ops } => {
                // After one pass the device a pass starts on no longer changes, so every later
                // pass switches as often as the second.
                if *times > 0 {
                    n += device_switches(ops, current);
                }
                if *times > 1 {
                    n += u64::from(times - 1) * device_switches(ops, current);
                }
            }
            other => {
                if let Some(d) = op_device(other).filter(|d| d != current) {
                    *current = d;
                    n += 1;
                }
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_scenario_expectations() {
        let s = Scenario::default_scenario();
        let e = s.expected();
        assert_eq!(e.kernel_dispatches, 11);
        assert_eq!(e.hip_calls["hipLaunchKernel"], 11);
        assert_eq!(e.hip_calls["hipMemcpy"], 2);
        assert_eq!(e.hip_calls["hipMemcpyAsync"], 3);
        assert_eq!(e.code_objects, 2);
        assert_eq!(e.kernel_symbols, 6);
        assert_eq!(
            e.marker_calls["roctxRangePushA"],
            e.marker_calls["roctxRangePop"]
        );
        // 4 vadd + 4 gemm on GPU 0 (4 SQ_WAVES instances each), 3 reduce on GPU 1.
        assert_eq!(e.counter_records["SQ_WAVES"], 44);
        assert_eq!(
            e.counter_sums["SQ_WAVES"],
            4.0 * 64.0 + 4.0 * 256.0 + 3.0 * 8.0
        );
        assert_eq!(e.counter_records["TCC_HIT"], 8 * 16);
        // The worker thread runs on device 1: one switch.
        assert_eq!(e.hip_calls["hipSetDevice"], 1);
    }

    #[test]
    fn device_switches_inside_repeats() {
        let launch = |device| Op::Launch {
            kernel: "vadd".into(),
            grid: [1, 1, 1],
            block: [1, 1, 1],
            shared_mem: 0,
            device,
            stream: 0,
            counters: BTreeMap::new(),
        };
        let mut s = Scenario::default_scenario();
        s.threads = vec![ThreadSpec {
            ops: vec![Op::Repeat {
                times: 3,
                ops: vec![launch(1), launch(0)],
            }],
        }];
        // 0→1, 1→0 in each of the three passes.
        assert_eq!(s.expected().hip_calls["hipSetDevice"], 6);
        s.threads[0].ops = vec![
            launch(0),
            Op::Repeat {
                times: 4,
                ops: vec![launch(1)],
            },
        ];
        assert_eq!(s.expected().hip_calls["hipSetDevice"], 1);
    }

    #[test]
    fn invalid_scenarios_are_rejected() {
        let mut s = Scenario::default_scenario();
        s.threads[0].ops.push(Op::Launch {
            kernel: "nope".into(),
            grid: [1, 1, 1],
            block: [1, 1, 1],
            shared_mem: 0,
            device: 0,
            stream: 0,
            counters: BTreeMap::new(),
        });
        assert!(s.validate().unwrap_err().contains("unknown kernel"));

        let mut s = Scenario::default_scenario();
        s.threads[0].ops.push(Op::DeviceSync { device: 9 });
        assert!(s.validate().unwrap_err().contains("device 9"));

        let mut s = Scenario::default_scenario();
        s.threads[0].ops.push(Op::RangeStop {
            slot: "never".into(),
        });
        assert!(s.validate().unwrap_err().contains("never"));

        let text = r#"{"agents": [], "kernels": [], "threads": [], "extra": 1}"#;
        assert!(Scenario::from_json(text).is_err());
    }

    #[test]
    fn scenarios_round_trip_through_json() {
        let s = Scenario::default_scenario();
        let back = Scenario::from_json(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(s, back);
    }
}
