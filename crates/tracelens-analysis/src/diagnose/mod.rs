//! The diagnosis: runs every analysis and detector over a trace and collects the findings,
//! ranked by win; the detectors (one per problem), the finding they report and the verdict
//! every renderer leads with.

pub mod advice;
pub mod cold_run;
pub mod compiled;
pub mod detectors;
pub mod finding;
pub mod fix;
pub mod inference;
pub mod lever;
pub mod library_advice;
pub mod memory;
pub mod verdict;

use crate::attribute::copies::{copy_report, CopyReport};
use crate::attribute::credit::credit_idle;
use crate::attribute::dataloader::{data_loader_report, DataLoaderReport};
use crate::attribute::idle::{
    attribute_idle, DeviceIdle, IdleCause, UnattributedReason, WaitEvidence,
};
use crate::attribute::launch::{launch_report, LaunchReport};
use crate::attribute::syncs::{find_syncs, group_sync_sites, SyncSite, SyncTrigger};
use crate::diagnose::detectors::{all_detectors, sync_site_reported, Analyses, Detector};
use crate::diagnose::finding::{Finding, WinKind};
use crate::diagnose::verdict::{verdict, Verdict, VerdictInput};
use crate::measure::environment::{framework, hardware, Framework, Hardware};
use crate::measure::threads::ThreadIndex;
use crate::measure::utilization::{device_work, DeviceWork, GpuOp};
use crate::measure::window::{analysis_window, AnalysisWindow};
use crate::predict::critical::{FixPrediction, FixToReplay};
use crate::views::breakdown::{breakdown, Breakdown};
use crate::views::kernels::{top_kernels, KernelStat};
use crate::views::timeline::TimelineView;
use rustc_hash::FxHashSet;
use serde::Serialize;
use std::collections::BTreeMap;
use tracelens_model::{Interval, SpanKind, TimeNs, Trace};

/// Operators kept in the diagnosis (the report shows fewer; JSON keeps these).
pub const MAX_OPERATORS: usize = 50;
/// Regions kept in the diagnosis.
pub const MAX_REGIONS: usize = 50;
/// Idle time of one cause.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct CauseTime {
    /// The cause.
    pub cause: IdleCause,
    /// Its time.
    pub ns: TimeNs,
    /// Its share of the idle time, in percent.
    pub percent: f64,
    /// What the time is, where the trace says more than the cause's own words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<CauseNote>,
}

/// What a cause's time is, beyond the cause's own words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CauseNote {
    /// Unattributed idle ended mostly by unified-memory migrations.
    UnifiedMemory,
}

impl CauseTime {
    /// The time in words: the note where there is one, else the cause's meaning.
    #[must_use]
    pub fn describe(&self) -> &'static str {
        match self.note {
            Some(CauseNote::UnifiedMemory) => {
                "no launch behind it: gaps that end in unified-memory migrations"
            }
            None => self.cause.describe(),
        }
    }
}

/// Causes with time, largest first (ties in report order).
fn by_size(by_cause: &BTreeMap<IdleCause, TimeNs>, idle_ns: TimeNs) -> Vec<CauseTime> {
    let mut v: Vec<CauseTime> = by_cause
        .iter()
        .filter(|(_, &ns)| ns > 0)
        .map(|(&cause, &ns)| CauseTime {
            cause,
            ns,
            percent: crate::num::percent(ns, idle_ns),
            note: None,
        })
        .collect();
    v.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.cause.cmp(&b.cause)));
    v
}

/// A gap and how its time splits by cause.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct GapSummary {
    /// When.
    pub interval: Interval,
    /// Time per cause, largest first.
    pub causes: Vec<CauseTime>,
    /// Name of the GPU op that ends the gap.
    pub ended_by: Option<String>,
    /// Name of its launch call.
    pub launch: Option<String>,
    /// What shows a GPU-side wait.
    pub wait: Option<WaitEvidence>,
}

/// Idle attribution of one device, for output.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct IdleSummary {
    /// Device index.
    pub device: i64,
    /// First to last op inside the window.
    pub extent: Option<Interval>,
    /// Total idle in the window (equals the utilization's window idle).
    pub idle_ns: TimeNs,
    /// Number of gaps.
    pub gaps: usize,
    /// Idle per cause, largest first; sums to `idle_ns`.
    pub by_cause: Vec<CauseTime>,
    /// Unattributed idle per reason.
    pub unattributed_by_reason: BTreeMap<UnattributedReason, TimeNs>,
    /// CPU work during host-compute idle.
    pub host_compute_ops: Vec<(String, TimeNs)>,
    /// OS waits of the launching threads during exposed CPU time (Nsight Systems OSRT).
    pub os_waits: Vec<(String, TimeNs)>,
    /// Host-compute time the launching thread spent off the CPU while runnable (Nsight
    /// Systems).
    pub descheduled_ns: TimeNs,
    /// The five largest gaps.
    pub largest_gaps: Vec<GapSummary>,
    /// GPU ops fed by graph launches in the window that no capture trace or graph
    /// annotation accounts for.
    pub graph_replay_ops: u64,
    /// False when graph replays make the attribution unreliable.
    pub attribution_reliable: bool,
}

