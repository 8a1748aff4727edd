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

#[cfg(test)]
mod tests {
    use super::super::ClockSpec;
    use super::super::test_support::{Fixture, Packets, all, s, u};
    use super::*;
    use crate::model::Device;

    #[test]
    fn gpu_info_names_the_backends_vendor_and_fills_gaps() {
        let mut f = Fixture::new(ClockSpec::Boottime);
        let mut d = Device::new(1, "MyGPU 9000");
        d.vendor = Some("MyVendor".into());
        d.sm_count = 12;
        f.devices.upsert(d);
        let mut seq = RsSeq::default();
        let mut sink = Packets::default();
        f.enc.write_gpu_info_if_changed(&mut seq, &mut sink);
        // Unchanged devices are not described again.
        f.enc.write_gpu_info_if_changed(&mut seq, &mut sink);
        assert_eq!(sink.0.len(), 1);
        let info = all(&sink.0[0], wire::packet::GPU_INFO);
        let gpus = all(info[0].as_bytes().unwrap(), wire::gpu_info::GPUS);
        assert_eq!(gpus.len(), 2, "the list index is the gpu_id");
        let (g0, g1) = (gpus[0].as_bytes().unwrap(), gpus[1].as_bytes().unwrap());
        assert_eq!(s(g0, &[wire::gpu_info::NAME]), Some("GPU 0 (not used)"));
        assert_eq!(s(g1, &[wire::gpu_info::NAME]), Some("MyGPU 9000"));
        assert_eq!(s(g1, &[wire::gpu_info::VENDOR]), Some("MyVendor"));
        assert_eq!(u(g0, &[wire::gpu_info::VENDOR]), None);
        let extra: Vec<_> = all(g1, wire::gpu_info::EXTRA_INFO)
            .iter()
            .map(|e| {
                let e = e.as_bytes().unwrap();
                (
                    s(e, &[wire::gpu_info::KEY]).unwrap(),
                    s(e, &[wire::gpu_info::VALUE]).unwrap(),
                )
            })
            .collect();
        assert_eq!(extra, [("gpu_id", "1"), ("sm_count", "12")]);
    }
}
