//! GPU kernels by total time inside the analysis window, and the classes kernel names fall in
//! (what a GPU-bound verdict names as the next thing to work on).

use crate::measure::environment::{
    Framework, Hardware, TorchVersion, Vendor, OPTIMIZER_FOREACH, TORCH_COMPILE,
};
pub use crate::vocabulary::kernels::Precision;
pub use crate::vocabulary::kernels::{kernel_class, KernelClass};
use rustc_hash::FxHashMap;
use serde::Serialize;
use tracelens_model::{Interval, NameId, SpanId, SpanKind, TimeNs, Trace};

/// One kernel name's totals.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct KernelStat {
    /// Kernel name.
    pub name: String,
    /// The class of the name.
    pub class: KernelClass,
    /// Launches.
    pub count: u64,
    /// Total GPU time inside the window.
    pub total_ns: TimeNs,
    /// Mean duration.
    pub mean_ns: TimeNs,
    /// Shortest launch (inside the window).
    #[serde(default)]
    pub min_ns: TimeNs,
    /// Longest launch.
    #[serde(default)]
    pub max_ns: TimeNs,
    /// Whether the name shows a tensor-core kernel.
    #[serde(default)]
    pub tensor_cores: bool,
    /// The framework op that launched most of its time (for a kernel replayed from a
    /// CUDA/HIP graph, the op that launched it at capture), when the trace says.
    #[serde(default)]
    pub launched_by: Option<String>,
    /// Share of all kernel time, in percent.
    pub share_percent: f64,
    /// The launch configuration of its longest call, when the trace records launches.
    #[serde(default)]
    pub launch: Option<LaunchConfig>,
    /// Blocks per multiprocessor, mean over calls weighted by duration (tb_plugin's "Mean
    /// Blocks Per SM"; below 1 leaves multiprocessors idle), when the SM count is known.
    #[serde(default)]
    pub mean_blocks_per_sm: Option<f64>,
    /// CUPTI's estimated achieved occupancy in percent, mean weighted by duration (Kineto
    /// traces of CUDA only); `None` also where every launch reads 0 (CUPTI's "could not
    /// estimate").
    #[serde(default)]
    pub mean_est_occupancy_percent: Option<f64>,
}

/// A kernel's launch configuration, as output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct LaunchConfig {
    /// Blocks per dimension.
    pub grid: [u32; 3],
    /// Threads per block per dimension.
    pub block: [u32; 3],
    /// Registers per thread.
    pub registers_per_thread: u32,
    /// Shared memory per block in bytes.
    pub shared_memory_bytes: u32,
}

impl KernelClass {
    /// The next thing to try when this class dominates a GPU-bound run, naming only the
    /// precisions `hw` has beyond the one its kernels already run in (`precision`, from
    /// their names) and the APIs `fw`'s PyTorch has.
    #[must_use]
    pub fn next_step(self, hw: &Hardware, fw: &Framework, precision: Option<Precision>) -> String {
        match self {
            KernelClass::GemmFp32 => fp32_gemm_step(hw, fw),
            KernelClass::Gemm => {
                let shapes = "their shapes (record_shapes=True) would show whether they are too small to fill the GPU (small batches, decode) or have dimensions that are not multiples of 8";
                match gemm_precision_step(hw, precision) {
                    Some(step) => format!("{step}; {shapes}"),
                    None => shapes.into(),
                }
            }
            KernelClass::Convolution if hw.has_tensor_cores() == Some(false) => {
                "use channels_last memory format and torch.backends.cudnn.benchmark = True (this GPU has no tensor cores for mixed precision)".into()
            }
            KernelClass::Convolution => "use mixed precision with channels_last memory format and torch.backends.cudnn.benchmark = True".into(),
            KernelClass::Attention => match fw.at_least(TORCH_COMPILE) {
                Some(true) => "use torch.nn.functional.scaled_dot_product_attention (flash / memory-efficient kernels) instead of explicit matmul + softmax".into(),
                None => "use torch.nn.functional.scaled_dot_product_attention (PyTorch 2.0+; flash / memory-efficient kernels) instead of explicit matmul + softmax".into(),
                Some(false) => "use a fused attention kernel (a FlashAttention or xFormers package) instead of explicit matmul + softmax".into(),
            },
            KernelClass::Normalization | KernelClass::Elementwise | KernelClass::Reduction if fw.compiled => {
                "these are memory-bound and the code is already compiled: look for graph breaks and ops the compiler left unfused (the torch.compile section), and keep activations in lower precision to cut memory traffic".into()
            }
            KernelClass::Normalization | KernelClass::Elementwise | KernelClass::Reduction => match fw.at_least(TORCH_COMPILE) {
                Some(true) => "these are memory-bound: fuse them (torch.compile, fused layers) to cut memory traffic".into(),
                None => "these are memory-bound: fuse them (torch.compile on PyTorch 2.0+, fused layers) to cut memory traffic".into(),
                Some(false) => "these are memory-bound: fuse them (fused layers, custom fused kernels) to cut memory traffic".into(),
            },
            KernelClass::Embedding => "lookups are memory-bound: batch the tables into one fused table-batched embedding, keep indices on the GPU, and use lower-precision (fp16/int8) tables where accuracy allows".into(),
            KernelClass::Optimizer if fw.at_least(OPTIMIZER_FOREACH) == Some(false) => {
                "use a multi-tensor optimizer (apex.optimizers) instead of one kernel per parameter".into()
            }
            KernelClass::Optimizer => "use a fused or foreach optimizer".into(),
            KernelClass::Communication => "overlap or shrink communication".into(),
            KernelClass::Other => "look at the top kernels table for the largest kernels".into(),
        }
    }
}

