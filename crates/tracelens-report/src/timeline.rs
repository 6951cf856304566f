//! The timeline picture: one representative step, CPU threads and GPU streams as lanes, idle
//! gaps shaded by cause. Spans are binned to columns, so the SVG stays small for any trace;
//! each run of a class carries a hover title with its times, and the page stretches the
//! columns to its width (zoom and pan are the report's small script).

use tracelens_analysis::idle::IdleCause;
use tracelens_analysis::timeline::{cpu_span_class, CpuSpanClass};
use tracelens_analysis::Diagnosis;
use tracelens_model::{format_ms, Interval, LaneId, LaneKey, SpanKind, TimeNs, Trace};

/// Columns of the time axis (the SVG's own units; the page stretches them to its width).
pub const PLOT_WIDTH: usize = 1600;
/// Most CPU threads drawn.
const MAX_CPU_LANES: usize = 4;
/// Most GPU streams drawn.
const MAX_GPU_LANES: usize = 6;

/// One filled run of pixels.
pub struct Rect {
    /// Left edge.
    pub x: usize,
    /// Width.
    pub w: usize,
    /// CSS class (the category).
    pub class: &'static str,
    /// Hover text: what and when.
    pub title: String,
}

/// One lane row.
pub struct Row {
    /// Label shown left of the plot.
    pub label: String,
    /// Filled runs.
    pub rects: Vec<Rect>,
}

/// The whole picture.
pub struct Timeline {
    /// What the window is (`ProfilerStep#7, 31.2 ms`).
    pub caption: String,
    /// Rows, top to bottom.
    pub rows: Vec<Row>,
    /// Axis ticks: position in percent of the width, and label.
    pub ticks: Vec<(usize, String)>,
    /// Length of the window drawn, for the zoom script's tick labels.
    pub window_ns: TimeNs,
    /// The classes drawn, with their names, in legend order.
    pub legend: Vec<(&'static str, &'static str)>,
}

/// Every class the timeline can draw, with its name, in legend order.
const CLASS_NAMES: [(&str, &str); 17] = [
    ("kernel", "kernel"),
    ("memcpy", "memcpy"),
    ("memset", "memset"),
    ("idle-data", "idle: data loading"),
    ("idle-sync", "idle: sync drain"),
    ("idle-host", "idle: host compute"),
    ("idle-launch", "idle: launch latency"),
    ("idle-stream", "idle: cross-stream wait"),
    ("idle-collective", "idle: collective wait"),
    ("idle-graph", "idle: graph replay"),
    ("idle-gpuwait", "idle: GPU wait"),
    ("idle-unattributed", "idle: unattributed"),
    ("python", "Python"),
    ("cpu-op", "CPU op"),
    ("runtime", "runtime call"),
    ("dataloader", "DataLoader wait"),
    ("sync", "blocking sync"),
];

/// The name of a class for people.
pub fn class_name(class: &str) -> &'static str {
    CLASS_NAMES
        .iter()
        .find(|(c, _)| *c == class)
        .map_or("", |(_, n)| n)
}

