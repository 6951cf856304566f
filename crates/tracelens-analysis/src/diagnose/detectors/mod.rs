//! The detectors: the [`Detector`] trait, the [`Context`] they read and the registry
//! ([`all_detectors`]). Each detector lives in a file of its own with unit tests on its problem
//! fixture and its fixed twin; adding one is that file plus one line in [`all_detectors`].
//!
//! GPU-idle wins come from the [credit ledger](crate::attribute::credit), so no two findings claim the same
//! idle nanosecond; shares are per-step wins over the window's step time.

mod copy_time;
mod cpu_oversubscription;
mod data_loader;
mod exposed_communication;
mod gpu_waits;
pub(crate) mod host_compute;
mod implicit_sync;
mod kernel_work;
mod launch_bound;
mod pageable_copies;
#[cfg(test)]
mod program_models;
mod small_grid;
mod unified_memory;

pub use copy_time::CopyTime;
pub use cpu_oversubscription::CpuOversubscription;
pub use data_loader::{DataLoaderStall, DATA_LOADER_SHARE_PERCENT};
pub use exposed_communication::ExposedCommunication;
pub use gpu_waits::{CollectiveWait, CrossStreamWait, UnexplainedGpuWait, BIG_SHARE_PERCENT};
pub use host_compute::{HostCompute, HOST_COMPUTE_FINDING_PERCENT};
pub use implicit_sync::{sync_site_reported, ImplicitSyncs, HOST_BLOCKED_FINDING_PERCENT};
pub use kernel_work::{refit as kernel_work_refit, KernelWork, KERNEL_WORK_BUSY_PERCENT};
pub use launch_bound::LaunchBound;
pub use pageable_copies::PageableCopies;
pub use small_grid::{SmallGrid, SMALL_GRID_FINDING_PERCENT};
pub use unified_memory::UnifiedMemory;

use crate::attribute::copies::CopyReport;
use crate::attribute::credit::IdleCredit;
use crate::attribute::dataloader::DataLoaderReport;
use crate::attribute::idle::DeviceIdle;
use crate::attribute::launch::LaunchReport;
use crate::attribute::syncs::SyncSite;
use crate::diagnose::finding::{Confidence, Evidence, Finding, Severity, WinKind};
use crate::finding_kind::FindingKind;
use crate::measure::environment::Framework;
use crate::measure::window::AnalysisWindow;
use crate::num::percent;
use tracelens_model::{TimeNs, Trace};

/// A shared analysis a detector may read, besides the trace and the window (which every
/// detector has). A detector names what it reads in [`Detector::reads`]; [`Context`] hands
/// out only those (a debug build stops at an undeclared read), so what each detector depends
/// on is stated in one line and checked by every test run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// The focus device's idle attribution.
    Idle,
    /// Its idle time, credited to findings.
    Credit,
    /// Sync call sites.
    SyncSites,
    /// Copies.
    Copies,
    /// The DataLoader report.
    DataLoader,
    /// Launch-bound stretches.
    Launch,
    /// What the trace shows of the program's framework (PyTorch, the optimizer).
    Framework,
    /// The focus device's communication.
    Communication,
    /// The verdict's figures (busy share, what the busy time is, kernel classes).
    Verdict,
    /// The window's largest kernels.
    Kernels,
    /// The device's hardware (its peaks, the precisions it runs).
    Hardware,
}

