//! The critical path as the renderers show it: the breakdown by kind of the representative step
//! and of every step, the all-fixes prediction, and the longest segments — laid out from the
//! diagnosis's [`tracelens_analysis::predict::critical::CriticalPath`], never computed here.

use askama::Template;
use tracelens_analysis::predict::critical::{CriticalKind, CriticalPath, CriticalShare};
use tracelens_analysis::Diagnosis;
use tracelens_model::{format_ms, shorten};
use tracelens_results::Report;

#[derive(Template)]
#[template(path = "sections/critical_path.html")]
struct Html {
    critical: CriticalView,
}

/// The section's HTML (nothing without a path).
pub(crate) fn html(report: &Report) -> String {
    Html {
        critical: view(&report.diagnosis, report.overview.time_origin_ns),
    }
    .render()
    .expect("the critical-path template renders")
}

/// Longest segments listed under the table.
const LONGEST_SEGMENTS: usize = 15;

/// The CSS class of a critical-path kind (the timeline's colours).
fn kind_class(kind: CriticalKind) -> &'static str {
    match kind {
        CriticalKind::Kernel => "kernel",
        CriticalKind::Communication => "idle-collective",
        CriticalKind::Memcpy => "memcpy",
        CriticalKind::Memset => "memset",
        CriticalKind::Launch => "idle-launch",
        CriticalKind::Runtime => "runtime",
        CriticalKind::Sync => "idle-sync",
        CriticalKind::DataLoader => "dataloader",
        CriticalKind::HostWork => "cpu-op",
        CriticalKind::GpuQueue => "idle-gpuwait",
        CriticalKind::GpuWait => "idle-stream",
        CriticalKind::Untraced => "idle-unattributed",
    }
}

/// One piece of the stacked bar.
pub(crate) struct BarPiece {
    pub(crate) class: &'static str,
    pub(crate) label: &'static str,
    pub(crate) x: String,
    pub(crate) w: String,
    pub(crate) value: String,
}

/// The critical-path section of the HTML report.
#[derive(Default)]
pub(crate) struct CriticalView {
    /// What the path is and which step it walks.
    pub(crate) note: String,
    /// The representative step's path, stacked by kind (SVG units of 1000).
    pub(crate) bar: Vec<BarPiece>,
    /// Per kind: kind, what it is, step time, share, mean per step, share.
    pub(crate) rows: Vec<Vec<String>>,
    /// The step time all fixes together would give, when predicted.
    pub(crate) all_fixes: String,
    /// The longest segments of the representative step: start, duration, kind, name.
    pub(crate) longest: Vec<Vec<String>>,
}

fn share_of(v: &[CriticalShare], kind: CriticalKind) -> Option<&CriticalShare> {
    v.iter().find(|s| s.kind == kind)
}

/// What the all-fixes prediction assumes (empty without one).
pub(crate) fn all_fixes_assumption(d: &Diagnosis) -> &str {
    d.critical_path
        .all_fixes
        .as_ref()
        .map_or("", |p| p.assumption.as_str())
}

/// The all-fixes prediction in a phrase, if there is one: "with all 3 predicted fixes
/// together the step would be 149.019 ms (now 208.473 ms)".
pub(crate) fn all_fixes_line(d: &Diagnosis) -> Option<String> {
    let (fixes, what, predicted, now) = all_fixes_parts(d)?;
    let together = if fixes.starts_with("the one") {
        ""
    } else {
        " together"
    };
    Some(format!(
        "with {fixes}{together} the {what} would be {predicted} (now {now})"
    ))
}

/// [`all_fixes_line`] in fewer words, for the terminal: "all 3 predicted fixes: step
/// 149.019 ms (now 208.473 ms)".
pub(crate) fn all_fixes_short(d: &Diagnosis) -> Option<String> {
    let (fixes, what, predicted, now) = all_fixes_parts(d)?;
    Some(format!("{fixes}: {what} {predicted} (now {now})"))
}

