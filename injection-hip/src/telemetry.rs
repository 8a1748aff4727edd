//! GPU telemetry from the amdgpu driver's sysfs files, for the GPUs the
//! process uses (matched by PCI bus id; without bus ids, every amdgpu card).
//!
//! Per card (`<root>/class/drm/cardN/device/`, whose `uevent` says
//! `DRIVER=amdgpu` and `PCI_SLOT_NAME=dddd:bb:dd.f`):
//!
//! | file | metric |
//! |---|---|
//! | `gpu_busy_percent` | utilisation |
//! | `mem_busy_percent` | memory utilisation |
//! | `pp_dpm_sclk` (the line marked `*`) | shader clock, MHz |
//! | `pp_dpm_mclk` (the line marked `*`) | memory clock, MHz |
//! | `mem_info_vram_used` | memory used, bytes |
//! | `hwmon/hwmon*/power1_average`, else `power1_input` | power, µW |
//! | `hwmon/hwmon*/temp1_input` | temperature (edge), m°C |
//!
//! Files are opened once and re-read from offset 0 every period (one
//! `pread` each). The root is `/sys`, or `GPU_TRACE_SYSFS_ROOT` (tests
//! point it at a fake tree).

use gpu_trace_agent::telemetry::{DeviceProbes, Metric, Probe, Reading, Telemetry};
use gpu_trace_model::model::Device;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Environment variable naming the sysfs root (default `/sys`).
pub(crate) const SYSFS_ROOT_ENV: &str = "GPU_TRACE_SYSFS_ROOT";

fn root() -> PathBuf {
    std::env::var_os(SYSFS_ROOT_ENV)
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("/sys"), PathBuf::from)
}

/// An amdgpu card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Card {
    /// `dddd:bb:dd.f`, lower case.
    pub(crate) pci: String,
    /// Its `device` folder.
    pub(crate) device: PathBuf,
}

/// The amdgpu cards under `root`, in bus order.
pub(crate) fn cards(root: &Path) -> Vec<Card> {
    let Ok(dir) = std::fs::read_dir(root.join("class/drm")) else {
        return Vec::new();
    };
    let mut out: Vec<Card> = dir
        .flatten()
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            // card0, not card0-DP-1 (a connector) nor renderD128.
            n.strip_prefix("card")
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| {
            let device = e.path().join("device");
            let uevent = std::fs::read_to_string(device.join("uevent")).ok()?;
            let mut amdgpu = false;
            let mut pci = None;
            for l in uevent.lines() {
                match l.split_once('=') {
                    Some(("DRIVER", v)) => amdgpu = v.trim() == "amdgpu",
                    Some(("PCI_SLOT_NAME", v)) => {
                        pci = Some(gpu_trace_model::pci::normalize_bdf(v))
                    }
                    _ => {}
                }
            }
            amdgpu.then_some(Card { pci: pci?, device })
        })
        .collect();
    out.sort_by(|a, b| a.pci.cmp(&b.pci));
    out.dedup_by(|a, b| a.pci == b.pci);
    out
}

/// How a file's text becomes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parse {
    /// A number as it is.
    Plain,
    /// The `*` line of a DPM table: `1: 1800Mhz *`.
    Dpm,
    /// Microwatts, as W.
    MicroWatts,
    /// Millidegrees, as °C.
    MilliDegrees,
}

fn parse(p: Parse, text: &str) -> Option<f64> {
    let num = |s: &str| s.trim().parse::<f64>().ok();
    match p {
        Parse::Plain => num(text),
        Parse::MicroWatts => num(text).map(|v| v / 1e6),
        Parse::MilliDegrees => num(text).map(|v| v / 1e3),
        Parse::Dpm => {
            let line = text.lines().find(|l| l.trim_end().ends_with('*'))?;
            let value = line.split_once(':')?.1.trim().trim_end_matches('*').trim();
            let digits = value.trim_end_matches(|c: char| c.is_ascii_alphabetic());
            num(digits)
        }
    }
}