/// The wins against the idle time they come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct WinTotals {
    /// Idle time of the focus device in the window.
    pub idle_ns: TimeNs,
    /// Sum of the GPU-idle wins of all findings (at most `idle_ns`).
    pub gpu_idle_wins_ns: TimeNs,
    /// Sum of the exposed-copy wins (busy time, apart from the idle).
    pub exposed_copy_wins_ns: TimeNs,
    /// Sum of the exposed-communication wins (busy time, apart from the idle).
    #[serde(default)]
    pub exposed_communication_wins_ns: TimeNs,
}

/// Sync calls, grouped.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct SyncSummary {
    /// Host-blocking calls in the window (profiler-injected ones included).
    pub calls: u64,
    /// Total host-blocked time in the window.
    pub blocked_ns: TimeNs,
    /// Sites that caused GPU idle.
    pub costly_sites: usize,
    /// All sites, costliest first (at most 50).
    pub sites: Vec<SyncSite>,
}

/// The full diagnosis of a trace.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Diagnosis {
    /// The answer, and the figures behind it.
    pub verdict: Verdict,
    /// The analysis window every figure is measured over.
    pub window: Option<AnalysisWindow>,
    /// What the trace shows of PyTorch and the optimizer (advice is fitted to it).
    pub framework: Framework,
    /// The program model in words: what program this is and what the capture did not record.
    #[serde(default)]
    pub program: String,
    /// What the focus device is and can run (advice names only its precisions).
    pub hardware: Hardware,
    /// Findings, largest estimated win first.
    pub findings: Vec<Finding>,
    /// Sums of the wins against the idle time.
    pub wins: WinTotals,
    /// Idle attribution per device.
    pub idle: Vec<IdleSummary>,
    /// Host-blocking syncs.
    pub syncs: SyncSummary,
    /// Copies.
    pub copies: CopyReport,
    /// DataLoader.
    pub dataloader: DataLoaderReport,
    /// Launch-bound stretches and launch delays.
    pub launch: LaunchReport,
    /// tb_plugin-style breakdown of the window.
    pub breakdown: Option<Breakdown>,
    /// The 20 kernels with the most GPU time in the window.
    pub top_kernels: Vec<KernelStat>,
    /// The operators of the window (tb_plugin's operator view), most device self time first,
    /// at most [`MAX_OPERATORS`].
    #[serde(default)]
    pub operators: Vec<crate::views::operators::OperatorStat>,
    /// The same per operator and input shapes (calls recorded with `record_shapes=True`),
    /// most device self time first, at most [`MAX_OPERATORS`].
    #[serde(default)]
    pub operators_by_shape: Vec<crate::views::operators::OperatorShapeStat>,
    /// Time by user range over the window, most host time first, at most [`MAX_REGIONS`].
    #[serde(default)]
    pub regions: Vec<crate::views::regions::RegionStat>,
    /// Share of the window's kernel time in tensor-core kernels, in percent (none without
    /// kernels).
    #[serde(default)]
    pub tensor_core_percent: Option<f64>,
    /// GPU memory per device over the window (empty without `profile_memory=True`).
    #[serde(default)]
    pub memory: Vec<crate::views::memory::DeviceMemory>,
    /// The memory problems those figures show, each with its fix (none without them).
    #[serde(default)]
    pub memory_advice: Vec<crate::diagnose::memory::MemoryAdvice>,
    /// FLOPs, achieved TFLOP/s and TB/s, roofline bounds and MFU (needs recorded shapes).
    #[serde(default)]
    pub efficiency: crate::views::efficiency::Efficiency,
    /// The critical path of the steps on the focus device, and the step time all fixes
    /// together would give.
    #[serde(default)]
    pub critical_path: crate::predict::critical::CriticalPath,
    /// The focus device's communication: hidden and exposed collective time, and per
    /// operation bytes and bus bandwidth (none without collectives).
    pub communication: Option<crate::attribute::communication::Communication>,
    /// The device the verdict describes (the most busy time in the window), if any.
    pub focus_device: Option<i64>,
    /// torch.compile in the window: compilation, recompiles, graph breaks, graph replays of
    /// compiled code, and what to do about them (none without compiled code).
    #[serde(default)]
    pub compiled: Option<crate::diagnose::compiled::CompiledReport>,
    /// The serving view of an LLM-inference trace: the engine's iterations by phase, decode's
    /// bandwidth and serving advice (none without engine iterations).
    #[serde(default)]
    pub serving: Option<crate::diagnose::inference::ServingReport>,
}

