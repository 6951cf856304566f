//! Copies by kind (pageable or pinned host copies, device and peer copies, each peer device
//! pair): count, bytes, achieved rate, GPU time, exposed time and host time blocked.

use askama::Template;
use tracelens_analysis::Diagnosis;
use tracelens_model::format_ms;
use tracelens_results::Report;

#[derive(Template)]
#[template(path = "sections/copies.html")]
struct Html {
    copy_rows: Vec<Vec<String>>,
}

/// The section's HTML.
pub(crate) fn html(report: &Report) -> String {
    let mut rows = copy_rows(&report.diagnosis);
    super::cells::keep_units(&mut rows);
    Html { copy_rows: rows }
        .render()
        .expect("the copies template renders")
}

fn copy_rows(diagnosis: &Diagnosis) -> Vec<Vec<String>> {
    let c = &diagnosis.copies;
    [
        ("host → device, pageable", c.htod_pageable),
        ("device → host, pageable", c.dtoh_pageable),
        ("host → device, pinned", c.htod_pinned),
        ("device → host, pinned", c.dtoh_pinned),
        (
            "host ↔ device, kind not recorded (ROCm)",
            c.host_kind_unknown,
        ),
        ("device → device", c.device_to_device),
        ("peer → peer (between GPUs)", c.peer_to_peer),
        (
            "unified-memory migrations (page faults, prefetches)",
            c.unified_migrations,
        ),
        ("other", c.other),
    ]
    .into_iter()
    .map(|(label, s)| (label.to_string(), s))
    .chain(c.peer_links.iter().map(|l| {
        (
            format!("peer GPU {} → GPU {}", l.devices.src, l.devices.dst),
            l.stats,
        )
    }))
    .filter(|(_, s)| s.count > 0)
    .map(|(label, s)| {
        vec![
            label,
            s.count.to_string(),
            format!("{:.1} MB", s.bytes as f64 / 1e6),
            s.gb_per_s()
                .map_or_else(|| "–".to_string(), tracelens_model::format_gb_per_s),
            format_ms(s.gpu_ns),
            format_ms(s.exposed_ns),
            format_ms(s.host_blocked_ns),
        ]
    })
    .collect()
}
