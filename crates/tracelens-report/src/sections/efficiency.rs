//! The efficiency view: FLOPs, bytes and achieved rates by op class and precision and by
//! operator and shapes, against the device's roofline; one line of it (MFU, or why there is
//! none) for the summaries.

use super::cells::{pct, NAME_CHARS};
use askama::Template;
use tracelens_analysis::Diagnosis;
use tracelens_model::{format_ms, shorten};
use tracelens_results::Report;

#[derive(Template)]
#[template(path = "sections/efficiency.html")]
struct Html {
    efficiency_note: String,
    efficiency_class_rows: Vec<Vec<String>>,
    efficiency_op_rows: Vec<Vec<String>>,
}

/// The section's HTML.
pub(crate) fn html(report: &Report) -> String {
    let diagnosis = &report.diagnosis;
    let mut efficiency_class_rows: Vec<Vec<String>> = diagnosis
        .efficiency
        .classes
        .iter()
        .map(|c| {
            let mut row = vec![c.class.label().to_string(), c.precision.label().to_string()];
            row.extend(throughput_cells(&c.throughput));
            row
        })
        .collect();
    let mut efficiency_op_rows: Vec<Vec<String>> = diagnosis
        .efficiency
        .operators
        .iter()
        .map(|o| {
            let mut row = vec![
                shorten(&o.name, NAME_CHARS),
                shorten(&o.input_dims, NAME_CHARS),
                o.precision.label().to_string(),
            ];
            row.extend(throughput_cells(&o.throughput));
            row
        })
        .collect();
    super::cells::keep_units(&mut efficiency_class_rows);
    super::cells::keep_units(&mut efficiency_op_rows);
    Html {
        efficiency_note: efficiency_note(diagnosis),
        efficiency_class_rows,
        efficiency_op_rows,
    }
    .render()
    .expect("the efficiency template renders")
}

/// Calls, GPU time, FLOPs per call, TFLOP/s, TB/s, FLOP/byte, bound and roofline share.
fn throughput_cells(t: &tracelens_analysis::views::efficiency::Throughput) -> Vec<String> {
    use tracelens_analysis::views::efficiency::Bound;
    vec![
        t.calls.to_string(),
        format_ms(t.gpu_ns),
        super::cells::format_flops(t.flops / t.calls.max(1) as f64),
        format!("{:.2}", t.tflops_per_s),
        format!("{:.3}", t.tb_per_s),
        format!("{:.1}", t.intensity),
        t.bound.map_or("–", Bound::label).to_string(),
        if t.above_roofline {
            "above".into()
        } else {
            t.roofline_percent.map_or("–".into(), pct)
        },
    ]
}

/// What the efficiency figures are, or why there are none.
fn efficiency_note(d: &tracelens_analysis::Diagnosis) -> String {
    if d.window.is_none() {
        return String::new();
    }
    let mut note = crate::capitalized(&line(d));
    note.push('.');
    if !d.efficiency.classes.is_empty() {
        note.push_str(" FLOPs from the recorded shapes (2 per multiply-add), bytes the least each op must read and write; an op counts once, at the outermost op the FLOP model knows; time is the GPU time it launched. Bound: compute when FLOPs per byte reach the device's ridge point (peak FLOP/s ÷ bandwidth), else memory; roofline: achieved in percent of what the roofline allows at that intensity; \"above\" when an op achieves more than it allows (data served from cache, an algorithm doing fewer FLOPs than the direct count such as Winograd convolution, a faster unit than the recorded precision such as TF32 for FP32, or shapes that are not the launched work's).");
    }
    note
}

/// The efficiency view in a line: MFU against the device's peak, or why a figure is missing.
pub(crate) fn line(d: &Diagnosis) -> String {
    use tracelens_analysis::views::efficiency::EfficiencyGap;
    let e = &d.efficiency;
    if e.gaps.contains(&EfficiencyGap::AbovePeak) {
        return "the recorded shapes give more FLOPs than the device can run in the measured time, so no MFU: the shapes and the times disagree (the trace is inconsistent or edited)".into();
    }
    // How to get shapes is said only to a PyTorch program: nothing else records them.
    let pytorch = d.framework.pytorch();
    if e.gaps.contains(&EfficiencyGap::FormatWithoutShapes) {
        return if pytorch {
            "this format carries no operator shapes and dtypes (Nsight Systems; emit_nvtx ranges have shapes at most), so no FLOPs or MFU: record the step with torch.profiler.profile(record_shapes=True) for them"
        } else {
            "this format carries no operator shapes and dtypes (Nsight Systems), so no FLOPs or MFU"
        }
        .into();
    }
    if e.gaps.contains(&EfficiencyGap::NoOperators) {
        return if pytorch {
            "no framework operators in the window, so no FLOPs or MFU (they come from PyTorch profiler operators recorded with record_shapes=True)"
        } else {
            "no framework operators in the window, so no FLOPs or MFU"
        }
        .into();
    }
    if e.gaps.contains(&EfficiencyGap::NoShapes) {
        return "operators are recorded without input shapes, so no FLOPs or MFU: record with torch.profiler.profile(record_shapes=True)".into();
    }
    if e.gaps.contains(&EfficiencyGap::NoKnownOps) {
        return "shapes are recorded, but no op the FLOP model knows (GEMM, convolution with its stride, attention, normalization, softmax, elementwise) launched GPU work in the window".into();
    }
    let per = if d.has_steps() {
        "per step"
    } else {
        "in the window"
    };
    let flops = format!(
        "{} {per}, counted ops cover {:.1} % of the GPU time outside communication",
        super::cells::format_flops(e.flops_per_step),
        e.coverage_percent
    );
    match (&e.device, e.mfu_percent, e.mfu_precision, e.peak_tflops) {
        (Some(dev), Some(mfu), Some(p), Some(peak)) => format!(
            "MFU {}{mfu:.1} % ({flops}; against {dev}'s dense {} peak of {peak} TFLOP/s)",
            // Ops without a FLOP model add nothing: with most GPU time uncounted the figure
            // is only a floor.
            if e.coverage_percent < 50.0 {
                "at least "
            } else {
                ""
            },
            p.label()
        ),
        (Some(dev), _, Some(p), _) => format!("{flops}; {dev} has no {} peak", p.label()),
        (Some(_), _, None, _) => format!("{flops}; no matrix op counted, so no MFU"),
        (None, ..) => format!(
            "{flops}; MFU needs the device's peak, and {} is not in the peak table",
            d.hardware.name.as_deref().unwrap_or("this device")
        ),
    }
}
