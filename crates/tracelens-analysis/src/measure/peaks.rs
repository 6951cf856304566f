//! Peak throughput of known GPUs: dense TFLOP/s per precision and memory bandwidth, from the
//! vendors' datasheets and architecture whitepapers, for the roofline and MFU.
//!
//! Conventions: **dense** figures (the "with sparsity" numbers halved); boost clocks as the
//! datasheet gives them; on GeForce cards FP16/BF16 tensor math **with FP32 accumulate** (what
//! PyTorch uses), which is half the headline FP16-accumulate figure; on AMD Instinct FP32
//! GEMMs run on the matrix cores, so FP32 is the matrix rate; an MI250/MI250X shows up as two
//! devices (one per GCD), so its figures are per GCD (half the card). A precision a device
//! lacks is `None`. Sources, by entry:
//! - NVIDIA B200: HGX B200 datasheet (8-GPU system figures ÷ 8).
//! - H200, H100 SXM/PCIe/NVL: H100 and H200 Tensor Core GPU datasheets.
//! - A100 (40 GB/80 GB, SXM/PCIe), A30, A10: A100 / A30 / A10 datasheets.
//! - L40S, L40, L4: L40S / L40 / L4 datasheets.
//! - T4, V100 (SXM2/PCIe/V100S), P100, Quadro GP100: their datasheets.
//! - RTX 4090/4080: Ada Lovelace architecture whitepaper, appendix tables; RTX 4060 Ti/4060:
//!   their FP32 rate with the whitepaper's 2× FP16-with-FP32-accumulate ratio of GeForce Ada.
//! - RTX 3090/3080: Ampere GA102 whitepaper; RTX 3060 by the same ratio; RTX A6000/A5000:
//!   their datasheets; RTX 2080 Ti, TITAN RTX: Turing whitepaper.
//! - AMD Instinct MI300X/MI325X/MI300A, MI250X/MI250, MI210, MI100: AMD product data sheets.

use crate::measure::environment::{Hardware, Vendor};

/// The number format an op computes in.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// 64-bit float.
    Fp64,
    /// 32-bit float on the CUDA cores.
    Fp32,
    /// 32-bit float inputs multiplied on tensor cores as TF32 (NVIDIA) or XF32 (AMD).
    Tf32,
    /// bfloat16.
    Bf16,
    /// IEEE half.
    Fp16,
    /// 8-bit float (e4m3, e5m2).
    Fp8,
    /// 8-bit integer.
    Int8,
}

impl Precision {
    /// Label in output.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Precision::Fp64 => "FP64",
            Precision::Fp32 => "FP32",
            Precision::Tf32 => "TF32",
            Precision::Bf16 => "BF16",
            Precision::Fp16 => "FP16",
            Precision::Fp8 => "FP8",
            Precision::Int8 => "INT8",
        }
    }
}

/// A device's peaks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DevicePeak {
    /// The table entry that matched (`NVIDIA H100 SXM`).
    pub device: &'static str,
    /// FP64 TFLOP/s (vector, or matrix where the device has FP64 matrix units).
    pub fp64: Option<f64>,
    /// FP32 TFLOP/s (CUDA cores; AMD Instinct: matrix cores).
    pub fp32: f64,
    /// TF32 tensor-core TFLOP/s (AMD MI300: XF32).
    pub tf32: Option<f64>,
    /// BF16 tensor-core TFLOP/s.
    pub bf16: Option<f64>,
    /// FP16 tensor-core TFLOP/s (FP32 accumulate).
    pub fp16: Option<f64>,
    /// FP8 tensor-core TFLOP/s.
    pub fp8: Option<f64>,
    /// INT8 tensor-core TOP/s.
    pub int8: Option<f64>,
    /// Memory bandwidth in TB/s.
    pub memory_tb_per_s: f64,
}

