//! A fake amdgpu sysfs tree, for the HIP injection's telemetry tests: the
//! injection reads `GPU_TRACE_SYSFS_ROOT` in place of `/sys` when set.

use std::path::Path;

/// The variable that points the HIP injection at a fake sysfs tree.
pub const SYSFS_ROOT_VAR: &str = "GPU_TRACE_SYSFS_ROOT";

/// Writes a fake amdgpu sysfs tree (for tests): one card per bus id, with
/// readings `sclk` MHz, `busy` percent, `power_uw`, `temp_mc`, `vram_used`.
pub fn write_fake_tree(
    root: &Path,
    cards: &[(&str, u32, u32, u64, u64, u64)],
) -> std::io::Result<()> {
    let drm = root.join("class/drm");
    for (i, (pci, sclk, busy, power_uw, temp_mc, vram)) in cards.iter().enumerate() {
        let dev = drm.join(format!("card{i}/device"));
        let hwmon = dev.join(format!("hwmon/hwmon{}", i + 3));
        std::fs::create_dir_all(&hwmon)?;
        std::fs::create_dir_all(drm.join(format!("card{i}-DP-1")))?;
        std::fs::write(
            dev.join("uevent"),
            format!("DRIVER=amdgpu\nPCI_CLASS=38000\nPCI_ID=1002:740F\nPCI_SLOT_NAME={pci}\n"),
        )?;
        std::fs::write(dev.join("gpu_busy_percent"), format!("{busy}\n"))?;
        std::fs::write(
            dev.join("pp_dpm_sclk"),
            format!("0: 500Mhz\n1: {sclk}Mhz *\n2: 2100Mhz\n"),
        )?;
        std::fs::write(dev.join("pp_dpm_mclk"), "0: 900Mhz\n1: 1300Mhz *\n")?;
        std::fs::write(dev.join("mem_info_vram_used"), format!("{vram}\n"))?;
        std::fs::write(hwmon.join("power1_average"), format!("{power_uw}\n"))?;
        std::fs::write(hwmon.join("temp1_input"), format!("{temp_mc}\n"))?;
    }
    Ok(())
}
