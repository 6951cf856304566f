//! The operator view (the TensorBoard profiler plugin's, whose definitions it keeps): per
//! operator name the calls, host self and total time, device self and total time, tensor-core
//! eligibility and the share of its kernel time on tensor cores.
//!
//! - **host total**: the op's duration; **host self**: minus its child ops and the runtime
//!   calls made directly under it (PyTorch's `cpu_self_time` excludes them too).
//! - **device self**: the GPU time (kernels, copies, fills) launched by runtime calls directly
//!   under the op; **device total**: launched under it or any op it encloses.
//! - Listed: `cpu_op` operators, not `ProfilerStep#`, the DataLoader's `__next__`,
//!   `Optimizer.*` or `(Distributed)DataParallel.forward` (tb_plugin's exclusions); every op
//!   still passes its device time up to the ops around it.
//! - An op directly inside an op of its own name (one overload calling another) is one call.
//! - Over the analysis window: an op counts when it starts inside it; GPU time counts for the
//!   ops around the call that launched it. (tb_plugin counts the whole file: on its answer key
//!   that is one `aten::zeros` 145 µs before the first step, which we leave out.)

use serde::Serialize;
use std::collections::HashMap;
use tracelens_model::{Interval, NameId, SpanId, SpanKind, TimeNs, Trace};

/// One operator name's totals.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct OperatorStat {
    /// The operator's name (`aten::conv2d`).
    pub name: String,
    /// Calls inside the window.
    pub calls: u64,
    /// Host time of those calls.
    pub host_total_ns: TimeNs,
    /// Host time minus child ops and the runtime calls made directly.
    pub host_self_ns: TimeNs,
    /// GPU time launched by the op and the ops inside it.
    pub device_total_ns: TimeNs,
    /// GPU time launched by the op's own runtime calls.
    pub device_self_ns: TimeNs,
    /// Whether the op can run on tensor cores (a matrix multiply or convolution, or an op
    /// enclosing one).
    pub tensor_core_eligible: bool,
    /// Device-self time on tensor-core kernels, in percent of device self.
    pub tensor_core_self_percent: f64,
    /// Device-total time on tensor-core kernels, in percent of device total.
    pub tensor_core_total_percent: f64,
}

/// The operator table, largest device self time first (then host self).
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct OperatorTable {
    /// The operators, every name once.
    pub operators: Vec<OperatorStat>,
    /// Operators seen in the window (calls summed over names).
    pub calls: u64,
}

/// Ops that are matrix multiplies or convolutions (tb_plugin's allowlist): they can use
/// tensor cores.
const TENSOR_CORE_OPS: [&str; 24] = [
    "aten::_convolution",
    "aten::addmm",
    "aten::addmm_",
    "aten::addmv",
    "aten::addmv_",
    "aten::baddbmm",
    "aten::baddbmm_",
    "aten::bmm",
    "aten::conv1d",
    "aten::conv2d",
    "aten::conv3d",
    "aten::conv_tbc",
    "aten::conv_transpose1d",
    "aten::conv_transpose2d",
    "aten::conv_transpose3d",
    "aten::convolution",
    "aten::cudnn_convolution",
    "aten::cudnn_convolution_backward_input",
    "aten::cudnn_convolution_backward_weight",
    "aten::cudnn_convolution_transpose",
    "aten::linear",
    "aten::matmul",
    "aten::mm",
    "aten::_scaled_dot_product_flash_attention",
];

