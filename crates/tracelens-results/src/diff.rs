//! Before and after: the step time against the noise of either run, GPU busy, idle by cause,
//! findings matched by key (resolved, new, changed) and the kernels whose time moved most.

use crate::results::{FindingResult, Results};
use serde::{Deserialize, Serialize};
use tracelens_analysis::attribute::idle::IdleCause;
use tracelens_analysis::VerdictKind;
use tracelens_model::{format_ms, TimeNs};

/// Kernels listed in a diff.
const KERNELS: usize = 10;
/// The smallest step-time change that can count as real, percent: below it even steady runs
/// differ (and one-step traces have no spread of their own).
const NOISE_FLOOR_PERCENT: f64 = 1.0;

/// One cause's idle per step, before and after.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CauseChange {
    /// The cause.
    pub cause: Option<IdleCause>,
    /// Before, per step.
    pub before_ns: TimeNs,
    /// After, per step.
    pub after_ns: TimeNs,
}

/// A finding present on both sides.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FindingChange {
    /// The shared key.
    pub key: String,
    /// The title after.
    pub title: String,
    /// Win per step before.
    pub before_win_ns: TimeNs,
    /// Win per step after.
    pub after_win_ns: TimeNs,
}

/// One kernel's GPU time per step, before and after.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelChange {
    /// Kernel name.
    pub name: String,
    /// Before, per step.
    pub before_ns: TimeNs,
    /// After, per step.
    pub after_ns: TimeNs,
}

/// The comparison of two runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Diff {
    /// The before trace's name.
    pub before: String,
    /// The after trace's name.
    pub after: String,
    /// Mean step (or window) before.
    pub before_step_ns: TimeNs,
    /// Mean step (or window) after.
    pub after_step_ns: TimeNs,
    /// Step change, percent of before (negative is faster).
    pub step_change_percent: f64,
    /// The noise: the larger step-time spread of the two runs (stddev / mean, percent), at
    /// least 1 %.
    pub noise_percent: f64,
    /// Whether the step change is within the noise.
    pub within_noise: bool,
    /// Slower beyond the noise.
    pub regression: bool,
    /// GPU busy before, percent.
    pub before_busy_percent: f64,
    /// GPU busy after, percent.
    pub after_busy_percent: f64,
    /// Idle by cause, per step, both sides.
    pub idle_by_cause: Vec<CauseChange>,
    /// Findings only before.
    pub resolved: Vec<FindingResult>,
    /// Findings only after.
    pub new: Vec<FindingResult>,
    /// Findings on both sides.
    pub changed: Vec<FindingChange>,
    /// Kernels whose time per step moved most.
    pub kernels: Vec<KernelChange>,
    /// The comparison in one line.
    pub verdict: String,
}

fn spread(r: &Results) -> f64 {
    if r.step_ns > 0 && r.step_count > 1 {
        r.step_stddev_ns as f64 * 100.0 / r.step_ns as f64
    } else {
        0.0
    }
}

