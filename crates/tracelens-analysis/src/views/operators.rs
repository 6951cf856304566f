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
use tracelens_model::inputs::dims_text;
use tracelens_model::{Interval, NameId, SpanId, SpanKind, TimeNs, Trace};

/// One operator name's totals.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct OperatorStat {
    /// The operator's name (`aten::conv2d`).
    pub name: String,
    /// Calls inside the window.
    pub calls: u64,
    /// Of those, calls replayed from CUDA/HIP graphs (device time only;
    /// [`crate::views::replayed`]).
    #[serde(default)]
    pub replayed_calls: u64,
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
    /// Where its calls come from: the innermost Python frame outside libraries, most calls
    /// first (at most [`MAX_CALL_SITES`], from up to [`CALL_SITE_SAMPLE`] calls); empty
    /// without Python frames or call stacks.
    #[serde(default)]
    pub call_sites: Vec<CallSite>,
}

/// One call site of an operator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CallSite {
    /// `file.py:87 train_step`.
    pub site: String,
    /// Sampled calls from there.
    pub calls: u64,
}

/// One operator name with one set of input shapes (tb_plugin's "group by input shape").
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct OperatorShapeStat {
    /// The operator's name.
    pub name: String,
    /// Its input shapes (`[32, 3, 224, 224], [64, 3, 7, 7]`; scalars left out).
    pub input_dims: String,
    /// Calls with these shapes.
    pub calls: u64,
    /// Host time of those calls.
    pub host_total_ns: TimeNs,
    /// Host self time.
    pub host_self_ns: TimeNs,
    /// GPU time launched by them and the ops inside them.
    pub device_total_ns: TimeNs,
    /// GPU time launched by their own runtime calls.
    pub device_self_ns: TimeNs,
}

/// Most call sites kept per operator.
pub const MAX_CALL_SITES: usize = 3;
/// Calls per operator name whose Python frames are read for call sites.
pub const CALL_SITE_SAMPLE: usize = 256;

/// The operator table, largest device self time first (then host self).
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct OperatorTable {
    /// The operators, every name once.
    pub operators: Vec<OperatorStat>,
    /// Per operator and input shapes, most device self time first (only calls recorded
    /// with shapes, `record_shapes=True`).
    pub by_shape: Vec<OperatorShapeStat>,
    /// Operators seen in the window (calls summed over names).
    pub calls: u64,
    /// Of those, calls replayed from CUDA/HIP graphs ([`crate::views::replayed`]): device
    /// time from the replay, no host time.
    #[serde(default)]
    pub replayed_calls: u64,
}

fn is_op_like(kind: SpanKind) -> bool {
    matches!(kind, SpanKind::CpuOp | SpanKind::UserAnnotation)
}

/// "No span" in the index arrays below.
const NONE: u32 = u32::MAX;

/// For every span, its nearest enclosing operator or user range (Python frames are looked
/// through), computed once: a parent sorts before its children, so one pass in index order
/// finds each from its parent's.
pub(crate) fn op_parents(trace: &Trace) -> Vec<u32> {
    let mut out = vec![NONE; trace.spans.len()];
    for i in 0..trace.spans.len() {
        let Some(p) = trace.parent(SpanId::at(i)) else {
            continue;
        };
        let pi = p.0 as usize;
        out[i] = if is_op_like(trace.spans[pi].kind) {
            p.0
        } else if pi < i {
            out[pi]
        } else {
            // Not expected (parents sort first); walk instead.
            trace
                .ancestors(p)
                .find(|&a| is_op_like(trace.span(a).kind))
                .map_or(NONE, |a| a.0)
        };
    }
    out
}

/// A per-name flag, computed once per name (names are few; spans are millions).
pub(crate) fn name_flags(trace: &Trace, flag: impl Fn(&str) -> bool) -> Vec<bool> {
    (0..trace.names.len())
        .map(|i| flag(trace.names.get(NameId::at(i))))
        .collect()
}