impl DevicePeak {
    /// Peak TFLOP/s for `precision`, when the device runs it.
    #[must_use]
    pub fn tflops(&self, precision: Precision) -> Option<f64> {
        match precision {
            Precision::Fp64 => self.fp64,
            Precision::Fp32 => Some(self.fp32),
            Precision::Tf32 => self.tf32,
            Precision::Bf16 => self.bf16,
            Precision::Fp16 => self.fp16,
            Precision::Fp8 => self.fp8,
            Precision::Int8 => self.int8,
        }
    }
}

#[allow(clippy::too_many_arguments)]
const fn peak(
    device: &'static str,
    fp64: Option<f64>,
    fp32: f64,
    tf32: Option<f64>,
    bf16: Option<f64>,
    fp16: Option<f64>,
    fp8: Option<f64>,
    int8: Option<f64>,
    memory_tb_per_s: f64,
) -> DevicePeak {
    DevicePeak {
        device,
        fp64,
        fp32,
        tf32,
        bf16,
        fp16,
        fp8,
        int8,
        memory_tb_per_s,
    }
}

/// A GPU whose FP64 peak is under its FP32 peak divided by this (or not in the table while
/// FP32 is: consumer and inference cards) runs double precision slowly.
pub const SLOW_FP64_RATIO: f64 = 8.0;

/// Whether the device runs double precision at a small fraction of its single-precision
/// rate (GeForce, RTX workstation and inference cards: 1/32 to 1/64), when the table knows it.
#[must_use]
pub fn slow_fp64(hw: &Hardware) -> bool {
    device_peak(hw).is_some_and(|p| p.fp64.is_none_or(|fp64| fp64 * SLOW_FP64_RATIO < p.fp32))
}

/// Whether kernel `name`, taking `share_percent` of kernel time, is double-precision work
/// that bounds a GPU with slow FP64: over half the kernel time, `double` data in its
/// signature, and a device the table knows runs FP64 slowly.
#[must_use]
pub fn double_on_slow_fp64(hw: &Hardware, name: &str, share_percent: f64) -> bool {
    share_percent > 50.0 && crate::vocabulary::kernels::works_on_double(name) && slow_fp64(hw)
}

