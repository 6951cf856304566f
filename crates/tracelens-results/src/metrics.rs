//! The numbers rules compare, by documented name (docs/rules.md). Every name exists for every
//! run (a finding kind that did not occur reads 0), so a rule never depends on what happened
//! to be found.

use crate::diff::Diff;
use crate::results::Results;
use std::collections::BTreeMap;
use tracelens_analysis::attribute::idle::IdleCause;
use tracelens_analysis::finding_kind::FindingKind;

/// The unit a metric is measured in; literals in rules convert to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Milliseconds.
    Ms,
    /// Percent (or percentage points for differences).
    Percent,
    /// A plain number (counts).
    Count,
}

impl Unit {
    /// How values print (`12.300 ms`, `4.0 %`, `3`).
    #[must_use]
    pub fn show(self, v: f64) -> String {
        // No "-0.0".
        let v = if v == 0.0 { 0.0 } else { v };
        match self {
            Unit::Ms => format!("{v:.3} ms"),
            Unit::Percent => format!("{v:.1} %"),
            Unit::Count if v.fract() == 0.0 => format!("{v:.0}"),
            Unit::Count => format!("{v:.2}"),
        }
    }
}

/// One measured number.
#[derive(Clone, Debug, PartialEq)]
pub struct Metric {
    /// Its value, in `unit`.
    pub value: f64,
    /// Its unit.
    pub unit: Unit,
}

/// Every metric of one run (and of a diff, when there is one).
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    map: BTreeMap<String, Metric>,
    /// Names whose figure the run cannot give, with why (GPU figures of a CPU-only trace).
    not_measured: BTreeMap<String, &'static str>,
}

/// Why memory figures are missing.
const NO_MEMORY: &str = "the trace has no allocator totals: record with torch.profiler.profile(profile_memory=True) on PyTorch 1.10 or later";
/// Why the tensor-core share is missing.
const NO_KERNELS: &str = "the trace has no kernel time in the window";
/// Why `host.ahead_ms` is not measured.
const NO_LINKED_LAUNCHES: &str =
    "no launch call in the window is linked to its GPU op on the focus device (or all are graph replays)";
/// Why the memory growth is missing.
const NO_GROWTH: &str = "the window has fewer than three profiled steps with allocator samples";
/// Why the memory share is missing.
const NO_CAPACITY: &str = "the trace does not record the device's memory (deviceProperties)";

/// Why GPU figures are missing from a run without GPU activity.
const NO_GPU: &str = "the trace records no GPU activity (a CPU-only run): gate it on step.* metrics such as step.data_loader.percent or step.time_ms";

/// Why MFU is missing, by gap.
fn no_mfu(gap: tracelens_analysis::views::efficiency::EfficiencyGap) -> &'static str {
    use tracelens_analysis::views::efficiency::EfficiencyGap;
    match gap {
        EfficiencyGap::FormatWithoutShapes => "the trace's format carries no operator shapes and dtypes (Nsight Systems): record with torch.profiler.profile(record_shapes=True)",
        EfficiencyGap::NoOperators => "the trace has no framework operators: FLOPs need PyTorch profiler operators recorded with record_shapes=True",
        EfficiencyGap::NoShapes => "the trace has no op input shapes: record with torch.profiler.profile(record_shapes=True)",
        EfficiencyGap::NoKnownOps => "no op the FLOP model knows launched GPU work in the window",
        EfficiencyGap::UnknownDevice => "the device is not in the peak table, so its peak FLOP/s is unknown",
        EfficiencyGap::AbovePeak => "the counted FLOPs over the measured time exceed the device's peak: the recorded shapes and times disagree",
    }
}

/// Why a named operator's or region's figure is missing.
const NO_SUCH_OP: &str = "no operator of that name among the window's 50 with the most device time";
const NO_SUCH_REGION: &str = "no user range of that name in the window";

/// The metric of operator `name`'s GPU time per step: `op."aten::mm".gpu_ms`.
#[must_use]
pub fn operator_metric(name: &str) -> String {
    format!("op.\"{name}\".gpu_ms")
}

