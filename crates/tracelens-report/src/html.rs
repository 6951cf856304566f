//! The self-contained HTML report's layout: the page head (inline CSS), the verdict and the
//! first screen's facts, then every section of [`crate::sections::SECTIONS`] in order, each
//! rendered by its own module and template (askama escapes every value), and the footer
//! with a few lines of inline JS for sorting tables and the timeline's zoom. Nothing is
//! loaded from the network.

use crate::sections::{summary, SECTIONS};
use askama::Template;
use tracelens_results::Report;

#[derive(Template)]
#[template(path = "report.html")]
struct ReportPage {
    file_name: String,
    source_id: String,
    verdict: String,
    facts: Vec<(String, String)>,
    /// Each section's HTML, already escaped by its own template.
    sections: Vec<String>,
    version: String,
}

/// Renders the HTML report.
#[must_use]
pub fn render_html(report: &Report) -> String {
    ReportPage {
        source_id: crate::source_id(&report.input.path),
        file_name: crate::sections::cells::file_name(report),
        verdict: report.diagnosis.verdict.text.clone(),
        facts: summary::facts(report)
            .into_iter()
            .map(|(k, v)| (k, crate::keep_units(&v)))
            .collect(),
        sections: SECTIONS.iter().map(|s| (s.html)(report)).collect(),
        version: report.tool.version.clone(),
    }
    .render()
    .map(crate::escape::html_output)
    .expect("the report template renders")
}
