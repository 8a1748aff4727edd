//! `GpuInfo`: the devices the trace's `gpu_id`s refer to.

use super::clocks_logs::absolute_timestamp;
use super::{Encoder, PacketSink, RsSeq};
use gpu_trace_reader::pb::Writer;
use gpu_trace_reader::wire;

impl Encoder {
    pub(super) fn write_gpu_info_if_changed(&mut self, seq: &mut RsSeq, sink: &mut dyn PacketSink) {
        let v = self.devices.version();
        if seq.gpu_info_version == Some(v) || v == 0 {
            return;
        }
        seq.gpu_info_version = Some(v);
        let devices = self.devices.snapshot();
        let p = &mut self.pkt;
        p.clear();
        absolute_timestamp(p, crate::clock::boottime_ns());
        p.nested(wire::packet::GPU_INFO, |gi| {
            // The list index is the gpu_id: fill gaps so that ids line up.
            let max = devices.iter().map(|d| d.id).max().unwrap_or(0);
            for id in 0..=max {
                gi.nested(wire::gpu_info::GPUS, |g| {
                    match devices.iter().find(|d| d.id == id) {
                        Some(d) => write_gpu(g, d),
                        None => {
                            g.string(wire::gpu_info::NAME, &format!("GPU {id} (not used)"));
                        }
                    }
                });
            }
        });
        sink.packet(p.as_bytes());
    }
}

fn write_gpu(g: &mut Writer, d: &crate::model::Device) {
    g.string(wire::gpu_info::NAME, &d.name);
    if let Some(v) = &d.vendor {
        g.string(wire::gpu_info::VENDOR, v);
    }
    if !d.arch_id.is_empty() {
        g.string(wire::gpu_info::MODEL, &d.arch_id);
    }
    if !d.architecture.is_empty() {
        g.string(wire::gpu_info::ARCHITECTURE, &d.architecture);
    }
    if let Some(u) = d.uuid {
        g.bytes(wire::gpu_info::UUID, &u);
    }
    if let Some(p) = &d.pci_bdf {
        g.string(wire::gpu_info::PCI_BDF, p);
    }
    let mut kv = |k: &str, v: &str| {
        g.nested(wire::gpu_info::EXTRA_INFO, |e| {
            e.string(wire::gpu_info::KEY, k)
                .string(wire::gpu_info::VALUE, v);
        });
    };
    kv("gpu_id", &d.id.to_string());
    if d.sm_count > 0 {
        kv("sm_count", &d.sm_count.to_string());
    }
    if let Some(m) = d.total_memory {
        kv("total_memory", &m.to_string());
    }
    for (k, v) in &d.extra {
        kv(k, v);
    }
}
