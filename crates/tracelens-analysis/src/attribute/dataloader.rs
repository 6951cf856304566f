//! DataLoader waits: time in the iterator's `__next__` per step, its share of the step, the
//! GPU idle it caused, and which iterator (single- or multi-process) was used.

use crate::attribute::idle::{DeviceIdle, IdleCause};
use crate::measure::intervals::{covered_ns, total_ns, union};
use crate::measure::window::AnalysisWindow;
use crate::num::percent;
use crate::vocabulary::ops::is_data_loader;
use rustc_hash::FxHashMap;
use serde::Serialize;
use tracelens_model::{SpanKind, TimeNs, Trace};

pub use crate::vocabulary::ops::IteratorKind;

/// One step's loading.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct StepLoading {
    /// Step number.
    pub step: i64,
    /// Step duration.
    pub step_ns: TimeNs,
    /// Time inside `__next__` during the step.
    pub next_ns: TimeNs,
    /// `next_ns / step_ns` in percent.
    pub share_percent: f64,
    /// GPU idle attributed to data loading in the step.
    pub gpu_idle_ns: TimeNs,
}

/// The DataLoader over the whole trace.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct DataLoaderReport {
    /// Iterator kind, when any `__next__` range is present.
    pub iterator: Option<IteratorKind>,
    /// Number of `__next__` calls.
    pub calls: u64,
    /// Time in `__next__` inside steps (or overall when there are no steps).
    pub next_ns: TimeNs,
    /// Total step time (the window without steps).
    pub step_ns: TimeNs,
    /// `next_ns / step_ns` in percent (tb_plugin's DataLoader share).
    pub share_percent: f64,
    /// GPU idle attributed to data loading (the device with the most).
    pub gpu_idle_ns: TimeNs,
    /// Per step.
    pub per_step: Vec<StepLoading>,
}

/// Analyses the DataLoader ranges over the analysis window's steps; GPU idle is read from the
/// focus device's attribution.
#[must_use]
pub fn data_loader_report(
    trace: &Trace,
    window: Option<&AnalysisWindow>,
    idle: Option<&DeviceIdle>,
) -> DataLoaderReport {
    let mut ranges = Vec::new();
    let mut iterator = None;
    for s in &trace.spans {
        if !matches!(s.kind, SpanKind::CpuOp | SpanKind::UserAnnotation) {
            continue;
        }
        let name = trace.names.get(s.name);
        if !is_data_loader(name) {
            continue;
        }
        ranges.push(s.interval());
        let kind = crate::vocabulary::ops::data_loader_iterator(name);
        // Single-process wins: it is the one to fix.
        iterator = Some(match (iterator, kind) {
            (Some(IteratorKind::SingleProcess), _) => IteratorKind::SingleProcess,
            _ => kind,
        });
    }
    let calls = ranges.len() as u64;
    let merged = union(ranges);
    let idle_dev = idle;
    // One pass over the segments, then one lookup per step.
    let mut idle_by_step: FxHashMap<i64, TimeNs> = FxHashMap::default();
    for seg in idle_dev.iter().flat_map(|d| d.segments()) {
        if seg.cause != IdleCause::DataLoading {
            continue;
        }
        if let Some(step) = window.and_then(|w| w.step_at(seg.interval.start_ns)) {
            *idle_by_step.entry(step).or_default() += seg.interval.dur_ns();
        }
    }
    let mut per_step = Vec::new();
    for step in window.map_or(&[][..], |w| &w.steps[..]) {
        let w = step.interval;
        let next_ns = covered_ns(&merged, w);
        let gpu_idle_ns = idle_by_step.get(&step.number).copied().unwrap_or(0);
        per_step.push(StepLoading {
            step: step.number,
            step_ns: w.dur_ns(),
            next_ns,
            share_percent: percent(next_ns, w.dur_ns()),
            gpu_idle_ns,
        });
    }
    let (next_ns, step_ns) = if per_step.is_empty() {
        match window {
            Some(w) => (covered_ns(&merged, w.interval), w.interval.dur_ns()),
            None => (total_ns(&merged), 0),
        }
    } else {
        (
            per_step.iter().map(|s| s.next_ns).sum(),
            per_step.iter().map(|s| s.step_ns).sum(),
        )
    };
    DataLoaderReport {
        iterator,
        calls,
        next_ns,
        step_ns,
        share_percent: percent(next_ns, step_ns),
        gpu_idle_ns: idle_dev.map_or(0, |d| d.by_cause[&IdleCause::DataLoading]),
        per_step,
    }
}