/// The shared analyses, computed once per diagnosis before any detector runs.
pub struct Analyses<'a> {
    /// Idle attribution of the focus device (the one the verdict describes).
    pub idle: Option<&'a DeviceIdle>,
    /// Its idle time, credited to findings.
    pub credit: &'a IdleCredit,
    /// Sync call sites (GPU idle measured on the focus device).
    pub sync_sites: &'a [SyncSite],
    /// Copies.
    pub copies: &'a CopyReport,
    /// DataLoader.
    pub dataloader: &'a DataLoaderReport,
    /// Launch-bound stretches.
    pub launch: &'a LaunchReport,
    /// What the trace shows of PyTorch and the optimizer.
    pub framework: &'a Framework,
    /// The focus device's communication (none without collectives).
    pub communication: Option<&'a crate::attribute::communication::Communication>,
    /// The verdict, computed before any detector (its text is refined afterwards).
    pub verdict: &'a crate::diagnose::verdict::Verdict,
    /// The window's largest kernels, largest first.
    pub kernels: &'a [crate::views::kernels::KernelStat],
    /// The focus device's hardware.
    pub hardware: &'a crate::measure::environment::Hardware,
}

/// What one detector reads: the trace, the window, and the shared analyses it declared.
pub struct Context<'a> {
    /// The trace.
    pub trace: &'a Trace,
    /// The analysis window.
    pub window: &'a AnalysisWindow,
    shared: &'a Analyses<'a>,
    declared: &'static [Input],
}

impl<'a> Analyses<'a> {
    /// The context `detector` runs in: these analyses, limited to those it declares.
    #[must_use]
    pub fn context_for(
        &'a self,
        trace: &'a Trace,
        window: &'a AnalysisWindow,
        detector: &dyn Detector,
    ) -> Context<'a> {
        Context {
            trace,
            window,
            shared: self,
            declared: detector.reads(),
        }
    }
}

impl<'a> Context<'a> {
    fn read(&self, input: Input) -> &'a Analyses<'a> {
        debug_assert!(
            self.declared.contains(&input),
            "a detector reads {input:?} without declaring it in Detector::reads"
        );
        self.shared
    }

    /// Idle attribution of the focus device (the one the verdict describes).
    #[must_use]
    pub fn idle(&self) -> Option<&'a DeviceIdle> {
        self.read(Input::Idle).idle
    }

    /// The focus device's idle time, credited to findings.
    #[must_use]
    pub fn credit(&self) -> &'a IdleCredit {
        self.read(Input::Credit).credit
    }

    /// Sync call sites (GPU idle measured on the focus device).
    #[must_use]
    pub fn sync_sites(&self) -> &'a [SyncSite] {
        self.read(Input::SyncSites).sync_sites
    }

    /// Copies.
    #[must_use]
    pub fn copies(&self) -> &'a CopyReport {
        self.read(Input::Copies).copies
    }

    /// The DataLoader report.
    #[must_use]
    pub fn dataloader(&self) -> &'a DataLoaderReport {
        self.read(Input::DataLoader).dataloader
    }

    /// Launch-bound stretches.
    #[must_use]
    pub fn launch(&self) -> &'a LaunchReport {
        self.read(Input::Launch).launch
    }

    /// What the trace shows of PyTorch and the optimizer.
    #[must_use]
    pub fn framework(&self) -> &'a Framework {
        self.read(Input::Framework).framework
    }

    /// The focus device's communication (none without collectives).
    #[must_use]
    pub fn communication(&self) -> Option<&'a crate::attribute::communication::Communication> {
        self.read(Input::Communication).communication
    }

    /// The verdict's figures: busy share, what the busy time is, the kernel classes.
    #[must_use]
    pub fn verdict(&self) -> &'a crate::diagnose::verdict::Verdict {
        self.read(Input::Verdict).verdict
    }

    /// The window's largest kernels, largest first.
    #[must_use]
    pub fn kernels(&self) -> &'a [crate::views::kernels::KernelStat] {
        self.read(Input::Kernels).kernels
    }

    /// The focus device's hardware.
    #[must_use]
    pub fn hardware(&self) -> &'a crate::measure::environment::Hardware {
        self.read(Input::Hardware).hardware
    }
}

/// A finding's win fields.
pub(crate) struct Win {
    pub(crate) total_ns: TimeNs,
    pub(crate) per_step_ns: TimeNs,
    pub(crate) percent: f64,
    pub(crate) severity: Severity,
}