/// What triggers a finding, from its title: the words before the first number or "at".
fn trigger(f: &FindingResult) -> String {
    f.title
        .split_whitespace()
        .take_while(|w| *w != "at" && !w.chars().any(|c| c.is_ascii_digit()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn kind_words(f: &FindingResult) -> String {
    f.kind.label().replace('_', " ")
}

/// Compares two runs.
#[must_use]
pub fn diff(before: &Results, after: &Results) -> Diff {
    let change = if before.step_ns > 0 {
        (after.step_ns - before.step_ns) as f64 * 100.0 / before.step_ns as f64
    } else {
        0.0
    };
    let noise = spread(before).max(spread(after)).max(NOISE_FLOOR_PERCENT);
    let within_noise = change.abs() <= noise;
    let mut causes: Vec<CauseChange> = IdleCause::ALL
        .iter()
        .map(|&c| CauseChange {
            cause: Some(c),
            before_ns: before
                .idle_by_cause
                .iter()
                .find(|x| x.cause == c)
                .map_or(0, |x| x.per_step_ns),
            after_ns: after
                .idle_by_cause
                .iter()
                .find(|x| x.cause == c)
                .map_or(0, |x| x.per_step_ns),
        })
        .filter(|c| c.before_ns > 0 || c.after_ns > 0)
        .collect();
    causes.sort_by_key(|c| std::cmp::Reverse(c.before_ns.max(c.after_ns)));
    // Findings match by key; a finding whose call site one trace lacks (no Python stacks
    // recorded) matches the same kind and trigger on the other side. Never across host
    // compute's sub-causes: the optimizer's time resolved and Python's new are two findings,
    // not one that changed (a document without sub-causes matches on the rest).
    let same_cause = |a: &FindingResult, b: &FindingResult| {
        a.sub_cause.is_none() || b.sub_cause.is_none() || a.sub_cause == b.sub_cause
    };
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for (i, b) in before.findings.iter().enumerate() {
        if let Some(j) = after
            .findings
            .iter()
            .position(|a| a.key == b.key && same_cause(a, b))
        {
            pairs.push((i, j));
        }
    }
    for (i, b) in before.findings.iter().enumerate() {
        if pairs.iter().any(|p| p.0 == i) {
            continue;
        }
        let j = after.findings.iter().enumerate().position(|(j, a)| {
            !pairs.iter().any(|p| p.1 == j)
                && a.kind == b.kind
                && same_cause(a, b)
                && (a.call_site.is_none() || b.call_site.is_none())
                && trigger(a) == trigger(b)
        });
        if let Some(j) = j {
            pairs.push((i, j));
        }
    }
    let resolved: Vec<FindingResult> = before
        .findings
        .iter()
        .enumerate()
        .filter(|(i, _)| !pairs.iter().any(|p| p.0 == *i))
        .map(|(_, f)| f.clone())
        .collect();
    let new: Vec<FindingResult> = after
        .findings
        .iter()
        .enumerate()
        .filter(|(j, _)| !pairs.iter().any(|p| p.1 == *j))
        .map(|(_, f)| f.clone())
        .collect();
    pairs.sort_by_key(|p| p.1);
    let changed = pairs
        .iter()
        .map(|&(i, j)| {
            let (b, a) = (&before.findings[i], &after.findings[j]);
            FindingChange {
                key: a.key.clone(),
                title: a.title.clone(),
                before_win_ns: b.win_per_step_ns,
                after_win_ns: a.win_per_step_ns,
            }
        })
        .collect();
    let mut kernels: Vec<KernelChange> = before
        .top_kernels
        .iter()
        .map(|k| k.name.clone())
        .chain(after.top_kernels.iter().map(|k| k.name.clone()))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|name| {
            let of = |r: &Results| {
                r.top_kernels
                    .iter()
                    .find(|k| k.name == name)
                    .map_or(0, |k| k.per_step_ns)
            };
            KernelChange {
                before_ns: of(before),
                after_ns: of(after),
                name,
            }
        })
        .collect();
    kernels.sort_by_key(|k| {
        (
            std::cmp::Reverse((k.after_ns - k.before_ns).abs()),
            k.name.clone(),
        )
    });
    kernels.truncate(KERNELS);
    let mut d = Diff {
        before: before.trace.clone(),
        after: after.trace.clone(),
        before_step_ns: before.step_ns,
        after_step_ns: after.step_ns,
        step_change_percent: change,
        noise_percent: noise,
        within_noise,
        regression: !within_noise && change > 0.0,
        before_busy_percent: before.gpu_busy_percent,
        after_busy_percent: after.gpu_busy_percent,
        idle_by_cause: causes,
        resolved,
        new,
        changed,
        kernels,
        verdict: String::new(),
    };
    d.verdict = verdict_line(&d, before.has_steps && after.has_steps);
    // A run too short to judge cannot be compared either: no regression is claimed from it.
    let short = |r: &Results| r.verdict == VerdictKind::TooShort;
    if short(before) || short(after) {
        let which = match (short(before), short(after)) {
            (true, true) => "both runs are",
            (true, false) => "the first run is",
            _ => "the second run is",
        };
        d.within_noise = true;
        d.regression = false;
        d.verdict = format!(
            "too short to compare: {which} too short to judge (windows {} → {}); capture several full steps of each",
            short_duration(d.before_step_ns),
            short_duration(d.after_step_ns)
        );
    }
    d
}

/// A duration that may be under a microsecond: in ns there, else in ms.
fn short_duration(ns: TimeNs) -> String {
    if ns < 1_000 {
        format!("{ns} ns")
    } else {
        format_ms(ns)
    }
}

fn verdict_line(d: &Diff, steps: bool) -> String {
    let what = if steps { "step" } else { "window" };
    let mut parts = vec![if d.within_noise {
        format!(
            "{what} {} % ({} → {}), within the step-time spread of ±{:.1} %: no significant change",
            tracelens_model::format_signed(d.step_change_percent, 1),
            format_ms(d.before_step_ns),
            format_ms(d.after_step_ns),
            d.noise_percent
        )
    } else {
        format!(
            "{what} {} % ({} → {}){}",
            tracelens_model::format_signed(d.step_change_percent, 1),
            format_ms(d.before_step_ns),
            format_ms(d.after_step_ns),
            if d.regression {
                ", a regression beyond the noise"
            } else {
                ""
            }
        )
    }];
    for f in &d.resolved {
        parts.push(format!("{} resolved", kind_words(f)));
    }
    for f in &d.new {
        parts.push(format!("new {}", kind_words(f)));
    }
    parts.push(format!(
        "GPU idle {:.0} % → {:.0} %",
        100.0 - d.before_busy_percent,
        100.0 - d.after_busy_percent
    ));
    parts.join("; ")
}
