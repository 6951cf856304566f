//! Launches: how far the host runs ahead of each GPU stream (the delay from each launch call
//! to its op's start) and the launch-bound stretches, where kernels run shorter than the calls
//! that launch them.

use askama::Template;
use tracelens_model::format_ms;
use tracelens_results::Report;

#[derive(Template)]
#[template(path = "sections/launches.html")]
struct Html {
    note: String,
    delay_rows: Vec<Vec<String>>,
    stretch_rows: Vec<Vec<String>>,
}

/// The section's HTML.
pub(crate) fn html(report: &Report) -> String {
    let launch = &report.diagnosis.launch;
    let origin = report.overview.time_origin_ns;
    let mut delay_rows: Vec<Vec<String>> = launch
        .launch_delays
        .iter()
        .map(|d| {
            vec![
                format!("GPU {} stream {}", d.device, d.stream),
                d.ops.to_string(),
                format_ms(d.median_ns),
                format_ms(d.p90_ns),
                format_ms(d.max_ns),
            ]
        })
        .collect();
    let mut stretch_rows: Vec<Vec<String>> = launch
        .stretches
        .iter()
        .map(|s| {
            vec![
                format!("GPU {}", s.device),
                format!("+{}", format_ms(s.interval.start_ns - origin)),
                s.kernels.to_string(),
                format_ms(s.mean_kernel_ns),
                format_ms(s.mean_launch_ns),
                format_ms(s.starving_idle_ns),
                format!("{:.1}", s.mean_queue_depth),
            ]
        })
        .collect();
    super::cells::keep_units(&mut delay_rows);
    super::cells::keep_units(&mut stretch_rows);
    let graphs = if launch.graph_launches > 0 {
        format!(
            " {} CUDA/HIP graph launches are left out (one call, many ops).",
            launch.graph_launches
        )
    } else {
        String::new()
    };
    Html {
        note: format!(
            "Over the window, per stream: the time from each launch call's start to its op's start. Delays of milliseconds mean the host queued the work well ahead and the op waited on the device side (earlier work, another stream, an event), not for the host; delays near the launch call's own length mean the GPU was waiting for the host. {} of {} kernels with a launch call ran shorter than their own launch call.{graphs}",
            launch.short_kernels, launch.kernels_with_launch
        ),
        delay_rows,
        stretch_rows,
    }
    .render()
    .expect("the launches template renders")
}
