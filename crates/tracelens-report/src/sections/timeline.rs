//! The timeline picture: one representative step, CPU threads and GPU streams as lanes, idle
//! gaps shaded by cause, laid out from the analysis' [`TimelineView`] (already binned to
//! columns, so the SVG stays small for any trace); each run of a class carries a hover title
//! with its times, and the page stretches the columns to its width (zoom and pan are the
//! report's small script).

use askama::Template;
use tracelens_analysis::attribute::idle::IdleCause;
use tracelens_analysis::views::timeline::{
    CpuSpanClass, TimelineClass, TimelineView, TIMELINE_COLUMNS,
};
use tracelens_model::{format_ms, TimeNs};
use tracelens_results::Report;

/// Columns of the time axis (the SVG's own units; the page stretches them to its width).
pub const PLOT_WIDTH: usize = TIMELINE_COLUMNS;

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

/// The CSS class of a timeline class.
fn css_class(class: TimelineClass) -> &'static str {
    match class {
        TimelineClass::Kernel => "kernel",
        TimelineClass::Memcpy => "memcpy",
        TimelineClass::Memset => "memset",
        TimelineClass::Idle(cause) => cause_class(cause),
        TimelineClass::Cpu(CpuSpanClass::Python) => "python",
        TimelineClass::Cpu(CpuSpanClass::CpuOp) => "cpu-op",
        TimelineClass::Cpu(CpuSpanClass::Runtime) => "runtime",
        TimelineClass::Cpu(CpuSpanClass::DataLoader) => "dataloader",
        TimelineClass::Cpu(CpuSpanClass::Sync) => "sync",
    }
}

/// Lays out the analysis' timeline view: the caption, rows of rectangles with hover titles,
/// axis ticks and the legend of the classes drawn.
pub fn build(view: &TimelineView) -> Option<Timeline> {
    let window = view.interval;
    let columns = view.columns as usize;
    if window.dur_ns() <= 0 || columns == 0 {
        return None;
    }
    let caption = match view.step {
        Some(n) => format!(
            "ProfilerStep#{n} (median step, {})",
            format_ms(window.dur_ns())
        ),
        None => format!("the whole window ({})", format_ms(window.dur_ns())),
    };
    let ticks = (0..=4)
        .map(|i| (i * 25, format_ms(part_of(window.dur_ns(), i, 4))))
        .collect();
    // Hover titles: the class and its time range from the start of the window.
    let at = |x: usize| format_ms(part_of(window.dur_ns(), x, columns));
    let rows: Vec<Row> = view
        .lanes
        .iter()
        .map(|lane| Row {
            label: lane.label.clone(),
            rects: lane
                .runs
                .iter()
                .map(|run| {
                    let (x, w) = (run.start as usize, run.len as usize);
                    let class = css_class(run.class);
                    Rect {
                        x,
                        w,
                        class,
                        title: format!("{}: {} – {}", class_name(class), at(x), at(x + w)),
                    }
                })
                .collect(),
        })
        .collect();
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

/// `num / den` of `ns`, exactly (never more than `ns` for `num <= den`).
fn part_of(ns: TimeNs, num: usize, den: usize) -> TimeNs {
    let wide = |n: usize| i128::try_from(n).unwrap_or(i128::MAX);
    let part = i128::from(ns) * wide(num) / wide(den.max(1));
    TimeNs::try_from(part).unwrap_or(ns)
}

/// The CSS class of an idle cause.
pub(crate) fn cause_class(cause: IdleCause) -> &'static str {
    match cause {
        IdleCause::DataLoading => "idle-data",
        IdleCause::SyncDrain => "idle-sync",
        IdleCause::HostCompute => "idle-host",
        IdleCause::LaunchLatency => "idle-launch",
        IdleCause::CrossStreamWait => "idle-stream",
        IdleCause::CollectiveWait => "idle-collective",
        IdleCause::GraphReplay => "idle-graph",
        IdleCause::GpuWait => "idle-gpuwait",
        IdleCause::Unattributed => "idle-unattributed",
    }
}

#[derive(Template)]
#[template(path = "sections/timeline.html")]
struct Html {
    timeline: Option<Timeline>,
    plot_width: usize,
}

/// The section's HTML (nothing without a timeline).
pub(crate) fn html(report: &Report) -> String {
    Html {
        timeline: report.timeline.as_ref().and_then(build),
        plot_width: PLOT_WIDTH,
    }
    .render()
    .expect("the timeline template renders")
}
