//! Performance across runs: each stored result as one point (step time, GPU busy, MFU,
//! exposed communication, top finding), ordered by when the trace was recorded, and the runs
//! where the step time changed beyond the noise, with the findings that appeared or grew there.

use crate::metrics::{HistoryFigures, Metrics};
use crate::results::{FindingResult, Results};
use serde::{Deserialize, Serialize};
use tracelens_model::TimeNs;

/// The least noise a change must pass, percent (as `diff` uses).
const NOISE_FLOOR_PERCENT: f64 = 1.0;

/// One run of the series.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Its label (`analyze --label`), else the document's file name.
    pub label: String,
    /// The document it was read from.
    pub source: String,
    /// When its trace was recorded (Unix ns), when the trace says.
    pub recorded_unix_ns: Option<i64>,
    /// Mean step (the window without steps).
    pub step_ns: TimeNs,
    /// Step-time standard deviation over the mean, percent.
    pub step_spread_percent: f64,
    /// GPU busy share, percent (none for a CPU-only run).
    pub gpu_busy_percent: Option<f64>,
    /// Model FLOPs utilization, percent, when measured.
    pub mfu_percent: Option<f64>,
    /// Collective time alone per step, percent of the step, when the run has collectives.
    pub exposed_comm_percent: Option<f64>,
    /// The finding with the largest win.
    pub top_finding: Option<String>,
    /// Every finding (key, title, win per step).
    pub findings: Vec<(String, String, TimeNs)>,
    /// Its HTML report beside the document, when there is one (a relative link).
    #[serde(default)]
    pub report: Option<String>,
}

/// A run where the step time moved beyond the noise and stayed there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// Index of the first run at the new level.
    pub at: usize,
    /// Median step before and after (the runs since the last change, and the runs until the
    /// next).
    pub before_ns: TimeNs,
    /// Median step after.
    pub after_ns: TimeNs,
    /// The change, percent of before.
    pub change_percent: f64,
    /// The noise it passed: the larger step-time spread of the two levels' runs, at least 1 %.
    pub noise_percent: f64,
    /// Findings new at that run, or whose win grew beyond the noise: (title, win before, win after).
    pub findings: Vec<(String, TimeNs, TimeNs)>,
}

/// The series and its changes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct History {
    /// The runs, oldest first.
    pub runs: Vec<Run>,
    /// Where the step time changed.
    pub changes: Vec<Change>,
    /// How the runs were ordered.
    pub order: String,
}

impl Run {
    /// A run from its results, label and recording time.
    #[must_use]
    pub fn of(results: &Results, label: String, source: String, recorded: Option<i64>) -> Run {
        let metrics = Metrics::of(results);
        // A figure the run cannot give is absent, never 0.
        let value = |name: &str| {
            metrics
                .not_measured(name)
                .is_none()
                .then(|| metrics.get(name).map(|m| m.value))
                .flatten()
        };
        let spread = if results.step_ns > 0 && results.step_count > 1 {
            results.step_stddev_ns as f64 * 100.0 / results.step_ns as f64
        } else {
            0.0
        };
        Run {
            label,
            source,
            recorded_unix_ns: recorded,
            step_ns: results.step_ns,
            step_spread_percent: spread,
            gpu_busy_percent: value("gpu.busy_percent"),
            mfu_percent: value("gpu.mfu_percent"),
            // Without collectives the exposed share is 0 by definition: no figure to draw.
            exposed_comm_percent: value("comm.exposed_percent")
                .filter(|_| metrics.not_measured("comm.overlap_percent").is_none()),
            top_finding: results.findings.first().map(|f| f.title.clone()),
            findings: results
                .findings
                .iter()
                .map(|f: &FindingResult| (f.key.clone(), f.title.clone(), f.win_per_step_ns))
                .collect(),
            report: None,
        }
    }
}

/// `this` run against the earlier `runs` (their median step, the noise their largest
/// step-time spread and this run's, at least 1 %); none without earlier runs.
#[must_use]
pub fn against(this: &Run, runs: &[Run]) -> Option<HistoryFigures> {
    if runs.is_empty() {
        return None;
    }
    let (median, spread) = level_of(runs);
    let change_percent = if median > 0.0 {
        (this.step_ns as f64 - median) * 100.0 / median
    } else {
        0.0
    };
    let noise_percent = spread
        .max(this.step_spread_percent)
        .max(NOISE_FLOOR_PERCENT);
    Some(HistoryFigures {
        change_percent,
        noise_percent,
        regression: change_percent > noise_percent,
        runs: runs.len(),
    })
}

/// Orders `runs` by recording time when every run has one (else as given) and finds the
/// changes.
#[must_use]
pub fn history(mut runs: Vec<Run>) -> History {
    let order = if runs.iter().all(|r| r.recorded_unix_ns.is_some()) {
        runs.sort_by_key(|r| r.recorded_unix_ns);
        "by the time each trace was recorded"
    } else {
        "as given (not every trace records when it was made)"
    };
    let changes = change_points(&runs);
    History {
        runs,
        changes,
        order: order.to_string(),
    }
}