/// The precision lever for 16-bit-or-narrower matrix multiplies (`precision`, from their
/// kernels' names) on `hw`, as a clause; `None` where the trace leaves none to name.
#[must_use]
pub fn gemm_precision_step(hw: &Hardware, precision: Option<Precision>) -> Option<String> {
    Some(match (precision, hw.has_bf16(), hw.has_fp8()) {
        (Some(Precision::Fp4 | Precision::Fp8), _, _) => {
            "they already run in FP8 or fewer bits: what is left is more rows through each multiply (a larger batch; in serving, more concurrent requests), which pays where each multiply reads its weights for few rows".into()
        }
        (Some(Precision::Half), _, Some(true)) => "FP8 is the next step".into(),
        (Some(Precision::Half), _, Some(false)) => {
            "they already run in 16-bit floats, the narrowest floating-point type this GPU's matrix units take: for inference, INT8 quantization (of the weights, or of weights and activations) is the next step".into()
        }
        (Some(Precision::Half), _, None) => format!("FP8 is the next step ({})", fp8_gpus(hw.vendor)),
        (_, _, Some(true)) => "lower precision (bf16, then FP8) is the next step".into(),
        (_, Some(true), _) => "bf16 is the lowest precision this GPU runs on its matrix units".into(),
        (_, Some(false), _) => return None,
        (_, None, None | Some(false)) => format!(
            "lower precision ({}) is the next step",
            lower_precision_gpus(hw.vendor)
        ),
    })
}

/// Which GPUs of `vendor` run FP8 on their matrix units, in that vendor's words.
fn fp8_gpus(vendor: Vendor) -> &'static str {
    match vendor {
        Vendor::Nvidia => "on compute capability 8.9+",
        Vendor::Amd => "on Instinct MI300 and later",
        Vendor::Unknown => "where the GPU has it",
    }
}

/// Which GPUs of `vendor` run bf16 and FP8 on their matrix units, in that vendor's words.
fn lower_precision_gpus(vendor: Vendor) -> &'static str {
    match vendor {
        Vendor::Nvidia => "bf16 on compute capability 8.0+, FP8 on 8.9+",
        Vendor::Amd => "bf16 on Instinct MI200 and later, FP8 on MI300 and later",
        Vendor::Unknown => "bf16, or FP8 where the GPU has it",
    }
}

/// What speeds up FP32 matrix multiplies on this GPU: TF32 or bf16 from compute capability
/// 8.0, fp16 with a gradient scaler on 7.x, nothing but bigger matrices without tensor cores;
/// autocast spelled as the trace's PyTorch has it (`torch.autocast` and bf16 from 1.10,
/// `torch.cuda.amp.autocast` before).
fn fp32_gemm_step(hw: &Hardware, fw: &Framework) -> String {
    let old_autocast = fw.at_least(TorchVersion::new(1, 10)) == Some(false);
    match (hw.vendor, hw.has_tf32(), hw.has_tensor_cores()) {
        (_, Some(true), _) if old_autocast => "enable TF32 (torch.backends.cuda.matmul.allow_tf32 = True) or mixed precision (torch.cuda.amp.autocast() with a GradScaler) so they run on tensor cores".into(),
        (_, Some(true), _) => "enable TF32 (torch.backends.cuda.matmul.allow_tf32 = True) or mixed precision (torch.autocast with bf16) so they run on tensor cores".into(),
        (_, Some(false), Some(true)) => format!(
            "use mixed precision, {} with a GradScaler, so they run on tensor cores (fp16 is the tensor-core precision of {})",
            if old_autocast {
                "torch.cuda.amp.autocast()"
            } else {
                "torch.autocast(\"cuda\", dtype=torch.float16)"
            },
            hw.describe()
        ),
        (_, Some(false), _) => format!(
            "{} has no tensor cores: larger matrices, fewer of them, or a newer GPU speed them up",
            hw.describe()
        ),
        (Vendor::Amd, _, Some(true)) => "use mixed precision (torch.autocast with bf16) so they run on the matrix cores".into(),
        (Vendor::Amd, _, _) => "use mixed precision (torch.autocast with bf16 on Instinct MI200 and later) so they run on the matrix cores".into(),
        (Vendor::Unknown, _, _) => "use mixed precision (torch.autocast with bf16, or fp16 with a GradScaler) so they run on the GPU's matrix units".into(),
        _ => "use mixed precision so they run on tensor cores: TF32 or bf16 on compute capability 8.0+, fp16 autocast with a GradScaler on 7.x".into(),
    }
}

