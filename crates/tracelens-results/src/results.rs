//! A run's results that stand on their own: the figures rules, diffs and job rows compare,
//! viewed from a [`Diagnosis`] (no span ids, no trace needed) so `check` and `diff` work on a
//! stored result.

use serde::{Deserialize, Serialize};
use tracelens_analysis::attribute::idle::IdleCause;
use tracelens_analysis::diagnose::finding::{Severity, WinKind};
use tracelens_analysis::finding_kind::FindingKind;
use tracelens_analysis::{Diagnosis, VerdictKind};
use tracelens_model::{SourceInfo, TimeNs};

/// Version of the document layout; bumped on any incompatible change (see
/// `docs/json-output.md`).
pub const SCHEMA_VERSION: u32 = 5;

/// Version of the `results` layout.
pub const RESULTS_VERSION: u32 = 1;

/// One finding, identified across runs by its `key`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FindingResult {
    /// Stable identity: kind plus call site or subject, no numbers (`implicit_sync:train.py:52 log_loss`).
    pub key: String,
    /// What kind of problem.
    pub kind: FindingKind,
    /// The title as shown.
    pub title: String,
    /// How much it matters.
    pub severity: Severity,
    /// What the win counts.
    pub win_kind: WinKind,
    /// Estimated win per step (or in the window without steps).
    pub win_per_step_ns: TimeNs,
    /// The win as a share of the step (or window).
    pub win_percent: f64,
    /// Occurrences (calls, gaps, copies, short kernels) in the window: the count the detector
    /// named with `Evidence::add_occurrences` (0 when it names none).
    pub count: u64,
    /// Occurrences per step (per window without steps).
    pub count_per_step: f64,
    /// Python call site.
    pub call_site: Option<String>,
    /// The fix.
    pub fix: String,
    /// The step time predicted with the fix made (the window without steps), when the replay
    /// predicts one.
    #[serde(default)]
    pub predicted_step_ns: Option<TimeNs>,
    /// What the prediction assumes, or why there is none.
    #[serde(default)]
    pub prediction: String,
    /// Host compute's sub-cause (what the launching thread did): a diff pairs only findings of
    /// one sub-cause. Absent in older documents.
    #[serde(default)]
    pub sub_cause: Option<tracelens_analysis::attribute::host_work::HostWork>,
}

/// Idle time of one cause on the focus device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CauseResult {
    /// The cause.
    pub cause: IdleCause,
    /// Time per step (or in the window without steps).
    pub per_step_ns: TimeNs,
    /// Share of the step (or window), percent.
    pub percent_of_step: f64,
}

/// GPU time of one kernel name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelResult {
    /// Kernel name.
    pub name: String,
    /// Launches.
    pub count: u64,
    /// GPU time per step (or in the window).
    pub per_step_ns: TimeNs,
}

/// Time of one named operator or region, per step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NamedTime {
    /// Operator or region name.
    pub name: String,
    /// Time per step (or in the window).
    pub per_step_ns: TimeNs,
}

/// The results of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// Layout version ([`RESULTS_VERSION`]).
    pub version: u32,
    /// The trace's file name.
    pub trace: String,
    /// The verdict kind.
    pub verdict: VerdictKind,
    /// The verdict as shown.
    pub verdict_text: String,
    /// Whether the figures are per profiled step (else for the whole window).
    pub has_steps: bool,
    /// Profiled steps.
    pub step_count: u64,
    /// Mean step (or the window length).
    pub step_ns: TimeNs,
    /// Step-time standard deviation.
    pub step_stddev_ns: TimeNs,
    /// Shortest and longest step.
    pub step_min_ns: TimeNs,
    /// Longest step.
    pub step_max_ns: TimeNs,
    /// GPU busy share of the window, focus device.
    pub gpu_busy_percent: f64,
    /// GPU idle per step (or in the window).
    pub gpu_idle_per_step_ns: TimeNs,
    /// Idle by cause, largest first.
    pub idle_by_cause: Vec<CauseResult>,
    /// Findings, largest win first.
    pub findings: Vec<FindingResult>,
    /// Kernels by GPU time, largest first.
    pub top_kernels: Vec<KernelResult>,
    /// Whether the trace records GPU activity: without it the GPU, idle and win figures are
    /// not measured (a CPU-only run), and rules on them are refused. Older documents lack the
    /// field and had a GPU.
    #[serde(default = "gpu_was_measured")]
    pub gpu_measured: bool,
    /// The mean step by category (tb_plugin's breakdown, CPU-only runs included), in
    /// [`STEP_CATEGORIES`] order; empty without an analysis window.
    #[serde(default)]
    pub step_breakdown: Vec<CategoryResult>,
    /// The largest GPU memory peak held (reserved, else allocated) over the window, when the
    /// trace has the allocator's totals (`profile_memory=True`, PyTorch 1.10 and later).
    #[serde(default)]
    pub memory_peak_bytes: Option<i64>,
    /// That device's memory.
    #[serde(default)]
    pub memory_capacity_bytes: Option<i64>,
    /// The fastest growth of GPU memory alive at step ends, bytes per step, over the devices
    /// with allocator totals (none under three steps).
    #[serde(default)]
    pub memory_growth_bytes_per_step: Option<i64>,
    /// Share of kernel time in tensor-core kernels, in percent (none without kernels).
    #[serde(default)]
    pub tensor_core_percent: Option<f64>,
    /// Model FLOPs utilization of the window, in percent (none without shapes or a known
    /// device; `mfu_gap` says why).
    #[serde(default)]
    pub mfu_percent: Option<f64>,
    /// Why there is no MFU, when there is none.
    #[serde(default)]
    pub mfu_gap: Option<tracelens_analysis::views::efficiency::EfficiencyGap>,
    /// GPU time each listed operator launched (device total), per step: the operators of
    /// the diagnosis (most device self time first, at most 50).
    #[serde(default)]
    pub operator_gpu: Vec<NamedTime>,
    /// Host time of each listed region, per step.
    #[serde(default)]
    pub region_time: Vec<NamedTime>,
    /// The critical path of every step by kind, per step (empty without GPU work).
    #[serde(default)]
    pub critical_path: Vec<tracelens_analysis::predict::critical::CriticalShare>,
    /// The focus device's communication: exposed and hidden collective time, bus bandwidth
    /// per operation (none without collectives).
    #[serde(default)]
    pub communication: Option<tracelens_analysis::attribute::communication::Communication>,
    /// How far the host runs ahead of the focus device: the median delay from a launch call
    /// to its op's start on its busiest stream (the verdict's figure; none without linked
    /// launches).
    #[serde(default)]
    pub host_ahead_ns: Option<TimeNs>,
}

