//! The timeline picture as data: what each CPU span is, and the representative step binned to
//! columns by class ([`TimelineView`]). Renderers draw these runs and never classify spans
//! themselves.

use crate::attribute::idle::{DeviceIdle, IdleCause};
use crate::measure::window::AnalysisWindow;
use crate::vocabulary::api::{blocking_kind, is_async_copy, launched_pageable_copy};
use crate::vocabulary::ops::is_data_loader;
use rustc_hash::FxHashMap;
use serde::Serialize;
use tracelens_model::{
    shorten, table_index, Ident, Interval, LaneId, LaneKey, NameId, SpanId, SpanKind, TimeNs, Trace,
};

/// The class of a CPU span, in drawing priority (later outranks earlier).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CpuSpanClass {
    /// A Python frame.
    Python,
    /// An operator or user annotation.
    CpuOp,
    /// A runtime or driver call.
    Runtime,
    /// DataLoader `__next__`.
    DataLoader,
    /// A host-blocking call (sync, blocking copy).
    Sync,
}

/// Classes CPU spans for drawing, each API name's meaning worked out once (a stepless window
/// draws millions of calls).
#[derive(Default)]
pub struct CpuSpanClasses {
    /// Per API name: whether it blocks the host, or is an async copy (which blocks when it
    /// launched a pageable copy).
    api_names: FxHashMap<NameId, (bool, bool)>,
}

impl CpuSpanClasses {
    /// The class of CPU span `id`, or `None` for spans not drawn (steps, OS waits, sync
    /// records).
    pub fn of(&mut self, trace: &Trace, id: SpanId) -> Option<CpuSpanClass> {
        let span = trace.span(id);
        match span.kind {
            SpanKind::Runtime | SpanKind::Driver => {
                let (blocking, async_copy) =
                    *self.api_names.entry(span.name).or_insert_with(|| {
                        let name = trace.names.get(span.name);
                        (blocking_kind(name).is_some(), is_async_copy(name))
                    });
                if blocking || async_copy && launched_pageable_copy(trace, id) {
                    Some(CpuSpanClass::Sync)
                } else {
                    Some(CpuSpanClass::Runtime)
                }
            }
            SpanKind::CpuOp | SpanKind::UserAnnotation => {
                let name = trace.name(id);
                if is_data_loader(name) {
                    Some(CpuSpanClass::DataLoader)
                } else if !trace.is_step_span(id) {
                    Some(CpuSpanClass::CpuOp)
                } else {
                    None
                }
            }
            SpanKind::PythonFunction => Some(CpuSpanClass::Python),
            _ => None,
        }
    }
}

/// Columns of the time axis the timeline is binned to.
pub const TIMELINE_COLUMNS: usize = 1600;
/// Most CPU threads drawn.
const MAX_CPU_LANES: usize = 4;
/// Most GPU streams drawn.
const MAX_GPU_LANES: usize = 6;

/// Most lanes a timeline holds: the GPU streams, the idle row and the CPU threads.
pub const MAX_TIMELINE_LANES: usize = MAX_GPU_LANES + 1 + MAX_CPU_LANES;

/// What a run of columns shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimelineClass {
    /// A kernel on a GPU stream.
    Kernel,
    /// A memory copy on a GPU stream.
    Memcpy,
    /// A memory fill on a GPU stream.
    Memset,
    /// GPU idle of one cause.
    Idle(IdleCause),
    /// A CPU span of one class.
    Cpu(CpuSpanClass),
}

/// Consecutive columns of one class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ClassRun {
    /// First column.
    pub start: u32,
    /// Number of columns.
    pub len: u32,
    /// What they show.
    pub class: TimelineClass,
}

/// One lane of the picture: a GPU stream, the idle row, or a CPU thread.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct TimelineLane {
    /// The lane's name (`GPU 0 stream 7`, a thread's name).
    pub label: String,
    /// Its runs, left to right.
    pub runs: Vec<ClassRun>,
}

/// The representative step (the median-length one, else the whole window) on the focus
/// device, binned to [`TIMELINE_COLUMNS`] columns: GPU streams busiest first, the idle row by
/// cause, then the busiest CPU threads.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct TimelineView {
    /// The step drawn, or `None` for the whole window.
    pub step: Option<i64>,
    /// The time drawn, trace clock.
    pub interval: Interval,
    /// Columns of the time axis.
    pub columns: u32,
    /// Lanes, top to bottom.
    pub lanes: Vec<TimelineLane>,
}