/// The metric of region `name`'s host time per step: `region."## forward ##".ms`.
#[must_use]
pub fn region_metric(name: &str) -> String {
    format!("region.\"{name}\".ms")
}

/// Whether `name` is an operator or region metric (names the trace gives), and which.
fn named_metric(name: &str) -> Option<&'static str> {
    let quoted = |rest: &str, suffix: &str| {
        rest.strip_prefix('"')
            .and_then(|r| r.strip_suffix(suffix))
            .and_then(|r| r.strip_suffix('"'))
            .is_some_and(|inner| !inner.is_empty() && !inner.contains('"'))
    };
    if name
        .strip_prefix("op.")
        .is_some_and(|r| quoted(r, ".gpu_ms"))
    {
        Some(NO_SUCH_OP)
    } else if name
        .strip_prefix("region.")
        .is_some_and(|r| quoted(r, ".ms"))
    {
        Some(NO_SUCH_REGION)
    } else {
        None
    }
}

/// Why a run without `name` in it cannot give it, by the evidence its family needs.
fn missing_evidence(name: &str) -> &'static str {
    if name.starts_with("diff.") {
        NO_BASELINE
    } else if name.starts_with("history.") {
        NO_HISTORY
    } else if name.starts_with("ranks.") {
        NO_JOB
    } else {
        NOT_IN_RUN
    }
}

/// Why `history.*` figures are missing.
const NO_HISTORY: &str =
    "there are no earlier runs: pass --history with the stored results of the last runs";
/// Why `diff.*` figures are missing.
const NO_BASELINE: &str = "there is nothing to compare with: pass --baseline with a trace or a stored result of the run before";
/// Why `ranks.*` figures are missing.
const NO_JOB: &str =
    "this is one trace, not a job: check the folder of every rank's trace (tracelens check DIR/)";
/// Why any other figure is missing.
const NOT_IN_RUN: &str = "this run does not give it";

/// Whether a rule may name `name`: a fixed metric, or an operator or region metric.
#[must_use]
pub fn is_metric_name(name: &str, fixed: &[String]) -> bool {
    named_metric(name).is_some() || fixed.iter().any(|n| n == name)
}

fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

impl Metrics {
    fn put(&mut self, name: impl Into<String>, value: f64, unit: Unit) {
        self.map.insert(name.into(), Metric { value, unit });
    }

    /// `PREFIX.ms` and `PREFIX.percent` from a time per step and its share of the step (0
    /// when the run has none).
    fn put_time_and_share(&mut self, prefix: &str, share: Option<(i64, f64)>) {
        let (ns, percent) = share.unwrap_or((0, 0.0));
        self.put(format!("{prefix}.ms"), ms(ns), Unit::Ms);
        self.put(format!("{prefix}.percent"), percent, Unit::Percent);
    }

