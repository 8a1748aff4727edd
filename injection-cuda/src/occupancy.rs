//! Theoretical occupancy from a kernel record and the device's limits, by
//! the rules of NVIDIA's occupancy calculator: warps per block rounded up,
//! registers allocated per warp in 256-register units within each of the
//! SM's four sub-partitions, shared memory in 128-byte units plus the
//! driver's per-block reservation, against the carve-out the kernel actually
//! ran with (`sharedMemoryExecuted`) rather than a fixed 48 KiB.
//!
//! The GPU test suite checks the result against
//! `cuOccupancyMaxActiveBlocksPerMultiprocessor` for a set of kernels.

/// What limits residency on one SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct DeviceLimits {
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// `MAX_THREADS_PER_MULTIPROCESSOR`.
    pub max_threads_per_sm: u32,
    /// `MAX_BLOCKS_PER_MULTIPROCESSOR`.
    pub max_blocks_per_sm: u32,
    /// `MAX_REGISTERS_PER_MULTIPROCESSOR`.
    pub regs_per_sm: u32,
    /// `MAX_REGISTERS_PER_BLOCK`.
    pub regs_per_block: u32,
    /// `MAX_SHARED_MEMORY_PER_MULTIPROCESSOR`, bytes.
    pub smem_per_sm: u32,
    /// `RESERVED_SHARED_MEMORY_PER_BLOCK`, bytes.
    pub reserved_smem_per_block: u32,
    /// `WARP_SIZE`.
    pub warp_size: u32,
    /// Compute capability major.
    pub cc_major: u32,
}

impl DeviceLimits {
    /// Hopper (sm_90) values, for tests.
    #[cfg(test)]
    pub(crate) const H100: DeviceLimits = DeviceLimits {
        sm_count: 132,
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        regs_per_sm: 65536,
        regs_per_block: 65536,
        smem_per_sm: 233_472,
        reserved_smem_per_block: 1024,
        warp_size: 32,
        cc_major: 9,
    };
}

/// A kernel's resources in one launch configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct KernelResources {
    /// Threads per block.
    pub block_threads: u32,
    /// Registers per thread.
    pub registers: u32,
    /// Static shared memory per block, bytes.
    pub static_smem: u32,
    /// Dynamic shared memory per block, bytes.
    pub dynamic_smem: u32,
    /// Shared memory carve-out the kernel ran with, bytes per SM (0: unknown).
    pub smem_config: u32,
}

/// The occupancy calculator's answer.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Occupancy {
    /// Blocks resident per SM.
    pub active_blocks: u32,
    /// Limit from the block count.
    pub limit_blocks: u32,
    /// Limit from warps (threads).
    pub limit_warps: u32,
    /// Limit from registers.
    pub limit_registers: u32,
    /// Limit from shared memory.
    pub limit_shared_mem: u32,
    /// Resident warps per SM.
    pub active_warps: u32,
    /// Active warps over the maximum, percent.
    pub percent: f64,
    /// Warps per SM the hardware can hold.
    pub max_warps: u32,
}

fn round_up(x: u32, unit: u32) -> u32 {
    x.div_ceil(unit) * unit
}

const REG_ALLOC_UNIT: u32 = 256;
const MAX_REGS_PER_THREAD: u32 = 255;

