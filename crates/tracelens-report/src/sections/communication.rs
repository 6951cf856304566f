//! The focus device's communication in words and rows: collective time, how much of it runs
//! under compute, and per operation the bytes, algorithm and bus bandwidth against the link.

use askama::Template;
use tracelens_analysis::attribute::communication::{Communication, OperationStat};
use tracelens_analysis::diagnose::Diagnosis;
use tracelens_model::format_ms;
use tracelens_results::Report;

#[derive(Template)]
#[template(path = "sections/communication.html")]
struct Html {
    communication_line: String,
    communication_rows: Vec<Vec<String>>,
}

/// The section's HTML (nothing without collectives).
pub(crate) fn html(report: &Report) -> String {
    let d = &report.diagnosis;
    Html {
        communication_line: line(d).map(|l| crate::capitalized(&l)).unwrap_or_default(),
        communication_rows: rows(d),
    }
    .render()
    .expect("the communication template renders")
}

/// One line: `collectives 15.587 ms per step, 15.6 % under compute, 13.186 ms per step alone
/// (5.9 % of the step); all-reduce 6.6 GB/s bus bandwidth (2 % of NVLink 3 (12 links) 300 GB/s)`.
#[must_use]
pub(crate) fn line(d: &Diagnosis) -> Option<String> {
    let c = d.communication.as_ref()?;
    let per = if d.has_steps() {
        "per step"
    } else {
        "in the window"
    };
    let window = d.window.as_ref()?;
    let mut text = format!(
        "collectives {} {per}, {:.1} % under compute, {} {per} alone ({:.1} % of the {})",
        format_ms(window.per_step(c.communication_ns)),
        c.overlap_percent,
        format_ms(c.exposed_per_step_ns),
        c.exposed_percent,
        if d.has_steps() { "step" } else { "window" }
    );
    if let Some(top) = c.by_op.first() {
        match top.busbw_gb_per_s {
            Some(bw) => {
                text.push_str(&format!(
                    "; {} {bw:.1} GB/s bus bandwidth{} over kernel time (waits for other ranks included)",
                    op_name(top),
                    peak_words(c, top)
                ));
            }
            None => text.push_str(&format!(
                "; {}: the trace records no message sizes, so no bandwidth",
                op_name(top)
            )),
        }
    }
    Some(text)
}

fn op_name(o: &OperationStat) -> String {
    o.op.label().replace('_', "-")
}

fn peak_words(c: &Communication, o: &OperationStat) -> String {
    match (o.busbw_percent_of_peak, &c.link, c.link_gb_per_s) {
        (Some(p), Some(link), Some(peak)) => format!(" ({p:.0} % of {link} {peak:.0} GB/s)"),
        _ => String::new(),
    }
}

/// The operation table's rows: operation, kernels, time per step, data, algorithm, bus
/// bandwidth, share of the link's peak.
#[must_use]
pub(crate) fn rows(d: &Diagnosis) -> Vec<Vec<String>> {
    let Some(c) = d.communication.as_ref() else {
        return Vec::new();
    };
    c.by_op
        .iter()
        .map(|o| {
            vec![
                op_name(o),
                o.count.to_string(),
                format_ms(o.per_step_ns),
                o.bytes.map_or_else(
                    || "not recorded".into(),
                    |b| super::cells::format_gb(i64::try_from(b).unwrap_or(i64::MAX)),
                ),
                if o.algorithms.is_empty() {
                    "–".into()
                } else {
                    o.algorithms.join(", ")
                },
                o.busbw_gb_per_s
                    .map_or_else(|| "–".into(), |b| format!("{b:.1} GB/s")),
                o.busbw_percent_of_peak
                    .map_or_else(|| "–".into(), |p| format!("{p:.0} %")),
            ]
        })
        .collect()
}