    /// The metrics of one run.
    #[must_use]
    pub fn of(r: &Results) -> Metrics {
        let mut m = Metrics::default();
        m.put("gpu.busy_percent", r.gpu_busy_percent, Unit::Percent);
        m.put(
            "gpu.idle_percent",
            (100.0 - r.gpu_busy_percent).max(0.0),
            Unit::Percent,
        );
        m.put("gpu.idle_ms", ms(r.gpu_idle_per_step_ns), Unit::Ms);
        m.put("step.time_ms", ms(r.step_ns), Unit::Ms);
        m.put("step.count", r.step_count as f64, Unit::Count);
        let spread = if r.step_ns > 0 {
            r.step_stddev_ns as f64 * 100.0 / r.step_ns as f64
        } else {
            0.0
        };
        m.put("step.spread_percent", spread, Unit::Percent);
        for cause in IdleCause::ALL {
            let c = r.idle_by_cause.iter().find(|c| c.cause == cause);
            let share = c.map(|c| (c.per_step_ns, c.percent_of_step));
            m.put_time_and_share(&format!("idle.{}", cause.label()), share);
        }
        for kind in FindingKind::ALL {
            let of_kind: Vec<_> = r.findings.iter().filter(|f| f.kind == kind).collect();
            let label = kind.label();
            let sum = |f: &dyn Fn(&crate::FindingResult) -> f64| {
                of_kind.iter().map(|x| f(x)).sum::<f64>()
            };
            m.put(
                format!("finding.{label}.present"),
                f64::from(u8::from(!of_kind.is_empty())),
                Unit::Count,
            );
            m.put(
                format!("finding.{label}.count"),
                sum(&|f| f.count as f64),
                Unit::Count,
            );
            m.put(
                format!("finding.{label}.count_per_step"),
                sum(&|f| f.count_per_step),
                Unit::Count,
            );
            m.put(
                format!("finding.{label}.win_ms"),
                sum(&|f| ms(f.win_per_step_ns)),
                Unit::Ms,
            );
            m.put(
                format!("finding.{label}.win_percent"),
                sum(&|f| f.win_percent).min(100.0),
                Unit::Percent,
            );
            // The step with this kind's fixes made: the step less the predicted savings (the
            // step itself when the kind was not found).
            let predicted = format!("finding.{label}.predicted_step_ms");
            let saved: i64 = of_kind
                .iter()
                .filter_map(|f| f.predicted_step_ns)
                .map(|p| (r.step_ns - p).max(0))
                .sum();
            m.put(&predicted, ms((r.step_ns - saved).max(0)), Unit::Ms);
            if of_kind.iter().any(|f| f.predicted_step_ns.is_none()) {
                m.not_measured.insert(
                    predicted,
                    tracelens_analysis::predict::critical::no_prediction(kind),
                );
            }
        }
        for kind in tracelens_analysis::predict::critical::CriticalKind::ALL {
            let share = r
                .critical_path
                .iter()
                .find(|s| s.kind == kind)
                .map(|s| (s.ns, s.percent));
            m.put_time_and_share(&format!("critical_path.{}", kind.label()), share);
        }
        let comm = r.communication.as_ref();
        m.put(
            "comm.exposed_percent",
            comm.map_or(0.0, |c| c.exposed_percent),
            Unit::Percent,
        );
        m.put(
            "comm.overlap_percent",
            comm.map_or(0.0, |c| c.overlap_percent),
            Unit::Percent,
        );
        m.put(
            "comm.busbw_gbps",
            comm.and_then(|c| c.busbw_gb_per_s).unwrap_or(0.0),
            Unit::Count,
        );
        if comm.is_none() {
            m.not_measured
                .insert("comm.overlap_percent".into(), NO_COLLECTIVES);
        }
        if comm.and_then(|c| c.busbw_gb_per_s).is_none() {
            m.not_measured.insert(
                "comm.busbw_gbps".into(),
                if comm.is_none() {
                    NO_COLLECTIVES
                } else {
                    NO_SIZES
                },
            );
        }
        m.put("findings.count", r.findings.len() as f64, Unit::Count);
        for category in crate::results::STEP_CATEGORIES {
            let c = r.step_breakdown.iter().find(|c| c.category == category);
            let share = c.map(|c| (c.per_step_ns, c.percent_of_step));
            m.put_time_and_share(&format!("step.{category}"), share);
        }
        m.put(
            "memory.peak_gb",
            r.memory_peak_bytes.map_or(0.0, |b| b as f64 / 1e9),
            Unit::Count,
        );
        let percent = match (r.memory_peak_bytes, r.memory_capacity_bytes) {
            (Some(p), Some(c)) if c > 0 => Some((p as f64 * 100.0 / c as f64).clamp(0.0, 100.0)),
            _ => None,
        };
        m.put("memory.peak_percent", percent.unwrap_or(0.0), Unit::Percent);
        m.put(
            "memory.headroom_percent",
            percent.map_or(0.0, |p| 100.0 - p),
            Unit::Percent,
        );
        m.put(
            "memory.growth_mb_per_step",
            r.memory_growth_bytes_per_step
                .map_or(0.0, |b| b as f64 / 1e6),
            Unit::Count,
        );
        if r.memory_growth_bytes_per_step.is_none() {
            m.not_measured.insert(
                "memory.growth_mb_per_step".into(),
                if r.memory_peak_bytes.is_none() {
                    NO_MEMORY
                } else {
                    NO_GROWTH
                },
            );
        }
        m.put(
            "kernel.tensor_core_percent",
            r.tensor_core_percent.unwrap_or(0.0),
            Unit::Percent,
        );
        m.put("host.ahead_ms", ms(r.host_ahead_ns.unwrap_or(0)), Unit::Ms);
        if r.host_ahead_ns.is_none() {
            m.not_measured
                .insert("host.ahead_ms".into(), NO_LINKED_LAUNCHES);
        }
        m.put(
            "gpu.mfu_percent",
            r.mfu_percent.unwrap_or(0.0),
            Unit::Percent,
        );
        if r.mfu_percent.is_none() {
            m.not_measured.insert(
                "gpu.mfu_percent".into(),
                no_mfu(
                    r.mfu_gap.unwrap_or(
                        tracelens_analysis::views::efficiency::EfficiencyGap::NoKnownOps,
                    ),
                ),
            );
        }
        for o in r.operator_gpu.iter().filter(|o| !o.name.contains('"')) {
            m.put(operator_metric(&o.name), ms(o.per_step_ns), Unit::Ms);
        }
        for g in r.region_time.iter().filter(|g| !g.name.contains('"')) {
            m.put(region_metric(&g.name), ms(g.per_step_ns), Unit::Ms);
        }
        if r.tensor_core_percent.is_none() {
            m.not_measured
                .insert("kernel.tensor_core_percent".into(), NO_KERNELS);
        }
        if r.memory_peak_bytes.is_none() {
            m.not_measured.insert("memory.peak_gb".into(), NO_MEMORY);
        }
        if percent.is_none() {
            let why = if r.memory_peak_bytes.is_none() {
                NO_MEMORY
            } else {
                NO_CAPACITY
            };
            m.not_measured.insert("memory.peak_percent".into(), why);
            m.not_measured.insert("memory.headroom_percent".into(), why);
        }
        if !r.gpu_measured {
            // GPU busy and idle, idle by cause and the wins (GPU idle a fix gives back) need a
            // GPU; step figures and finding counts do not.
            let gpu_figures: Vec<String> = m
                .map
                .keys()
                .filter(|n| {
                    n.starts_with("gpu.")
                        || n.starts_with("idle.")
                        || n.starts_with("comm.")
                        || n.starts_with("critical_path.")
                        || n.ends_with(".predicted_step_ms")
                        || n.ends_with(".win_ms")
                        || n.ends_with(".win_percent")
                })
                .cloned()
                .collect();
            for name in gpu_figures {
                m.not_measured.insert(name, NO_GPU);
            }
        }
        m
    }