impl TimelineView {
    /// The view held to what [`build`] makes: at most [`MAX_TIMELINE_LANES`] lanes over
    /// [`TIMELINE_COLUMNS`] columns, each lane's runs left to right, inside the columns and not
    /// overlapping (so at most one run per column). A stored result read back is held to it:
    /// a crafted one cannot make a report of any size (97 MB of runs made a 235 MB page).
    #[must_use]
    pub fn bounded(mut self) -> Self {
        let columns = u32::try_from(TIMELINE_COLUMNS).unwrap_or(u32::MAX);
        self.columns = columns;
        self.lanes.truncate(MAX_TIMELINE_LANES);
        for lane in &mut self.lanes {
            let mut free_from = 0u32;
            lane.runs.retain_mut(|r| {
                if r.start < free_from || r.start >= columns || r.len == 0 {
                    return false;
                }
                r.len = r.len.min(columns - r.start);
                free_from = r.start + r.len;
                true
            });
            lane.runs.shrink_to_fit();
        }
        self
    }
}

/// The timeline of the median-length step of `window` (or the whole window without steps) on
/// the device of `focus`.
#[must_use]
pub fn build(trace: &Trace, window: &AnalysisWindow, focus: &DeviceIdle) -> Option<TimelineView> {
    let (interval, step) = if window.has_steps() {
        let mut steps: Vec<_> = window.steps.iter().collect();
        steps.sort_by_key(|s| (s.interval.dur_ns(), s.number));
        let s = steps[steps.len() / 2];
        (s.interval, Some(s.number))
    } else {
        (window.interval, None)
    };
    if interval.dur_ns() <= 0 {
        return None;
    }
    let px = |t: TimeNs| -> usize {
        let rel = i128::from((t - interval.start_ns).clamp(0, interval.dur_ns()));
        usize::try_from(rel * TIMELINE_COLUMNS as i128 / i128::from(interval.dur_ns())).unwrap_or(0)
    };
    let mut lanes = Vec::new();
    // GPU streams of the device, busiest first.
    let device = trace.devices.iter().find(|d| d.index == focus.device)?;
    let mut gpu_lanes: Vec<(TimeNs, LaneId)> = device
        .lanes
        .iter()
        .map(|&l| (busy_in(trace, l, interval), l))
        .filter(|(b, _)| *b > 0)
        .collect();
    gpu_lanes.sort_by_key(|&(b, l)| (std::cmp::Reverse(b), l));
    const GPU_CLASSES: [Option<TimelineClass>; 4] = [
        None,
        Some(TimelineClass::Memset),
        Some(TimelineClass::Memcpy),
        Some(TimelineClass::Kernel),
    ];
    for &(_, lane) in gpu_lanes.iter().take(MAX_GPU_LANES) {
        let LaneKey::Gpu { device, stream } = trace.lane(lane).key else {
            continue;
        };
        let bins = bin_lane(trace, lane, interval, &px, |k, _| match k {
            SpanKind::Kernel => 3,
            SpanKind::Memcpy => 2,
            SpanKind::Memset => 1,
            _ => 0,
        });
        lanes.push(TimelineLane {
            label: format!("GPU {device} stream {stream}"),
            runs: runs(&bins, &GPU_CLASSES),
        });
    }
    // Idle shading by cause.
    let idle_classes: Vec<Option<TimelineClass>> = std::iter::once(None)
        .chain(IdleCause::ALL.iter().map(|&c| Some(TimelineClass::Idle(c))))
        .collect();
    let mut idle_bins = vec![0u8; TIMELINE_COLUMNS];
    for seg in focus.segments() {
        let Some(c) = seg.interval.clip(interval) else {
            continue;
        };
        let code = IdleCause::ALL
            .iter()
            .position(|&c| c == seg.cause)
            .map_or(1, |i| u8::try_from(i + 1).unwrap_or(1));
        fill(&mut idle_bins, px(c.start_ns), px(c.end_ns), code);
    }
    lanes.push(TimelineLane {
        label: format!("GPU {} idle, by cause", focus.device),
        runs: runs(&idle_bins, &idle_classes),
    });
    // CPU threads with the most activity in the window.
    let mut cpu_lanes: Vec<(TimeNs, LaneId)> = (0..trace.lanes.len())
        .filter_map(|i| u32::try_from(i).ok().map(LaneId))
        .filter(|&l| !trace.lane(l).key.is_gpu())
        .map(|l| (busy_in(trace, l, interval), l))
        .filter(|(b, _)| *b > 0)
        .collect();
    cpu_lanes.sort_by_key(|&(b, l)| (std::cmp::Reverse(b), l));
    const CPU_CLASSES: [Option<TimelineClass>; 6] = [
        None,
        Some(TimelineClass::Cpu(CpuSpanClass::Python)),
        Some(TimelineClass::Cpu(CpuSpanClass::CpuOp)),
        Some(TimelineClass::Cpu(CpuSpanClass::Runtime)),
        Some(TimelineClass::Cpu(CpuSpanClass::DataLoader)),
        Some(TimelineClass::Cpu(CpuSpanClass::Sync)),
    ];
    let mut classes = CpuSpanClasses::default();
    for &(_, lane) in cpu_lanes.iter().take(MAX_CPU_LANES) {
        let bins = bin_lane(trace, lane, interval, &px, |_, id| {
            match classes.of(trace, id) {
                None => 0,
                Some(CpuSpanClass::Python) => 1,
                Some(CpuSpanClass::CpuOp) => 2,
                Some(CpuSpanClass::Runtime) => 3,
                Some(CpuSpanClass::DataLoader) => 4,
                Some(CpuSpanClass::Sync) => 5,
            }
        });
        let LaneKey::Cpu { tid, .. } = trace.lane(lane).key else {
            continue;
        };
        lanes.push(TimelineLane {
            label: shorten(&thread_label(trace, lane, tid), 40),
            runs: runs(&bins, &CPU_CLASSES),
        });
    }
    Some(TimelineView {
        step,
        interval,
        columns: table_index(TIMELINE_COLUMNS),
        lanes,
    })
}