/// Every operator and user range of the trace with its host and device times, computed once
/// and shared by the operator table, the by-shape table and the efficiency view. Indexed
/// densely (`k`), in span order, so a parent comes before its children.
pub(crate) struct OpTree {
    /// Span index of each op.
    pub ops: Vec<u32>,
    /// Dense index of the op around each op ([`NONE`] at the top).
    pub parent: Vec<u32>,
    /// Whether the op is merged into an enclosing op of its own name.
    pub merged: Vec<bool>,
    /// Host time of child ops and runtime calls directly under the op.
    pub child_host: Vec<TimeNs>,
    /// GPU time launched by the op's own runtime calls.
    pub device_self: Vec<TimeNs>,
    /// GPU time launched under the op or any op inside it.
    pub device_total: Vec<TimeNs>,
    /// Tensor-core kernel time of `device_self`.
    pub tc_self: Vec<TimeNs>,
    /// Tensor-core kernel time of `device_total`.
    pub tc_total: Vec<TimeNs>,
    /// Of `tc_total`, the kernels whose names show 16-bit or narrower inputs (an FP32 op under
    /// autocast runs them).
    pub narrow_tc_total: Vec<TimeNs>,
    /// Whether the op or one inside it is a tensor-core-eligible op.
    pub eligible: Vec<bool>,
}

/// "No op" in [`OpTree::parent`].
pub(crate) const NO_OP: u32 = NONE;

impl OpTree {
    /// Builds the tree: one pass for direct times, one reverse pass for totals.
    pub fn build(trace: &Trace) -> OpTree {
        let n = trace.spans.len();
        let parent = op_parents(trace);
        // Ops (operators and user ranges) get dense indices: the per-op sums below are sized
        // by them, not by every span.
        let mut dense = vec![NONE; n];
        let mut ops: Vec<u32> = Vec::new();
        for (i, s) in trace.spans.iter().enumerate() {
            if is_op_like(s.kind) {
                dense[i] = u32::try_from(ops.len()).unwrap_or(NONE);
                ops.push(u32::try_from(i).unwrap_or(NONE));
            }
        }
        let m = ops.len();
        let op_parent: Vec<u32> = ops
            .iter()
            .map(|&i| match parent[i as usize] {
                NONE => NONE,
                p => dense[p as usize],
            })
            .collect();
        // An op directly inside an op of its own name is merged into it; `owner` is the op
        // that owns what happens directly under each op (itself, or the outer one).
        let mut merged = vec![false; m];
        let mut owner: Vec<u32> = (0..m).map(|k| u32::try_from(k).unwrap_or(NONE)).collect();
        for k in 0..m {
            let s = &trace.spans[ops[k] as usize];
            let p = op_parent[k];
            if s.kind == SpanKind::CpuOp
                && p != NONE
                && (p as usize) < k
                && trace.spans[ops[p as usize] as usize].name == s.name
            {
                merged[k] = true;
                owner[k] = owner[p as usize];
            }
        }
        let tensor_core_kernel = name_flags(trace, crate::vocabulary::kernels::uses_matrix_cores);
        let narrow_kernel = name_flags(trace, crate::vocabulary::kernels::is_narrow_precision);
        let mut child_host: Vec<TimeNs> = vec![0; m];
        let mut device_self: Vec<TimeNs> = vec![0; m];
        let mut tc_self: Vec<TimeNs> = vec![0; m];
        let mut narrow_tc_self: Vec<TimeNs> = vec![0; m];
        for (i, s) in trace.spans.iter().enumerate() {
            match s.kind {
                // Host: an op's or runtime call's time leaves its enclosing op's self time.
                SpanKind::CpuOp | SpanKind::UserAnnotation | SpanKind::Runtime => {
                    let p = parent[i];
                    let is_merged = dense[i] != NONE && merged[dense[i] as usize];
                    if !is_merged && p != NONE {
                        child_host[owner[dense[p as usize] as usize] as usize] += s.dur_ns;
                    }
                }
                // Device: a GPU op's time is the self time of the op around its launch.
                SpanKind::Kernel | SpanKind::Memcpy | SpanKind::Memset => {
                    let Some(launch) = trace.launch_of(SpanId::at(i)) else {
                        continue;
                    };
                    let p = parent[launch.0 as usize];
                    if p == NONE {
                        continue;
                    }
                    let o = owner[dense[p as usize] as usize] as usize;
                    device_self[o] += s.dur_ns;
                    if s.kind == SpanKind::Kernel && tensor_core_kernel[s.name.0 as usize] {
                        tc_self[o] += s.dur_ns;
                        if narrow_kernel[s.name.0 as usize] {
                            narrow_tc_self[o] += s.dur_ns;
                        }
                    }
                }
                _ => {}
            }
        }
        // Totals and eligibility flow up: children sort after their parents, so one pass in
        // reverse order adds each op into the op around it (a merged op's own launches
        // already count in its owner: only its subtree moves up).
        let eligible_name = name_flags(trace, crate::vocabulary::ops::is_matrix_op);
        let mut device_total = device_self.clone();
        let mut tc_total = tc_self.clone();
        let mut narrow_tc_total = narrow_tc_self;
        let mut eligible: Vec<bool> = ops
            .iter()
            .map(|&i| {
                let s = &trace.spans[i as usize];
                s.kind == SpanKind::CpuOp && eligible_name[s.name.0 as usize]
            })
            .collect();
        for k in (0..m).rev() {
            let p = op_parent[k];
            if p == NONE || (p as usize) >= k {
                continue;
            }
            let p = p as usize;
            device_total[p] += device_total[k];
            tc_total[p] += tc_total[k];
            narrow_tc_total[p] += narrow_tc_total[k];
            eligible[p] |= eligible[k];
        }
        OpTree {
            ops,
            parent: op_parent,
            merged,
            child_host,
            device_self,
            device_total,
            tc_self,
            tc_total,
            narrow_tc_total,
            eligible,
        }
    }

