//! One rank's communication over the analysis window on the focus device: how much of its
//! collective time runs under compute (hidden) and how much alone (exposed), and per operation
//! the count, time, bytes, NCCL algorithm and bus bandwidth against the interconnect's peak.
//!
//! Definitions: communication time is the union of the collective kernels' intervals;
//! *hidden* is the part during which a compute kernel (any other kernel) runs too, *exposed*
//! the rest; overlap percent = hidden / communication (HTA's `get_comm_comp_overlap`). Bus
//! bandwidth follows nccl-tests: bus bytes (data size × the operation's bus factor) over the
//! kernels' time, summed over the collectives whose sizes the trace records. On one rank the
//! kernel time includes waiting for the other ranks, so this is the bandwidth the rank saw,
//! a lower bound of the link's; the job view measures transfer time from the last arrival.

use crate::attribute::collectives::{collectives_on, Collective, CollectiveOp};
use crate::measure::environment::Hardware;
use crate::measure::intervals::{subtract, total_ns, union};
use crate::measure::peaks::{link_peak, LinkPeak};
use crate::measure::window::AnalysisWindow;
use crate::vocabulary::kernels::is_communication_kernel;
use crate::vocabulary::memo::PerName;
use serde::{Deserialize, Serialize};
use tracelens_model::{Interval, NameId, SpanKind, TimeNs, Trace};

/// Per-operation figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OperationStat {
    /// The operation.
    pub op: CollectiveOp,
    /// Kernels that started in the window.
    pub count: u64,
    /// Their kernel time inside the window.
    pub time_ns: TimeNs,
    /// That per step.
    pub per_step_ns: TimeNs,
    /// Kernels whose message size and group size the trace records.
    pub sized: u64,
    /// Their data size in bytes, summed (none when no kernel is sized).
    pub bytes: Option<u64>,
    /// The largest group size among them.
    pub group_size: Option<i64>,
    /// NCCL algorithms and protocols seen (`RING LL`), by time.
    pub algorithms: Vec<String>,
    /// Bus bandwidth over the sized kernels' time, GB/s (none without sizes).
    pub busbw_gb_per_s: Option<f64>,
    /// That as a percent of the interconnect's peak, when the device is known.
    pub busbw_percent_of_peak: Option<f64>,
}

/// One rank's communication.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Communication {
    /// The device measured (the focus device).
    pub device: i64,
    /// Union of collective kernel time in the window.
    pub communication_ns: TimeNs,
    /// The part of it under compute kernels.
    pub hidden_ns: TimeNs,
    /// The part with no compute beside it.
    pub exposed_ns: TimeNs,
    /// Exposed time per step.
    pub exposed_per_step_ns: TimeNs,
    /// Exposed time as a percent of the step (0–100).
    pub exposed_percent: f64,
    /// Hidden / communication, percent (0–100).
    pub overlap_percent: f64,
    /// By operation, most time first.
    pub by_op: Vec<OperationStat>,
    /// Bus bandwidth of the operation with the most time, GB/s, when its sizes are recorded.
    pub busbw_gb_per_s: Option<f64>,
    /// The device's peer interconnect inside a node, when the device is known
    /// ([`crate::measure::peaks::link_peak`]).
    pub link: Option<String>,
    /// Its peak per direction, GB/s.
    pub link_gb_per_s: Option<f64>,
    /// Collectives that carry a process group name (what the job matches by).
    pub with_group: u64,
    /// Collectives that carry a sequence number.
    pub with_seq: u64,
    /// The exposed intervals (for the exposed-communication finding).
    #[serde(skip)]
    pub exposed: Vec<Interval>,
    /// Each collective kernel's clipped interval and name.
    #[serde(skip)]
    pub kernels: Vec<(Interval, NameId)>,
}