/// The device with the largest absolute memory peak, if the trace has allocator totals.
fn absolute_memory(d: &Diagnosis) -> Option<&tracelens_analysis::views::memory::DeviceMemory> {
    d.memory
        .iter()
        .filter(|m| m.basis == tracelens_analysis::views::memory::PeakBasis::AllocatorTotals)
        .max_by_key(|m| m.peak_held_bytes())
}

fn gpu_was_measured() -> bool {
    true
}

/// The step breakdown's categories as rule metrics name them (`step.<category>.percent`), in
/// the breakdown's priority order.
pub const STEP_CATEGORIES: [&str; 8] = [
    "kernel",
    "memcpy",
    "memset",
    "communication",
    "runtime",
    "data_loader",
    "cpu_exec",
    "other",
];

/// One category of the mean step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CategoryResult {
    /// One of [`STEP_CATEGORIES`].
    pub category: String,
    /// Time per step.
    pub per_step_ns: TimeNs,
    /// Share of the step.
    pub percent_of_step: f64,
}

impl Results {
    /// The results of an analysed trace, read from `source`.
    #[must_use]
    pub fn of(source: &SourceInfo, d: &Diagnosis) -> Results {
        let w = d.window.as_ref();
        let steps = w.map_or(0, |w| w.step_count() as u64);
        let per = |ns: TimeNs| w.map_or(ns, |w| w.per_step(ns));
        let step_ns = d.verdict.step_ns;
        // Shares of the step with the analysis' own rule (0-100, 0 without a step).
        let pct = |ns: TimeNs| tracelens_analysis::num::percent(ns, step_ns);
        let idle = d.focus_idle();
        let findings = d
            .findings
            .iter()
            .map(|f| {
                let count = f.evidence.occurrences().unwrap_or(0);
                FindingResult {
                    key: f.key.clone(),
                    kind: f.kind,
                    title: f.title.clone(),
                    severity: f.severity,
                    win_kind: f.win_kind,
                    win_per_step_ns: f.estimated_win_per_step_ns,
                    win_percent: f.estimated_win_percent,
                    count,
                    count_per_step: count as f64 / steps.max(1) as f64,
                    call_site: f.call_site.clone(),
                    fix: f.fix.clone(),
                    predicted_step_ns: f.predicted_step_ns,
                    prediction: f.prediction.clone(),
                    sub_cause: f.sub_cause,
                }
            })
            .collect();
        Results {
            version: RESULTS_VERSION,
            trace: std::path::Path::new(&source.path)
                .file_name()
                .map_or_else(|| source.path.clone(), |n| n.to_string_lossy().into_owned()),
            verdict: d.verdict.kind,
            verdict_text: d.verdict.text.clone(),
            has_steps: w.is_some_and(|w| w.has_steps()),
            step_count: steps,
            step_ns,
            step_stddev_ns: w.map_or(0, |w| w.step.stddev_ns),
            step_min_ns: w.map_or(0, |w| w.step.min_ns),
            step_max_ns: w.map_or(0, |w| w.step.max_ns),
            gpu_busy_percent: d.verdict.gpu_busy_percent,
            gpu_idle_per_step_ns: per(d.verdict.gpu_idle_ns),
            idle_by_cause: idle
                .map(|i| {
                    i.by_cause
                        .iter()
                        .map(|c| CauseResult {
                            cause: c.cause,
                            per_step_ns: per(c.ns),
                            percent_of_step: pct(per(c.ns)),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            findings,
            top_kernels: d
                .top_kernels
                .iter()
                .map(|k| KernelResult {
                    name: k.name.clone(),
                    count: k.count,
                    per_step_ns: per(k.total_ns),
                })
                .collect(),
            memory_peak_bytes: absolute_memory(d).map(|m| m.peak_held_bytes()),
            memory_capacity_bytes: absolute_memory(d).and_then(|m| m.capacity_bytes),
            memory_growth_bytes_per_step: d
                .memory
                .iter()
                .filter(|m| {
                    m.basis == tracelens_analysis::views::memory::PeakBasis::AllocatorTotals
                })
                .filter_map(|m| m.growth.as_ref().map(|g| g.per_step_bytes))
                .max(),
            tensor_core_percent: d.tensor_core_percent,
            host_ahead_ns: d.verdict.host_ahead_ns,
            mfu_percent: d.efficiency.mfu_percent,
            mfu_gap: if d.efficiency.mfu_percent.is_some() {
                None
            } else {
                use tracelens_analysis::views::efficiency::EfficiencyGap;
                Some(
                    d.efficiency
                        .gaps
                        .first()
                        .copied()
                        .unwrap_or(EfficiencyGap::NoKnownOps),
                )
            },
            operator_gpu: d
                .operators
                .iter()
                .map(|o| NamedTime {
                    name: o.name.clone(),
                    per_step_ns: per(o.device_total_ns),
                })
                .collect(),
            region_time: d
                .regions
                .iter()
                .map(|r| NamedTime {
                    name: r.name.clone(),
                    per_step_ns: per(r.host_ns),
                })
                .collect(),
            critical_path: d.critical_path.breakdown.clone(),
            communication: d.communication.clone(),
            gpu_measured: d.focus_device.is_some(),
            step_breakdown: d.breakdown.as_ref().map_or_else(Vec::new, |b| {
                STEP_CATEGORIES
                    .iter()
                    .zip(b.mean.as_array())
                    .zip(b.percent.as_array())
                    .map(|((category, per_step_ns), percent)| CategoryResult {
                        category: (*category).to_string(),
                        per_step_ns,
                        percent_of_step: percent.clamp(0.0, 100.0),
                    })
                    .collect()
            }),
        }
    }

    /// Results of nothing (every metric zero): the set of metric names.
    #[must_use]
    pub fn empty() -> Results {
        Results {
            version: RESULTS_VERSION,
            trace: String::new(),
            verdict: VerdictKind::NoGpuActivity,
            verdict_text: String::new(),
            has_steps: false,
            step_count: 0,
            step_ns: 0,
            step_stddev_ns: 0,
            step_min_ns: 0,
            step_max_ns: 0,
            gpu_busy_percent: 0.0,
            gpu_idle_per_step_ns: 0,
            idle_by_cause: Vec::new(),
            findings: Vec::new(),
            top_kernels: Vec::new(),
            gpu_measured: true,
            step_breakdown: Vec::new(),
            memory_peak_bytes: None,
            memory_capacity_bytes: None,
            memory_growth_bytes_per_step: None,
            tensor_core_percent: None,
            host_ahead_ns: None,
            mfu_percent: None,
            mfu_gap: None,
            operator_gpu: Vec::new(),
            region_time: Vec::new(),
            critical_path: Vec::new(),
            communication: None,
        }
    }

    /// Reads results stored as such: a bare results object (a rank's row in
    /// `rank.parquet`), or the `results` section of a version 3 or 4 analyze document. A
    /// current document stores none: read it with
    /// [`results_of_document`](crate::report::results_of_document).
    pub fn from_json(text: &str) -> Result<Results, String> {
        let doc: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        // A document from a newer tracelens may mean something else by the same names.
        let newer = |key: &str, section: &serde_json::Value, ours: u32| match section
            .get(key)
            .and_then(serde_json::Value::as_u64)
        {
            Some(found) if found > u64::from(ours) => Err(format!(
                "{key} {found} is newer than this tracelens reads ({ours}): upgrade tracelens"
            )),
            _ => Ok(()),
        };
        newer("schema_version", &doc, SCHEMA_VERSION)?;
        let section = doc.get("results").unwrap_or(&doc);
        newer("version", section, RESULTS_VERSION)?;
        serde_json::from_value(section.clone())
            .map_err(|e| format!("not a tracelens result (tracelens analyze --format json): {e}"))
    }
}
