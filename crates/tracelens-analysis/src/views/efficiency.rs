//! The efficiency view: FLOPs and bytes of the ops that dominate training and inference,
//! achieved TFLOP/s and TB/s per op and per op class, the roofline bound each hits against the
//! device's peaks, and the model FLOPs utilization (MFU) of the window.
//!
//! - An op call counts once, at the **outermost** op the cost model knows ([`crate::views::flops`]):
//!   `aten::linear` counts, the `aten::addmm` inside it does not; an op the model does not
//!   know passes the question to the ops inside it.
//! - Its time is its **device total** (the GPU time launched under it, as in the operator
//!   view); ops that launched no GPU work (CPU tensors) do not count.
//! - FP32 matrix ops whose kernels ran mostly on tensor cores count as TF32.
//! - A forward convolution recorded without its stride (PyTorch 1.x records no `Concrete
//!   Inputs`) takes its output size and dtype from the backward of the same input and weight
//!   shapes, when the trace has one and all such backwards agree.
//! - **MFU** = the window's counted FLOPs ÷ (window length × the device's dense peak for the
//!   precision that carries most matrix FLOPs). Ops without a cost model add nothing, so it
//!   is a lower bound; `coverage_percent` says how much GPU time the counted ops cover.
//! - **Bound**: compute-bound when the op's arithmetic intensity (FLOPs per byte) is at least
//!   the device's ridge point (peak FLOP/s ÷ bandwidth), else memory-bound;
//!   `roofline_percent` is achieved ÷ the roofline's attainable FLOP/s at that intensity.

use crate::measure::peaks::{DevicePeak, Precision};
use crate::views::flops::{conv_pair, op_cost, ConvPair, ConvShapes, OpClass, OpCost, OpInputs};
use crate::views::operators::{name_flags, OpTree};
use rustc_hash::FxHashMap;
use serde::Serialize;
use tracelens_model::inputs::{dims_text, parse_dims, parse_strings};
use tracelens_model::{Interval, NameId, SpanId, SpanKind, TimeNs, Trace, NO_DETAIL};

/// Most rows of the per-operator table.
pub const MAX_EFFICIENCY_OPS: usize = 20;

/// Which limit an op runs against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// Arithmetic intensity at or above the ridge point: limited by FLOP/s.
    Compute,
    /// Below the ridge point: limited by memory bandwidth.
    Memory,
}

impl Bound {
    /// Label in output.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Bound::Compute => "compute",
            Bound::Memory => "memory",
        }
    }
}

/// Achieved throughput of a group of op calls.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Throughput {
    /// Calls.
    pub calls: u64,
    /// FLOPs of those calls.
    pub flops: f64,
    /// Least bytes they move.
    pub bytes: f64,
    /// GPU time they launched.
    pub gpu_ns: TimeNs,
    /// Achieved TFLOP/s (FLOPs ÷ GPU time).
    pub tflops_per_s: f64,
    /// Achieved TB/s (bytes ÷ GPU time).
    pub tb_per_s: f64,
    /// FLOPs per byte.
    pub intensity: f64,
    /// The roofline limit at that intensity, when the device's peaks are known.
    pub bound: Option<Bound>,
    /// Achieved in percent of the roofline's attainable FLOP/s at that intensity; `None`
    /// above it (see [`Throughput::above_roofline`]) rather than clamped to 100 %.
    pub roofline_percent: Option<f64>,
    /// Achieved more than the roofline allows: data served from cache (the bytes are the
    /// least from memory), an algorithm doing fewer FLOPs than the direct count (Winograd
    /// convolution), a faster unit than the recorded precision (TF32 for FP32), or shapes
    /// that are not the launched work's.
    #[serde(default)]
    pub above_roofline: bool,
    /// GPU time of the matrix multiplies among them whose K or N dimension is not a
    /// multiple of [`crate::views::flops::ALIGNED_DIM`].
    #[serde(default)]
    pub misaligned_gpu_ns: TimeNs,
}

impl Throughput {
    fn add(&mut self, cost: &OpCost, gpu_ns: TimeNs) {
        self.calls += 1;
        self.flops += cost.flops;
        self.bytes += cost.bytes;
        self.gpu_ns += gpu_ns;
        if cost.misaligned {
            self.misaligned_gpu_ns += gpu_ns;
        }
    }