impl Context<'_> {
    /// "per step", or "in the trace" when there are no steps.
    pub(crate) fn per(&self) -> &'static str {
        if self.window.has_steps() {
            "per step"
        } else {
            "in the trace"
        }
    }

    /// "step time", or "profiled time" when there are no steps.
    pub(crate) fn step_time(&self) -> &'static str {
        if self.window.has_steps() {
            "step time"
        } else {
            "profiled time"
        }
    }

    /// The win fields of a total over the window: per step, and that as a share of the step.
    pub(crate) fn win(&self, ns: TimeNs) -> Win {
        let per_step_ns = self.window.per_step(ns);
        let percent = percent(per_step_ns, self.window.step_ns()).clamp(0.0, 100.0);
        Win {
            total_ns: ns,
            per_step_ns,
            percent,
            severity: Severity::from_share(percent),
        }
    }

    /// Whether the focus device's idle attribution is reliable (no graph replays hide its
    /// launches); reads [`Input::Idle`].
    pub(crate) fn reliable(&self) -> bool {
        self.idle().is_none_or(DeviceIdle::reliable)
    }

    pub(crate) fn finding(&self, kind: FindingKind, win_kind: WinKind, win: &Win) -> Finding {
        Finding {
            key: String::new(),
            kind,
            sub_cause: None,
            title: String::new(),
            severity: win.severity,
            win_kind,
            estimated_win_ns: win.total_ns,
            estimated_win_per_step_ns: win.per_step_ns,
            estimated_win_percent: win.percent,
            win_basis: String::new(),
            cpu_cost_per_step_ns: None,
            evidence: Evidence::default(),
            call_site: None,
            fix: String::new(),
            advice: String::new(),
            snippet: String::new(),
            snippet_language: String::new(),
            confidence: Confidence::Medium,
            predicted_step_ns: None,
            one_time: None,
            lever: None,
            fix_chosen_by: String::new(),
            prediction: String::new(),
            what_if: None,
        }
    }
}

/// A detector: reads the shared analyses, reports findings.
pub trait Detector {
    /// Short name.
    fn name(&self) -> &'static str;
    /// The kind of the findings it reports.
    fn kind(&self) -> FindingKind;
    /// The shared analyses it reads (the trace and the window it always has).
    fn reads(&self) -> &'static [Input];
    /// The findings (possibly none).
    fn detect(&self, cx: &Context) -> Vec<Finding>;
}

/// All detectors, one per [`FindingKind`], in no particular order (findings are sorted by win
/// afterwards).
#[must_use]
pub fn all_detectors() -> Vec<Box<dyn Detector>> {
    vec![
        Box::new(DataLoaderStall),
        Box::new(ImplicitSyncs),
        Box::new(PageableCopies),
        Box::new(LaunchBound),
        Box::new(HostCompute),
        Box::new(CpuOversubscription),
        Box::new(CrossStreamWait),
        Box::new(CollectiveWait),
        Box::new(UnexplainedGpuWait),
        Box::new(CopyTime),
        Box::new(ExposedCommunication),
        Box::new(SmallGrid),
        Box::new(UnifiedMemory),
        Box::new(KernelWork),
    ]
}

/// Syncs and launch stretches below this share of step time are details.
pub const MIN_FINDING_PERCENT: f64 = 0.5;

