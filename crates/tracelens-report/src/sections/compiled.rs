//! torch.compile in the window: its figures, each steady-state problem with its fix, the
//! compilations and the graph-break sites; one line of it for the summaries.

use super::cells::NAME_CHARS;
use askama::Template;
use tracelens_analysis::diagnose::compiled::CompileAdvice;
use tracelens_analysis::views::compiled::{CompiledRun, RecompileCause};
use tracelens_analysis::Diagnosis;
use tracelens_model::{format_ms, shorten};
use tracelens_results::Report;

#[derive(Template)]
#[template(path = "sections/compiled.html")]
struct Html<'a> {
    facts: Vec<(String, String)>,
    problems: &'a [CompileAdvice],
    compile_rows: Vec<Vec<String>>,
    break_rows: Vec<Vec<String>>,
}

/// The section's HTML.
pub(crate) fn html(report: &Report) -> String {
    let compiled = report.diagnosis.compiled.as_ref();
    // torch.compile means nothing to a program that is not PyTorch: no section at all.
    if compiled.is_none() && !report.diagnosis.framework.pytorch() {
        return String::new();
    }
    let page = Html {
        facts: compiled.map_or_else(Vec::new, |c| facts(&c.run)),
        problems: compiled.map_or(&[][..], |c| &c.advice[..]),
        compile_rows: compiled.map_or_else(Vec::new, |c| compile_rows(&c.run)),
        break_rows: compiled.map_or_else(Vec::new, |c| {
            c.run
                .break_sites
                .iter()
                .map(|b| vec![shorten(&b.site, NAME_CHARS), b.count.to_string()])
                .collect()
        }),
    };
    page.render().expect("the torch.compile template renders")
}

/// Why graph breaks are not counted in a trace without compiled regions.
const NO_REGIONS: &str =
    "graph breaks not measured: the trace has no Torch-Compiled Region ranges (PyTorch writes them since 2.2)";

fn facts(run: &CompiledRun) -> Vec<(String, String)> {
    let mut out = vec![
        (
            "compiled-region calls".into(),
            format!(
                "{} ({} host time)",
                run.region_calls,
                format_ms(run.region_ns)
            ),
        ),
        ("compiled-graph calls".into(), run.graph_calls.to_string()),
    ];
    if run.frames > 0 {
        out.push(("compiled frames".into(), run.frames.to_string()));
    }
    out.push((
        "compilations (one-time work)".into(),
        format!("{} ({})", run.compilations, format_ms(run.compile_ns)),
    ));
    out.push((
        "recompiles".into(),
        format!("{} ({})", run.recompiles, format_ms(run.recompile_ns)),
    ));
    if let Some(g) = run.graph_replays {
        out.push((
            "graph replays / eager runs".into(),
            format!("{} / {}", g.replays, g.eager_runs),
        ));
    }
    if run.region_calls == 0 {
        out.push(("graph breaks".into(), NO_REGIONS.into()));
        return out;
    }
    out.push((
        "graph breaks".into(),
        format!(
            "{} ({:.1} per step; {} in eager ops between compiled graphs)",
            run.graph_breaks,
            run.breaks_per_step(),
            format_ms(run.eager_between_ns)
        ),
    ));
    out
}

fn compile_rows(run: &CompiledRun) -> Vec<Vec<String>> {
    run.listed
        .iter()
        .map(|c| {
            let ids = match (c.frame, c.compile_id) {
                (Some(f), Some(i)) => format!("{f}/{i}"),
                _ => "–".into(),
            };
            let kind = match (c.recompile, c.cause) {
                (false, _) => "first compile",
                (true, Some(RecompileCause::ShapesChanged)) => "recompile: new input shapes",
                (true, Some(RecompileCause::OtherGuard)) => "recompile: another guard failed",
                (true, _) => "recompile",
            };
            vec![
                shorten(c.function.as_deref().unwrap_or("not recorded"), NAME_CHARS),
                ids,
                c.step.map_or_else(|| "–".into(), |s| s.to_string()),
                format_ms(c.dur_ns),
                kind.into(),
            ]
        })
        .collect()
}

/// The problems as one line (`1 recompile (20.000 ms), 2.0 graph breaks per step`), or the
/// clean state, when the window runs compiled code.
pub(crate) fn line(d: &Diagnosis) -> Option<String> {
    let c = d.compiled.as_ref()?;
    let run = &c.run;
    let mut calls = Vec::new();
    if run.region_calls > 0 {
        calls.push(counted(run.region_calls, "compiled-region call"));
    }
    if run.graph_calls > 0 {
        calls.push(counted(run.graph_calls, "compiled-graph call"));
    }
    let mut parts = vec![calls.join(", ")];
    if run.compilations > 0 {
        parts.push(format!(
            "{} ({}), {} among them",
            counted(run.compilations, "compilation"),
            format_ms(run.compile_ns),
            counted(run.recompiles, "recompile")
        ));
    }
    if run.graph_breaks > 0 {
        parts.push(format!(
            "{:.1} graph breaks per step",
            run.breaks_per_step()
        ));
    }
    if let Some(g) = run.graph_replays.filter(|g| g.eager_runs > 0) {
        parts.push(format!(
            "{} eager runs beside {} graph replays",
            g.eager_runs, g.replays
        ));
    }
    if run.region_calls == 0 {
        parts.push(NO_REGIONS.into());
    } else if c.advice.is_empty() {
        parts.push("no recompiles or graph breaks".into());
    }
    parts.retain(|p| !p.is_empty());
    Some(parts.join("; "))
}

/// `1 recompile`, `3 recompiles`.
fn counted(n: u64, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}