    /// Fills the rates and the roofline from the sums.
    fn rate(&mut self, precision: Precision, peak: Option<&DevicePeak>) {
        if self.gpu_ns > 0 {
            // FLOPs per ns are GFLOP/s; ÷1000 is TFLOP/s (bytes likewise).
            self.tflops_per_s = self.flops / self.gpu_ns as f64 / 1e3;
            self.tb_per_s = self.bytes / self.gpu_ns as f64 / 1e3;
        }
        if self.bytes > 0.0 {
            self.intensity = self.flops / self.bytes;
        }
        let Some(peak) = peak else {
            return;
        };
        let flops_peak = peak.tflops(precision).unwrap_or(peak.fp32);
        let ridge = flops_peak / peak.memory_tb_per_s;
        let (bound, attainable) = if self.intensity >= ridge {
            (Bound::Compute, flops_peak)
        } else {
            (Bound::Memory, self.intensity * peak.memory_tb_per_s)
        };
        self.bound = Some(bound);
        if attainable > 0.0 && self.gpu_ns > 0 {
            let percent = (self.tflops_per_s * 100.0 / attainable).max(0.0);
            self.above_roofline = percent > 100.0;
            self.roofline_percent = (percent <= 100.0).then_some(percent);
        }
    }
}

/// One op class at one precision.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct ClassEfficiency {
    /// The class.
    pub class: OpClass,
    /// The precision.
    pub precision: Precision,
    /// What its calls achieved.
    #[serde(flatten)]
    pub throughput: Throughput,
}

/// One operator with one set of input shapes.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct OpEfficiency {
    /// Operator name.
    pub name: String,
    /// `Input Dims` as recorded.
    pub input_dims: String,
    /// Its class.
    pub class: OpClass,
    /// Its precision.
    pub precision: Precision,
    /// What its calls achieved.
    #[serde(flatten)]
    pub throughput: Throughput,
}

/// Why a figure of the view is missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EfficiencyGap {
    /// The format carries no operator shapes and dtypes (an Nsight Systems export; NVTX
    /// ranges from `emit_nvtx` have shapes at most, never dtypes).
    FormatWithoutShapes,
    /// The window has no framework operators at all (an Nsight Systems export, a trace of a
    /// non-PyTorch program): FLOPs need operator events with shapes.
    NoOperators,
    /// Operators are recorded, none with `Input Dims` (recorded without
    /// `record_shapes=True`).
    NoShapes,
    /// Shapes are there, but no op the cost model knows launched GPU work.
    NoKnownOps,
    /// The device is not in the peak table (achieved rates are still given).
    UnknownDevice,
    /// The counted FLOPs over the window's time exceed the device's peak: the recorded
    /// shapes and the measured times disagree (a crafted trace, or shapes that are not the
    /// launched work's), so no MFU is given rather than one clamped to 100 %.
    AbovePeak,
}

/// The efficiency view of the window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Efficiency {
    /// The peak-table entry used (`NVIDIA H100 SXM`), when the device is known.
    pub device: Option<String>,
    /// Its dense peak TFLOP/s for [`Efficiency::mfu_precision`].
    pub peak_tflops: Option<f64>,
    /// Its memory bandwidth in TB/s.
    pub peak_tb_per_s: Option<f64>,
    /// FLOPs counted over the window.
    pub flops: f64,
    /// FLOPs per profiled step (the window's when it has no steps).
    pub flops_per_step: f64,
    /// GPU time of the counted ops.
    pub counted_gpu_ns: TimeNs,
    /// Counted GPU time in percent of the window's GPU work other than communication
    /// kernels (which have no FLOPs).
    pub coverage_percent: f64,
    /// Model FLOPs utilization of the window, in percent.
    pub mfu_percent: Option<f64>,
    /// The precision whose peak MFU is measured against.
    pub mfu_precision: Option<Precision>,
    /// Per class and precision, most GPU time first.
    pub classes: Vec<ClassEfficiency>,
    /// Per operator and shape, most GPU time first, at most [`MAX_EFFICIENCY_OPS`].
    pub operators: Vec<OpEfficiency>,
    /// What is missing, if anything.
    pub gaps: Vec<EfficiencyGap>,
}

/// What [`measure`] counts: device-independent, so it runs beside the rest of the analysis
/// before the focus device is known.
#[derive(Default)]
pub(crate) struct Counts {
    format_has_shapes: bool,
    ops_in_window: u64,
    ops_with_shapes: u64,
    gpu_work_ns: TimeNs,
    classes: FxHashMap<(OpClass, Precision), Throughput>,
    ops: FxHashMap<(NameId, u32), (OpClass, Precision, Throughput)>,
}

