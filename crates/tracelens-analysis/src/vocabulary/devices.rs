//! What device names mean: the vendor and the AMD Instinct generation a device's name and
//! warp size show.

use serde::Serialize;

/// Who made the GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Vendor {
    /// NVIDIA (CUDA): `compute` is the compute capability.
    Nvidia,
    /// AMD (ROCm/HIP): `compute` is the gfx architecture's major and minor (gfx942: 9.4).
    Amd,
    /// The trace does not say.
    #[default]
    Unknown,
}

/// The vendor a device name and warp size show: a 64-wide wavefront or an AMD/Instinct name
/// is AMD's; a 32-wide warp or an NVIDIA/Tesla/GeForce name NVIDIA's.
#[must_use]
pub fn vendor(device_name: &str, warp_size: Option<i64>) -> Vendor {
    let lower = device_name.to_ascii_lowercase();
    if warp_size == Some(64) || lower.contains("amd") || lower.contains("instinct") {
        Vendor::Amd
    } else if warp_size == Some(32)
        || lower.contains("nvidia")
        || lower.contains("tesla")
        || lower.contains("geforce")
    {
        Vendor::Nvidia
    } else {
        Vendor::Unknown
    }
}

/// The AMD Instinct generation a device name shows: 100 (MI100), 200 (MI210/MI250X), 300
/// (MI300X/MI325X/MI355X).
#[must_use]
pub fn instinct_generation(device_name: &str) -> Option<u32> {
    let at = device_name.find("MI")?;
    let digit = device_name[at + 2..].chars().next()?.to_digit(10)?;
    (1..=9).contains(&digit).then_some(digit * 100)
}

/// Whether a kernel release names Windows Subsystem for Linux 2
/// (`6.6.87.2-microsoft-standard-WSL2`): the GPU is reached through the Windows driver.
#[must_use]
pub fn is_wsl(kernel_release: &str) -> bool {
    let r = kernel_release.to_ascii_lowercase();
    r.contains("microsoft") || r.contains("wsl")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_of_the_corpus_read_right() {
        assert_eq!(vendor("AMD Instinct MI300X", Some(64)), Vendor::Amd);
        assert_eq!(vendor("NVIDIA H100 80GB HBM3", None), Vendor::Nvidia);
        assert_eq!(vendor("Tesla V100-SXM2-16GB", None), Vendor::Nvidia);
        assert_eq!(vendor("Ascend910B", None), Vendor::Unknown);
        assert_eq!(instinct_generation("AMD Instinct MI300X"), Some(300));
        assert_eq!(instinct_generation("AMD Instinct MI210"), Some(200));
        assert_eq!(instinct_generation("Radeon RX 7900 XTX"), None);
    }
}