impl Diagnosis {
    /// The idle summary of the focus device.
    #[must_use]
    pub fn focus_idle(&self) -> Option<&IdleSummary> {
        let device = self.focus_device?;
        self.idle.iter().find(|i| i.device == device)
    }

    /// Whether one-time work was set apart: a one-time finding ranks after a per-step one of
    /// smaller gain, so "largest gain first" holds within each part only.
    #[must_use]
    pub fn one_time_set_apart(&self) -> bool {
        let step_ns = self.verdict.step_ns;
        let mut smallest_per_step: Option<TimeNs> = None;
        self.findings.iter().any(|f| {
            let gain = f.expected_gain_ns(step_ns);
            if f.one_time.is_none() {
                smallest_per_step = Some(smallest_per_step.map_or(gain, |g| g.min(gain)));
                false
            } else {
                smallest_per_step.is_some_and(|g| g < gain)
            }
        })
    }

    /// Whether figures are per profiled step (else for the whole window).
    pub fn has_steps(&self) -> bool {
        self.window.as_ref().is_some_and(AnalysisWindow::has_steps)
    }
}

/// Everything the analyses compute over one trace, once: what the reports show, and the full
/// idle attribution behind it (spans and segments that mean something only next to this
/// trace, for annotations and tests).
pub struct Analysis {
    /// Counts, steps and devices at a glance.
    pub overview: crate::Overview,
    /// The diagnosis.
    pub diagnosis: Diagnosis,
    /// The timeline of the representative step, binned for pictures.
    pub timeline: Option<TimelineView>,
    /// Full idle attribution per device, in `diagnosis.idle` order.
    pub device_idle: Vec<DeviceIdle>,
}

impl Analysis {
    /// The focus device's full idle attribution.
    #[must_use]
    pub fn focus_idle(&self) -> Option<&DeviceIdle> {
        let device = self.diagnosis.focus_device?;
        self.device_idle.iter().find(|d| d.device == device)
    }
}

/// Diagnoses a trace (no overview, no timeline: for callers that need the findings only).
#[must_use]
pub fn diagnose(trace: &Trace) -> Diagnosis {
    let detectors = all_detectors();
    let detectors: Vec<&dyn Detector> = detectors.iter().map(AsRef::as_ref).collect();
    diagnose_with(
        trace,
        &device_work(trace),
        analysis_window(trace),
        &detectors,
        false,
    )
    .0
}

/// The findings of `detectors` alone on `trace`, over the same shared analyses as
/// [`diagnose`] (a detector's unit tests).
#[cfg(test)]
pub(crate) fn detect_with(trace: &Trace, detectors: &[&dyn Detector]) -> Vec<Finding> {
    diagnose_with(
        trace,
        &device_work(trace),
        analysis_window(trace),
        detectors,
        false,
    )
    .0
    .findings
}

/// Every analysis of a trace, collecting the device work once.
pub fn analyze(trace: &Trace) -> Analysis {
    let works = device_work(trace);
    let window = analysis_window(trace);
    let detectors = all_detectors();
    let detectors: Vec<&dyn Detector> = detectors.iter().map(AsRef::as_ref).collect();
    // The overview on a second thread beside the diagnosis (they share nothing but the trace
    // and the device work).
    let window_iv = window.as_ref().map(|w| w.interval);
    let (overview, (diagnosis, device_idle, timeline)) = std::thread::scope(|scope| {
        let overview =
            scope.spawn(|| crate::measure::overview::overview_of(trace, &works, window_iv));
        let diagnosis = diagnose_with(trace, &works, window, &detectors, true);
        (joined(overview), diagnosis)
    });
    Analysis {
        overview,
        diagnosis,
        timeline,
        device_idle,
    }
}

/// The busy-GPU views: they read only the trace and the window.
#[derive(Default)]
struct BusyViews {
    operators: Vec<crate::views::operators::OperatorStat>,
    operators_by_shape: Vec<crate::views::operators::OperatorShapeStat>,
    regions: Vec<crate::views::regions::RegionStat>,
    tensor_core_percent: Option<f64>,
    efficiency: crate::views::efficiency::Counts,
    compiled: Option<crate::views::compiled::CompiledRun>,
    inference: Option<crate::views::inference::InferenceRun>,
}