impl Counts {
    /// Counts one op call (`key`: its name and inputs) of `cost` that ran `gpu_ns` on the
    /// GPU, `tensor_cores.0` of it on tensor cores, `tensor_cores.1` of that in kernels of
    /// 16 bits or fewer: FP32 matrix ops mostly on tensor cores count as TF32, or as half
    /// precision where those kernels are mostly narrow (autocast casts inside the op).
    fn count(
        &mut self,
        key: (NameId, u32),
        cost: &OpCost,
        gpu_ns: TimeNs,
        tensor_cores: (TimeNs, TimeNs),
    ) {
        let mut precision = cost.precision;
        let (tensor_core_ns, narrow_ns) = tensor_cores;
        if precision == Precision::Fp32 && cost.class.is_matrix() && tensor_core_ns * 2 > gpu_ns {
            // bf16 and fp16 share a tensor-core peak on every GPU that has both.
            precision = if narrow_ns * 2 > tensor_core_ns {
                Precision::Fp16
            } else {
                Precision::Tf32
            };
        }
        self.classes
            .entry((cost.class, precision))
            .or_default()
            .add(cost, gpu_ns);
        self.ops
            .entry(key)
            .or_insert_with(|| (cost.class, precision, Throughput::default()))
            .2
            .add(cost, gpu_ns);
    }
}

/// Counts the FLOPs, bytes and GPU time of the window's op calls.
pub(crate) fn measure(trace: &Trace, tree: &OpTree, window: Interval) -> Counts {
    let mut counts = Counts {
        format_has_shapes: trace.source.records_op_inputs,
        ..Counts::default()
    };
    let m = tree.ops.len();
    // Whether an op, or one around it, already counted.
    let mut covered = vec![false; m];
    let mut cache: FxHashMap<(NameId, u32), Option<OpCost>> = FxHashMap::default();
    let pairs = conv_pairs(trace, tree);
    for k in 0..m {
        let p = tree.parent[k];
        if p != crate::views::operators::NO_OP && (p as usize) < k && covered[p as usize] {
            covered[k] = true;
            continue;
        }
        let span = &trace.spans[tree.ops[k] as usize];
        if span.kind != SpanKind::CpuOp
            || !(window.start_ns <= span.start_ns && span.start_ns < window.end_ns)
        {
            continue;
        }
        counts.ops_in_window += 1;
        let Some(detail) = trace
            .op_detail(SpanId(tree.ops[k]))
            .filter(|d| d.input_dims.is_some())
        else {
            continue;
        };
        if !tree.merged[k] {
            counts.ops_with_shapes += 1;
        }
        let gpu_ns = tree.device_total[k];
        if gpu_ns <= 0 || tree.merged[k] {
            continue;
        }
        let cost = *cache
            .entry((span.name, span.detail))
            .or_insert_with(|| cost_of(trace, span.name, detail, &pairs));
        let Some(cost) = cost else {
            continue;
        };
        covered[k] = true;
        counts.count(
            (span.name, span.detail),
            &cost,
            gpu_ns,
            (tree.tc_total[k], tree.narrow_tc_total[k]),
        );
    }
    // Calls replayed from CUDA/HIP graphs count as the eager calls do, at the op that
    // launched them at capture (each replayed kernel belongs to one call).
    for c in crate::views::replayed::replayed_calls(trace, window) {
        counts.ops_in_window += 1;
        let Some(detail) = trace
            .op_details
            .get(c.detail as usize)
            .filter(|d| d.input_dims.is_some())
        else {
            continue;
        };
        counts.ops_with_shapes += 1;
        if c.device_ns <= 0 {
            continue;
        }
        let cost = *cache
            .entry((c.op, c.detail))
            .or_insert_with(|| cost_of(trace, c.op, detail, &pairs));
        let Some(cost) = cost else {
            continue;
        };
        counts.count(
            (c.op, c.detail),
            &cost,
            c.device_ns,
            (c.tensor_core_ns, c.narrow_tensor_core_ns),
        );
    }
    // Communication kernels carry no FLOPs: coverage is of the rest.
    let communication = name_flags(trace, |name| {
        crate::vocabulary::kernels::is_communication_kernel(name)
    });
    counts.gpu_work_ns = trace
        .spans
        .iter()
        .filter(|s| {
            s.kind.is_gpu_work()
                && window.start_ns <= s.start_ns
                && s.start_ns < window.end_ns
                && !(s.kind == SpanKind::Kernel && communication[s.name.0 as usize])
        })
        .map(|s| s.dur_ns)
        .sum();
    counts
}

