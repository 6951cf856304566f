//! Time by region (the ranges model authors mark): host time, share of the window and GPU
//! time launched, nested by depth; one line of the outermost ones for the summaries.

use super::cells::{pct, MAX_TABLE_ROWS, NAME_CHARS};
use askama::Template;
use tracelens_analysis::Diagnosis;
use tracelens_model::{format_ms, shorten};
use tracelens_results::Report;

#[derive(Template)]
#[template(path = "sections/regions.html")]
struct Html {
    region_rows: Vec<Vec<String>>,
}

/// The section's HTML.
pub(crate) fn html(report: &Report) -> String {
    let mut rows = region_rows(&report.diagnosis);
    super::cells::keep_units(&mut rows);
    Html { region_rows: rows }
        .render()
        .expect("the regions template renders")
}

/// The regions by host time, each indented by how deep it sits among regions, at most
/// [`MAX_TABLE_ROWS`].
fn region_rows(d: &tracelens_analysis::Diagnosis) -> Vec<Vec<String>> {
    let window_ns = d.window.as_ref().map_or(0, |w| w.interval.dur_ns());
    d.regions
        .iter()
        .take(MAX_TABLE_ROWS)
        .map(|r| {
            let share = if window_ns > 0 {
                pct((r.host_ns as f64 * 100.0 / window_ns as f64).min(100.0))
            } else {
                "–".into()
            };
            vec![
                format!(
                    "{}{}",
                    "\u{a0}\u{a0}".repeat(r.depth.min(8) as usize),
                    shorten(&r.name, NAME_CHARS)
                ),
                r.calls.to_string(),
                format_ms(r.host_ns),
                share,
                format_ms(r.gpu_ns),
            ]
        })
        .collect()
}

/// The outermost regions as one line (`## forward ## 31 %, ## backward ## 31 %`) when they
/// cover at least half of the window's host time: what the step is made of, in the author's
/// words.
pub(crate) fn line(d: &Diagnosis) -> Option<String> {
    let window_ns = d.window.as_ref()?.interval.dur_ns();
    if window_ns <= 0 {
        return None;
    }
    let top: Vec<_> = d.regions.iter().filter(|r| r.depth == 0).collect();
    let covered: i64 = top.iter().map(|r| r.host_ns).sum();
    if covered * 2 < window_ns {
        return None;
    }
    let parts: Vec<String> = top
        .iter()
        .take(4)
        .map(|r| {
            format!(
                "{} {:.0} %",
                tracelens_model::shorten(&r.name, 60),
                (r.host_ns as f64 * 100.0 / window_ns as f64).min(100.0)
            )
        })
        .collect();
    Some(format!("{} (host time of the window)", parts.join(", ")))
}