/// Reads one card.
struct Sysfs {
    files: Vec<(Metric, Parse, File)>,
    buf: Vec<u8>,
}

impl Probe for Sysfs {
    fn read(&mut self, r: &mut Reading) {
        for (m, p, f) in &self.files {
            // sysfs regenerates the text for a read at offset 0.
            let Ok(n) = f.read_at(&mut self.buf, 0) else {
                continue;
            };
            let text = String::from_utf8_lossy(&self.buf[..n]);
            if let Some(v) = parse(*p, &text) {
                r.set(*m, v);
            }
        }
    }
}

/// The probes of `card`: the files it has.
pub(crate) fn open(card: &Card) -> Result<DeviceProbes, String> {
    let d = &card.device;
    let hwmon = std::fs::read_dir(d.join("hwmon"))
        .ok()
        .and_then(|rd| {
            let mut v: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
            v.sort();
            v.into_iter().next()
        })
        .unwrap_or_else(|| d.join("hwmon/none"));
    let power = if hwmon.join("power1_average").exists() {
        hwmon.join("power1_average")
    } else {
        hwmon.join("power1_input")
    };
    let wanted = [
        (
            Metric::GpuUtilization,
            Parse::Plain,
            d.join("gpu_busy_percent"),
        ),
        (
            Metric::MemoryUtilization,
            Parse::Plain,
            d.join("mem_busy_percent"),
        ),
        (Metric::SmClock, Parse::Dpm, d.join("pp_dpm_sclk")),
        (Metric::MemoryClock, Parse::Dpm, d.join("pp_dpm_mclk")),
        (
            Metric::MemoryUsed,
            Parse::Plain,
            d.join("mem_info_vram_used"),
        ),
        (Metric::Power, Parse::MicroWatts, power),
        (
            Metric::Temperature,
            Parse::MilliDegrees,
            hwmon.join("temp1_input"),
        ),
    ];
    let mut files = Vec::new();
    let mut names = Vec::new();
    for (m, p, path) in wanted {
        if let Ok(f) = File::open(&path) {
            names.push(m.name());
            files.push((m, p, f));
        }
    }
    if files.is_empty() {
        return Err(format!(
            "amdgpu card {} has none of the telemetry files under {}; no telemetry for it",
            card.pci,
            d.display()
        ));
    }
    Ok(DeviceProbes {
        fast: Box::new(Sysfs {
            files,
            buf: vec![0; 4096],
        }),
        slow: None,
        detail: format!("amdgpu sysfs {}: {}", d.display(), names.join(", ")),
    })
}

