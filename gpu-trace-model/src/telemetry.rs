//! The vendor-neutral telemetry metrics: each a counter track of the same
//! name, unit and group whatever the vendor ([`Metric::spec`]). The agent
//! samples them; the writer and readers name them through this table.

use crate::model::{CounterGroup, CounterSpec, Unit};

/// A telemetry reading, vendor-neutral.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Metric {
    /// Shader clock: NVIDIA's SM clock, AMD's sclk. MHz.
    SmClock,
    /// Memory clock. MHz.
    MemoryClock,
    /// Time a kernel ran over the driver's last sample period. Percent.
    GpuUtilization,
    /// Time device memory was read or written over the driver's last
    /// sample period. Percent.
    MemoryUtilization,
    /// Power draw. W.
    Power,
    /// GPU die temperature. °C.
    Temperature,
    /// Device memory in use, all processes. Bytes.
    MemoryUsed,
    /// Why clocks are below their maximum: NVML's clock-event reason bits.
    ClockEventReasons,
    /// SMs busy over the period (NVIDIA GPM). Percent.
    SmActive,
    /// Warps active against the maximum over the period (GPM). Percent.
    SmOccupancy,
    /// Time the SMs ran tensor operations over the period (GPM). Percent.
    TensorActive,
    /// DRAM bandwidth used against the peak over the period (GPM). Percent.
    DramBandwidth,
    /// PCIe bytes from the GPU over the period (GPM). B/s.
    PcieTx,
    /// PCIe bytes to the GPU over the period (GPM). B/s.
    PcieRx,
    /// NVLink bytes written over the period, all links (GPM). B/s.
    NvlinkTx,
    /// NVLink bytes read over the period, all links (GPM). B/s.
    NvlinkRx,
    /// PCIe bytes from the GPU over NVML's 20 ms window (slow). B/s.
    PcieTxThroughput,
    /// PCIe bytes to the GPU over NVML's 20 ms window (slow). B/s.
    PcieRxThroughput,
    /// Energy since the driver loaded (slow). J.
    Energy,
}

impl Metric {
    /// Every metric, in track order.
    pub const ALL: [Metric; 19] = [
        Metric::SmClock,
        Metric::MemoryClock,
        Metric::GpuUtilization,
        Metric::MemoryUtilization,
        Metric::Power,
        Metric::Temperature,
        Metric::MemoryUsed,
        Metric::ClockEventReasons,
        Metric::SmActive,
        Metric::SmOccupancy,
        Metric::TensorActive,
        Metric::DramBandwidth,
        Metric::PcieTx,
        Metric::PcieRx,
        Metric::NvlinkTx,
        Metric::NvlinkRx,
        Metric::PcieTxThroughput,
        Metric::PcieRxThroughput,
        Metric::Energy,
    ];

    /// Its place in [`Metric::ALL`].
    pub fn index(self) -> usize {
        Self::ALL.iter().position(|m| *m == self).unwrap_or(0)
    }

