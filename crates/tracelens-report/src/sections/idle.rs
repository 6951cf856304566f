//! GPU idle time by cause, per device: the bar, what each cause means, the CPU work during
//! host-compute idle and the launching thread's OS waits.

use super::cells::NAME_CHARS;
use super::timeline::cause_class;
use askama::Template;
use tracelens_analysis::Diagnosis;
use tracelens_model::{format_ms, shorten};
use tracelens_results::Report;

struct Bar {
    class: &'static str,
    label: &'static str,
    width: String,
    value: String,
}

struct IdleView {
    title: String,
    descheduled: Option<String>,
    bars: Vec<Bar>,
    host_ops: Vec<(String, String)>,
    os_waits: Vec<(String, String)>,
}

#[derive(Template)]
#[template(path = "sections/idle.html")]
struct Html {
    idle: Vec<IdleView>,
}

/// The section's HTML.
pub(crate) fn html(report: &Report) -> String {
    Html {
        idle: idle_views(&report.diagnosis),
    }
    .render()
    .expect("the idle template renders")
}

fn idle_views(diagnosis: &Diagnosis) -> Vec<IdleView> {
    diagnosis
        .idle
        .iter()
        .filter(|d| d.idle_ns > 0)
        .map(|d| {
            IdleView {
                title: format!("GPU {}: {} idle", d.device, format_ms(d.idle_ns)),
                descheduled: (d.descheduled_ns > 0).then(|| {
                    format!(
                        "During {} of the host-compute idle the launching thread was off the CPU outside any traced OS wait: runnable but not running (Nsight Systems scheduling trace).",
                        format_ms(d.descheduled_ns)
                    )
                }),
                bars: d
                    .by_cause
                    .iter()
                    .map(|c| Bar {
                        class: cause_class(c.cause),
                        label: c.describe(),
                        width: format!("{:.2}", c.percent),
                        value: format!("{} ({:.1} %)", format_ms(c.ns), c.percent),
                    })
                    .collect(),
                host_ops: d
                    .host_compute_ops
                    .iter()
                    .map(|(n, t)| (shorten(n, NAME_CHARS), format_ms(*t)))
                    .collect(),
                os_waits: d
                    .os_waits
                    .iter()
                    .map(|(n, t)| (shorten(n, NAME_CHARS), format_ms(*t)))
                    .collect(),
            }
        })
        .collect()
}