/// Kernel-name fragments of tensor-core kernels (tb_plugin's list, plus the Ampere-and-later
/// names: `sm80_xmma`, `cutlass` tensor-op kernels, `hmma`/`wgmma`, Hopper cuBLAS `nvjet`,
/// and AMD's matrix-core (MFMA) kernels: `MI16x16`/`MI32x32` tiles in Tensile names).
const TENSOR_CORE_KERNELS: [&str; 30] = [
    "h884",
    "s884",
    "h1688",
    "s1688",
    "hmma",
    "i8816",
    "16816",
    "dgrad_1x1_stride_2x2",
    "first_layer_wgrad_kernel",
    "conv1x1",
    "conv2d_c1_k1",
    "direct_group",
    "xmma_implicit_gemm",
    "xmma_sparse_conv",
    "xmma_warp_specialized_implicit_gemm",
    "xmma_gemm",
    "xmma_sparse_gemm",
    "c1688",
    "tensorop",
    "wgmma",
    "gmma",
    "s16816",
    "h16816",
    "bf16816",
    "flash_fwd",
    "nvjet",
    "MI16x16",
    "MI32x32",
    "mfma",
    "MFMA",
];

/// Whether a kernel name shows a tensor-core kernel.
#[must_use]
pub fn uses_tensor_cores(kernel: &str) -> bool {
    TENSOR_CORE_KERNELS.iter().any(|k| kernel.contains(k))
}

fn is_op_like(kind: SpanKind) -> bool {
    matches!(kind, SpanKind::CpuOp | SpanKind::UserAnnotation)
}

/// Whether tb_plugin lists an op of this name (it still passes time up to its parents).
fn is_listed(trace: &Trace, id: SpanId) -> bool {
    let span = trace.span(id);
    if span.kind != SpanKind::CpuOp || trace.is_step_span(id) {
        return false;
    }
    let name = trace.name(id);
    !(name.starts_with("ProfilerStep#")
        || (name.starts_with("enumerate(DataLoader)#") && name.ends_with(".__next__"))
        || name.starts_with("Optimizer.")
        || name == "DataParallel.forward"
        || name == "DistributedDataParallel.forward")
}

/// The nearest enclosing operator or user range of `id` (Python frames are looked through).
fn op_parent(trace: &Trace, id: SpanId) -> Option<SpanId> {
    trace
        .ancestors(id)
        .find(|&a| is_op_like(trace.span(a).kind))
}

/// Whether op `id` sits directly in an op of its own name (`aten::div` calling another
/// `aten::div` overload): it is one call of that op, as tb_plugin counts it, so its time,
/// its children and its launches belong to the outer one.
fn is_merged(trace: &Trace, id: SpanId) -> bool {
    let span = trace.span(id);
    span.kind == SpanKind::CpuOp
        && op_parent(trace, id).is_some_and(|p| trace.span(p).name == span.name)
}

/// The op that owns what happens directly under `id`: `id`, or the outer op it is merged
/// into.
fn owner(trace: &Trace, mut id: SpanId) -> SpanId {
    for _ in 0..tracelens_model::MAX_ANCESTORS {
        if !is_merged(trace, id) {
            break;
        }
        match op_parent(trace, id) {
            Some(p) => id = p,
            None => break,
        }
    }
    id
}

#[derive(Default, Clone, Copy)]
struct Acc {
    calls: u64,
    host_total: TimeNs,
    host_self: TimeNs,
    device_total: TimeNs,
    device_self: TimeNs,
    tc_total: TimeNs,
    tc_self: TimeNs,
    eligible: bool,
}

/// Per-span sums before they are grouped by name.
#[derive(Default, Clone, Copy)]
struct PerSpan {
    child_host: TimeNs,
    device_total: TimeNs,
    device_self: TimeNs,
    tc_total: TimeNs,
    tc_self: TimeNs,
    eligible: bool,
}

