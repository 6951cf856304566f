//! How the sections write a cell: percentages, bytes, FLOPs, name lengths, units kept on one
//! line, the trace's file name. Shared by every section; reads none.

use tracelens_results::Report;

/// Longest kernel or op name shown in tables, in characters.
pub(crate) const NAME_CHARS: usize = 140;
/// Rows of the operator and region tables (the JSON keeps up to 50).
pub(crate) const MAX_TABLE_ROWS: usize = 20;

pub(crate) use tracelens_model::kernel_display_name;

/// A percentage as the tables show it.
pub(crate) fn pct(x: f64) -> String {
    format!("{x:.1} %")
}

/// Keeps each table cell's number and unit on one line.
pub(crate) fn keep_units(rows: &mut [Vec<String>]) {
    for cell in rows.iter_mut().flatten() {
        *cell = crate::keep_units(cell);
    }
}

/// The trace's file name, without the folders (a shared report must not carry them).
pub(crate) fn file_name(report: &Report) -> String {
    std::path::Path::new(&report.input.path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| report.input.path.clone())
}

/// Bytes as `1.23 GB` (10^9), `45.6 MB` under a gigabyte.
pub(crate) fn format_gb(bytes: i64) -> String {
    tracelens_model::format_bytes(bytes)
}

/// FLOPs with an SI prefix: `8.20 GFLOP`, `1.31 PFLOP`.
pub(crate) fn format_flops(flops: f64) -> String {
    let (v, unit) = match flops.abs() {
        f if f >= 1e15 => (flops / 1e15, "PFLOP"),
        f if f >= 1e12 => (flops / 1e12, "TFLOP"),
        f if f >= 1e9 => (flops / 1e9, "GFLOP"),
        _ => (flops / 1e6, "MFLOP"),
    };
    format!("{v:.2} {unit}")
}

/// One rectangle of a chart drawn in view units (the per-step breakdown, the memory chart):
/// its class in the report's palette, its place and size, and its hover text.
pub(crate) struct ChartRect {
    pub class: &'static str,
    pub x: String,
    pub y: String,
    pub w: String,
    pub h: String,
    pub title: String,
}