/// The table, one line per device (kept unformatted to read as a table).
#[rustfmt::skip]
mod table {
    use super::{peak, DevicePeak};
    pub(super) const B200: DevicePeak = peak("NVIDIA B200", Some(37.0), 75.0, Some(1125.0), Some(2250.0), Some(2250.0), Some(4500.0), Some(4500.0), 8.0);
    pub(super) const H200: DevicePeak = peak("NVIDIA H200 SXM", Some(67.0), 67.0, Some(494.5), Some(989.5), Some(989.5), Some(1979.0), Some(1979.0), 4.8);
    pub(super) const H100_SXM: DevicePeak = peak("NVIDIA H100 SXM", Some(67.0), 67.0, Some(494.5), Some(989.5), Some(989.5), Some(1979.0), Some(1979.0), 3.35);
    pub(super) const H100_PCIE: DevicePeak = peak("NVIDIA H100 PCIe", Some(51.0), 51.0, Some(378.0), Some(756.5), Some(756.5), Some(1513.0), Some(1513.0), 2.0);
    pub(super) const H100_NVL: DevicePeak = peak("NVIDIA H100 NVL", Some(60.0), 60.0, Some(417.5), Some(835.5), Some(835.5), Some(1670.5), Some(1670.5), 3.9);
    pub(super) const A100_80_SXM: DevicePeak = peak("NVIDIA A100 80GB SXM", Some(19.5), 19.5, Some(156.0), Some(312.0), Some(312.0), None, Some(624.0), 2.039);
    pub(super) const A100_80_PCIE: DevicePeak = peak("NVIDIA A100 80GB PCIe", Some(19.5), 19.5, Some(156.0), Some(312.0), Some(312.0), None, Some(624.0), 1.935);
    pub(super) const A100_40: DevicePeak = peak("NVIDIA A100 40GB", Some(19.5), 19.5, Some(156.0), Some(312.0), Some(312.0), None, Some(624.0), 1.555);
    pub(super) const A30: DevicePeak = peak("NVIDIA A30", Some(10.3), 10.3, Some(82.0), Some(165.0), Some(165.0), None, Some(330.0), 0.933);
    pub(super) const A10: DevicePeak = peak("NVIDIA A10", None, 31.2, Some(62.5), Some(125.0), Some(125.0), None, Some(250.0), 0.6);
    pub(super) const L40S: DevicePeak = peak("NVIDIA L40S", None, 91.6, Some(183.0), Some(362.05), Some(362.05), Some(733.0), Some(733.0), 0.864);
    pub(super) const L40: DevicePeak = peak("NVIDIA L40", None, 90.5, Some(90.5), Some(181.05), Some(181.05), Some(362.0), Some(362.0), 0.864);
    pub(super) const L4: DevicePeak = peak("NVIDIA L4", None, 30.3, Some(60.0), Some(121.0), Some(121.0), Some(242.5), Some(242.5), 0.3);
    pub(super) const T4: DevicePeak = peak("NVIDIA T4", None, 8.1, None, None, Some(65.0), None, Some(130.0), 0.32);
    pub(super) const V100S: DevicePeak = peak("NVIDIA V100S PCIe", Some(8.2), 16.4, None, None, Some(130.0), None, None, 1.134);
    pub(super) const V100_PCIE: DevicePeak = peak("NVIDIA V100 PCIe", Some(7.0), 14.0, None, None, Some(112.0), None, None, 0.9);
    pub(super) const V100_SXM2: DevicePeak = peak("NVIDIA V100 SXM2", Some(7.8), 15.7, None, None, Some(125.0), None, None, 0.9);
    pub(super) const P100_SXM2: DevicePeak = peak("NVIDIA P100 SXM2", Some(5.3), 10.6, None, None, None, None, None, 0.732);
    pub(super) const P100_PCIE: DevicePeak = peak("NVIDIA P100 PCIe", Some(4.7), 9.3, None, None, None, None, None, 0.732);
    pub(super) const GP100: DevicePeak = peak("NVIDIA Quadro GP100", Some(5.2), 10.3, None, None, None, None, None, 0.717);
    pub(super) const RTX_4090: DevicePeak = peak("NVIDIA GeForce RTX 4090", None, 82.6, Some(82.6), Some(165.2), Some(165.2), Some(330.3), Some(660.6), 1.008);
    pub(super) const RTX_4080: DevicePeak = peak("NVIDIA GeForce RTX 4080", None, 48.7, Some(48.7), Some(97.5), Some(97.5), Some(194.9), Some(389.9), 0.717);
    pub(super) const RTX_4060_TI: DevicePeak = peak("NVIDIA GeForce RTX 4060 Ti", None, 22.1, Some(22.1), Some(44.2), Some(44.2), Some(88.4), Some(176.8), 0.288);
    pub(super) const RTX_4060: DevicePeak = peak("NVIDIA GeForce RTX 4060", None, 15.1, Some(15.1), Some(30.2), Some(30.2), Some(60.4), Some(120.8), 0.272);
    pub(super) const RTX_3090: DevicePeak = peak("NVIDIA GeForce RTX 3090", None, 35.6, Some(35.6), Some(71.0), Some(71.0), None, Some(284.0), 0.936);
    pub(super) const RTX_3080: DevicePeak = peak("NVIDIA GeForce RTX 3080", None, 29.8, Some(29.8), Some(59.5), Some(59.5), None, Some(238.0), 0.76);
    pub(super) const RTX_3060: DevicePeak = peak("NVIDIA GeForce RTX 3060", None, 12.7, Some(12.7), Some(25.4), Some(25.4), None, Some(101.6), 0.36);
    pub(super) const RTX_A6000: DevicePeak = peak("NVIDIA RTX A6000", None, 38.7, Some(77.4), Some(154.8), Some(154.8), None, Some(309.7), 0.768);
    pub(super) const RTX_A5000: DevicePeak = peak("NVIDIA RTX A5000", None, 27.8, Some(55.6), Some(111.1), Some(111.1), None, Some(222.2), 0.768);
    pub(super) const RTX_2080_TI: DevicePeak = peak("NVIDIA GeForce RTX 2080 Ti", None, 13.4, None, None, Some(53.8), None, Some(215.2), 0.616);
    pub(super) const TITAN_RTX: DevicePeak = peak("NVIDIA TITAN RTX", None, 16.3, None, None, Some(130.5), None, Some(261.0), 0.672);
    pub(super) const MI300X: DevicePeak = peak("AMD Instinct MI300X", Some(163.4), 163.4, Some(653.7), Some(1307.4), Some(1307.4), Some(2614.9), Some(2614.9), 5.3);
    pub(super) const MI325X: DevicePeak = peak("AMD Instinct MI325X", Some(163.4), 163.4, Some(653.7), Some(1307.4), Some(1307.4), Some(2614.9), Some(2614.9), 6.0);
    pub(super) const MI300A: DevicePeak = peak("AMD Instinct MI300A", Some(122.6), 122.6, Some(490.3), Some(980.6), Some(980.6), Some(1961.2), Some(1961.2), 5.3);
    pub(super) const MI250X_GCD: DevicePeak = peak("AMD Instinct MI250X (one GCD)", Some(47.85), 47.85, None, Some(191.5), Some(191.5), None, Some(191.5), 1.6384);
    pub(super) const MI250_GCD: DevicePeak = peak("AMD Instinct MI250 (one GCD)", Some(45.25), 45.25, None, Some(181.0), Some(181.0), None, Some(181.0), 1.6384);
    pub(super) const MI210: DevicePeak = peak("AMD Instinct MI210", Some(45.3), 45.3, None, Some(181.0), Some(181.0), None, Some(181.0), 1.6384);
    pub(super) const MI100: DevicePeak = peak("AMD Instinct MI100", Some(11.5), 46.1, None, Some(92.3), Some(184.6), None, Some(184.6), 1.2288);
}
use table::*;

