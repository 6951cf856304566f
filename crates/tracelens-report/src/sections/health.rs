//! Trace health: what was read and kept, truncation, warnings, busy time from the first to the
//! last op, unreliable replays, redactions and categories not analysed.

use askama::Template;
use tracelens_model::format_ms;
use tracelens_results::Report;

/// Most redacted paths listed.
const MAX_REDACTED_LISTED: usize = 10;

#[derive(Template)]
#[template(path = "sections/health.html")]
struct Html {
    health: Vec<(&'static str, String)>,
}

/// The section's HTML.
pub(crate) fn html(report: &Report) -> String {
    Html {
        health: health(report),
    }
    .render()
    .expect("the health template renders")
}

fn health(report: &Report) -> Vec<(&'static str, String)> {
    let (overview, diagnosis) = (&report.overview, &report.diagnosis);
    let s = &report.input;
    let mut h = vec![(
        "info",
        format!(
            "Read {} {} ({} kept as spans) from {:.1} MB of {}{}; format {}: {}",
            s.records_read,
            s.records,
            s.records_kept,
            s.decoded_bytes as f64 / 1e6,
            s.content,
            s.compression
                .as_deref()
                .map(|c| format!(" ({c})"))
                .unwrap_or_default(),
            s.version,
            s.version_note
        ),
    )];
    if !diagnosis.program.is_empty() {
        h.push(("info", format!("Program: {}", diagnosis.program)));
    }
    if let Some(at) = s.truncated_at_byte {
        h.push((
            "warn",
            format!("Truncated trace: salvaged the events before byte {at}"),
        ));
    }
    for w in &report.warnings {
        h.push(("warn", w.message.clone()));
    }
    for o in &overview.devices {
        if let Some(b) = &o.first_to_last_op {
            h.push((
                "info",
                format!(
                    "GPU {} from its first to its last op (AMD TraceLens definition, clipped to the GPU-side steps): {:.1} % busy, {} busy, {} idle of {}",
                    o.device,
                    b.busy_percent,
                    format_ms(b.busy_ns),
                    format_ms(b.idle_ns),
                    format_ms(b.total_ns)
                ),
            ));
        }
    }
    for d in &diagnosis.idle {
        if !d.attribution_reliable {
            h.push((
                "warn",
                format!(
                    "GPU {}: {} ops come from CUDA/HIP graph replays that no capture trace or graph annotation accounts for; idle figures and their attribution around them are less certain",
                    d.device, d.graph_replay_ops
                ),
            ));
        }
    }
    let m = &report.metadata;
    if !m.redacted.is_empty() {
        let listed: Vec<&str> = m
            .redacted
            .iter()
            .take(MAX_REDACTED_LISTED)
            .map(String::as_str)
            .collect();
        h.push((
            "info",
            format!(
                "Redacted {} secret-looking metadata values: {}",
                m.redacted.len(),
                listed.join(", ")
            ),
        ));
    }
    if !s.ignored.is_empty() {
        let cats: Vec<String> = s.ignored.iter().map(|(k, v)| format!("{k} ×{v}")).collect();
        h.push((
            "info",
            format!("Categories not analysed: {}", cats.join(", ")),
        ));
    }
    h
}