/// Forward (input, weight) shapes → what their convolution backward records; a key whose
/// backwards disagree is dropped (`None`).
type ConvPairs = FxHashMap<ConvShapes, Option<ConvPair>>;

/// The convolution backwards of the trace, for forwards recorded without their stride.
fn conv_pairs(trace: &Trace, tree: &OpTree) -> ConvPairs {
    let is_backward = name_flags(trace, crate::vocabulary::ops::is_convolution_backward);
    let mut pairs = ConvPairs::default();
    // Each distinct detail (name and shapes) is read once.
    let mut seen: rustc_hash::FxHashSet<(NameId, u32)> = rustc_hash::FxHashSet::default();
    for &i in &tree.ops {
        let span = &trace.spans[i as usize];
        if !is_backward[span.name.0 as usize]
            || span.detail == NO_DETAIL
            || !seen.insert((span.name, span.detail))
        {
            continue;
        }
        let Some(parsed) = trace
            .op_detail(SpanId(i))
            .and_then(|d| Parsed::of(trace, d))
        else {
            continue;
        };
        if let Some((key, pair)) = conv_pair(trace.names.get(span.name), &parsed.inputs(None)) {
            pairs
                .entry(key)
                .and_modify(|p| {
                    if p.as_ref() != Some(&pair) {
                        *p = None;
                    }
                })
                .or_insert(Some(pair));
        }
    }
    pairs
}

/// An op detail's texts, parsed.
struct Parsed {
    dims: Vec<Vec<i64>>,
    types: Vec<String>,
    concrete: Vec<String>,
}

impl Parsed {
    fn of(trace: &Trace, detail: &tracelens_model::OpDetail) -> Option<Parsed> {
        let text = |n: Option<NameId>| n.map(|n| trace.names.get(n));
        Some(Parsed {
            dims: parse_dims(text(detail.input_dims)?)?,
            types: text(detail.input_types)
                .and_then(parse_strings)
                .unwrap_or_default(),
            concrete: text(detail.concrete_inputs)
                .and_then(parse_strings)
                .unwrap_or_default(),
        })
    }

    fn inputs<'a>(&'a self, paired: Option<&'a ConvPair>) -> OpInputs<'a> {
        OpInputs {
            dims: &self.dims,
            types: &self.types,
            concrete: &self.concrete,
            paired,
        }
    }
}

fn cost_of(
    trace: &Trace,
    name: NameId,
    detail: &tracelens_model::OpDetail,
    pairs: &ConvPairs,
) -> Option<OpCost> {
    let parsed = Parsed::of(trace, detail)?;
    // A forward convolution's (input, weight) shapes find what its backward recorded.
    let paired = match (parsed.dims.first(), parsed.dims.get(1)) {
        (Some(x), Some(w)) if x.len() >= 3 && !pairs.is_empty() => {
            pairs.get(&(x.clone(), w.clone())).and_then(Option::as_ref)
        }
        _ => None,
    };
    op_cost(trace.names.get(name), &parsed.inputs(paired))
}