/// The operator table over `window` (the analysis window's interval; the whole trace for
/// tb_plugin's scope).
#[must_use]
pub fn operator_table(trace: &Trace, window: Interval) -> OperatorTable {
    let w = window;
    let within = |id: SpanId| (w.start_ns..w.end_ns).contains(&trace.span(id).start_ns);
    let mut per: HashMap<SpanId, PerSpan> = HashMap::new();
    // Host: each op's and runtime call's time is taken from its enclosing op's self time.
    for (i, s) in trace.spans.iter().enumerate() {
        let counted = is_op_like(s.kind) || matches!(s.kind, SpanKind::Runtime);
        if !counted {
            continue;
        }
        let id = SpanId::at(i);
        if is_merged(trace, id) {
            continue;
        }
        if let Some(p) = op_parent(trace, id) {
            per.entry(owner(trace, p)).or_default().child_host += s.dur_ns;
        }
    }
    // Device: each GPU op's time goes to the op around its launch (self) and every op
    // around that (total).
    for (i, s) in trace.spans.iter().enumerate() {
        if !matches!(
            s.kind,
            SpanKind::Kernel | SpanKind::Memcpy | SpanKind::Memset
        ) {
            continue;
        }
        let Some(launch) = trace.launch_of(SpanId::at(i)) else {
            continue;
        };
        let tc = s.kind == SpanKind::Kernel && uses_tensor_cores(trace.names.get(s.name));
        let tc_ns = if tc { s.dur_ns } else { 0 };
        let mut first = true;
        for a in trace.ancestors(launch) {
            if !is_op_like(trace.span(a).kind) || is_merged(trace, a) {
                continue;
            }
            let e = per.entry(a).or_default();
            e.device_total += s.dur_ns;
            e.tc_total += tc_ns;
            if first {
                e.device_self += s.dur_ns;
                e.tc_self += tc_ns;
                first = false;
            }
        }
    }
    // Eligibility spreads up: an op enclosing an eligible op is eligible.
    let eligible_names: Vec<bool> = (0..trace.names.len())
        .map(|n| TENSOR_CORE_OPS.contains(&trace.names.get(NameId::at(n))))
        .collect();
    for (i, s) in trace.spans.iter().enumerate() {
        if s.kind != SpanKind::CpuOp || !eligible_names[s.name.0 as usize] {
            continue;
        }
        let id = SpanId::at(i);
        per.entry(id).or_default().eligible = true;
        for a in trace.ancestors(id) {
            if trace.span(a).kind == SpanKind::CpuOp {
                per.entry(a).or_default().eligible = true;
            }
        }
    }
    let mut by_name: HashMap<NameId, Acc> = HashMap::new();
    let mut calls = 0;
    for (i, s) in trace.spans.iter().enumerate() {
        let id = SpanId::at(i);
        if s.kind != SpanKind::CpuOp || !within(id) || !is_listed(trace, id) || is_merged(trace, id)
        {
            continue;
        }
        let p = per.get(&id).copied().unwrap_or_default();
        let a = by_name.entry(s.name).or_default();
        a.calls += 1;
        a.host_total += s.dur_ns;
        a.host_self += (s.dur_ns - p.child_host).max(0);
        a.device_total += p.device_total;
        a.device_self += p.device_self;
        a.tc_total += p.tc_total;
        a.tc_self += p.tc_self;
        a.eligible |= p.eligible || p.tc_total > 0;
        calls += 1;
    }
    let percent = |part: TimeNs, of: TimeNs| {
        if of > 0 {
            (part as f64 * 100.0 / of as f64).clamp(0.0, 100.0)
        } else {
            0.0
        }
    };
    let mut operators: Vec<OperatorStat> = by_name
        .into_iter()
        .map(|(name, a)| OperatorStat {
            name: trace.names.get(name).to_string(),
            calls: a.calls,
            host_total_ns: a.host_total,
            host_self_ns: a.host_self,
            device_total_ns: a.device_total,
            device_self_ns: a.device_self,
            tensor_core_eligible: a.eligible,
            tensor_core_self_percent: percent(a.tc_self, a.device_self),
            tensor_core_total_percent: percent(a.tc_total, a.device_total),
        })
        .collect();
    operators.sort_by(|a, b| {
        b.device_self_ns
            .cmp(&a.device_self_ns)
            .then(b.host_self_ns.cmp(&a.host_self_ns))
            .then_with(|| a.name.cmp(&b.name))
    });
    OperatorTable { operators, calls }
}