fn busy_views(trace: &Trace, window: Option<&AnalysisWindow>) -> BusyViews {
    let Some(window) = window else {
        return BusyViews::default();
    };
    let (w, window_iv) = (window.interval, Some(window.interval));
    let tree = crate::views::operators::OpTree::build(trace);
    let efficiency = crate::views::efficiency::measure(trace, &tree, w);
    let table = crate::views::operators::operator_table_of(trace, &tree, w);
    let (mut operators, mut operators_by_shape) = (table.operators, table.by_shape);
    operators.truncate(MAX_OPERATORS);
    operators_by_shape.truncate(MAX_OPERATORS);
    let mut regions = crate::views::regions::region_table(trace, w);
    regions.truncate(MAX_REGIONS);
    BusyViews {
        operators,
        operators_by_shape,
        regions,
        tensor_core_percent: crate::views::kernels::tensor_core_percent(trace, window_iv),
        efficiency,
        compiled: crate::views::compiled::compiled_run(trace, window),
        inference: crate::views::inference::inference_run(trace, window),
    }
}

/// [`diagnose_core`] with the busy-GPU views computed on a second thread beside it (they
/// share nothing but the trace): the analysis takes little longer for them. The timeline view
/// is built too when `with_timeline`.
fn diagnose_with(
    trace: &Trace,
    works: &[DeviceWork],
    window: Option<AnalysisWindow>,
    detectors: &[&dyn Detector],
    with_timeline: bool,
) -> (Diagnosis, Vec<DeviceIdle>, Option<TimelineView>) {
    // The views' own copy of the window (its steps: a few hundred bytes per step).
    let views_window = window.clone();
    std::thread::scope(|scope| {
        let views = scope.spawn(move || busy_views(trace, views_window.as_ref()));
        diagnose_core(
            trace,
            works,
            window,
            detectors,
            || joined(views),
            with_timeline,
        )
    })
}