/// Builds the timeline of the median-length step of the analysis window (or the whole window
/// without steps) on the verdict's device.
pub fn build(trace: &Trace, diagnosis: &Diagnosis) -> Option<Timeline> {
    let dev = diagnosis.focus_idle()?;
    let w = diagnosis.window.as_ref()?;
    let (window, caption) = if w.has_steps() {
        let mut steps: Vec<_> = w.steps.iter().collect();
        steps.sort_by_key(|s| (s.interval.dur_ns(), s.number));
        let s = steps[steps.len() / 2];
        (
            s.interval,
            format!(
                "ProfilerStep#{} (median step, {})",
                s.number,
                format_ms(s.interval.dur_ns())
            ),
        )
    } else {
        (
            w.interval,
            format!("the whole window ({})", format_ms(w.interval.dur_ns())),
        )
    };
    if window.dur_ns() <= 0 {
        return None;
    }
    let px = |t: TimeNs| -> usize {
        let rel = (t - window.start_ns).clamp(0, window.dur_ns()) as i128;
        ((rel * PLOT_WIDTH as i128) / window.dur_ns() as i128) as usize
    };
    let mut rows = Vec::new();
    // GPU streams of the device, busiest first.
    let device = trace.devices.iter().find(|d| d.index == dev.device)?;
    let mut gpu_lanes: Vec<(TimeNs, LaneId)> = device
        .lanes
        .iter()
        .map(|&l| (busy_in(trace, l, window), l))
        .filter(|(b, _)| *b > 0)
        .collect();
    gpu_lanes.sort_by_key(|&(b, l)| (std::cmp::Reverse(b), l));
    for &(_, lane) in gpu_lanes.iter().take(MAX_GPU_LANES) {
        let LaneKey::Gpu { device, stream } = trace.lane(lane).key else {
            continue;
        };
        let bins = bin_lane(trace, lane, window, &px, |k, _| match k {
            SpanKind::Kernel => 3,
            SpanKind::Memcpy => 2,
            SpanKind::Memset => 1,
            _ => 0,
        });
        rows.push(Row {
            label: format!("GPU {device} stream {stream}"),
            rects: runs(&bins, &["", "memset", "memcpy", "kernel"]),
        });
    }
    // Idle shading by cause.
    let idle_css: Vec<&'static str> = std::iter::once("")
        .chain(IdleCause::ALL.iter().map(|&c| crate::html::cause_class(c)))
        .collect();
    let mut idle_bins = vec![0u8; PLOT_WIDTH];
    for seg in &dev.segments {
        let Some(c) = seg.interval.clip(window) else {
            continue;
        };
        let code = 1 + IdleCause::ALL
            .iter()
            .position(|&c| c == seg.cause)
            .unwrap_or(0) as u8;
        fill(&mut idle_bins, px(c.start_ns), px(c.end_ns), code);
    }
    rows.push(Row {
        label: format!("GPU {} idle, by cause", dev.device),
        rects: runs(&idle_bins, &idle_css),
    });
    // CPU threads with the most activity in the window.
    let mut cpu_lanes: Vec<(TimeNs, LaneId)> = (0..trace.lanes.len() as u32)
        .map(LaneId)
        .filter(|&l| !trace.lane(l).key.is_gpu())
        .map(|l| (busy_in(trace, l, window), l))
        .filter(|(b, _)| *b > 0)
        .collect();
    cpu_lanes.sort_by_key(|&(b, l)| (std::cmp::Reverse(b), l));
    for &(_, lane) in cpu_lanes.iter().take(MAX_CPU_LANES) {
        let bins = bin_lane(trace, lane, window, &px, |_, id| {
            match cpu_span_class(trace, id) {
                None => 0,
                Some(CpuSpanClass::Python) => 1,
                Some(CpuSpanClass::CpuOp) => 2,
                Some(CpuSpanClass::Runtime) => 3,
                Some(CpuSpanClass::DataLoader) => 4,
                Some(CpuSpanClass::Sync) => 5,
            }
        });
        let l = trace.lane(lane);
        let name = l.name.map(|n| trace.names.get(n).to_string());
        // The trace's thread name, else "<process> thread N" with the id as the trace gives it.
        let process = l
            .process_name
            .map(|n| format!("{} ", trace.names.get(n)))
            .unwrap_or_default();
        let label = match l.key {
            LaneKey::Cpu { tid, .. } => name.unwrap_or_else(|| match tid {
                tracelens_model::Ident::Num(n) if n < 0 => {
                    format!("{process}thread {} (id as recorded)", n)
                }
                tracelens_model::Ident::Num(n) => format!("{process}thread {n}"),
                tracelens_model::Ident::Text(t) => trace.names.get(t).to_string(),
            }),
            LaneKey::Gpu { .. } => continue,
        };
        rows.push(Row {
            label: tracelens_model::shorten(&label, 40),
            rects: runs(
                &bins,
                &["", "python", "cpu-op", "runtime", "dataloader", "sync"],
            ),
        });
    }
    let ticks = (0..=4)
        .map(|i| {
            (
                i * 25,
                format_ms((window.dur_ns() as i128 * i as i128 / 4) as i64),
            )
        })
        .collect();
    // Hover titles: the class and its time range from the start of the window.
    let at =
        |x: usize| format_ms((window.dur_ns() as i128 * x as i128 / PLOT_WIDTH as i128) as i64);
    for row in &mut rows {
        for r in &mut row.rects {
            r.title = format!("{}: {} – {}", class_name(r.class), at(r.x), at(r.x + r.w));
        }
    }
    let legend = CLASS_NAMES
        .iter()
        .copied()
        .filter(|(c, _)| rows.iter().any(|r| r.rects.iter().any(|x| x.class == *c)))
        .collect();
    Some(Timeline {
        caption,
        rows,
        ticks,
        window_ns: window.dur_ns(),
        legend,
    })
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
    code: impl Fn(SpanKind, tracelens_model::SpanId) -> u8,
) -> Vec<u8> {
    let mut bins = vec![0u8; PLOT_WIDTH];
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

/// Marks pixels `[x0, x1]` (at least one) with `code` where it outranks what is there.
fn fill(bins: &mut [u8], x0: usize, x1: usize, code: u8) {
    let x0 = x0.min(PLOT_WIDTH - 1);
    let x1 = x1.clamp(x0 + 1, PLOT_WIDTH);
    for b in &mut bins[x0..x1] {
        *b = (*b).max(code);
    }
}

/// Runs of equal non-zero codes as rectangles.
fn runs(bins: &[u8], classes: &[&'static str]) -> Vec<Rect> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < bins.len() {
        let c = bins[i];
        let start = i;
        while i < bins.len() && bins[i] == c {
            i += 1;
        }
        if c > 0 {
            out.push(Rect {
                x: start,
                w: i - start,
                class: classes[c as usize],
                title: String::new(),
            });
        }
    }
    out
}
