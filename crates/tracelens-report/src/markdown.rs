//! A compact Markdown summary for CI step summaries and pull-request comments (under 60
//! lines). Every trace string goes through [`crate::escape::markdown_text`]: GitHub renders
//! inline HTML, links, images and mentions in Markdown.

use crate::escape::{markdown_code_block, markdown_text as esc};
use std::fmt::Write;
use tracelens_model::{format_ms, shorten};
use tracelens_results::Report;

/// Findings listed in the table.
const MD_FINDINGS: usize = 10;

/// Lines a summary must stay under (a step summary or PR comment people read whole).
pub const MARKDOWN_LINES: usize = 60;

/// Renders the Markdown summary: the operators and fixes it shows are cut (operators first)
/// until it fits in [`MARKDOWN_LINES`].
#[must_use]
pub fn render_markdown(report: &Report) -> String {
    let budgets = [(5, 3), (3, 3), (3, 2), (0, 2), (0, 1), (0, 0)];
    let mut out = String::new();
    for (operators, fixes) in budgets {
        out = render_with(report, operators, fixes);
        if out.lines().count() < MARKDOWN_LINES {
            break;
        }
    }
    out
}

fn render_with(report: &Report, md_operators: usize, md_fixes: usize) -> String {
    let (overview, diagnosis) = (&report.overview, &report.diagnosis);
    let mut out = String::new();
    let name = std::path::Path::new(&report.input.path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let _ = writeln!(out, "## tracelens: {}\n", esc(&name));
    let _ = writeln!(out, "**{}**\n", esc(&diagnosis.verdict.text));
    let _ = writeln!(out, "| | |\n|---|---|");
    if let Some(w) = &diagnosis.window {
        let _ = writeln!(out, "| Window | {} |", esc(&crate::window_line(w)));
    }
    for d in &overview.devices {
        let busy = d
            .window
            .as_ref()
            .map(|h| {
                format!(
                    "{:.1} % busy, {} idle of {}",
                    h.busy_percent,
                    format_ms(h.idle_ns),
                    format_ms(h.total_ns)
                )
            })
            .unwrap_or_else(|| "no work in the window".into());
        let _ = writeln!(
            out,
            "| GPU {} ({}) | {} |",
            d.device,
            esc(d.name.as_deref().unwrap_or("unnamed")),
            busy
        );
    }
    // Per step wherever there are steps (the findings' unit), the window's total named.
    let stepped = diagnosis.window.as_ref().filter(|w| w.has_steps());
    for idle in diagnosis.idle.iter().filter(|i| i.idle_ns > 0) {
        let parts: Vec<String> = idle
            .by_cause
            .iter()
            .map(|c| {
                let ns = stepped.map_or(c.ns, |w| w.per_step(c.ns));
                format!("{} {}", c.cause.label().replace('_', " "), format_ms(ns))
            })
            .collect();
        let unit = stepped.map_or_else(
            || "in the window".to_string(),
            |w| {
                format!(
                    "per step; {} over the {}-step window",
                    format_ms(idle.idle_ns),
                    w.step_count()
                )
            },
        );
        let _ = writeln!(
            out,
            "| Idle by cause (GPU {}, {unit}) | {} |",
            idle.device,
            parts.join(", ")
        );
    }
    if let Some(line) = crate::sections::regions::line(diagnosis) {
        let _ = writeln!(out, "| Regions | {} |", esc(&line));
    }
    if let Some(line) = crate::sections::compiled::line(diagnosis) {
        let _ = writeln!(out, "| torch.compile | {} |", esc(&line));
    }
    if let Some(line) = crate::sections::serving::line(diagnosis) {
        let _ = writeln!(out, "| Serving | {} |", esc(&line));
    }
    for m in &diagnosis.memory {
        let _ = writeln!(
            out,
            "| GPU memory | {} |",
            esc(&crate::sections::memory::line(m))
        );
    }
    for a in &diagnosis.memory_advice {
        let _ = writeln!(
            out,
            "| GPU memory problem | {}. **Fix:** {} |",
            esc(&a.title),
            esc(&a.fix)
        );
    }
    if diagnosis.window.is_some() {
        let _ = writeln!(
            out,
            "| Efficiency | {} |",
            esc(&crate::sections::efficiency::line(diagnosis))
        );
    }
    if let Some(line) = crate::sections::communication::line(diagnosis) {
        let _ = writeln!(out, "| Communication | {} |", esc(&line));
    }
    if !diagnosis.critical_path.breakdown.is_empty() {
        let mut line = crate::sections::critical_path::breakdown_line(&diagnosis.critical_path, 4);
        if let Some(all) = crate::sections::critical_path::all_fixes_line(diagnosis) {
            line = format!(
                "{line}; {all}: {}",
                crate::sections::critical_path::all_fixes_assumption(diagnosis)
            );
        }
        let _ = writeln!(out, "| Critical path | {} |", esc(&line));
    }
    if !diagnosis.program.is_empty() {
        let _ = writeln!(out, "| Program | {} |", esc(&diagnosis.program));
    }
    let _ = writeln!(
        out,
        "| Trace | {} ({}) |",
        esc(&report.input.version),
        crate::plural(report.warnings.len(), "warning")
    );
    if md_operators > 0 && !diagnosis.operators.is_empty() {
        let _ = writeln!(
            out,
            "\n### Top operators (device time over the window)\n\n| operator | calls | device self | device total | host self |\n|---|---:|---:|---:|---:|"
        );
        if let Some(note) = crate::graph_attribution_note(report) {
            let _ = writeln!(out, "\n{}\n", esc(&note));
        }
        for o in diagnosis.operators.iter().take(md_operators) {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                esc(&shorten(&o.name, 120)),
                crate::calls_text(o),
                format_ms(o.device_self_ns),
                format_ms(o.device_total_ns),
                format_ms(o.host_self_ns)
            );
        }
    }
    let classes = &diagnosis.efficiency.classes;
    if md_operators > 0 && !classes.is_empty() {
        let _ = writeln!(
            out,
            "\n### Efficiency by op class\n\n| class | precision | GPU time | TFLOP/s | TB/s | bound | of roofline |\n|---|---|---:|---:|---:|---|---:|"
        );
        for c in classes.iter().take(md_operators.min(3)) {
            let t = &c.throughput;
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:.2} | {:.3} | {} | {} |",
                c.class.label(),
                c.precision.label(),
                format_ms(t.gpu_ns),
                t.tflops_per_s,
                t.tb_per_s,
                t.bound
                    .map_or("–", tracelens_analysis::views::efficiency::Bound::label),
                if t.above_roofline {
                    "above".to_string()
                } else {
                    t.roofline_percent
                        .map_or_else(|| "–".to_string(), |p| format!("{p:.1} %"))
                }
            );
        }
    }
    if diagnosis.findings.is_empty() {
        let _ = writeln!(out, "\nNo findings above the reporting thresholds.");
        return out;
    }
    let _ = writeln!(
        out,
        "\n### Findings (largest expected gain first: the predicted step saving, else the upper bound{}; wins are upper bounds)\n",
        if diagnosis.one_time_set_apart() {
            ", one-time work after the per-step ones"
        } else {
            ""
        }
    );
    let _ =
        writeln!(
        out,
        "| # | severity | finding | win {} | predicted {} | call site |\n|---|---|---|---|---|---|",
        crate::per(diagnosis),
        if diagnosis.has_steps() { "step" } else { "time" }
    );
    for (i, f) in diagnosis.findings.iter().take(MD_FINDINGS).enumerate() {
        let win = match f.win_kind {
            tracelens_analysis::WinKind::HostOnly => "host only".to_string(),
            tracelens_analysis::WinKind::ExposedCopy => format!(
                "{} copy ({:.1} %)",
                format_ms(f.estimated_win_per_step_ns),
                f.estimated_win_percent
            ),
            tracelens_analysis::WinKind::ExposedCommunication => format!(
                "{} communication ({:.1} %)",
                format_ms(f.estimated_win_per_step_ns),
                f.estimated_win_percent
            ),
            tracelens_analysis::WinKind::KernelTime => format!(
                "{} kernel ({:.1} %)",
                format_ms(f.estimated_win_per_step_ns),
                f.estimated_win_percent
            ),
            tracelens_analysis::WinKind::GpuIdle => format!(
                "{} ({:.1} %)",
                format_ms(f.estimated_win_per_step_ns),
                f.estimated_win_percent
            ),
        };
        let site = f
            .call_site
            .as_deref()
            .map(|s| esc(&shorten(s, 200)))
            .unwrap_or_else(|| "–".into());
        let _ = writeln!(
            out,
            "| {} | {:?} | {} | {} | {} | {} |",
            i + 1,
            f.severity,
            esc(&shorten(&f.title, 200)),
            win,
            f.predicted_step_ns
                .map_or_else(|| "–".to_string(), format_ms),
            site
        );
    }
    if diagnosis.findings.len() > MD_FINDINGS {
        let _ = writeln!(
            out,
            "\n…and {} more in the HTML report.",
            diagnosis.findings.len() - MD_FINDINGS
        );
    }
    for (i, f) in diagnosis.findings.iter().take(md_fixes).enumerate() {
        let _ = writeln!(
            out,
            "\n**Fix {}:** {}{}\n{}",
            i + 1,
            esc(&f.fix),
            if f.fix_chosen_by.is_empty() {
                String::new()
            } else {
                format!(" *Chosen by:* {}.", esc(&f.fix_chosen_by))
            },
            if f.snippet.is_empty() {
                String::new()
            } else {
                markdown_code_block(&f.snippet_language, &f.snippet)
            }
        );
    }
    out
}