/// The share of kernel time inside `window` spent in tensor-core kernels (by name), in
/// percent; `None` without kernel time.
#[must_use]
pub fn tensor_core_percent(trace: &Trace, window: Option<Interval>) -> Option<f64> {
    let (mut all, mut tc): (TimeNs, TimeNs) = (0, 0);
    let mut is_tc: FxHashMap<NameId, bool> = FxHashMap::default();
    for s in &trace.spans {
        if s.kind != SpanKind::Kernel {
            continue;
        }
        let Some(iv) = window.map_or(Some(s.interval()), |w| s.interval().clip(w)) else {
            continue;
        };
        all += iv.dur_ns();
        let uses = *is_tc.entry(s.name).or_insert_with(|| {
            crate::vocabulary::kernels::uses_matrix_cores(trace.names.get(s.name))
        });
        if uses {
            tc += iv.dur_ns();
        }
    }
    (all > 0).then(|| crate::num::percent(tc, all))
}

/// The `limit` kernels with the most time inside `window`.
#[must_use]
pub fn top_kernels(trace: &Trace, window: Option<Interval>, limit: usize) -> Vec<KernelStat> {
    #[derive(Clone, Copy)]
    struct Acc {
        count: u64,
        total: TimeNs,
        min: TimeNs,
        max: TimeNs,
        longest_detail: u32,
        blocks_weighted: f64,
        blocks_ns: TimeNs,
        occupancy_weighted: f64,
        occupancy_ns: TimeNs,
    }
    // SMs of each lane's device, for blocks per SM.
    let sms_of_lane: Vec<Option<f64>> = trace
        .lanes
        .iter()
        .map(|l| match l.key {
            tracelens_model::LaneKey::Gpu { device, .. } => trace
                .metadata
                .device_properties
                .iter()
                .find(|p| p.id == device)
                .and_then(|p| p.num_sms)
                .filter(|&n| n > 0)
                .map(|n| n as f64),
            tracelens_model::LaneKey::Cpu { .. } => None,
        })
        .collect();
    let mut by_name: FxHashMap<NameId, Acc> = FxHashMap::default();
    let mut all: TimeNs = 0;
    for s in &trace.spans {
        if s.kind != SpanKind::Kernel {
            continue;
        }
        let Some(iv) = window.map_or(Some(s.interval()), |w| s.interval().clip(w)) else {
            continue;
        };
        let d = iv.dur_ns();
        let e = by_name.entry(s.name).or_insert(Acc {
            count: 0,
            total: 0,
            min: TimeNs::MAX,
            max: -1,
            longest_detail: tracelens_model::NO_DETAIL,
            blocks_weighted: 0.0,
            blocks_ns: 0,
            occupancy_weighted: 0.0,
            occupancy_ns: 0,
        });
        e.count += 1;
        e.total += d;
        e.min = e.min.min(d);
        if d > e.max {
            e.max = d;
            e.longest_detail = s.detail;
        }
        if s.detail != tracelens_model::NO_DETAIL {
            if let Some(launch) = trace.kernel_launches.get(s.detail as usize) {
                if let Some(sms) = sms_of_lane.get(s.lane.0 as usize).copied().flatten() {
                    e.blocks_weighted += d as f64 * launch.blocks() as f64 / sms;
                    e.blocks_ns += d;
                }
                if let Some(occ) = launch.est_occupancy_percent {
                    e.occupancy_weighted += d as f64 * f64::from(occ);
                    e.occupancy_ns += d;
                }
            }
        }
        all += d;
    }
    let weighted = |sum: f64, ns: TimeNs| (ns > 0).then(|| sum / ns as f64);
    let mut stats: Vec<KernelStat> = by_name
        .into_iter()
        .map(|(n, a)| {
            let name = trace.names.get(n);
            KernelStat {
                name: name.to_string(),
                class: kernel_class(name),
                count: a.count,
                total_ns: a.total,
                mean_ns: a.total / crate::num::count_i64(a.count.max(1)),
                min_ns: a.min,
                max_ns: a.max.max(0),
                tensor_cores: crate::vocabulary::kernels::uses_matrix_cores(name),
                launched_by: None,
                share_percent: crate::num::percent(a.total, all),
                launch: trace
                    .kernel_launches
                    .get(a.longest_detail as usize)
                    .map(|l| LaunchConfig {
                        grid: l.grid,
                        block: l.block,
                        registers_per_thread: l.registers_per_thread,
                        shared_memory_bytes: l.shared_memory_bytes,
                    }),
                mean_blocks_per_sm: weighted(a.blocks_weighted, a.blocks_ns),
                // tb_plugin's mean counts CUPTI's zeros; a kernel whose every launch reads 0
                // was never estimated (it ran, so it occupied something): not 0 %.
                mean_est_occupancy_percent: weighted(a.occupancy_weighted, a.occupancy_ns)
                    .filter(|&p| p > 0.0)
                    .map(|p| p.clamp(0.0, 100.0)),
            }
        })
        .collect();
    stats.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then_with(|| a.name.cmp(&b.name))
    });
    stats.truncate(limit);
    launched_by(trace, window, &mut stats);
    stats
}

