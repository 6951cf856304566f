//! Runs every analysis and detector over a trace and collects the findings, ranked by win.

use crate::breakdown::{breakdown, Breakdown};
use crate::copies::{copy_report, CopyReport};
use crate::dataloader::{data_loader_report, DataLoaderReport};
use crate::detectors::{all_detectors, Context};
use crate::finding::Finding;
use crate::idle::{attribute_idle, DeviceIdle, IdleCause, UnattributedReason};
use crate::kernels::{top_kernels, KernelStat};
use crate::launch::{launch_report, LaunchReport};
use crate::syncs::{find_syncs, group_sync_sites, SyncSite, SyncTrigger};
use crate::threads::ThreadIndex;
use crate::utilization::{device_work, DeviceWork, GpuOp, WindowSource};
use serde::Serialize;
use std::collections::BTreeMap;
use tracelens_model::{Interval, TimeNs, Trace};

/// A gap and how its time splits by cause.
#[derive(Clone, Debug, Serialize)]
pub struct GapSummary {
    /// When.
    pub interval: Interval,
    /// Time per cause.
    pub causes: BTreeMap<&'static str, TimeNs>,
    /// Name of the GPU op that ends the gap.
    pub ended_by: String,
    /// Name of its launch call.
    pub launch: Option<String>,
}

/// Idle attribution of one device, for output.
#[derive(Clone, Debug, Serialize)]
pub struct IdleSummary {
    /// Device index.
    pub device: i64,
    /// Window source.
    pub window_source: WindowSource,
    /// Measured extent.
    pub extent: Option<Interval>,
    /// Total idle (equals the utilization's idle for the same window).
    pub idle_ns: TimeNs,
    /// Number of gaps.
    pub gaps: usize,
    /// Idle per cause; sums to `idle_ns`.
    pub by_cause: BTreeMap<&'static str, TimeNs>,
    /// Unattributed idle per reason.
    pub unattributed_by_reason: BTreeMap<UnattributedReason, TimeNs>,
    /// CPU work during host-compute idle.
    pub host_compute_ops: Vec<(String, TimeNs)>,
    /// OS waits of the launching threads during exposed CPU time (Nsight Systems OSRT).
    pub os_waits: Vec<(String, TimeNs)>,
    /// Exposed CPU time the launching thread spent off the CPU while runnable (Nsight Systems).
    pub descheduled_ns: TimeNs,
    /// The five largest gaps.
    pub largest_gaps: Vec<GapSummary>,
    /// GPU ops fed by graph launches in the window.
    pub graph_replay_ops: u64,
    /// False when graph replays make the attribution unreliable.
    pub attribution_reliable: bool,
}

/// Sync calls, grouped.
#[derive(Clone, Debug, Serialize)]
pub struct SyncSummary {
    /// Host-blocking calls (profiler-injected ones included).
    pub calls: u64,
    /// Total host-blocked time.
    pub blocked_ns: TimeNs,
    /// Sites that caused GPU idle.
    pub costly_sites: usize,
    /// All sites, costliest first (at most 50).
    pub sites: Vec<SyncSite>,
}

/// The full diagnosis of a trace.
#[derive(Clone, Debug, Serialize)]
pub struct Diagnosis {
    /// Findings, largest estimated win first.
    pub findings: Vec<Finding>,
    /// Idle attribution per device.
    pub idle: Vec<IdleSummary>,
    /// Host-blocking syncs.
    pub syncs: SyncSummary,
    /// Copies.
    pub copies: CopyReport,
    /// DataLoader.
    pub dataloader: DataLoaderReport,
    /// Launch-bound stretches.
    pub launch: LaunchReport,
    /// tb_plugin-style per-step breakdown.
    pub breakdown: Option<Breakdown>,
    /// The 20 kernels with the most GPU time.
    pub top_kernels: Vec<KernelStat>,
    /// Full idle attribution (for renderers and tests; not serialized).
    #[serde(skip)]
    pub device_idle: Vec<DeviceIdle>,
}

/// Diagnoses a trace.
pub fn diagnose(trace: &Trace) -> Diagnosis {
    diagnose_with(trace, &device_work(trace))
}