/// A scoped thread's result; its panic goes on in the caller.
fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Every analysis and detector; `busy_views` hands over the busy-GPU views (computed
/// beside it) when the diagnosis is assembled, so each field is filled once.
fn diagnose_core(
    trace: &Trace,
    works: &[DeviceWork],
    window: Option<AnalysisWindow>,
    detectors: &[&dyn Detector],
    busy_views: impl FnOnce() -> BusyViews,
    with_timeline: bool,
) -> (Diagnosis, Vec<DeviceIdle>, Option<TimelineView>) {
    let threads = ThreadIndex::build(trace);
    let fw = framework(trace);
    let window_iv = window.as_ref().map(|w| w.interval);
    // Clipped once, shared by the idle attribution, the launch analysis and the verdict.
    let window_ops: Vec<std::borrow::Cow<[GpuOp]>> = works
        .iter()
        .map(|w| window_iv.map_or_else(|| std::borrow::Cow::Borrowed(&[][..]), |iv| w.ops_in(iv)))
        .collect();
    let device_idle: Vec<DeviceIdle> = match &window {
        Some(win) => works
            .iter()
            .zip(&window_ops)
            .map(|(w, ops)| attribute_idle(trace, w, ops, win, &threads, &fw))
            .collect(),
        None => Vec::new(),
    };
    // The focus device: the most busy time in the window.
    let focus = device_idle
        .iter()
        .enumerate()
        .filter(|(_, d)| d.extent.is_some())
        .max_by_key(|(i, d)| (d.window.dur_ns() - d.idle_ns, std::cmp::Reverse(*i)))
        .map(|(i, _)| i);
    let focus_idle = focus.map(|i| &device_idle[i]);
    let steps = window.as_ref().map_or(1, AnalysisWindow::step_count);
    let focus_slice = focus.map_or(&device_idle[..0], |i| &device_idle[i..=i]);
    // The launch report on a second thread beside the syncs, copies, DataLoader, breakdown
    // and kernel table (they share nothing but the trace and the idle attribution).
    let ((calls, sites, copies, dataloader), (breakdown, top_kernels), launch) =
        std::thread::scope(|scope| {
            let launch = scope.spawn(|| launch_report(trace, works, &window_ops, &device_idle));
            let calls = find_syncs(trace, window_iv, focus_slice, &threads);
            let sites = group_sync_sites(trace, &calls, steps, &threads);
            let claimed: FxHashSet<_> = match &window {
                Some(win) => sites
                    .iter()
                    .filter(|s| sync_site_reported(s, win))
                    .flat_map(|s| s.copy_ids.iter().copied())
                    .collect(),
                None => FxHashSet::default(),
            };
            let copies = copy_report(trace, window_iv, &calls, &claimed);
            let dataloader = data_loader_report(trace, window.as_ref(), focus_idle);
            // While the launch report runs: the breakdown and the kernel table (they read only
            // the trace and the window). A memory snapshot has no work to break down.
            let breakdown = window
                .as_ref()
                .filter(|w| w.kind != crate::measure::window::WindowKind::MemoryExtent)
                .map(|w| breakdown(trace, w));
            let top_kernels = top_kernels(trace, window_iv, 20);
            let launch = joined(launch);
            (
                (calls, sites, copies, dataloader),
                (breakdown, top_kernels),
                launch,
            )
        });
    let measured = device_idle.iter().filter(|d| d.extent.is_some()).count();
    let hw = hardware(trace, focus.map(|i| device_idle[i].device));
    let focus_window_ops = focus.map_or(&[][..], |i| &window_ops[i][..]);
    let launches = cold_run::first_launches(trace, focus_window_ops);
    let set_up_end = window
        .as_ref()
        .and_then(|w| cold_run::set_up_end(w, focus_window_ops, launches, &fw));
    // The timeline view on a second thread beside the credit, verdict, detectors and memory
    // view, which run one after another (it reads only the trace, the window and the focus
    // device's idle attribution).
    let (timeline, (mut verdict, communication, findings, memory, loops)) =
        std::thread::scope(|scope| {
            let timeline =
                with_timeline
                    .then(|| {
                        let (window, focus_idle) = (window.as_ref()?, focus_idle?);
                        Some(scope.spawn(move || {
                            crate::views::timeline::build(trace, window, focus_idle)
                        }))
                    })
                    .flatten();
            let credit = focus_idle
                .map(|d| {
                    let stretches = launch
                        .stretch_intervals
                        .iter()
                        .find(|(dev, _)| *dev == d.device)
                        .map_or(&[][..], |(_, v)| &v[..]);
                    credit_idle(trace, d, stretches, &threads, &fw, set_up_end)
                })
                .unwrap_or_default();
            let mut verdict = verdict(&VerdictInput {
                trace,
                window: window.as_ref(),
                idle: focus_idle,
                ops: focus.map_or(&[][..], |i| &window_ops[i][..]),
                devices_measured: measured,
                delays: &launch.launch_delays,
                hardware: &hw,
                framework: &fw,
            });
            // A benchmark's timed loops, decided before the detectors: its idle is the harness,
            // its kernels the subject. A window of profiled steps is a training or serving loop.
            let loops = window
                .as_ref()
                .filter(|w| !w.has_steps())
                .map_or_else(Vec::new, |w| {
                    crate::measure::benchmark::timed_loops(trace, w.interval)
                });
            verdict.benchmark = verdict::benchmark(&verdict, &loops, focus_idle);
            let communication = window.as_ref().zip(focus).and_then(|(win, i)| {
                crate::attribute::communication::communication(
                    trace,
                    win,
                    device_idle[i].device,
                    &hw,
                )
            });
            let findings: Vec<Finding> = match &window {
                Some(win) => {
                    let shared = Analyses {
                        communication: communication.as_ref(),
                        idle: focus_idle,
                        credit: &credit,
                        sync_sites: &sites,
                        copies: &copies,
                        dataloader: &dataloader,
                        launch: &launch,
                        framework: &fw,
                        verdict: &verdict,
                        kernels: &top_kernels,
                        hardware: &hw,
                    };
                    detectors
                        .iter()
                        .flat_map(|d| d.detect(&shared.context_for(trace, win, *d)))
                        .collect()
                }
                None => Vec::new(),
            };
            let memory = window
                .as_ref()
                .map_or_else(Vec::new, |w| crate::views::memory::device_memory(trace, w));
            (
                timeline.and_then(joined),
                (verdict, communication, findings, memory, loops),
            )
        });
    // The critical path and the predictions on one more thread (one pass over the steps'
    // graphs), beside the idle summaries (they share nothing but the trace).
    let focus_ops = focus.map_or(&[][..], |i| &works[i].ops[..]);
    let fixes: Vec<FixToReplay> = findings
        .iter()
        .map(|f| FixToReplay {
            kind: f.kind,
            what_if: f.what_if.as_ref(),
            upper_bound_per_step_ns: f.estimated_win_per_step_ns,
        })
        .collect();
    let ((critical_path, predictions), idle) = std::thread::scope(|scope| {
        let (window, threads, fixes) = (window.as_ref(), &threads, &fixes[..]);
        let path = scope.spawn(move || match window {
            Some(win) if focus.is_some() => {
                crate::predict::critical::critical_path(trace, win, threads, focus_ops, fixes)
            }
            _ => (
                crate::predict::critical::CriticalPath::default(),
                vec![None; fixes.len()],
            ),
        });
        let idle: Vec<IdleSummary> = device_idle.iter().map(|d| summarize(trace, d)).collect();
        (joined(path), idle)
    });
    drop(fixes);
    let step_ns = window.as_ref().map_or(0, AnalysisWindow::step_ns);
    let mut findings = finish_findings(findings, predictions, &memory, &hw, step_ns, fw.dialect());
    explain_disagreements(&mut findings, &critical_path, step_ns);
    let has_steps = window.as_ref().is_some_and(AnalysisWindow::has_steps);
    // A PyTorch capture covers the code the profiler was turned on around, which the user
    // can run again: its later iterations can always be captured.
    let work_repeats = fw.pytorch() || cold_run::work_repeats(has_steps, launches);
    let launches_repeat = cold_run::work_repeats(has_steps, launches);
    if let Some(cold) = cold_run::cold_run(&verdict, launches, &findings) {
        cold_run::mark(
            &mut verdict,
            &mut findings,
            cold,
            &fw,
            (work_repeats, launches_repeat),
        );
    } else if work_repeats {
        cold_run::note_one_time(&mut verdict, &findings);
    }
    // Each finding's lever checked against what the whole window shows.
    let mut evidence =
        lever::WindowEvidence::of(&sites, steps, (work_repeats, launches_repeat), &fw);
    // A capture that starts with the context holds the whole run (a PyTorch profiler window
    // is a sample of a longer one).
    if fw.capture != tracelens_model::CaptureTool::TorchProfiler
        && crate::measure::one_time::capture_holds_context_creation(trace)
    {
        evidence.whole_run_launches = Some(launches.1);
    }
    evidence.launches_per_step = launches.1 as f64 / steps.max(1) as f64;
    evidence.allocations_per_launch = window.as_ref().map_or(0.0, |w| {
        device_allocations(trace, w.interval) as f64 / launches.1.max(1) as f64
    });
    evidence.pageable_blocked_per_step_ns = window
        .as_ref()
        .map_or(0, |w| w.per_step(copies.pageable().host_blocked_ns));
    lever::decide(&mut findings, &evidence, &fw);
    // Where the work repeats, work done once ranks after every per-step problem worth
    // fixing, whatever its size (the sort is stable: the gain order holds within each part);
    // a program that runs its work once has no per-step problems to put first, and a cold
    // window whose launches do not repeat holds no steady state to rank them in: there the
    // largest gain comes first. A cold window of a program whose later iterations can be
    // captured is mostly one-time work: capturing its steady state comes first, then the
    // rest in that order.
    let reorder = launches_repeat || (work_repeats && verdict.cold_run.is_none());
    if reorder {
        findings.sort_by_key(|f| !f.ranks_before_one_time_work());
    }
    let lead = verdict.cold_run.is_some() && work_repeats;
    if lead {
        cold_run::lead_with_one_time_work(&mut findings);
    }
    if reorder || lead {
        Finding::assign_keys(&mut findings);
    }
    // A window too short to judge has no findings; a busy GPU with nothing worth a fix says so.
    if verdict::mark_too_short(&mut verdict, trace, focus_window_ops.len(), &fw) {
        findings.clear();
    }
    let launches_failed = verdict::mark_failed_launches(&mut verdict, trace);
    if launches_failed {
        findings.clear();
    }
    verdict::mark_nothing_worth_fixing(&mut verdict, &findings);
    verdict::drop_trivial_on_busy_gpu(&verdict, &mut findings);
    // A benchmark's idle between its timed loops is its harness: no fix for it.
    if verdict::mark_benchmark(&mut verdict, trace, &loops) {
        findings.retain(|f| f.win_kind != WinKind::GpuIdle);
    }
    Finding::refer_repeated_fixes(&mut findings);
    let wins = WinTotals {
        idle_ns: focus_idle.map_or(0, |d| d.idle_ns),
        gpu_idle_wins_ns: findings
            .iter()
            .filter(|f| f.win_kind == WinKind::GpuIdle)
            .map(|f| f.estimated_win_ns)
            .sum(),
        exposed_copy_wins_ns: findings
            .iter()
            .filter(|f| f.win_kind == WinKind::ExposedCopy)
            .map(|f| f.estimated_win_ns)
            .sum(),
        exposed_communication_wins_ns: findings
            .iter()
            .filter(|f| f.win_kind == WinKind::ExposedCommunication)
            .map(|f| f.estimated_win_ns)
            .sum(),
    };
    let syncs = SyncSummary {
        calls: calls.len() as u64,
        blocked_ns: calls.iter().map(|c| c.blocked_ns).sum(),
        costly_sites: sites
            .iter()
            .filter(|s| s.gpu_idle_ns > 0 && s.trigger != SyncTrigger::ProfilerInjected)
            .count(),
        sites: sites.into_iter().take(50).collect(),
    };
    let focus_device = focus.map(|i| device_idle[i].device);
    let views = busy_views();
    let (window_ns, step_count) = window
        .as_ref()
        .map_or((0, 1), |w| (w.interval.dur_ns(), w.step_count()));
    let efficiency = views.efficiency.against(
        trace,
        crate::measure::peaks::device_peak(&hw),
        window_ns,
        step_count,
    );
    if let Some((class, advice)) = verdict::refine_with_efficiency(&mut verdict, &efficiency, &hw) {
        crate::diagnose::detectors::kernel_work_refit(&mut findings, class, &advice);
    }
    verdict::mark_copies_outweigh_kernels(&mut verdict, trace, focus_window_ops);
    verdict::mark_small_grids(&mut verdict, &findings);
    verdict::mark_kernel_work(&mut verdict, &findings);
    if !launches_failed {
        verdict::mark_window_in_capture(&mut verdict, trace, window.as_ref(), &fw);
    }
    verdict::mark_unified_memory(&mut verdict, &findings);
    let compiled = views
        .compiled
        .map(|run| crate::diagnose::compiled::report(run, &fw, &hw));
    let serving = views
        .inference
        .map(|run| crate::diagnose::inference::report(run, &efficiency, &hw, &verdict));
    if let Some(s) = &serving {
        crate::diagnose::inference::add_to_verdict(&mut verdict, s);
    }
    let memory_advice = crate::diagnose::memory::advice(&memory, &fw, &hw);
    let diagnosis = Diagnosis {
        memory_advice,
        compiled,
        serving,
        verdict,
        program: fw.describe_program(crate::measure::environment::ThreadRecords {
            switches: trace.spans.iter().any(|s| s.kind == SpanKind::OffCpu),
            states: trace.source.records_thread_states,
        }),
        framework: fw,
        hardware: hw,
        findings,
        wins,
        idle,
        syncs,
        copies,
        dataloader,
        launch,
        breakdown,
        top_kernels,
        tensor_core_percent: views.tensor_core_percent,
        regions: views.regions,
        operators: views.operators,
        operators_by_shape: views.operators_by_shape,
        memory,
        efficiency,
        critical_path,
        communication,
        focus_device,
        window,
    };
    (diagnosis, device_idle, timeline)
}

/// Every finding after its detector, in one place: the batch advice fitted to the memory
/// left, the predicted step from the critical path's replay (or why there is none), then the
/// ranking by the step time each fix is expected to save (the prediction where there is one,
/// else the upper bound), and each finding's stable key in that order; each snippet is
/// labelled with the program's language.
fn finish_findings(
    mut findings: Vec<Finding>,
    predictions: Vec<Option<FixPrediction>>,
    memory: &[crate::views::memory::DeviceMemory],
    hw: &Hardware,
    step_ns: TimeNs,
    dialect: crate::measure::environment::Dialect,
) -> Vec<Finding> {
    for (f, p) in findings.iter_mut().zip(predictions) {
        f.snippet_language = crate::diagnose::advice::snippet_language(dialect).into();
        f.fix = crate::views::memory::fit_batch_advice(&f.fix, memory, hw);
        match p {
            Some(p) => {
                f.predicted_step_ns = Some(p.predicted_step_ns);
                f.prediction = p.assumption;
            }
            None => f.prediction = crate::predict::critical::no_prediction(f.kind).to_string(),
        }
    }
    findings.sort_by(|a, b| {
        b.expected_gain_ns(step_ns)
            .cmp(&a.expected_gain_ns(step_ns))
            .then(b.estimated_win_ns.cmp(&a.estimated_win_ns))
            .then(a.kind.cmp(&b.kind))
            .then(a.title.cmp(&b.title))
    });
    // A wait the trace cannot explain has no lever of its own (its fix is to record more):
    // it follows every finding that has one and is worth fixing first.
    let unexplained = |f: &Finding| f.kind == crate::FindingKind::GpuWait;
    if findings
        .iter()
        .any(|f| !unexplained(f) && f.estimated_win_percent >= finding::PER_STEP_FIRST_PERCENT)
    {
        findings.sort_by_key(unexplained);
    }
    // CPU work the capture did not record has a fix (record it) that changes nothing yet: a
    // per-step lever the trace does support, worth a tenth of the time, comes before it.
    if let Some(last) = findings
        .iter()
        .rposition(Finding::ranks_before_unrecorded_work)
    {
        // Unrecorded work ranked before the last such lever moves to just after it.
        let (mut ordered, mut moved) = (Vec::with_capacity(findings.len()), Vec::new());
        for (i, f) in findings.into_iter().enumerate() {
            if i < last && f.is_unrecorded_host_work() {
                moved.push(f);
            } else {
                ordered.push(f);
                if i == last {
                    ordered.append(&mut moved);
                }
            }
        }
        findings = ordered;
    }
    Finding::assign_keys(&mut findings);
    findings
}

/// Device allocation calls that start inside `window`.
fn device_allocations(trace: &Trace, window: tracelens_model::Interval) -> u64 {
    let mut allocates: rustc_hash::FxHashMap<tracelens_model::NameId, bool> =
        rustc_hash::FxHashMap::default();
    let mut n = 0;
    for s in &trace.spans {
        if s.kind.is_api_call() && window.start_ns <= s.start_ns && s.start_ns < window.end_ns {
            let yes = *allocates.entry(s.name).or_insert_with(|| {
                crate::vocabulary::api::allocates_device_memory(trace.names.get(s.name))
            });
            n += u64::from(yes);
        }
    }
    n
}

/// A finding's predicted gain may fall this many times short of its stated cost before the
/// difference needs words.
pub const GAIN_DISAGREEMENT_FACTOR: i64 = 4;

/// The words a prediction carries when it saves far less than the finding's cost
/// ([`explain_disagreements`]).
pub const DISAGREEMENT_NOTE: &str = "the replay saves far less than this finding's cost";

/// Explains each finding whose replayed gain is under a [`GAIN_DISAGREEMENT_FACTOR`]th of the
/// cost it states (its upper bound): what else bounds the step, from the critical path. The
/// ranking already follows the prediction, so such a finding is ranked by what it saves.
fn explain_disagreements(
    findings: &mut [Finding],
    path: &crate::predict::critical::CriticalPath,
    step_ns: TimeNs,
) {
    for f in findings.iter_mut() {
        let Some(predicted) = f.predicted_step_ns else {
            continue;
        };
        let gain = (step_ns - predicted).max(0);
        let cost = f.estimated_win_per_step_ns;
        if cost <= 0 || gain.saturating_mul(GAIN_DISAGREEMENT_FACTOR) >= cost {
            continue;
        }
        let bound = path
            .step_breakdown
            .first()
            .map(|s| format!(": the step's critical path runs mostly through {} ({:.0} %), which this fix does not shorten", s.kind.describe(), s.percent))
            .unwrap_or_default();
        f.prediction.push_str(&format!(
            "; {DISAGREEMENT_NOTE} ({} against up to {}){bound}",
            tracelens_model::format_ms(gain),
            tracelens_model::format_ms(cost)
        ));
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
            for s in d.segments_of(g) {
                *causes.entry(s.cause).or_default() += s.interval.dur_ns();
            }
            GapSummary {
                interval: g.interval,
                causes: by_size(&causes, g.interval.dur_ns()),
                ended_by: g.ended_by().map(|e| trace.name(e).to_string()),
                launch: g.launch().map(|l| trace.name(l).to_string()),
                wait: g.wait,
            }
        })
        .collect();
    let mut by_cause = by_size(&d.by_cause, d.idle_ns);
    // Unattributed idle that unified-memory migrations end, mostly: named as such.
    let migrations_ns: TimeNs = d
        .unattributed_by_reason
        .iter()
        .filter(|(r, _)| {
            matches!(
                r,
                UnattributedReason::UnifiedMemory | UnattributedReason::Prefetch
            )
        })
        .map(|(_, &ns)| ns)
        .sum();
    if let Some(c) = by_cause
        .iter_mut()
        .find(|c| c.cause == IdleCause::Unattributed && migrations_ns * 2 > c.ns)
    {
        c.note = Some(CauseNote::UnifiedMemory);
    }
    IdleSummary {
        device: d.device,
        extent: d.extent,
        idle_ns: d.idle_ns,
        gaps: d.gaps.len(),
        by_cause,
        unattributed_by_reason: d.unattributed_by_reason.clone(),
        host_compute_ops: d.host_compute_ops.clone(),
        os_waits: d.os_waits.clone(),
        descheduled_ns: d.descheduled_ns,
        largest_gaps,
        graph_replay_ops: d.graph_replay_ops,
        attribution_reliable: d.reliable(),
    }
}