/// The peaks of `hw`, when the table knows its device. Names are matched case-insensitively,
/// most specific first; where a name does not tell two variants apart, the SM count or memory
/// size does (an `NVIDIA H100` with 114 SMs is the PCIe card; an A100 with over 48 GB is an
/// 80 GB part).
#[must_use]
pub fn device_peak(hw: &Hardware) -> Option<DevicePeak> {
    let name = hw.name.as_deref().unwrap_or("").trim().to_ascii_lowercase();
    if name.is_empty() {
        return unnamed_device_peak(hw);
    }
    let has = |s: &str| name.contains(s);
    // Short model names match whole words only: `T4` is not `T400`, `A10` not `A100`.
    let word = |w: &str| {
        name.split(|c: char| !c.is_ascii_alphanumeric())
            .any(|t| t == w)
    };
    let big_memory = hw.memory_bytes.is_some_and(|b| b > 48 << 30);
    Some(match () {
        () if has("b200") => B200,
        () if has("h200") => H200,
        () if has("h100") && has("nvl") => H100_NVL,
        () if has("h100") && (has("pcie") || hw.num_sms == Some(114)) => H100_PCIE,
        () if has("h100") => H100_SXM,
        () if has("a100") && (has("80gb") || big_memory) && has("pcie") => A100_80_PCIE,
        () if has("a100") && (has("80gb") || big_memory) => A100_80_SXM,
        () if has("a100") => A100_40,
        () if word("a30") => A30,
        () if word("a10") => A10,
        () if has("l40s") => L40S,
        () if has("l40") => L40,
        () if word("l4") => L4,
        () if word("t4") => T4,
        () if has("v100s") => V100S,
        () if has("v100") && has("pcie") => V100_PCIE,
        () if has("v100") => V100_SXM2,
        () if has("gp100") => GP100,
        () if has("p100") && has("pcie") => P100_PCIE,
        () if has("p100") => P100_SXM2,
        () if has("rtx 4090") => RTX_4090,
        () if has("rtx 4080") => RTX_4080,
        () if has("rtx 4060 ti") => RTX_4060_TI,
        () if has("rtx 4060") => RTX_4060,
        () if has("rtx 3090") => RTX_3090,
        () if has("rtx 3080") => RTX_3080,
        () if has("rtx 3060") => RTX_3060,
        () if has("rtx a6000") => RTX_A6000,
        () if has("rtx a5000") => RTX_A5000,
        () if has("rtx 2080 ti") => RTX_2080_TI,
        () if has("titan rtx") => TITAN_RTX,
        () if has("mi325x") => MI325X,
        () if has("mi300a") => MI300A,
        () if has("mi300") => MI300X,
        () if has("mi250x") => MI250X_GCD,
        () if has("mi250") => MI250_GCD,
        () if has("mi210") => MI210,
        () if has("mi100") => MI100,
        () => return None,
    })
}