/// The trace's thread name, else "<process> thread N" with the id as the trace gives it.
fn thread_label(trace: &Trace, lane: LaneId, tid: Ident) -> String {
    let l = trace.lane(lane);
    if let Some(n) = l.name {
        return trace.names.get(n).to_string();
    }
    let process = l
        .process_name
        .map(|n| format!("{} ", trace.names.get(n)))
        .unwrap_or_default();
    match tid {
        Ident::Num(n) if n < 0 => format!("{process}thread {n} (id as recorded)"),
        Ident::Num(n) => format!("{process}thread {n}"),
        Ident::Text(t) => trace.names.get(t).to_string(),
    }
}

/// Time the lane spends in `window` doing work worth drawing: GPU ops, or CPU ops, Python
/// frames and API calls (not OS waits or sync records).
fn busy_in(trace: &Trace, lane: LaneId, window: Interval) -> TimeNs {
    trace
        .lane_span_ids(lane)
        .filter(|&id| {
            let k = trace.span(id).kind;
            k.is_gpu_work()
                || matches!(
                    k,
                    SpanKind::CpuOp
                        | SpanKind::UserAnnotation
                        | SpanKind::PythonFunction
                        | SpanKind::Runtime
                        | SpanKind::Driver
                )
        })
        .filter_map(|id| trace.span(id).interval().clip(window))
        .map(|c| c.dur_ns())
        .sum()
}

fn bin_lane(
    trace: &Trace,
    lane: LaneId,
    window: Interval,
    px: &dyn Fn(TimeNs) -> usize,
    mut code: impl FnMut(SpanKind, SpanId) -> u8,
) -> Vec<u8> {
    let mut bins = vec![0u8; TIMELINE_COLUMNS];
    for id in trace.lane_span_ids(lane) {
        let s = trace.span(id);
        if s.start_ns >= window.end_ns {
            break;
        }
        if s.end_ns() <= window.start_ns && s.dur_ns > 0 {
            continue;
        }
        let c = code(s.kind, id);
        if c > 0 {
            fill(&mut bins, px(s.start_ns), px(s.end_ns()), c);
        }
    }
    bins
}

/// Marks columns `[x0, x1]` (at least one) with `code` where it outranks what is there.
fn fill(bins: &mut [u8], x0: usize, x1: usize, code: u8) {
    let x0 = x0.min(TIMELINE_COLUMNS - 1);
    let x1 = x1.clamp(x0 + 1, TIMELINE_COLUMNS);
    for b in &mut bins[x0..x1] {
        *b = (*b).max(code);
    }
}

/// Runs of equal non-zero codes, each with the class its code stands for.
fn runs(bins: &[u8], classes: &[Option<TimelineClass>]) -> Vec<ClassRun> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < bins.len() {
        let c = bins[i];
        let start = i;
        while i < bins.len() && bins[i] == c {
            i += 1;
        }
        if let Some(class) = classes.get(usize::from(c)).copied().flatten() {
            out.push(ClassRun {
                start: u32::try_from(start).unwrap_or(u32::MAX),
                len: u32::try_from(i - start).unwrap_or(u32::MAX),
                class,
            });
        }
    }
    out
}
