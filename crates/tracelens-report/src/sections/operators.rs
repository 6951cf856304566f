//! The operator view (tb_plugin's): calls, device and host self and total time, tensor-core
//! share and top call site per operator, and per operator and input shapes.

use super::cells::{pct, MAX_TABLE_ROWS, NAME_CHARS};
use askama::Template;
use tracelens_model::{format_ms, shorten};
use tracelens_results::Report;

#[derive(Template)]
#[template(path = "sections/operators.html")]
struct Html {
    operator_rows: Vec<Vec<String>>,
    operator_shape_rows: Vec<Vec<String>>,
    graph_note: Option<String>,
}

/// The section's HTML.
pub(crate) fn html(report: &Report) -> String {
    let diagnosis = &report.diagnosis;
    let mut operator_rows: Vec<Vec<String>> = diagnosis
        .operators
        .iter()
        .take(MAX_TABLE_ROWS)
        .map(|o| {
            vec![
                shorten(&o.name, NAME_CHARS),
                crate::calls_text(o),
                format_ms(o.device_self_ns),
                format_ms(o.device_total_ns),
                format_ms(o.host_self_ns),
                format_ms(o.host_total_ns),
                if o.tensor_core_eligible {
                    pct(o.tensor_core_total_percent)
                } else {
                    "–".into()
                },
                o.call_sites
                    .first()
                    .map_or("–".into(), |c| shorten(&c.site, NAME_CHARS)),
            ]
        })
        .collect();
    let mut operator_shape_rows: Vec<Vec<String>> = diagnosis
        .operators_by_shape
        .iter()
        .take(MAX_TABLE_ROWS)
        .map(|o| {
            vec![
                shorten(&o.name, NAME_CHARS),
                shorten(&o.input_dims, NAME_CHARS),
                o.calls.to_string(),
                format_ms(o.device_self_ns),
                format_ms(o.device_total_ns),
                format_ms(o.host_self_ns),
                format_ms(o.host_total_ns),
            ]
        })
        .collect();
    super::cells::keep_units(&mut operator_rows);
    super::cells::keep_units(&mut operator_shape_rows);
    Html {
        operator_rows,
        operator_shape_rows,
        graph_note: crate::graph_attribution_note(report),
    }
    .render()
    .expect("the operators template renders")
}