/// The peaks of a device the trace does not name (ROCm's profiler may write `"name": ""`),
/// from the properties it does record, where only one part has them: gfx 9.4 with 304 CUs
/// is an MI300X (192 GiB) or MI325X (256 GiB), with 228 CUs an MI300A.
fn unnamed_device_peak(hw: &Hardware) -> Option<DevicePeak> {
    const GIB: u64 = 1 << 30;
    let memory = hw.memory_bytes?;
    match (hw.compute?, hw.num_sms?) {
        ((9, 4), 304) if (180 * GIB..=200 * GIB).contains(&memory) => Some(MI300X),
        ((9, 4), 304) if (240 * GIB..=260 * GIB).contains(&memory) => Some(MI325X),
        ((9, 4), 228) => Some(MI300A),
        _ => None,
    }
}

/// A GPU's link to its peers inside one node: the interconnect and its peak, per direction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkPeak {
    /// The interconnect (`NVLink 3 (12 links)`, `PCIe 4.0 x16`).
    pub link: &'static str,
    /// Peak bandwidth per direction, GB/s (10^9 bytes per second), from the datasheet.
    pub gb_per_s: f64,
}

/// The share of the host link's nominal rate that pinned copies reach (CUDA's
/// `bandwidthTest` and ROCm's `rocm-bandwidth-test` with pinned buffers: about 12-13 of
/// 16 GB/s on PCIe 3.0 x16, 25 of 32 on 4.0, 50-55 of 64 on 5.0; the lower end taken).
pub const PINNED_SHARE_OF_HOST_LINK: f64 = 0.75;

/// The link between the host and `hw`, from its generation (compute capability or GCN/CDNA
/// architecture): PCIe 3.0 x16 (16 GB/s per direction) through Volta and Turing, 4.0 (32)
/// for Ampere, Ada and MI100/MI200, 5.0 (64) for Hopper, Blackwell and MI300/MI350. `None`
/// for GPUs that share the host's memory (Jetson, Thor, GB10: no link to cross) and where the
/// generation is unknown. A card in a narrower slot (laptops, x8) has less.
#[must_use]
pub fn host_link(hw: &Hardware) -> Option<LinkPeak> {
    const GEN3: LinkPeak = LinkPeak {
        link: "PCIe 3.0 x16",
        gb_per_s: 16.0,
    };
    const GEN4: LinkPeak = LinkPeak {
        link: "PCIe 4.0 x16",
        gb_per_s: 32.0,
    };
    const GEN5: LinkPeak = LinkPeak {
        link: "PCIe 5.0 x16",
        gb_per_s: 64.0,
    };
    let (major, minor) = hw.compute?;
    match hw.vendor {
        Vendor::Nvidia => match (major, minor) {
            // Integrated: Tegra X2, Xavier, Orin, Thor, GB10.
            (5, 3) | (6, 2) | (7, 2) | (8, 7) | (11, 0) | (12, 1) => None,
            (3..=7, _) => Some(GEN3),
            (8, _) => Some(GEN4),
            (9 | 10 | 12, _) => Some(GEN5),
            _ => None,
        },
        Vendor::Amd => match (major, minor) {
            (9, 4 | 5) => Some(GEN5),
            (9, 0 | 8) | (10 | 11, _) => Some(GEN4),
            _ => None,
        },
        Vendor::Unknown => None,
    }
}

