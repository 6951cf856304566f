//! Replayed graph work as op calls: the GPU ops one CUDA/HIP graph launch replayed, grouped by
//! the op that launched them when the graph was captured ([`tracelens_model::graph`]), so the
//! operator and efficiency views count them as they count eager calls.
//!
//! - One **call** per captured op call per graph launch: a graph replayed 50 times gives each
//!   of its ops 50 calls.
//! - Its **device time** is the time of the GPU ops it replayed (device self and total: the
//!   captured op is the innermost op around the launch); its **host time** is zero, since a
//!   replay runs no op on the host.
//! - In the window when its first replayed op starts inside it.
//! - Replayed ops whose evidence names only a scope (an annotation label) have no op and are
//!   not calls.

use tracelens_model::{Interval, NameId, SpanId, SpanKind, TimeNs, Trace};

/// One op call replayed by a graph launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReplayedCall {
    /// The op's name (`aten::mm`).
    pub op: NameId,
    /// Its recorded inputs at capture ([`Trace::op_details`] index), or `NO_DETAIL`.
    pub detail: u32,
    /// Start of its first replayed GPU op.
    pub start_ns: TimeNs,
    /// GPU time of its replayed ops.
    pub device_ns: TimeNs,
    /// Of that, kernels on tensor (matrix) cores.
    pub tensor_core_ns: TimeNs,
    /// Of those, kernels whose names show 16-bit or narrower inputs.
    pub narrow_tensor_core_ns: TimeNs,
}

/// The replayed op calls that start inside `window`, in no particular order.
pub(crate) fn replayed_calls(trace: &Trace, window: Interval) -> Vec<ReplayedCall> {
    if trace.graph_attribution.is_none() {
        return Vec::new();
    }
    // Per kernel name, asked once: replays repeat a few hundred names many times.
    let mut tensor_core: rustc_hash::FxHashMap<NameId, bool> = Default::default();
    // (graph launch, captured op call) → the call's sums.
    let mut calls: rustc_hash::FxHashMap<(SpanId, u32), ReplayedCall> = Default::default();
    for (id, origin) in trace.graph_origins() {
        let (Some(op), Some(launch)) = (origin.op, trace.launch_of(id)) else {
            continue;
        };
        let s = trace.span(id);
        let c = calls
            .entry((launch, origin.instance))
            .or_insert(ReplayedCall {
                op,
                detail: origin.detail,
                start_ns: s.start_ns,
                device_ns: 0,
                tensor_core_ns: 0,
                narrow_tensor_core_ns: 0,
            });
        c.start_ns = c.start_ns.min(s.start_ns);
        c.device_ns += s.dur_ns;
        let on_matrix_cores = *tensor_core.entry(s.name).or_insert_with(|| {
            crate::vocabulary::kernels::uses_matrix_cores(trace.names.get(s.name))
        });
        if s.kind == SpanKind::Kernel && on_matrix_cores {
            c.tensor_core_ns += s.dur_ns;
            if crate::vocabulary::kernels::is_narrow_precision(trace.names.get(s.name)) {
                c.narrow_tensor_core_ns += s.dur_ns;
            }
        }
    }
    let mut calls: Vec<ReplayedCall> = calls
        .into_values()
        .filter(|c| window.start_ns <= c.start_ns && c.start_ns < window.end_ns)
        .collect();
    calls.sort_unstable_by_key(|c| (c.start_ns, c.op, c.detail, c.device_ns));
    calls
}

/// The scopes replayed GPU ops had at capture (the `nn.Module` or user range around the
/// launch, or an annotation's label), each with its instances (one per scope per graph
/// launch) and GPU time, for instances that start inside `window`; by first appearance.
pub(crate) fn replayed_scopes(trace: &Trace, window: Interval) -> Vec<(NameId, u64, TimeNs)> {
    if trace.graph_attribution.is_none() {
        return Vec::new();
    }
    let mut instances: rustc_hash::FxHashMap<(SpanId, NameId), (TimeNs, TimeNs)> =
        Default::default();
    for (id, origin) in trace.graph_origins() {
        let (Some(scope), Some(launch)) = (origin.scope, trace.launch_of(id)) else {
            continue;
        };
        let s = trace.span(id);
        let e = instances.entry((launch, scope)).or_insert((s.start_ns, 0));
        e.0 = e.0.min(s.start_ns);
        e.1 += s.dur_ns;
    }
    let mut by_scope: Vec<(NameId, u64, TimeNs)> = Vec::new();
    let mut sorted: Vec<_> = instances.into_iter().collect();
    sorted.sort_unstable_by_key(|&((launch, scope), (start, _))| (start, launch, scope));
    for ((_, scope), (start, gpu_ns)) in sorted {
        if !(window.start_ns <= start && start < window.end_ns) {
            continue;
        }
        match by_scope.iter_mut().find(|(s, _, _)| *s == scope) {
            Some(e) => {
                e.1 += 1;
                e.2 += gpu_ns;
            }
            None => by_scope.push((scope, 1, gpu_ns)),
        }
    }
    by_scope
}