/// Fills each listed kernel's `launched_by`: the op with the most of its time, from the
/// capture for a replayed kernel, else the innermost framework op around its launch call.
fn launched_by(trace: &Trace, window: Option<Interval>, stats: &mut [KernelStat]) {
    let listed: FxHashMap<&str, usize> = stats
        .iter()
        .enumerate()
        .map(|(i, k)| (k.name.as_str(), i))
        .collect();
    let mut names: FxHashMap<NameId, Option<usize>> = FxHashMap::default();
    let mut time: FxHashMap<(usize, NameId), TimeNs> = FxHashMap::default();
    for (i, s) in trace.spans.iter().enumerate() {
        if s.kind != SpanKind::Kernel {
            continue;
        }
        let row = *names
            .entry(s.name)
            .or_insert_with(|| listed.get(trace.names.get(s.name)).copied());
        let Some(row) = row else { continue };
        let Some(iv) = window.map_or(Some(s.interval()), |w| s.interval().clip(w)) else {
            continue;
        };
        let id = SpanId::at(i);
        let op = match trace.graph_origin(id) {
            Some(origin) => origin.op,
            None => trace.launch_of(id).and_then(|api| {
                trace
                    .ancestors(api)
                    .take(8)
                    .find(|&a| trace.span(a).kind == SpanKind::CpuOp)
                    .map(|a| trace.span(a).name)
            }),
        };
        if let Some(op) = op {
            *time.entry((row, op)).or_default() += iv.dur_ns();
        }
    }
    let mut best: FxHashMap<usize, (TimeNs, NameId)> = FxHashMap::default();
    for ((row, op), ns) in time {
        let e = best.entry(row).or_insert((ns, op));
        if (ns, std::cmp::Reverse(op.0)) > (e.0, std::cmp::Reverse(e.1 .0)) {
            *e = (ns, op);
        }
    }
    for (row, (_, op)) in best {
        stats[row].launched_by = Some(trace.names.get(op).to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(vendor: Vendor, name: &str, compute: (i64, i64)) -> Hardware {
        Hardware {
            name: Some(name.into()),
            vendor,
            compute: Some(compute),
            ..Hardware::default()
        }
    }

    #[test]
    fn fp32_matmul_advice_names_only_the_precisions_the_gpu_has() {
        let step = |hw: &Hardware| KernelClass::GemmFp32.next_step(hw, &Framework::default(), None);
        let v100 = gpu(Vendor::Nvidia, "Tesla V100-SXM2-16GB", (7, 0));
        let s = step(&v100);
        assert!(
            s.contains("torch.float16") && s.contains("GradScaler"),
            "{s}"
        );
        assert!(!s.contains("TF32") && !s.contains("bf16"), "{s}");
        let a100 = gpu(Vendor::Nvidia, "NVIDIA A100-SXM4-80GB", (8, 0));
        assert!(step(&a100).contains("allow_tf32"));
        let p100 = gpu(Vendor::Nvidia, "Tesla P100-PCIE-16GB", (6, 0));
        assert!(
            step(&p100).contains("has no tensor cores"),
            "{}",
            step(&p100)
        );
        let mi300 = gpu(Vendor::Amd, "AMD Instinct MI300X", (9, 4));
        let s = step(&mi300);
        assert!(s.contains("bf16") && !s.contains("TF32"), "{s}");
        let nvidia = Hardware {
            vendor: Vendor::Nvidia,
            ..Hardware::default()
        };
        assert!(step(&nvidia).contains("on compute capability 8.0+"));
        // A GPU of unknown vendor or generation gets no vendor's words.
        for hw in [
            Hardware::default(),
            Hardware {
                vendor: Vendor::Amd,
                ..Hardware::default()
            },
        ] {
            assert!(!step(&hw).contains("compute capability"), "{}", step(&hw));
        }
    }

    #[test]
    fn next_steps_name_only_what_the_recorded_pytorch_has() {
        let old = Framework {
            torch_max: Some(TorchVersion::new(1, 8)),
            ..Framework::default()
        };
        let v100 = gpu(Vendor::Nvidia, "Tesla V100-SXM2-16GB", (7, 0));
        let s = KernelClass::GemmFp32.next_step(&v100, &old, None);
        assert!(
            s.contains("torch.cuda.amp.autocast()") && !s.contains("torch.autocast"),
            "{s}"
        );
        let s = KernelClass::Attention.next_step(&v100, &old, None);
        assert!(!s.contains("scaled_dot_product_attention"), "{s}");
        let s = KernelClass::Normalization.next_step(&v100, &old, None);
        assert!(!s.contains("torch.compile"), "{s}");
        let s = KernelClass::Optimizer.next_step(&v100, &old, None);
        assert!(!s.contains("foreach"), "{s}");
        let new = Framework {
            torch_min: Some(TorchVersion::new(2, 4)),
            ..Framework::default()
        };
        assert!(KernelClass::Attention
            .next_step(&v100, &new, None)
            .starts_with("use torch.nn.functional.scaled_dot_product_attention (flash"));
    }

    #[test]
    fn low_precision_matmul_advice_offers_fp8_only_where_it_exists() {
        let step = |hw: &Hardware| KernelClass::Gemm.next_step(hw, &Framework::default(), None);
        let a100 = gpu(Vendor::Nvidia, "NVIDIA A100-SXM4-80GB", (8, 0));
        assert!(!step(&a100).contains("FP8"), "{}", step(&a100));
        let h100 = gpu(Vendor::Nvidia, "NVIDIA H100 80GB HBM3", (9, 0));
        assert!(step(&h100).contains("FP8"));
        let v100 = gpu(Vendor::Nvidia, "Tesla V100-SXM2-16GB", (7, 0));
        assert!(!step(&v100).contains("FP8") && !step(&v100).contains("bf16"));
        // An AMD GPU is never told NVIDIA's compute capabilities.
        let amd = Hardware {
            vendor: Vendor::Amd,
            ..Hardware::default()
        };
        assert!(
            step(&amd).contains("FP8 on MI300 and later"),
            "{}",
            step(&amd)
        );
        assert!(!step(&amd).contains("compute capability"));
    }

    #[test]
    fn matmul_advice_starts_from_the_precision_the_kernels_already_run_in() {
        let gemm = |hw: &Hardware, p| KernelClass::Gemm.next_step(hw, &Framework::default(), p);
        // vLLM's MXFP4 MoE GEMMs on an MI300X (gfx942, no device name in the trace).
        let mi300 = Hardware {
            vendor: Vendor::Amd,
            compute: Some((9, 4)),
            ..Hardware::default()
        };
        let s = gemm(&mi300, Some(Precision::Fp4));
        assert!(
            s.starts_with("they already run in FP8 or fewer bits"),
            "{s}"
        );
        assert_eq!(mi300.has_fp8(), Some(true));
        assert!(gemm(&mi300, Some(Precision::Half)).starts_with("FP8 is the next step"));
        // Without shapes nothing says the dimensions are off or the batch too small: the
        // advice says what would tell.
        for p in [None, Some(Precision::Half), Some(Precision::Fp8)] {
            let s = gemm(&mi300, p);
            assert!(!s.contains("check that"), "{s}");
            assert!(s.contains("record_shapes=True"), "{s}");
        }
        let a100 = gpu(Vendor::Nvidia, "NVIDIA A100-SXM4-80GB", (8, 0));
        assert!(gemm(&a100, Some(Precision::Half)).contains("INT8 quantization"));
    }
}