/// The peer interconnect of `hw` inside one node, per the vendors' datasheets: NVLink per
/// GPU for SXM/OAM parts (V100 SXM2 150 GB/s, A100 SXM 300, H100/H200 SXM 450, B200 900 GB/s
/// per direction), AMD Infinity Fabric for MI300X (7 links × 64 = 448 GB/s), and the PCIe
/// slot for PCIe cards (Gen3 16, Gen4 32, Gen5 64 GB/s at x16). A job that spans nodes is
/// bounded by its network instead, which no trace records; NCCL's bus bandwidth reaches
/// about 80 % of these figures at best (nccl-tests on DGX systems).
#[must_use]
pub fn link_peak(hw: &Hardware) -> Option<LinkPeak> {
    let name = hw.name.as_deref()?.to_ascii_lowercase();
    let has = |s: &str| name.contains(s);
    let word = |w: &str| {
        name.split(|c: char| !c.is_ascii_alphanumeric())
            .any(|t| t == w)
    };
    let pcie = has("pcie");
    let (link, gb_per_s) = match () {
        () if has("b200") => ("NVLink 5 (18 links)", 900.0),
        () if has("h100") && has("nvl") => ("NVLink 4 bridge", 300.0),
        () if (has("h100") && (pcie || hw.num_sms == Some(114))) => ("PCIe 5.0 x16", 64.0),
        () if has("h100") || has("h200") || has("h800") => ("NVLink 4 (18 links)", 450.0),
        () if has("a100") && pcie => ("PCIe 4.0 x16", 32.0),
        () if has("a100") => ("NVLink 3 (12 links)", 300.0),
        () if has("v100") && pcie => ("PCIe 3.0 x16", 16.0),
        () if has("v100") => ("NVLink 2 (6 links)", 150.0),
        () if has("mi300x") || has("mi325x") => ("Infinity Fabric (7 links)", 448.0),
        () if has("l40") || word("l4") || word("a10") => ("PCIe 4.0 x16", 32.0),
        () if word("t4") => ("PCIe 3.0 x16", 16.0),
        () => return None,
    };
    Some(LinkPeak { link, gb_per_s })
}