    /// The listed ops that start inside `window` (tb_plugin's rows), by dense index.
    pub fn listed_in<'a>(
        &'a self,
        trace: &'a Trace,
        window: Interval,
    ) -> impl Iterator<Item = usize> + 'a {
        let listed_name = name_flags(trace, crate::vocabulary::ops::is_listed_by_tb_plugin);
        (0..self.ops.len()).filter(move |&k| {
            let i = self.ops[k] as usize;
            let s = &trace.spans[i];
            s.kind == SpanKind::CpuOp
                && !self.merged[k]
                && window.start_ns <= s.start_ns
                && s.start_ns < window.end_ns
                && listed_name[s.name.0 as usize]
                && !trace.is_step_span(SpanId::at(i))
        })
    }
}

/// The operator table over `window` (the analysis window's interval; the whole trace for
/// tb_plugin's scope).
#[must_use]
pub fn operator_table(trace: &Trace, window: Interval) -> OperatorTable {
    operator_table_of(trace, &OpTree::build(trace), window)
}

pub(crate) fn operator_table_of(trace: &Trace, tree: &OpTree, window: Interval) -> OperatorTable {
    let mut by_name: Vec<Acc> = vec![Acc::default(); trace.names.len()];
    let mut by_dims: rustc_hash::FxHashMap<(NameId, NameId), Acc> = Default::default();
    let mut samples: rustc_hash::FxHashMap<NameId, Vec<u32>> = Default::default();
    let mut calls = 0;
    for k in tree.listed_in(trace, window) {
        let s = &trace.spans[tree.ops[k] as usize];
        let sample = samples.entry(s.name).or_default();
        if sample.len() < CALL_SITE_SAMPLE {
            sample.push(tree.ops[k]);
        }
        if let Some(dims) = trace
            .op_detail(SpanId(tree.ops[k]))
            .and_then(|d| d.input_dims)
        {
            by_dims
                .entry((s.name, dims))
                .or_default()
                .add(s.dur_ns, tree, k);
        }
        by_name[s.name.0 as usize].add(s.dur_ns, tree, k);
        calls += 1;
    }
    // Calls replayed from CUDA/HIP graphs, where a capture says which op launched them.
    let listed_name = name_flags(trace, crate::vocabulary::ops::is_listed_by_tb_plugin);
    let matrix_name = name_flags(trace, crate::vocabulary::ops::is_matrix_op);
    let mut replayed_calls = 0;
    for c in crate::views::replayed::replayed_calls(trace, window) {
        if !listed_name[c.op.0 as usize] {
            continue;
        }
        if let Some(dims) = trace
            .op_details
            .get(c.detail as usize)
            .and_then(|d| d.input_dims)
        {
            by_dims
                .entry((c.op, dims))
                .or_default()
                .add_replayed(&c, false);
        }
        by_name[c.op.0 as usize].add_replayed(&c, matrix_name[c.op.0 as usize]);
        calls += 1;
        replayed_calls += 1;
    }
    let percent = crate::num::percent;
    let mut operators: Vec<OperatorStat> = by_name
        .into_iter()
        .enumerate()
        .filter(|(_, a)| a.calls > 0)
        .map(|(name, a)| OperatorStat {
            name: trace.names.get(NameId::at(name)).to_string(),
            calls: a.calls,
            replayed_calls: a.replayed,
            host_total_ns: a.host_total,
            host_self_ns: a.host_self,
            device_total_ns: a.device_total,
            device_self_ns: a.device_self,
            tensor_core_eligible: a.eligible,
            tensor_core_self_percent: percent(a.tc_self, a.device_self),
            tensor_core_total_percent: percent(a.tc_total, a.device_total),
            call_sites: call_sites(trace, samples.get(&NameId::at(name))),
        })
        .collect();
    operators.sort_by(|a, b| {
        b.device_self_ns
            .cmp(&a.device_self_ns)
            .then(b.host_self_ns.cmp(&a.host_self_ns))
            .then_with(|| a.name.cmp(&b.name))
    });
    let mut by_shape: Vec<OperatorShapeStat> = by_dims
        .into_iter()
        .map(|((name, dims), a)| OperatorShapeStat {
            name: trace.names.get(name).to_string(),
            input_dims: dims_text(trace.names.get(dims)),
            calls: a.calls,
            host_total_ns: a.host_total,
            host_self_ns: a.host_self,
            device_total_ns: a.device_total,
            device_self_ns: a.device_self,
        })
        .collect();
    by_shape.sort_by(|a, b| {
        b.device_self_ns
            .cmp(&a.device_self_ns)
            .then(b.host_self_ns.cmp(&a.host_self_ns))
            .then_with(|| (&a.name, &a.input_dims).cmp(&(&b.name, &b.input_dims)))
    });
    OperatorTable {
        operators,
        by_shape,
        calls,
        replayed_calls,
    }
}