/// The median step and the largest spread of a level's runs (the median: one outlier inside a
/// level does not move it).
#[must_use]
pub fn level_of(runs: &[Run]) -> (f64, f64) {
    let mut steps: Vec<TimeNs> = runs.iter().map(|r| r.step_ns).collect();
    steps.sort_unstable();
    let median = match steps.len() {
        0 => 0.0,
        n if n % 2 == 1 => steps[n / 2] as f64,
        n => (steps[n / 2 - 1] as f64 + steps[n / 2] as f64) / 2.0,
    };
    let spread = runs
        .iter()
        .map(|r| r.step_spread_percent)
        .fold(0.0, f64::max);
    (median, spread)
}

/// Runs where the step time moved beyond the noise and stayed: run `i` differs from the level
/// since the last change by more than the noise (the larger step-time spread of the runs on
/// either side, at least 1 %), and so does the next run in the same direction (a single
/// outlier is not a change). The last run alone can open a change: nothing says it will not
/// stay.
fn change_points(runs: &[Run]) -> Vec<Change> {
    let mut changes = Vec::new();
    let mut start = 0;
    let mut i = 1;
    while i < runs.len() {
        let (before, before_spread) = level_of(&runs[start..i]);
        let differs = |r: &Run| {
            let noise = before_spread
                .max(r.step_spread_percent)
                .max(NOISE_FLOOR_PERCENT);
            let change = (r.step_ns as f64 - before) * 100.0 / before.max(1.0);
            (change.abs() > noise).then_some(change.signum())
        };
        let here = differs(&runs[i]);
        let confirmed = match (here, runs.get(i + 1)) {
            (Some(dir), Some(next)) => differs(next) == Some(dir),
            (Some(_), None) => true,
            (None, _) => false,
        };
        if confirmed {
            // The new level: from here until the runs stop agreeing with it.
            let mut end = i + 1;
            while end < runs.len() && differs(&runs[end]) == here {
                end += 1;
            }
            let (after, after_spread) = level_of(&runs[i..end]);
            let noise = before_spread.max(after_spread).max(NOISE_FLOOR_PERCENT);
            let prev = &runs[i - 1];
            let findings = runs[i]
                .findings
                .iter()
                .filter_map(|(key, title, win)| {
                    let was = prev
                        .findings
                        .iter()
                        .find(|(k, _, _)| k == key)
                        .map_or(0, |f| f.2);
                    let grew = (*win - was) as f64 * 100.0 / before.max(1.0) > noise;
                    grew.then(|| (title.clone(), was, *win))
                })
                .collect();
            changes.push(Change {
                at: i,
                before_ns: tracelens_analysis::num::float_ns(before.round()),
                after_ns: tracelens_analysis::num::float_ns(after.round()),
                change_percent: (after - before) * 100.0 / before.max(1.0),
                noise_percent: noise,
                findings,
            });
            start = i;
        }
        i += 1;
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(step_ms: f64, spread: f64) -> Run {
        Run {
            label: String::new(),
            source: String::new(),
            recorded_unix_ns: None,
            step_ns: tracelens_analysis::num::float_ns(step_ms * 1e6),
            step_spread_percent: spread,
            gpu_busy_percent: None,
            mfu_percent: None,
            exposed_comm_percent: None,
            top_finding: None,
            findings: Vec::new(),
            report: None,
        }
    }

    #[test]
    fn a_lasting_step_change_is_found_at_its_run_and_noise_is_not() {
        // ±2 % noise with 3 % spreads, then +25 % from run 5 on.
        let steps = [100.0, 102.0, 98.5, 101.0, 99.0, 125.0, 126.0, 124.0, 125.5];
        let runs: Vec<Run> = steps.iter().map(|&s| run(s, 3.0)).collect();
        let h = history(runs);
        assert_eq!(h.changes.len(), 1, "{:?}", h.changes);
        assert_eq!(h.changes[0].at, 5);
        assert!(
            (h.changes[0].change_percent - 25.5).abs() < 1.0,
            "{:?}",
            h.changes
        );
        // One outlier is not a change.
        let spiky = [100.0, 101.0, 130.0, 100.5, 99.5];
        let h = history(spiky.iter().map(|&s| run(s, 2.0)).collect());
        assert!(h.changes.is_empty(), "{:?}", h.changes);
        // The noise decides: the same 6 % step passes 2 % spreads, not 8 % ones.
        let step = [100.0, 100.0, 106.0, 106.0];
        assert_eq!(
            history(step.iter().map(|&s| run(s, 2.0)).collect())
                .changes
                .len(),
            1
        );
        assert!(history(step.iter().map(|&s| run(s, 8.0)).collect())
            .changes
            .is_empty());
    }
}
