//! Host-blocking syncs by call site: trigger, API, count, host time blocked and GPU idle
//! caused.

use super::cells::NAME_CHARS;
use askama::Template;
use tracelens_model::{format_ms, shorten};
use tracelens_results::Report;

/// Most sync sites in the table.
const MAX_SYNC_ROWS: usize = 30;

#[derive(Template)]
#[template(path = "sections/syncs.html")]
struct Html {
    sync_rows: Vec<Vec<String>>,
}

/// The section's HTML.
pub(crate) fn html(report: &Report) -> String {
    let diagnosis = &report.diagnosis;
    let mut rows: Vec<Vec<String>> = diagnosis
        .syncs
        .sites
        .iter()
        .take(MAX_SYNC_ROWS)
        .map(|s| {
            vec![
                s.trigger
                    .describe_for(diagnosis.framework.pytorch())
                    .to_string(),
                s.call_site.clone().unwrap_or_else(|| "–".into()),
                s.apis.join(", "),
                s.count.to_string(),
                format!("{:.1}", s.per_step),
                format_ms(s.blocked_ns),
                format_ms(s.gpu_idle_ns),
                shorten(&s.op_chain.join(" › "), NAME_CHARS),
            ]
        })
        .collect();
    super::cells::keep_units(&mut rows);
    Html { sync_rows: rows }
        .render()
        .expect("the syncs template renders")
}