/// The most frequent user call sites among `sample` (op spans): the innermost Python frame
/// outside libraries around each.
fn call_sites(trace: &Trace, sample: Option<&Vec<u32>>) -> Vec<CallSite> {
    let mut counts: Vec<(String, u64)> = Vec::new();
    for &op in sample.map_or(&[][..], |v| &v[..]) {
        let Some(f) = trace.python_frame_where(SpanId(op), |f| !f.is_library()) else {
            continue;
        };
        let site = format!("{}:{} {}", f.file, f.line, f.function);
        match counts.iter_mut().find(|(s, _)| *s == site) {
            Some((_, n)) => *n += 1,
            None => counts.push((site, 1)),
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    counts.truncate(MAX_CALL_SITES);
    counts
        .into_iter()
        .map(|(site, calls)| CallSite { site, calls })
        .collect()
}

impl Acc {
    /// Adds call `k` of the tree (host duration `dur_ns`).
    fn add(&mut self, dur_ns: TimeNs, tree: &OpTree, k: usize) {
        self.calls += 1;
        self.host_total += dur_ns;
        self.host_self += (dur_ns - tree.child_host[k]).max(0);
        self.device_total += tree.device_total[k];
        self.device_self += tree.device_self[k];
        self.tc_total += tree.tc_total[k];
        self.tc_self += tree.tc_self[k];
        self.eligible |= tree.eligible[k] || tree.tc_total[k] > 0;
    }
}

impl Acc {
    /// Adds a call replayed from a graph: device time only.
    fn add_replayed(&mut self, c: &crate::views::replayed::ReplayedCall, matrix_op: bool) {
        self.calls += 1;
        self.replayed += 1;
        self.device_total += c.device_ns;
        self.device_self += c.device_ns;
        self.tc_total += c.tensor_core_ns;
        self.tc_self += c.tensor_core_ns;
        self.eligible |= matrix_op || c.tensor_core_ns > 0;
    }
}

#[derive(Default, Clone, Copy)]
struct Acc {
    calls: u64,
    replayed: u64,
    host_total: TimeNs,
    host_self: TimeNs,
    device_total: TimeNs,
    device_self: TimeNs,
    tc_total: TimeNs,
    tc_self: TimeNs,
    eligible: bool,
}