/// `1 call`, `2 calls`.
pub(crate) fn plural(n: u64, word: &str) -> String {
    // text, not a trace name
    match (n, word.ends_with("ch")) {
        (1, _) => format!("1 {word}"),
        (_, true) => format!("{n} {word}es"),
        _ => format!("{n} {word}s"),
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Detector fixtures: the committed scenario traces (`fixtures/scenarios/`) and what one
    //! detector reports on them.
    use super::Detector;
    use crate::diagnose::finding::Finding;
    use tracelens_model::Trace;

    fn scenario_path(name: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/scenarios")
            .join(format!("{name}.json"))
    }

    /// A scenario trace of `fixtures/scenarios/`.
    pub(crate) fn scenario(name: &str) -> Trace {
        let path = scenario_path(name);
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        tracelens_kineto::import_reader(std::io::BufReader::new(file), &path, 0, None)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// The text of a scenario trace, to derive a variant from.
    pub(crate) fn scenario_text(name: &str) -> String {
        std::fs::read_to_string(scenario_path(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// A trace builder with one CPU thread (pid 1, tid 1) and one GPU stream (device 0,
    /// stream 7), and those two lanes: the start of most hand-built test traces.
    pub(crate) fn thread_and_stream() -> (
        tracelens_model::TraceBuilder,
        tracelens_model::LaneId,
        tracelens_model::LaneId,
    ) {
        use tracelens_model::{Ident, LaneKey};
        let mut b = tracelens_model::TraceBuilder::new();
        let cpu = b.lane(LaneKey::Cpu {
            pid: Ident::Num(1),
            tid: Ident::Num(1),
        });
        let gpu = b.lane(LaneKey::Gpu {
            device: 0,
            stream: 7,
        });
        (b, cpu, gpu)
    }

    /// Adds a span given in µs (start and duration) to a trace being built by hand.
    pub(crate) fn span_us(
        b: &mut tracelens_model::TraceBuilder,
        kind: tracelens_model::SpanKind,
        lane: tracelens_model::LaneId,
        name: &str,
        (start_us, dur_us): (i64, i64),
        correlation: Option<u64>,
    ) {
        let name = b.intern(name);
        b.add_span(tracelens_model::SpanInput {
            kind,
            lane,
            start_ns: start_us * tracelens_model::NS_PER_US,
            dur_ns: dur_us * tracelens_model::NS_PER_US,
            name,
            correlation,
            external_id: None,
            detail: 0,
        });
    }

    /// Adds a 5 µs `cudaLaunchKernel` call at `start_us` on `cpu`, with `correlation`.
    pub(crate) fn launch_call(
        b: &mut tracelens_model::TraceBuilder,
        cpu: tracelens_model::LaneId,
        start_us: i64,
        correlation: Option<u64>,
    ) {
        span_us(
            b,
            tracelens_model::SpanKind::Runtime,
            cpu,
            "cudaLaunchKernel",
            (start_us, 5),
            correlation,
        );
    }

    /// What `detector` alone reports on `trace`, over the same shared analyses as a full
    /// diagnosis.
    pub(crate) fn findings_of(detector: &dyn Detector, trace: &Trace) -> Vec<Finding> {
        crate::diagnose::detect_with(trace, &[detector])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_finding_kind_has_one_detector() {
        let kinds: Vec<FindingKind> = all_detectors().iter().map(|d| d.kind()).collect();
        for kind in FindingKind::ALL {
            assert_eq!(
                kinds.iter().filter(|&&k| k == kind).count(),
                1,
                "{kind:?} needs exactly one detector in all_detectors()"
            );
        }
        assert_eq!(kinds.len(), FindingKind::ALL.len());
    }

    /// Reads what it does not declare.
    struct Undeclared;

    impl Detector for Undeclared {
        fn name(&self) -> &'static str {
            "undeclared"
        }
        fn kind(&self) -> FindingKind {
            FindingKind::CopyTime
        }
        fn reads(&self) -> &'static [Input] {
            &[Input::Framework]
        }
        fn detect(&self, cx: &Context) -> Vec<Finding> {
            let _ = cx.framework();
            let _ = cx.copies();
            Vec::new()
        }
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "reads Copies without declaring it")]
    fn a_detector_reading_what_it_did_not_declare_stops_a_debug_build() {
        let trace = testing::scenario("pageable_sync_copy");
        testing::findings_of(&Undeclared, &trace);
    }
}