/// Samples the GPUs of `devices` (the agents described) while telemetry is
/// recorded.
pub(crate) fn watch(telemetry: &Telemetry, devices: &[Device]) {
    let root = root();
    let with_bus: Vec<&Device> = devices.iter().filter(|d| d.pci_bdf.is_some()).collect();
    if with_bus.is_empty() {
        // No bus ids to match: every amdgpu card, numbered in bus order.
        for (i, card) in cards(&root).into_iter().enumerate() {
            telemetry.watch(i as u32, card.pci.clone(), Box::new(move || open(&card)));
        }
        return;
    }
    for d in with_bus {
        let pci = gpu_trace_model::pci::normalize_bdf(d.pci_bdf.as_deref().unwrap_or_default());
        let (root, gpu_id) = (root.clone(), d.id);
        telemetry.watch(
            gpu_id,
            pci.clone(),
            Box::new(move || {
                let all = cards(&root);
                if all.is_empty() {
                    return Err(format!(
                        "no amdgpu card under {}; no GPU telemetry (clocks, power, utilisation)",
                        root.join("class/drm").display()
                    ));
                }
                match all.into_iter().find(|c| c.pci == pci) {
                    Some(c) => open(&c),
                    None => Err(format!(
                        "no amdgpu card at PCI {pci} under {}; no telemetry for GPU {gpu_id}",
                        root.join("class/drm").display()
                    )),
                }
            }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_trace_testkit::amdgpu::write_fake_tree;

    fn tree(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("gpu-trace-sysfs-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn amdgpu_cards_are_found_by_their_uevent_in_bus_order() {
        let root = tree("cards");
        write_fake_tree(
            &root,
            &[
                ("0000:C1:00.0", 1800, 50, 1, 1, 1),
                ("0000:03:00.0", 1700, 40, 1, 1, 1),
            ],
        )
        .unwrap();
        // Another driver's card is left out.
        let other = root.join("class/drm/card9/device");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(
            other.join("uevent"),
            "DRIVER=i915\nPCI_SLOT_NAME=0000:00:02.0\n",
        )
        .unwrap();
        let c = cards(&root);
        let pcis: Vec<&str> = c.iter().map(|c| c.pci.as_str()).collect();
        assert_eq!(pcis, ["0000:03:00.0", "0000:c1:00.0"]);
        assert!(cards(Path::new("/nonexistent")).is_empty());
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_card_reads_clocks_busy_power_temperature_and_memory() {
        let root = tree("read");
        write_fake_tree(
            &root,
            &[("0000:c1:00.0", 1800, 73, 245_000_000, 51_500, 8_589_934_592)],
        )
        .unwrap();
        let card = &cards(&root)[0];
        let mut p = open(card).unwrap();
        let mut r = Reading::new(7);
        p.fast.read(&mut r);
        let got: Vec<(&str, f64)> = r.values().iter().map(|(m, v)| (m.name(), *v)).collect();
        assert_eq!(
            got,
            [
                ("utilization.gpu", 73.0),
                ("clocks.sm", 1800.0),
                ("clocks.mem", 1300.0),
                ("memory.used", 8_589_934_592.0),
                ("power.draw", 245.0),
                ("temperature.gpu", 51.5),
            ]
        );
        // The files are re-read: a new value shows in the next round.
        let dev = &card.device;
        std::fs::write(dev.join("gpu_busy_percent"), "12\n").unwrap();
        std::fs::write(dev.join("pp_dpm_sclk"), "0: 500Mhz *\n1: 1800Mhz\n").unwrap();
        let mut r = Reading::new(8);
        p.fast.read(&mut r);
        assert_eq!(r.values()[0], (Metric::GpuUtilization, 12.0));
        assert_eq!(r.values()[1], (Metric::SmClock, 500.0));
        assert!(p.slow.is_none());
        // power1_input when the card has no average.
        let hw = dev.join("hwmon/hwmon3");
        std::fs::remove_file(hw.join("power1_average")).unwrap();
        std::fs::write(hw.join("power1_input"), "99000000\n").unwrap();
        let mut p = open(card).unwrap();
        let mut r = Reading::new(9);
        p.fast.read(&mut r);
        assert!(
            r.values().contains(&(Metric::Power, 99.0)),
            "{:?}",
            r.values()
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn dpm_tables_and_odd_text() {
        assert_eq!(parse(Parse::Dpm, "0: 96Mhz\n1: 1000Mhz *\n"), Some(1000.0));
        assert_eq!(parse(Parse::Dpm, "0: 96MHz *\n"), Some(96.0));
        assert_eq!(
            parse(Parse::Dpm, "0: 96Mhz\n1: 1000Mhz\n"),
            None,
            "no current level"
        );
        assert_eq!(parse(Parse::Plain, "garbage"), None);
        assert_eq!(parse(Parse::MilliDegrees, "45000\n"), Some(45.0));
    }

    #[test]
    fn a_card_without_telemetry_files_is_said() {
        let root = tree("empty");
        let dev = root.join("class/drm/card0/device");
        std::fs::create_dir_all(&dev).unwrap();
        std::fs::write(
            dev.join("uevent"),
            "DRIVER=amdgpu\nPCI_SLOT_NAME=0000:01:00.0\n",
        )
        .unwrap();
        let e = open(&cards(&root)[0]).unwrap_err();
        assert!(
            e.contains("0000:01:00.0") && e.contains("none of the telemetry files"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}
