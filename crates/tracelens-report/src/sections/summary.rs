//! The first screen's facts under the verdict: the trace, its GPUs, versions, format, rank,
//! window, utilization, how far the host runs ahead, the framework and the profiler steps.

use tracelens_model::format_ms;
use tracelens_results::Report;

pub(crate) fn facts(report: &Report) -> Vec<(String, String)> {
    let (overview, diagnosis) = (&report.overview, &report.diagnosis);
    // The file name only: a shared report must not carry the author's folders (the JSON
    // keeps the full path in `input.path`).
    let name = std::path::Path::new(&report.input.path)
        .file_name()
        .map_or_else(
            || report.input.path.clone(),
            |n| n.to_string_lossy().into_owned(),
        );
    let mut f = vec![("Trace".to_string(), name)];
    let gpus: Vec<String> = overview
        .devices
        .iter()
        .map(|d| {
            let procs: Vec<String> = d.processes.iter().map(i64::to_string).collect();
            let by = if procs.is_empty() {
                String::new()
            } else {
                format!(" (process {})", procs.join(", "))
            };
            format!(
                "GPU {}: {}{by}",
                d.device,
                d.name.as_deref().unwrap_or("unnamed")
            )
        })
        .collect();
    f.push((
        "GPUs".into(),
        if gpus.is_empty() {
            "none".into()
        } else {
            gpus.join("; ")
        },
    ));
    let versions: Vec<String> = report
        .metadata
        .versions
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    if !versions.is_empty() {
        f.push(("Versions".into(), versions.join(", ")));
    }
    f.push((
        "Format".into(),
        format!("{} — {}", report.input.version, report.input.version_note),
    ));
    if let Some(d) = &report.metadata.distributed {
        f.push((
            "Rank".into(),
            format!(
                "{} of {} ({})",
                d.rank.map_or("?".into(), |r| r.to_string()),
                d.world_size.map_or("?".into(), |w| w.to_string()),
                d.backend.clone().unwrap_or_default()
            ),
        ));
    }
    if let Some(w) = &diagnosis.window {
        f.push(("Analysis window".into(), crate::window_line(w)));
    }
    let v = &diagnosis.verdict;
    if let Some(dev) = v.device {
        let b = v.busy_by;
        f.push((
            "GPU utilization".into(),
            format!(
                "GPU {dev}: {:.1} % busy, {} idle in the window; busy time is kernels {:.1} %, copies {:.1} %, fills {:.1} %, collectives {:.1} %",
                v.gpu_busy_percent,
                format_ms(v.gpu_idle_ns),
                b.kernel,
                b.memcpy,
                b.memset,
                b.communication
            ),
        ));
    }
    if let Some(ahead) = v.host_ahead_ns {
        f.push((
            "Host ahead of GPU".into(),
            format!("{} median launch-to-start delay", format_ms(ahead)),
        ));
    }
    if let Some(t) = diagnosis.framework.describe_torch() {
        let opt = diagnosis
            .framework
            .optimizer
            .as_deref()
            .map(|o| format!(", optimizer {o}"))
            .unwrap_or_default();
        f.push((
            "Framework".into(),
            format!("{t} (from the trace format){opt}"),
        ));
    }
    let st = &overview.steps;
    if st.count > 0 {
        let first = st.numbers.first().copied().unwrap_or(0);
        let last = st.numbers.last().copied().unwrap_or(0);
        let range = if first == last {
            format!("ProfilerStep#{first}")
        } else {
            format!("ProfilerStep#{first}..#{last}")
        };
        f.push((
            "ProfilerStep ranges".into(),
            format!("{} ({range})", st.count),
        ));
    }
    f
}