    /// Why the run cannot give `name`'s figure, when it cannot.
    #[must_use]
    pub fn not_measured(&self, name: &str) -> Option<&'static str> {
        if let Some(why) = self.not_measured.get(name) {
            return Some(why);
        }
        if self.map.contains_key(name) {
            return None;
        }
        // Every figure the run does not give is refused, never read as "holds": an operator
        // or region it does not have (a misspelt name), a diff without a baseline, rank
        // figures of one trace.
        Some(named_metric(name).unwrap_or_else(|| missing_evidence(name)))
    }

    /// Adds the `diff.*` metrics.
    pub fn add_diff(&mut self, d: &Diff) {
        self.put(
            "diff.step_time_percent",
            d.step_change_percent,
            Unit::Percent,
        );
        self.put(
            "diff.step_time_ms",
            ms(d.after_step_ns - d.before_step_ns),
            Unit::Ms,
        );
        self.put(
            "diff.gpu_busy_points",
            d.after_busy_percent - d.before_busy_percent,
            Unit::Percent,
        );
        self.put("diff.new_findings", d.new.len() as f64, Unit::Count);
        self.put(
            "diff.resolved_findings",
            d.resolved.len() as f64,
            Unit::Count,
        );
        self.put(
            "diff.regression",
            f64::from(u8::from(d.regression)),
            Unit::Count,
        );
    }

    /// Adds the `history.*` metrics (this run against earlier runs: [`crate::history::against`]).
    pub fn add_history(&mut self, h: &HistoryFigures) {
        self.put(
            "history.step_time_change_percent",
            h.change_percent,
            Unit::Percent,
        );
        self.put("history.noise_percent", h.noise_percent, Unit::Percent);
        self.put(
            "history.regression",
            f64::from(u8::from(h.regression)),
            Unit::Count,
        );
        self.put("history.runs", h.runs as f64, Unit::Count);
    }

    /// Adds the `ranks.*` metrics of a multi-rank job.
    pub fn add_job(&mut self, job: &crate::job::Job) {
        let max_wait = job.ranks.iter().map(|r| r.wait_ns).max().unwrap_or(0);
        let last = job
            .straggler
            .as_ref()
            .map_or(0.0, |s| s.last_at as f64 * 100.0 / s.of.max(1) as f64);
        self.put_job(&JobFigures {
            count: job.ranks.len() as f64,
            spread: job.step_time_spread_percent,
            max_wait_ms: ms(max_wait),
            straggler_last: last,
            clock_skew_ms: job.clock.as_ref().map_or(0.0, |c| ms(c.skew_ns)),
        });
        if job.clock.is_none() {
            self.not_measured
                .insert("ranks.clock_skew_ms".into(), NO_MATCHED_COLLECTIVES);
        }
    }

    fn put_job(&mut self, f: &JobFigures) {
        self.put("ranks.count", f.count, Unit::Count);
        self.put("ranks.step_time_spread_percent", f.spread, Unit::Percent);
        self.put("ranks.max_wait_ms", f.max_wait_ms, Unit::Ms);
        self.put(
            "ranks.straggler_last_percent",
            f.straggler_last,
            Unit::Percent,
        );
        self.put("ranks.clock_skew_ms", f.clock_skew_ms, Unit::Ms);
    }

    /// A metric by name.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&Metric> {
        self.map.get(name)
    }

    /// Every metric name, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }

    /// The unit of a metric name (counts for unknown names).
    #[must_use]
    pub fn unit_of(name: &str) -> Unit {
        if named_metric(name).is_some() {
            return Unit::Ms;
        }
        Metrics::every_family()
            .get(name)
            .map_or(Unit::Count, |x| x.unit)
    }

    /// Every name a rule may use, with or without a diff.
    pub fn all_names() -> Vec<String> {
        Metrics::every_family()
            .names()
            .map(str::to_string)
            .collect()
    }

    /// An empty run's metrics with every family added (diff, job, history): every name.
    fn every_family() -> Metrics {
        let mut m = Metrics::of(&Results::empty());
        m.add_diff(&Diff::default());
        m.put_job(&JobFigures::default());
        m.add_history(&HistoryFigures::default());
        m
    }
}