/// The all-fixes prediction's words: which fixes, of what, predicted and now.
fn all_fixes_parts(d: &Diagnosis) -> Option<(String, &'static str, String, String)> {
    let p = d.critical_path.all_fixes.as_ref()?;
    let what = if d.has_steps() {
        "step"
    } else {
        "profiled time"
    };
    let fixes = match p.findings.len() {
        1 => "the one predicted fix".to_string(),
        2 => "both predicted fixes".to_string(),
        n => format!("all {n} predicted fixes"),
    };
    Some((
        fixes,
        what,
        format_ms(p.predicted_step_ns),
        format_ms(p.measured_step_ns),
    ))
}

/// The critical path's largest kinds in one line (`kernel 37.2 %, host work 33.5 %, …`).
pub(crate) fn breakdown_line(path: &CriticalPath, most: usize) -> String {
    path.breakdown
        .iter()
        .take(most)
        .map(|s| format!("{} {:.1} %", s.kind.label().replace('_', " "), s.percent))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn view(d: &Diagnosis, time_origin_ns: i64) -> CriticalView {
    let path = &d.critical_path;
    let Some(interval) = path.interval else {
        return CriticalView::default();
    };
    let step = match path.step {
        Some(n) => format!("step {n} (the median-length step)"),
        None => "the window (no profiled steps)".to_string(),
    };
    let mut note = format!(
        "The chain of work that set the end of {step}, {} long: walking back from its end, each piece is what the next one waited for (a kernel for the kernel before it on its stream or for its launch, a launch for the host work before it, a blocking call for the GPU work it waited for). The pieces tile the step, so the shares add up to 100 %.",
        format_ms(interval.dur_ns())
    );
    if path.segments_omitted > 0 {
        note.push_str(&format!(
            " The JSON keeps its first {} segments of {}.",
            path.segments.len(),
            path.segments.len() + path.segments_omitted
        ));
    }
    let mut x = 0.0;
    let bar = path
        .step_breakdown
        .iter()
        .map(|s| {
            let w = s.percent * 10.0;
            let piece = BarPiece {
                class: kind_class(s.kind),
                label: s.kind.describe(),
                x: format!("{x:.2}"),
                w: format!("{w:.2}"),
                value: format!("{} ({:.1} %)", format_ms(s.ns), s.percent),
            };
            x += w;
            piece
        })
        .collect();
    let rows = CriticalKind::ALL
        .iter()
        .filter_map(|&k| {
            let step = share_of(&path.step_breakdown, k);
            let all = share_of(&path.breakdown, k);
            if step.is_none() && all.is_none() {
                return None;
            }
            let cell = |s: Option<&CriticalShare>| {
                s.map_or(("–".into(), "–".into()), |s| {
                    (format_ms(s.ns), format!("{:.1} %", s.percent))
                })
            };
            let (a, b) = cell(step);
            let (c, e) = cell(all);
            Some(vec![
                k.label().replace('_', " "),
                k.describe().to_string(),
                a,
                b,
                c,
                e,
            ])
        })
        .collect();
    let mut by_length: Vec<_> = path.segments.iter().collect();
    by_length.sort_by_key(|s| (std::cmp::Reverse(s.end_ns - s.start_ns), s.start_ns));
    let longest = by_length
        .into_iter()
        .take(LONGEST_SEGMENTS)
        .map(|s| {
            vec![
                format!("+{}", format_ms(s.start_ns - time_origin_ns)),
                format_ms(s.end_ns - s.start_ns),
                s.kind.label().replace('_', " "),
                if s.count > 1 {
                    format!("{} (×{})", shorten(&s.name, 120), s.count)
                } else {
                    shorten(&s.name, 120)
                },
            ]
        })
        .collect();
    CriticalView {
        note,
        bar,
        rows,
        all_fixes: all_fixes_line(d).map_or_else(String::new, |l| {
            format!("{}: {}.", crate::capitalized(&l), all_fixes_assumption(d))
        }),
        longest,
    }
}