#[cfg(test)]
// FLOP counts of whole shapes are integers well under 2^53: exact in f64.
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;
    use crate::measure::environment::Vendor;

    #[test]
    fn the_host_link_follows_the_gpu_generation_and_integrated_gpus_have_none() {
        let gpu = |vendor, compute| Hardware {
            vendor,
            compute: Some(compute),
            ..Hardware::default()
        };
        let rate = |hw: Hardware| host_link(&hw).map(|l| l.gb_per_s);
        assert_eq!(rate(gpu(Vendor::Nvidia, (7, 5))), Some(16.0)); // T4
        assert_eq!(rate(gpu(Vendor::Nvidia, (8, 6))), Some(32.0)); // RTX A4000
        assert_eq!(rate(gpu(Vendor::Nvidia, (9, 0))), Some(64.0)); // H100
        assert_eq!(rate(gpu(Vendor::Amd, (9, 4))), Some(64.0)); // MI300X
        assert_eq!(rate(gpu(Vendor::Nvidia, (8, 7))), None); // Jetson Orin
        assert_eq!(rate(gpu(Vendor::Nvidia, (12, 1))), None); // GB10
        assert_eq!(rate(Hardware::default()), None);
    }

    fn hw(name: &str, sms: Option<i64>, gb: u64) -> Hardware {
        Hardware {
            name: Some(name.into()),
            vendor: Vendor::Nvidia,
            compute: None,
            num_sms: sms,
            memory_bytes: Some(gb << 30),
        }
    }

    #[test]
    fn corpus_device_names_find_their_entry() {
        let cases = [
            ("NVIDIA H100 80GB HBM3", Some(132), 80, "NVIDIA H100 SXM"),
            ("NVIDIA H100", Some(114), 80, "NVIDIA H100 PCIe"),
            (
                "NVIDIA A100-PG509-200",
                Some(108),
                80,
                "NVIDIA A100 80GB SXM",
            ),
            (
                "NVIDIA A100 80GB PCIe",
                Some(108),
                80,
                "NVIDIA A100 80GB PCIe",
            ),
            ("NVIDIA A100-PCIE-40GB", Some(108), 40, "NVIDIA A100 40GB"),
            ("NVIDIA A100-SXM4-40GB", Some(108), 40, "NVIDIA A100 40GB"),
            ("Tesla V100-SXM2-16GB", Some(80), 16, "NVIDIA V100 SXM2"),
            ("Tesla V100-DGXS-32GB", Some(80), 32, "NVIDIA V100 SXM2"),
            ("Tesla T4", Some(40), 16, "NVIDIA T4"),
            (
                "NVIDIA GeForce RTX 4060 Ti",
                None,
                16,
                "NVIDIA GeForce RTX 4060 Ti",
            ),
            (
                "NVIDIA GeForce RTX 4060",
                None,
                8,
                "NVIDIA GeForce RTX 4060",
            ),
            ("NVIDIA L40S", None, 48, "NVIDIA L40S"),
            ("NVIDIA L4", None, 24, "NVIDIA L4"),
            ("NVIDIA A10", None, 24, "NVIDIA A10"),
            ("Quadro GP100", None, 16, "NVIDIA Quadro GP100"),
            ("AMD Instinct MI300X VF", None, 192, "AMD Instinct MI300X"),
            ("AMD Instinct MI210", None, 64, "AMD Instinct MI210"),
        ];
        for (name, sms, gb, want) in cases {
            assert_eq!(
                device_peak(&hw(name, sms, gb)).map(|p| p.device),
                Some(want),
                "{name}"
            );
        }
        for unknown in [
            "AMD Radeon Graphics",
            "NVIDIA A10G",
            "",
            "SYNTHETIC GPU",
            "NVIDIA T400 4GB",
        ] {
            assert!(device_peak(&hw(unknown, None, 8)).is_none(), "{unknown}");
        }
    }

    #[test]
    fn an_unnamed_device_is_known_only_where_its_properties_name_one_part() {
        // vllm_decode_full/graph_execution.json.gz: `"name": ""`, gfx 9.4, 304 CUs, 192 GiB.
        let unnamed = |compute, cus, gib: u64| Hardware {
            name: Some(String::new()),
            vendor: Vendor::Amd,
            compute: Some(compute),
            num_sms: Some(cus),
            memory_bytes: Some(gib << 30),
        };
        let name = |h: &Hardware| device_peak(h).map(|p| p.device);
        assert_eq!(
            name(&unnamed((9, 4), 304, 192)),
            Some("AMD Instinct MI300X")
        );
        assert_eq!(
            name(&unnamed((9, 4), 304, 256)),
            Some("AMD Instinct MI325X")
        );
        assert_eq!(name(&unnamed((9, 4), 304, 100)), None);
        assert_eq!(name(&unnamed((9, 0), 110, 64)), None);
    }

    #[test]
    fn precisions_a_device_lacks_have_no_peak() {
        let v100 = device_peak(&hw("Tesla V100-SXM2-16GB", None, 16)).unwrap();
        assert_eq!(v100.tflops(Precision::Fp16), Some(125.0));
        assert_eq!(v100.tflops(Precision::Bf16), None);
        assert_eq!(v100.tflops(Precision::Tf32), None);
        let h100 = device_peak(&hw("NVIDIA H100 80GB HBM3", Some(132), 80)).unwrap();
        assert_eq!(h100.tflops(Precision::Bf16), Some(989.5));
    }
}
