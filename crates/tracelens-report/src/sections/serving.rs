//! The serving view of an LLM-inference trace: iterations by phase with their time split,
//! decode's bandwidth, serving advice and the iterations themselves; one line of it for the
//! summaries. No section for a trace without engine iterations.

use askama::Template;
use tracelens_analysis::diagnose::inference::{ServingAdvice, ServingReport, MIN_COVERAGE_PERCENT};
use tracelens_analysis::views::inference::{IterationSource, Phase};
use tracelens_analysis::Diagnosis;
use tracelens_model::{format_ms, TimeNs};
use tracelens_results::Report;

#[derive(Template)]
#[template(path = "sections/serving.html")]
struct Html<'a> {
    engine: &'static str,
    source: &'static str,
    phase_rows: Vec<Vec<String>>,
    between: String,
    bandwidth: String,
    advice: &'a [ServingAdvice],
    iteration_rows: Vec<Vec<String>>,
}

fn per(ns: TimeNs, n: u64) -> String {
    format_ms(ns / i64::try_from(n.max(1)).unwrap_or(1))
}

/// The section's HTML (empty without engine iterations).
pub(crate) fn html(report: &Report) -> String {
    let Some(s) = report.diagnosis.serving.as_ref() else {
        return String::new();
    };
    let run = &s.run;
    let phase_rows = run
        .phases
        .iter()
        .map(|p| {
            let replayed = if p.gpu_busy_ns > 0 {
                format!(
                    "{:.0} %",
                    (p.graph_replay_ns as f64 * 100.0 / p.gpu_busy_ns as f64).min(100.0)
                )
            } else {
                "–".into()
            };
            vec![
                p.phase.map_or("–", Phase::label).to_string(),
                p.iterations.to_string(),
                p.mean_batch()
                    .map_or_else(|| "–".into(), |b| format!("{b:.1}")),
                if p.tokens > 0 {
                    p.tokens.to_string()
                } else {
                    "–".into()
                },
                per(p.host_ns, p.iterations),
                per(p.gpu_busy_ns, p.iterations),
                replayed,
                per(p.host_blocked_ns, p.iterations),
            ]
        })
        .collect();
    let first = run.extent.start_ns;
    let opt = |v: Option<u64>| v.map_or_else(|| "–".into(), |v| v.to_string());
    let iteration_rows = run
        .listed
        .iter()
        .map(|it| {
            vec![
                format_ms(it.start_ns - first),
                it.phase.label().to_string(),
                opt(it.tokens),
                opt(it.requests),
                opt(it.kv_tokens),
                format_ms(it.host_ns),
                format_ms(it.gpu_busy_ns),
                format_ms(it.host_blocked_ns),
                it.gap_before_ns.map_or_else(|| "–".into(), format_ms),
            ]
        })
        .collect();
    Html {
        engine: run.engine.map_or("", |e| e.label()),
        source: match run.source {
            IterationSource::BatchAnnotations => "from its batch annotations",
            IterationSource::StepFrames => {
                "from its step function's Python frames (the trace records no batch)"
            }
        },
        phase_rows,
        between: between_line(s),
        bandwidth: bandwidth_line(s, &report.diagnosis),
        advice: &s.advice,
        iteration_rows,
    }
    .render()
    .expect("the serving template renders")
}

fn between_line(s: &ServingReport) -> String {
    if s.run.gaps == 0 {
        "Host time between iterations: not measured (fewer than two iterations on one thread)."
            .into()
    } else {
        format!(
            "Host time between iterations: {} in all, {} per gap ({} gaps).",
            format_ms(s.run.between_iterations_ns),
            per(s.run.between_iterations_ns, s.run.gaps),
            s.run.gaps
        )
    }
}

fn bandwidth_line(s: &ServingReport, d: &Diagnosis) -> String {
    match (s.decode_bandwidth, s.run.phase(Phase::Decode)) {
        (Some(b), _) => format!(
            "Decode bandwidth: the counted ops move at least {:.2} GB per iteration, {:.2} TB/s over the decode iterations' GPU time{} (weights and activations; the KV cache that attention reads is counted only where attention's shapes are recorded; counted ops cover {:.0} % of the GPU time).",
            b.bytes_per_iteration / 1e9,
            b.tb_per_s,
            b.percent_of_peak
                .map_or(String::new(), |p| format!(", {p:.0} % of the HBM peak")),
            b.coverage_percent
        ),
        (None, Some(_)) => format!(
            "Decode bandwidth: not measured — it needs decode iterations alone in the window and counted ops covering at least {MIN_COVERAGE_PERCENT:.0} % of the GPU time (they cover {:.0} %).",
            d.efficiency.coverage_percent
        ),
        (None, None) => "Decode bandwidth: no decode iterations in the window.".into(),
    }
}

/// The iterations by phase as one line (`1 decode iteration of 32 requests, 9.77 ms GPU`).
pub(crate) fn line(d: &Diagnosis) -> Option<String> {
    let s = d.serving.as_ref()?;
    let mut parts: Vec<String> = s
        .run
        .phases
        .iter()
        .map(|p| {
            let batch = p
                .mean_batch()
                .map_or(String::new(), |b| format!(", batch {b:.0}"));
            format!(
                "{} {} × {} GPU{batch}",
                p.iterations,
                p.phase.map_or("–", Phase::label),
                per(p.gpu_busy_ns, p.iterations)
            )
        })
        .collect();
    if let Some(b) = s.decode_bandwidth {
        parts.push(format!(
            "decode ≥ {:.2} TB/s{}",
            b.tb_per_s,
            b.percent_of_peak
                .map_or(String::new(), |p| format!(" ({p:.0} % of HBM peak)"))
        ));
    }
    if s.run.gaps > 0 {
        parts.push(format!(
            "{} host time between iterations",
            per(s.run.between_iterations_ns, s.run.gaps)
        ));
    }
    Some(parts.join("; "))
}