/// A run against earlier runs, as the `history.*` metrics give it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HistoryFigures {
    /// The step against the earlier runs' median step, percent.
    pub change_percent: f64,
    /// The noise it is judged against (the largest step-time spread, at least 1 %), percent.
    pub noise_percent: f64,
    /// The step grew beyond the noise.
    pub regression: bool,
    /// Earlier runs compared with.
    pub runs: usize,
}

/// The job-level figures a rule reads.
#[derive(Default)]
struct JobFigures {
    count: f64,
    spread: f64,
    max_wait_ms: f64,
    straggler_last: f64,
    clock_skew_ms: f64,
}

/// Why a communication figure is missing.
const NO_COLLECTIVES: &str = "the focus device runs no collective in the window";
const NO_SIZES: &str =
    "the trace records no message sizes (PyTorch 1.13+ writes `In msg nelems` on NCCL kernels)";
const NO_MATCHED_COLLECTIVES: &str =
    "no collective was matched across the ranks, so their clocks cannot be compared";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_rule_on_any_metric_holds_by_default_on_a_run_without_its_evidence() {
        // One trace, no baseline, no job: every name a rule may use is measured or refused.
        let m = Metrics::of(&Results::empty());
        for name in Metrics::all_names() {
            assert!(
                m.get(&name).is_some() || m.not_measured(&name).is_some(),
                "{name} would hold silently"
            );
        }
        assert_eq!(m.not_measured("diff.regression"), Some(NO_BASELINE));
        assert_eq!(m.not_measured("ranks.count"), Some(NO_JOB));
        assert_eq!(m.not_measured("ranks.max_wait_ms"), Some(NO_JOB));
        // With the evidence, they are measured.
        let mut with = Metrics::of(&Results::empty());
        with.add_diff(&Diff::default());
        with.put_job(&JobFigures::default());
        assert!(with.not_measured("diff.regression").is_none());
        assert!(with.not_measured("ranks.count").is_none());
    }

    #[test]
    fn gpu_figures_of_a_cpu_only_run_are_not_measured() {
        let mut r = Results::empty();
        r.gpu_measured = false;
        let m = Metrics::of(&r);
        for gpu in [
            "gpu.idle_percent",
            "idle.data_loading.percent",
            "finding.data_loader_stall.win_percent",
        ] {
            assert!(m.not_measured(gpu).is_some(), "{gpu}");
        }
        for measured in [
            "step.time_ms",
            "step.data_loader.percent",
            "finding.data_loader_stall.count",
        ] {
            assert!(m.not_measured(measured).is_none(), "{measured}");
        }
        assert!(Metrics::of(&Results::empty())
            .not_measured("gpu.idle_percent")
            .is_none());
    }

    #[test]
    fn host_ahead_is_the_verdicts_delay_in_ms_or_not_measured() {
        let mut r = Results::empty();
        assert!(Metrics::of(&r)
            .not_measured("host.ahead_ms")
            .is_some_and(|why| why.contains("linked")));
        r.host_ahead_ns = Some(2_500_000);
        let m = Metrics::of(&r);
        assert_eq!(m.not_measured("host.ahead_ms"), None);
        let got = m.get("host.ahead_ms").map(|x| x.value);
        assert!(got.is_some_and(|v| (v - 2.5).abs() < 1e-9), "{got:?}");
    }

    #[test]
    fn every_documented_metric_exists() {
        let names = Metrics::all_names();
        let doc = include_str!("../../../docs/rules.md");
        for n in &names {
            let pattern = n
                .split('.')
                .map(|part| {
                    if n.starts_with("critical_path.")
                        && tracelens_analysis::predict::critical::CriticalKind::ALL
                            .iter()
                            .any(|k| k.label() == part)
                    {
                        "<segment>"
                    } else if IdleCause::ALL.iter().any(|c| c.label() == part)
                        || FindingKind::ALL.iter().any(|k| k.label() == part)
                    {
                        "<…>"
                    } else if n.starts_with("step.")
                        && crate::results::STEP_CATEGORIES.contains(&part)
                    {
                        "<category>"
                    } else {
                        part
                    }
                })
                .collect::<Vec<_>>()
                .join(".");
            let documented = doc.contains(&format!("`{n}`"))
                || doc.contains(&format!("`{}`", pattern.replace("<…>", "<cause>")))
                || doc.contains(&format!("`{}`", pattern.replace("<…>", "<kind>")));
            assert!(documented, "{n} is not in docs/rules.md");
        }
    }

    #[test]
    fn every_finding_kind_and_idle_cause_has_metrics_a_doc_entry_and_a_label() {
        let names = Metrics::all_names();
        let rules = include_str!("../../../docs/rules.md");
        let json = include_str!("../../../docs/json-output.md");
        let listed = |doc: &str, what: &str| {
            doc.lines()
                .find(|l| l.starts_with(&format!("`<{what}>`:")))
                .map(|first| {
                    // The list runs from that line to a blank line or the next list.
                    let rest = doc.lines().skip_while(|l| *l != first).skip(1);
                    std::iter::once(first)
                        .chain(rest.take_while(|l| !l.trim().is_empty() && !l.starts_with("`<")))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default()
        };
        let kinds_doc = listed(rules, "kind");
        let causes_doc = listed(rules, "cause");
        let mut labels = std::collections::BTreeSet::new();
        for kind in FindingKind::ALL {
            let label = kind.label();
            assert!(!label.is_empty() && labels.insert(label), "{kind:?}: label");
            for metric in [
                "present",
                "count",
                "count_per_step",
                "win_ms",
                "win_percent",
            ] {
                let name = format!("finding.{label}.{metric}");
                assert!(names.contains(&name), "{kind:?}: no metric {name}");
            }
            assert!(
                kinds_doc.contains(&format!("`{label}`")),
                "{label} not in docs/rules.md `<kind>`"
            );
            assert!(
                json.contains(&format!("`{label}`")),
                "{label} not in docs/json-output.md"
            );
        }
        labels.clear();
        for cause in IdleCause::ALL {
            let label = cause.label();
            assert!(
                !label.is_empty() && labels.insert(label),
                "{cause:?}: label"
            );
            assert!(!cause.describe().is_empty(), "{cause:?}: description");
            for metric in ["ms", "percent"] {
                let name = format!("idle.{label}.{metric}");
                assert!(names.contains(&name), "{cause:?}: no metric {name}");
            }
            assert!(
                causes_doc.contains(&format!("`{label}`")),
                "{label} not in docs/rules.md `<cause>`"
            );
            assert!(
                json.contains(&format!("`{label}`")),
                "{label} not in docs/json-output.md"
            );
        }
    }

    #[test]
    fn operator_and_region_metrics_read_the_run_and_refuse_unknown_names() {
        let mut r = Results::empty();
        r.operator_gpu.push(crate::results::NamedTime {
            name: "aten::mm".into(),
            per_step_ns: 7_000_000,
        });
        r.region_time.push(crate::results::NamedTime {
            name: "## forward ##".into(),
            per_step_ns: 2_500_000,
        });
        let m = Metrics::of(&r);
        let rule = crate::rules::parse_rule(r#"op."aten::mm".gpu_ms > 5ms"#).unwrap();
        assert!(rule.fires(&m));
        let rule = crate::rules::parse_rule(r###"region."## forward ##".ms > 5ms"###).unwrap();
        assert!(!rule.fires(&m));
        assert_eq!(m.not_measured(r#"op."aten::mm".gpu_ms"#), None);
        // A name the run lacks is refused, not read as zero.
        let missing = r#"op."aten::mmm".gpu_ms"#;
        assert!(crate::rules::parse_rule(&format!("{missing} > 1ms")).is_ok());
        assert_eq!(m.not_measured(missing), Some(NO_SUCH_OP));
        // A percent cannot compare with a time metric; quotes must close.
        assert!(crate::rules::parse_rule(r#"op."aten::mm".gpu_ms > 5%"#).is_err());
        assert!(crate::rules::parse_rule(r#"op."aten::mm.gpu_ms > 5ms"#).is_err());
        // MFU says why it is missing.
        let mut r = Results::empty();
        r.mfu_gap = Some(tracelens_analysis::views::efficiency::EfficiencyGap::NoShapes);
        assert!(Metrics::of(&r)
            .not_measured("gpu.mfu_percent")
            .unwrap()
            .contains("record_shapes"));
        r.mfu_percent = Some(41.0);
        r.mfu_gap = None;
        let m = Metrics::of(&r);
        assert!((m.get("gpu.mfu_percent").unwrap().value - 41.0).abs() < 1e-12);
        assert!(m.not_measured("gpu.mfu_percent").is_none());
    }
}