impl Counts {
    /// The view against `peak`, over a window of `window_ns` holding `steps` steps.
    pub(crate) fn against(
        self,
        trace: &Trace,
        peak: Option<DevicePeak>,
        window_ns: TimeNs,
        steps: usize,
    ) -> Efficiency {
        let mut gaps = Vec::new();
        if !self.format_has_shapes {
            gaps.push(EfficiencyGap::FormatWithoutShapes);
        } else if self.ops_in_window == 0 {
            gaps.push(EfficiencyGap::NoOperators);
        } else if self.ops_with_shapes == 0 {
            gaps.push(EfficiencyGap::NoShapes);
        } else if self.classes.is_empty() {
            gaps.push(EfficiencyGap::NoKnownOps);
        }
        if peak.is_none() {
            gaps.push(EfficiencyGap::UnknownDevice);
        }
        let mut classes: Vec<ClassEfficiency> = self
            .classes
            .into_iter()
            .map(|((class, precision), mut throughput)| {
                throughput.rate(precision, peak.as_ref());
                ClassEfficiency {
                    class,
                    precision,
                    throughput,
                }
            })
            .collect();
        classes.sort_by(|a, b| {
            b.throughput
                .gpu_ns
                .cmp(&a.throughput.gpu_ns)
                .then((a.class, a.precision).cmp(&(b.class, b.precision)))
        });
        let flops: f64 = classes.iter().map(|c| c.throughput.flops).sum();
        let counted_gpu_ns: TimeNs = classes.iter().map(|c| c.throughput.gpu_ns).sum();
        // The precision that carries most matrix FLOPs sets the peak MFU is measured against.
        let mut by_precision: Vec<(Precision, f64)> = Vec::new();
        for c in classes.iter().filter(|c| c.class.is_matrix()) {
            match by_precision.iter_mut().find(|(p, _)| *p == c.precision) {
                Some((_, f)) => *f += c.throughput.flops,
                None => by_precision.push((c.precision, c.throughput.flops)),
            }
        }
        let mfu_precision = by_precision
            .iter()
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
            .map(|&(p, _)| p);
        let raw_mfu_percent = match (peak, mfu_precision) {
            (Some(peak), Some(p)) if window_ns > 0 => peak
                .tflops(p)
                .map(|t| (flops / (window_ns as f64 * t * 1e3) * 100.0).max(0.0)),
            _ => None,
        };
        let mfu_percent = raw_mfu_percent.filter(|&m| m <= 100.0);
        if raw_mfu_percent.is_some() && mfu_percent.is_none() {
            gaps.insert(0, EfficiencyGap::AbovePeak);
        }
        let mut operators: Vec<OpEfficiency> = self
            .ops
            .into_iter()
            .map(|((name, detail), (class, precision, mut throughput))| {
                throughput.rate(precision, peak.as_ref());
                OpEfficiency {
                    name: trace.names.get(name).to_string(),
                    input_dims: trace
                        .op_details
                        .get(detail as usize)
                        .and_then(|d| d.input_dims)
                        .map(|n| dims_text(trace.names.get(n)))
                        .unwrap_or_default(),
                    class,
                    precision,
                    throughput,
                }
            })
            .collect();
        operators.sort_by(|a, b| {
            b.throughput
                .gpu_ns
                .cmp(&a.throughput.gpu_ns)
                .then_with(|| (&a.name, &a.input_dims).cmp(&(&b.name, &b.input_dims)))
        });
        operators.truncate(MAX_EFFICIENCY_OPS);
        Efficiency {
            device: peak.map(|p| p.device.to_string()),
            peak_tflops: peak.zip(mfu_precision).and_then(|(p, m)| p.tflops(m)),
            peak_tb_per_s: peak.map(|p| p.memory_tb_per_s),
            flops,
            flops_per_step: flops / steps.max(1) as f64,
            counted_gpu_ns,
            coverage_percent: crate::num::percent(counted_gpu_ns, self.gpu_work_ns),
            mfu_percent,
            mfu_precision,
            classes,
            operators,
            gaps,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Bound, Throughput};
    use crate::measure::peaks::{DevicePeak, Precision};

    /// H100 SXM's dense peaks.
    const H100: DevicePeak = DevicePeak {
        device: "NVIDIA H100 SXM",
        fp64: Some(67.0),
        fp32: 67.0,
        tf32: Some(494.7),
        bf16: Some(989.5),
        fp16: Some(989.5),
        fp8: Some(1979.0),
        int8: Some(1979.0),
        memory_tb_per_s: 3.35,
    };

    fn rated(flops: f64, bytes: f64, gpu_ns: i64) -> Throughput {
        let mut t = Throughput {
            calls: 1,
            flops,
            bytes,
            gpu_ns,
            ..Throughput::default()
        };
        t.rate(Precision::Bf16, Some(&H100));
        t
    }

    #[test]
    fn an_op_above_the_roofline_has_no_percent_and_says_so() {
        // 500 TFLOP/s of a compute-bound matmul: half the roofline.
        let t = rated(500e6, 1e6, 1_000);
        assert_eq!(t.bound, Some(Bound::Compute));
        assert!(!t.above_roofline);
        let p = t.roofline_percent.unwrap();
        assert!((p - 50.53).abs() < 0.01, "{p}");
        // 5,497 TFLOP/s: more than the device runs. Not clamped to 100 %: no percent, flagged.
        let t = rated(5_497e6, 1e6, 1_000);
        assert!(t.above_roofline);
        assert_eq!(t.roofline_percent, None);
        // A memory-bound op moving 10 TB/s of its least bytes (served from cache): above too.
        let t = rated(1e6, 1e7, 1_000);
        assert_eq!(t.bound, Some(Bound::Memory));
        assert!(t.above_roofline);
        assert_eq!(t.roofline_percent, None);
    }
}
