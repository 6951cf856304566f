//! GPU memory per device: peaks allocated and reserved, capacity and headroom, allocator calls
//! and the op at the peak; one line of it for the summaries.

use super::cells::NAME_CHARS;
use askama::Template;
use tracelens_model::shorten;
use tracelens_results::Report;

#[derive(Template)]
#[template(path = "sections/memory.html")]
struct Html {
    memory_rows: Vec<Vec<String>>,
    memory_note: String,
}

/// The section's HTML.
pub(crate) fn html(report: &Report) -> String {
    let diagnosis = &report.diagnosis;
    let mut rows: Vec<Vec<String>> = diagnosis.memory.iter().map(memory_row).collect();
    super::cells::keep_units(&mut rows);
    Html {
        memory_rows: rows,
        memory_note: memory_note(diagnosis),
    }
    .render()
    .expect("the memory template renders")
}

/// One device's memory in a line: `GPU 0 peak 23.11 GB allocated, 23.62 GB reserved of
/// 84.99 GB (fits ×3.6), at aten::linear`.
pub(crate) fn line(m: &tracelens_analysis::views::memory::DeviceMemory) -> String {
    use tracelens_analysis::views::memory::PeakBasis;
    let mut line = match m.basis {
        PeakBasis::AllocatorTotals => {
            format!("GPU {} peak {} allocated", m.device, super::cells::format_gb(m.peak_allocated_bytes))
        }
        PeakBasis::GrowthSinceFirstSample => format!(
            "GPU {} allocations grow by up to {} over the window (no allocator totals in this trace)",
            m.device,
            super::cells::format_gb(m.peak_allocated_bytes)
        ),
    };
    if let Some(r) = m.peak_reserved_bytes {
        line.push_str(&format!(", {} reserved", super::cells::format_gb(r)));
    }
    if let (Some(cap), Some(fits)) = (m.capacity_bytes, m.fits_times()) {
        line.push_str(&format!(
            " of {} (fits ×{fits:.1})",
            super::cells::format_gb(cap)
        ));
    }
    if let Some(op) = &m.peak_op {
        line.push_str(&format!(", at {op}"));
    }
    line
}

/// One device's memory: peaks, capacity, headroom, allocator calls, the op at the peak.
fn memory_row(m: &tracelens_analysis::views::memory::DeviceMemory) -> Vec<String> {
    let steps = if m.steps.is_empty() {
        "–".to_string()
    } else {
        let lo = m
            .steps
            .iter()
            .map(|s| s.peak_allocated_bytes)
            .min()
            .unwrap_or(0);
        let hi = m
            .steps
            .iter()
            .map(|s| s.peak_allocated_bytes)
            .max()
            .unwrap_or(0);
        format!(
            "{} – {}",
            super::cells::format_gb(lo),
            super::cells::format_gb(hi)
        )
    };
    vec![
        format!("GPU {}", m.device),
        super::cells::format_gb(m.peak_allocated_bytes),
        m.peak_reserved_bytes
            .map_or("–".into(), super::cells::format_gb),
        m.capacity_bytes
            .map_or("unknown".into(), super::cells::format_gb),
        m.fits_times().map_or("–".into(), |x| format!("×{x:.1}")),
        steps,
        format!("{} / {}", m.allocations, m.frees),
        m.peak_op
            .as_deref()
            .map_or("–".into(), |o| shorten(o, NAME_CHARS)),
    ]
}

/// What the memory figures are, or why there are none.
fn memory_note(d: &tracelens_analysis::Diagnosis) -> String {
    use tracelens_analysis::views::memory::PeakBasis;
    if d.memory.is_empty() {
        return if d.framework.pytorch() {
            "No allocator samples in the window: record with torch.profiler.profile(profile_memory=True) to see peaks and headroom."
        } else {
            "No allocator samples in the window: this capture records none, so no peaks or headroom."
        }
        .into();
    }
    if d.memory
        .iter()
        .any(|m| m.basis == PeakBasis::GrowthSinceFirstSample)
    {
        return "This trace records allocation sizes but not the allocator's totals (PyTorch before 1.10): the peak is the growth since the first sample, not the absolute level, so no headroom is given.".into();
    }
    "Peaks of the caching allocator's own totals over the window. Fits: how many times the peak held (reserved) fits in the device's memory.".into()
}