/// Computes theoretical occupancy. Unknown limits (0) do not constrain.
pub(crate) fn compute(d: &DeviceLimits, k: &KernelResources) -> Occupancy {
    let warp = d.warp_size.max(1);
    let max_warps = d.max_threads_per_sm / warp;
    let warps_per_block = k.block_threads.div_ceil(warp).max(1);
    let unbounded = u32::MAX;

    let limit_blocks = if d.max_blocks_per_sm > 0 {
        d.max_blocks_per_sm
    } else {
        unbounded
    };
    let limit_warps = if max_warps > 0 {
        max_warps / warps_per_block
    } else {
        unbounded
    };

    let limit_registers = if k.registers == 0 || d.regs_per_sm == 0 {
        unbounded
    } else if k.registers > MAX_REGS_PER_THREAD {
        0
    } else {
        let regs_per_warp = round_up(k.registers * warp, REG_ALLOC_UNIT);
        if d.regs_per_block > 0 && regs_per_warp * warps_per_block > d.regs_per_block {
            0
        } else {
            // The register file is split between sub-partitions; warps are
            // placed whole into one of them.
            let sub_partitions = if d.cc_major >= 7 { 4 } else { 2 };
            let warps_per_partition = (d.regs_per_sm / sub_partitions) / regs_per_warp;
            (warps_per_partition * sub_partitions) / warps_per_block
        }
    };

    let limit_shared_mem = {
        let requested = k.static_smem + k.dynamic_smem;
        if requested == 0 {
            unbounded
        } else {
            let unit = if d.cc_major >= 8 { 128 } else { 256 };
            let per_block = round_up(requested + d.reserved_smem_per_block, unit);
            let config = if k.smem_config > 0 {
                k.smem_config
            } else {
                d.smem_per_sm
            };
            config / per_block
        }
    };

    let active_blocks = limit_blocks
        .min(limit_warps)
        .min(limit_registers)
        .min(limit_shared_mem);
    let active_blocks = if active_blocks == unbounded {
        0
    } else {
        active_blocks
    };
    let active_warps = active_blocks * warps_per_block;
    let clamp = |x: u32| {
        if x == unbounded {
            d.max_blocks_per_sm
        } else {
            x
        }
    };
    Occupancy {
        active_blocks,
        limit_blocks: clamp(limit_blocks),
        limit_warps: clamp(limit_warps),
        limit_registers: clamp(limit_registers),
        limit_shared_mem: clamp(limit_shared_mem),
        active_warps,
        percent: if max_warps > 0 {
            100.0 * active_warps as f64 / max_warps as f64
        } else {
            0.0
        },
        max_warps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn occ(block: u32, regs: u32, smem: u32, config: u32) -> Occupancy {
        compute(
            &DeviceLimits::H100,
            &KernelResources {
                block_threads: block,
                registers: regs,
                static_smem: smem,
                dynamic_smem: 0,
                smem_config: config,
            },
        )
    }

    #[test]
    fn full_occupancy_when_nothing_limits() {
        let o = occ(256, 32, 0, 0);
        assert_eq!(o.active_blocks, 8);
        assert_eq!(o.limit_warps, 8);
        assert_eq!(o.percent, 100.0);
    }

    #[test]
    fn registers_limit_by_warp_allocation() {
        // 64 regs × 32 threads = 2048 per warp: 8 warps per sub-partition,
        // 32 per SM, one 1024-thread block.
        let o = occ(1024, 64, 0, 0);
        assert_eq!((o.limit_registers, o.active_blocks), (1, 1));
        assert_eq!(o.percent, 50.0);
        // 40 regs round up to 1280 per warp: 12 warps per partition, 48 per
        // SM: six 256-thread blocks.
        let o = occ(256, 40, 0, 0);
        assert_eq!((o.limit_registers, o.active_blocks), (6, 6));
        assert_eq!(o.percent, 75.0);
        // More than the per-block register file: cannot launch.
        assert_eq!(occ(1024, 255, 0, 0).active_blocks, 0);
    }

    #[test]
    fn warps_per_block_round_up() {
        // 33 threads occupy two warps.
        let o = occ(33, 16, 0, 0);
        assert_eq!(o.limit_warps, 32);
        assert_eq!(o.active_blocks, 32);
        assert_eq!(o.active_warps, 64);
    }

    #[test]
    fn shared_memory_uses_the_executed_carveout_and_reservation() {
        // 48 KiB static + 1 KiB reserved = 49 KiB per block.
        let o = occ(128, 32, 48 * 1024, 233_472);
        assert_eq!(o.limit_shared_mem, 4);
        assert_eq!(o.active_blocks, 4);
        // With a 100 KiB carve-out only two fit.
        let o = occ(128, 32, 48 * 1024, 100 * 1024);
        assert_eq!(o.limit_shared_mem, 2);
    }
}
