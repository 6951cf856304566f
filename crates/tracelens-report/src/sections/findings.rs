//! The findings, largest expected gain first: title, win, predicted step, call site, fix,
//! advice, snippet, evidence and example time ranges.

use super::cells::{pct, NAME_CHARS};
use askama::Template;
use tracelens_analysis::diagnose::finding::{EvidenceValue, Severity};
use tracelens_model::{format_ms, shorten};
use tracelens_results::Report;

/// Most findings in the report.
const MAX_FINDINGS: usize = 20;

struct FindingView {
    rank: usize,
    severity: &'static str,
    title: String,
    win: String,
    /// The predicted step and what it assumes, or why there is none.
    prediction: String,
    call_site: Option<String>,
    fix: String,
    /// The evidence that chose the fix (empty outside the decision table).
    chosen_by: String,
    advice: String,
    snippet: String,
    confidence: String,
    evidence: Vec<(String, String)>,
    ranges: Vec<String>,
}

#[derive(Template)]
#[template(path = "sections/findings.html")]
struct Html {
    file_name: String,
    findings: Vec<FindingView>,
    findings_total: usize,
    /// Whether one-time findings rank after the per-step ones.
    one_time_last: bool,
    /// Whether `tracelens annotate` can take this trace (Kineto JSON).
    annotatable: bool,
}

fn evidence_value(v: EvidenceValue) -> String {
    match v {
        EvidenceValue::Count(n) => n.to_string(),
        EvidenceValue::DurationNs(ns) => format_ms(ns),
        EvidenceValue::Percent(p) => pct(p),
        EvidenceValue::Bytes(b) => format!("{:.1} MB", b as f64 / 1e6),
        EvidenceValue::Number(x) => format!("{x:.2}"),
    }
}

/// The section's HTML.
pub(crate) fn html(report: &Report) -> String {
    let diagnosis = &report.diagnosis;
    let origin = report.overview.time_origin_ns;
    let rel = |t: i64| format!("+{}", format_ms(t - origin));
    let (per, of_time) = (crate::per(diagnosis), crate::of_time(diagnosis));
    Html {
        file_name: super::cells::file_name(report),
        findings: diagnosis
            .findings
            .iter()
            .take(MAX_FINDINGS)
            .enumerate()
            .map(|(i, f)| FindingView {
                rank: i + 1,
                severity: match f.severity {
                    Severity::High => "high",
                    Severity::Medium => "medium",
                    Severity::Low => "low",
                },
                title: crate::keep_units(&f.title),
                win: crate::keep_units(&match f.win_kind {
                    tracelens_analysis::WinKind::HostOnly => format!(
                        "No GPU idle caused; the host is blocked {} {per}",
                        format_ms(f.cpu_cost_per_step_ns.unwrap_or(0))
                    ),
                    _ => format!(
                        "Estimated win: up to {} {per} ({:.1} % {of_time}) — {}",
                        format_ms(f.estimated_win_per_step_ns),
                        f.estimated_win_percent,
                        f.win_basis
                    ),
                }),
                prediction: crate::keep_units(&match crate::prediction_phrase(f, diagnosis) {
                    Some(p) => format!("{}: {}.", crate::capitalized(&p), f.prediction),
                    None => crate::capitalized(&f.prediction),
                }),
                call_site: f.call_site.clone(),
                fix: f.fix.clone(),
                chosen_by: f.fix_chosen_by.clone(),
                advice: f.advice.clone(),
                snippet: f.snippet.clone(),
                confidence: format!("{:?}", f.confidence).to_lowercase(),
                evidence: f
                    .evidence
                    .items
                    .iter()
                    .map(|item| (shorten(&item.label, NAME_CHARS), evidence_value(item.value)))
                    .collect(),
                ranges: f
                    .evidence
                    .time_ranges
                    .iter()
                    .map(|r| {
                        format!(
                            "{} – {} ({}); trace ts {} µs",
                            rel(r.start_ns),
                            rel(r.end_ns),
                            format_ms(r.dur_ns()),
                            crate::perfetto::ts_us(r.start_ns)
                        )
                    })
                    .collect(),
            })
            .collect(),
        findings_total: diagnosis.findings.len(),
        one_time_last: diagnosis.one_time_set_apart(),
        annotatable: report.input.annotatable,
    }
    .render()
    .expect("the findings template renders")
}