/// The communication of `device` over `window`; `None` when it ran no collective there.
#[must_use]
pub fn communication(
    trace: &Trace,
    window: &AnalysisWindow,
    device: i64,
    hw: &Hardware,
) -> Option<Communication> {
    let w = window.interval;
    let dev = trace.devices.iter().find(|d| d.index == device)?;
    let mut comm = Vec::new();
    let mut compute = Vec::new();
    let mut kernels = Vec::new();
    let mut names = PerName::new(trace, is_communication_kernel);
    for &lane in &dev.lanes {
        for id in trace.lane_span_ids(lane) {
            let s = trace.span(id);
            if s.kind != SpanKind::Kernel {
                continue;
            }
            let Some(iv) = s.interval().clip(w) else {
                continue;
            };
            if names.of(trace, s.name) {
                comm.push(iv);
                kernels.push((iv, s.name));
            } else {
                compute.push(iv);
            }
        }
    }
    if comm.is_empty() {
        return None;
    }
    let comm = union(comm);
    let communication_ns = total_ns(&comm);
    let exposed = subtract(&comm, &union(compute));
    let exposed_ns = total_ns(&exposed);
    let hidden_ns = communication_ns - exposed_ns;
    let exposed_per_step_ns = window.per_step(exposed_ns);
    let step_ns = window.step_ns();
    let link = link_peak(hw);
    let calls: Vec<Collective> = collectives_on(trace, Some(device))
        .into_iter()
        .filter(|c| (w.start_ns..w.end_ns).contains(&c.start_ns))
        .collect();
    let mut by_op: Vec<OperationStat> = CollectiveOp::ALL
        .iter()
        .filter_map(|&op| operation_stat(op, &calls, w, window, link))
        .collect();
    by_op.sort_by(|a, b| b.time_ns.cmp(&a.time_ns).then(a.op.cmp(&b.op)));
    Some(Communication {
        device,
        communication_ns,
        hidden_ns,
        exposed_ns,
        exposed_per_step_ns,
        exposed_percent: crate::num::percent(exposed_per_step_ns, step_ns),
        overlap_percent: crate::num::percent(hidden_ns, communication_ns),
        busbw_gb_per_s: by_op.first().and_then(|o| o.busbw_gb_per_s),
        by_op,
        link: link.map(|l| l.link.to_string()),
        link_gb_per_s: link.map(|l| l.gb_per_s),
        with_group: calls.iter().filter(|c| c.group.is_some()).count() as u64,
        with_seq: calls.iter().filter(|c| c.seq.is_some()).count() as u64,
        exposed,
        kernels,
    })
}

#[allow(clippy::cast_precision_loss)]
fn operation_stat(
    op: CollectiveOp,
    calls: &[Collective],
    w: Interval,
    window: &AnalysisWindow,
    link: Option<LinkPeak>,
) -> Option<OperationStat> {
    let mine: Vec<&Collective> = calls.iter().filter(|c| c.op == op).collect();
    if mine.is_empty() {
        return None;
    }
    let time_ns: TimeNs = mine
        .iter()
        .filter_map(|c| Interval::new(c.start_ns, c.end_ns()).clip(w))
        .map(|iv| iv.dur_ns())
        .sum();
    let sized: Vec<(&Collective, f64)> = mine
        .iter()
        .filter_map(|c| Some((*c, c.bus_bytes()?)))
        .filter(|(c, _)| c.dur_ns > 0)
        .collect();
    let sized_ns: TimeNs = sized.iter().map(|(c, _)| c.dur_ns).sum();
    let bus_bytes: f64 = sized.iter().map(|(_, b)| b).sum();
    // Bytes per nanosecond are GB/s.
    let busbw = (sized_ns > 0).then(|| bus_bytes / sized_ns as f64);
    let mut algorithms: Vec<(String, TimeNs)> = Vec::new();
    for c in &mine {
        if let Some(a) = &c.algorithm {
            match algorithms.iter_mut().find(|(n, _)| n == a) {
                Some((_, t)) => *t += c.dur_ns,
                None => algorithms.push((a.clone(), c.dur_ns)),
            }
        }
    }
    algorithms.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Some(OperationStat {
        op,
        count: mine.len() as u64,
        time_ns,
        per_step_ns: window.per_step(time_ns),
        sized: sized.len() as u64,
        bytes: (!sized.is_empty()).then(|| sized.iter().filter_map(|(c, _)| c.bytes).sum()),
        group_size: sized.iter().filter_map(|(c, _)| c.group_size).max(),
        algorithms: algorithms.into_iter().map(|(a, _)| a).collect(),
        busbw_gb_per_s: busbw,
        busbw_percent_of_peak: busbw
            .zip(link)
            .map(|(b, l)| (b * 100.0 / l.gb_per_s).min(100.0)),
    })
}
