//! The top kernels by GPU time: the op that launched them, count, times, share, occupancy,
//! launch configuration and tensor-core use.

use super::cells::{kernel_display_name, pct, NAME_CHARS};

/// Longest full kernel name in a hover title (the JSON has it whole).
const FULL_NAME_CHARS: usize = 2000;
use askama::Template;
use tracelens_model::{format_ms, shorten};
use tracelens_results::Report;

#[derive(Template)]
#[template(path = "sections/kernels.html")]
struct Html {
    kernel_rows: Vec<KernelRow>,
    tensor_core_note: String,
}

/// One kernel's row: its name as shown, its full name (the hover title), the other cells.
struct KernelRow {
    name: String,
    full_name: String,
    cells: Vec<String>,
}

/// The section's HTML.
pub(crate) fn html(report: &Report) -> String {
    let diagnosis = &report.diagnosis;
    let mut cells: Vec<Vec<String>> = diagnosis
        .top_kernels
        .iter()
        .map(|k| {
            vec![
                k.launched_by
                    .as_deref()
                    .map_or_else(|| "–".into(), |op| shorten(op, NAME_CHARS)),
                k.count.to_string(),
                format_ms(k.total_ns),
                format_ms(k.mean_ns),
                format_ms(k.min_ns),
                format_ms(k.max_ns),
                pct(k.share_percent),
                k.mean_blocks_per_sm
                    .map_or("–".into(), |b| format!("{b:.2}")),
                // Launch details without an estimate: CUPTI could not make one.
                match (k.mean_est_occupancy_percent, &k.launch) {
                    (Some(p), _) => pct(p),
                    (None, Some(_)) => "not estimated".into(),
                    (None, None) => "–".into(),
                },
                k.launch.as_ref().map_or("–".into(), launch_text),
                if k.tensor_cores { "yes" } else { "no" }.into(),
            ]
        })
        .collect();
    super::cells::keep_units(&mut cells);
    let rows = diagnosis
        .top_kernels
        .iter()
        .zip(cells)
        .map(|(k, cells)| KernelRow {
            name: kernel_display_name(&k.name),
            full_name: shorten(&k.name, FULL_NAME_CHARS),
            cells,
        })
        .collect();
    Html {
        kernel_rows: rows,
        tensor_core_note: diagnosis.tensor_core_percent.map_or_else(String::new, |p| {
            format!(
                "{} of the window's kernel time runs in tensor-core kernels (by kernel name).",
                pct(p)
            )
        }),
    }
    .render()
    .expect("the kernels template renders")
}

/// `grid 564×1×1, block 128×1×1, 32 regs, 0 B smem`.
fn launch_text(l: &tracelens_analysis::views::kernels::LaunchConfig) -> String {
    let dims = |d: [u32; 3]| format!("{}×{}×{}", d[0], d[1], d[2]);
    format!(
        "{} × {}, {} regs, {} B shared",
        dims(l.grid),
        dims(l.block),
        l.registers_per_thread,
        l.shared_memory_bytes
    )
}