    /// The track name, as `nvidia-smi --query-gpu` spells the fields it
    /// has (`clocks.sm`, `power.draw`), `gpm.` for GPM's.
    pub fn name(self) -> &'static str {
        match self {
            Metric::SmClock => "clocks.sm",
            Metric::MemoryClock => "clocks.mem",
            Metric::GpuUtilization => "utilization.gpu",
            Metric::MemoryUtilization => "utilization.memory",
            Metric::Power => "power.draw",
            Metric::Temperature => "temperature.gpu",
            Metric::MemoryUsed => "memory.used",
            Metric::ClockEventReasons => "clocks_event_reasons.active",
            Metric::SmActive => "gpm.sm_active",
            Metric::SmOccupancy => "gpm.sm_occupancy",
            Metric::TensorActive => "gpm.tensor_active",
            Metric::DramBandwidth => "gpm.dram_bandwidth",
            Metric::PcieTx => "gpm.pcie_tx",
            Metric::PcieRx => "gpm.pcie_rx",
            Metric::NvlinkTx => "gpm.nvlink_tx",
            Metric::NvlinkRx => "gpm.nvlink_rx",
            Metric::PcieTxThroughput => "pcie.tx",
            Metric::PcieRxThroughput => "pcie.rx",
            Metric::Energy => "energy.total",
        }
    }

    /// Name, unit, group and description of the metric's counter track.
    /// Telemetry is SYSTEM or MEMORY, never COMPUTE (the group the UI joins
    /// with kernels as per-kernel values).
    pub fn spec(self) -> CounterSpec {
        use CounterGroup::{Memory, System};
        let (unit, per, group, description) = match self {
            Metric::SmClock => (
                Unit::Megahertz,
                None,
                System,
                "Shader clock: the SM clock (NVIDIA), sclk (AMD).",
            ),
            Metric::MemoryClock => (Unit::Megahertz, None, Memory, "Memory clock."),
            Metric::GpuUtilization => (
                Unit::Percent,
                None,
                System,
                "Time one or more kernels ran, over the driver's last sample period (NVML: 1/6 s to 1 s; amdgpu: gpu_busy_percent).",
            ),
            Metric::MemoryUtilization => (
                Unit::Percent,
                None,
                Memory,
                "Time device memory was read or written, over the driver's last sample period.",
            ),
            Metric::Power => (
                Unit::Watt,
                None,
                System,
                "Power draw (NVML: board; amdgpu: power1_average or power1_input).",
            ),
            Metric::Temperature => (Unit::Celsius, None, System, "GPU die temperature."),
            Metric::MemoryUsed => (
                Unit::Byte,
                None,
                Memory,
                "Device memory allocated by all processes (the driver's reserve apart where it is reported apart).",
            ),
            Metric::ClockEventReasons => (
                Unit::None,
                None,
                System,
                "Why clocks are below their maximum, NVML's bit mask: 1 idle, 2 application clocks, 4 software power cap, 8 hardware slowdown, 16 sync boost, 32 software thermal, 64 hardware thermal, 128 power brake, 256 display clock.",
            ),
            Metric::SmActive => (
                Unit::Percent,
                None,
                System,
                "SMs busy, averaged over the period (NVML GPM SM_UTIL).",
            ),
            Metric::SmOccupancy => (
                Unit::Percent,
                None,
                System,
                "Warps active against the theoretical maximum, averaged over the period (NVML GPM SM_OCCUPANCY).",
            ),
            Metric::TensorActive => (
                Unit::Percent,
                None,
                System,
                "Time the SMs ran any tensor operation, over the period (NVML GPM ANY_TENSOR_UTIL).",
            ),
            Metric::DramBandwidth => (
                Unit::Percent,
                None,
                Memory,
                "DRAM bandwidth used against the peak, over the period (NVML GPM DRAM_BW_UTIL).",
            ),
            Metric::PcieTx => (
                Unit::Byte,
                Some(Unit::Second),
                System,
                "PCIe traffic from the GPU, over the period (NVML GPM PCIE_TX_PER_SEC).",
            ),
            Metric::PcieRx => (
                Unit::Byte,
                Some(Unit::Second),
                System,
                "PCIe traffic to the GPU, over the period (NVML GPM PCIE_RX_PER_SEC).",
            ),
            Metric::NvlinkTx => (
                Unit::Byte,
                Some(Unit::Second),
                System,
                "NVLink traffic written, all links, over the period (NVML GPM NVLINK_TOTAL_TX_PER_SEC).",
            ),
            Metric::NvlinkRx => (
                Unit::Byte,
                Some(Unit::Second),
                System,
                "NVLink traffic read, all links, over the period (NVML GPM NVLINK_TOTAL_RX_PER_SEC).",
            ),
            Metric::PcieTxThroughput => (
                Unit::Byte,
                Some(Unit::Second),
                System,
                "PCIe traffic from the GPU over NVML's 20 ms window (nvmlDeviceGetPcieThroughput; slow readings).",
            ),
            Metric::PcieRxThroughput => (
                Unit::Byte,
                Some(Unit::Second),
                System,
                "PCIe traffic to the GPU over NVML's 20 ms window (nvmlDeviceGetPcieThroughput; slow readings).",
            ),
            Metric::Energy => (
                Unit::Joule,
                None,
                System,
                "Energy used since the driver loaded (nvmlDeviceGetTotalEnergyConsumption; slow readings).",
            ),
        };
        let mut s = CounterSpec::new(self.name(), unit, group);
        s.per = per;
        s.description = description.to_owned();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_has_a_distinct_name_and_no_compute_group() {
        let mut names: Vec<_> = Metric::ALL.iter().map(|m| m.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Metric::ALL.len());
        for m in Metric::ALL {
            let s = m.spec();
            assert_ne!(s.group, CounterGroup::Compute, "{m:?}");
            assert!(!s.description.is_empty(), "{m:?}");
            assert_eq!(Metric::ALL[m.index()], m);
        }
        assert_eq!(Metric::SmClock.spec().unit, Unit::Megahertz);
        let pcie = Metric::PcieTx.spec();
        assert_eq!((pcie.unit, pcie.per), (Unit::Byte, Some(Unit::Second)));
    }
}