/// The overview and the diagnosis together, collecting the device work once.
pub fn analyze(trace: &Trace) -> (crate::Overview, Diagnosis) {
    let works = device_work(trace);
    (
        crate::overview::overview_of(trace, &works),
        diagnose_with(trace, &works),
    )
}

fn diagnose_with(trace: &Trace, works: &[DeviceWork]) -> Diagnosis {
    let threads = ThreadIndex::build(trace);
    // Clipped once, shared by the idle attribution and the launch analysis.
    let headline: Vec<Vec<GpuOp>> = works.iter().map(DeviceWork::headline_ops).collect();
    let device_idle: Vec<DeviceIdle> = works
        .iter()
        .zip(&headline)
        .map(|(w, ops)| attribute_idle(trace, w, ops, &threads))
        .collect();
    let steps = trace.steps.len().max(1);
    let calls = find_syncs(trace, &device_idle, &threads);
    let sites = group_sync_sites(trace, &calls, steps);
    let copies = copy_report(trace, &calls);
    let dataloader = data_loader_report(trace, &device_idle);
    let launch = launch_report(trace, works, &headline, &device_idle);
    let analysed_ns = device_idle
        .iter()
        .filter_map(|d| d.extent.map(|e| e.dur_ns()))
        .max()
        .unwrap_or(0);
    let cx = Context {
        trace,
        idle: &device_idle,
        sync_sites: &sites,
        copies: &copies,
        dataloader: &dataloader,
        launch: &launch,
        steps,
        analysed_ns,
        has_steps: !trace.steps.is_empty(),
    };
    let mut findings: Vec<Finding> = all_detectors().iter().flat_map(|d| d.detect(&cx)).collect();
    findings.sort_by(|a, b| {
        b.estimated_win_ns
            .cmp(&a.estimated_win_ns)
            .then(a.kind.cmp(&b.kind))
            .then(a.title.cmp(&b.title))
    });
    let idle = device_idle.iter().map(|d| summarize(trace, d)).collect();
    let syncs = SyncSummary {
        calls: calls.len() as u64,
        blocked_ns: calls.iter().map(|c| c.blocked_ns).sum(),
        costly_sites: sites
            .iter()
            .filter(|s| s.gpu_idle_ns > 0 && s.trigger != SyncTrigger::ProfilerInjected)
            .count(),
        sites: sites.into_iter().take(50).collect(),
    };
    Diagnosis {
        findings,
        idle,
        syncs,
        copies,
        dataloader,
        launch,
        breakdown: breakdown(trace),
        top_kernels: top_kernels(trace, 20),
        device_idle,
    }
}

fn summarize(trace: &Trace, d: &DeviceIdle) -> IdleSummary {
    // The five largest gaps: select, then sort only those.
    let mut order: Vec<usize> = (0..d.gaps.len()).collect();
    let key = |&i: &usize| (std::cmp::Reverse(d.gaps[i].interval.dur_ns()), i);
    if order.len() > 5 {
        order.select_nth_unstable_by_key(4, key);
        order.truncate(5);
    }
    order.sort_by_key(key);
    let largest_gaps = order
        .into_iter()
        .take(5)
        .map(|i| {
            let g = &d.gaps[i];
            let mut causes = BTreeMap::new();
            for s in &d.segments[g.segments.start as usize..g.segments.end as usize] {
                *causes.entry(s.cause.label()).or_default() += s.interval.dur_ns();
            }
            GapSummary {
                interval: g.interval,
                causes,
                ended_by: trace.name(g.ended_by).to_string(),
                launch: g.launch.map(|l| trace.name(l).to_string()),
            }
        })
        .collect();
    IdleSummary {
        device: d.device,
        window_source: d.window_source,
        extent: d.extent,
        idle_ns: d.idle_ns,
        gaps: d.gaps.len(),
        by_cause: IdleCause::ALL
            .iter()
            .map(|&c| (c.label(), d.by_cause[&c]))
            .collect(),
        unattributed_by_reason: d.unattributed_by_reason.clone(),
        host_compute_ops: d.host_compute_ops.clone(),
        os_waits: d.os_waits.clone(),
        descheduled_ns: d.descheduled_ns,
        largest_gaps,
        graph_replay_ops: d.graph_replay_ops,
        attribution_reliable: d.reliable(),
    }
}
