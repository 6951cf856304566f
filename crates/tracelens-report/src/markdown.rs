//! A compact Markdown summary for CI step summaries and pull-request comments (under 60
//! lines). Trace strings are escaped: GitHub renders inline HTML in Markdown.

use std::fmt::Write;
use tracelens_analysis::{Diagnosis, Overview};
use tracelens_model::{format_ms, shorten, Trace};

/// Findings listed in the table.
const MD_FINDINGS: usize = 10;
/// Fixes spelled out below the table.
const MD_FIXES: usize = 3;

/// Escapes text for a Markdown table cell.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '|' => out.push_str("\\|"),
            '`' => out.push('\''),
            '*' | '_' | '[' | ']' | '#' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Renders the Markdown summary.
pub fn render_markdown(trace: &Trace, overview: &Overview, diagnosis: &Diagnosis) -> String {
    let mut out = String::new();
    let name = std::path::Path::new(&trace.source.path)
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
    for idle in diagnosis.idle.iter().filter(|i| i.idle_ns > 0) {
        let parts: Vec<String> = idle
            .by_cause
            .iter()
            .map(|c| format!("{} {}", c.cause.label().replace('_', " "), format_ms(c.ns)))
            .collect();
        let _ = writeln!(
            out,
            "| Idle by cause (GPU {}) | {} |",
            idle.device,
            parts.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "| Trace | {} ({}) |",
        esc(&trace.source.generation),
        plural(trace.warnings.len(), "warning")
    );
    if diagnosis.findings.is_empty() {
        let _ = writeln!(out, "\nNo findings above the reporting thresholds.");
        return out;
    }
    let _ = writeln!(out, "\n### Findings (estimated wins are upper bounds)\n");
    let _ = writeln!(
        out,
        "| # | severity | finding | win {} | call site |\n|---|---|---|---|---|",
        crate::per(diagnosis)
    );
    for (i, f) in diagnosis.findings.iter().take(MD_FINDINGS).enumerate() {
        let win = match f.win_kind {
            tracelens_analysis::WinKind::HostOnly => "host only".to_string(),
            tracelens_analysis::WinKind::ExposedCopy => format!(
                "{} copy ({:.1} %)",
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
            .map(|s| format!("`{}`", s.replace('`', "'")))
            .unwrap_or_else(|| "–".into());
        let _ = writeln!(
            out,
            "| {} | {:?} | {} | {} | {} |",
            i + 1,
            f.severity,
            esc(&shorten(&f.title, 200)),
            win,
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
    for (i, f) in diagnosis.findings.iter().take(MD_FIXES).enumerate() {
        let _ = writeln!(
            out,
            "\n**Fix {}:** {}\n```python\n{}\n```",
            i + 1,
            esc(&f.fix),
            f.snippet
        );
    }
    out
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}
