//! PCI addresses, as the vendors' libraries and the kernel spell them.

/// A PCI bus address (`domain:bus:device.function`) in one form, so that
/// two spellings of one GPU compare equal: lower case, trimmed, and the
/// domain as four hex digits. The CUDA driver says `00000000:06:00.0`,
/// NVML `00000000:06:00.0` too, sysfs and `/proc` `0000:06:00.0`; all
/// become `0000:06:00.0`. Text without a `:` is only trimmed and lowered.
///
/// ```
/// use gpu_trace_model::pci::normalize_bdf;
/// assert_eq!(normalize_bdf("00000000:06:00.0"), "0000:06:00.0");
/// assert_eq!(normalize_bdf(" 0000:C1:00.0\n"), "0000:c1:00.0");
/// ```
pub fn normalize_bdf(s: &str) -> String {
    let s = s.trim().to_ascii_lowercase();
    match s.split_once(':') {
        Some((dom, rest)) => format!("{:0>4}:{rest}", dom.trim_start_matches('0')),
        None => s,
    }
}
