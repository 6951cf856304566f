//! `tracelens check` and `tracelens diff`, `--fail-on` and `--annotations github`: the CI
//! side. Results come from a trace (analysed now) or from a stored `--format json` document.

use crate::sink::{fail, Sink};
use crate::stop::Stop;
use std::path::{Path, PathBuf};
use tracelens_analysis::diagnose::finding::Severity;
use tracelens_load as input;
use tracelens_report::escape::terminal_text;
use tracelens_results::{parse_rule, Metrics, Results, Rule};

/// The default rule set (`--rules default`): the seed advice as gates.
pub const DEFAULT_RULES: [&str; 3] = [
    // No DataLoader stall above 10 % of the step.
    "finding.data_loader_stall.win_percent > 10",
    // No per-step host sync that idles the GPU above 5 % of the step.
    "finding.implicit_sync.win_percent > 5",
    // No pageable copies whose exposed time passes 5 % of the step.
    "finding.pageable_copies.win_percent > 5",
];

/// The rules file looked for in the working directory.
pub const RULES_FILE: &str = "tracelens.toml";

/// The results of a trace (analysed now) or of a stored result document.
pub fn results_of(path: &Path, stderr: &mut dyn std::io::Write) -> Result<Results, Stop> {
    if input::is_result_document(path) {
        let text = std::fs::read_to_string(path)
            .map_err(|e| fail(stderr, path, input::read_problem(&e)))?;
        return tracelens_results::results_of_document(&text).map_err(|p| fail(stderr, path, p));
    }
    let mut trace = input::open(path).map_err(|e| fail(stderr, path, e))?;
    // A replay's capture traces, found as analyze finds them, so both decide on one answer.
    input::attach_captures(&mut trace, path, None).map_err(|(f, e)| fail(stderr, &f, e))?;
    // What the gate decides on may be damaged: say so (a bad CRC, a cut file, a stale WAL,
    // missing names, limits reached), as analyze does.
    for w in &trace.warnings {
        use tracelens_model::WarningKind as K;
        if matches!(
            w.kind,
            K::Truncated | K::MalformedEvent | K::LimitReached | K::MissingNames | K::Other
        ) {
            let _ = writeln!(
                stderr,
                "tracelens: warning: {}: {}",
                terminal_text(&path.display().to_string()),
                terminal_text(&w.message)
            );
        }
    }
    let d = tracelens_analysis::diagnose(&trace);
    Ok(Results::of(&trace.source, &d))
}

/// A rules file (`tracelens.toml`): `rules = ["...", ...]`; other keys are reported, not read.
#[derive(serde::Deserialize)]
struct RulesFile {
    rules: Option<Vec<String>>,
    #[serde(flatten)]
    other: std::collections::BTreeMap<String, toml::Value>,
}

/// The `rules` list of a rules file (any valid TOML) and the keys it does not know, or one line
/// saying where the file is not valid TOML.
pub fn rules_from_file(text: &str) -> Result<(Vec<String>, Vec<String>), String> {
    let file: RulesFile = toml::from_str(text).map_err(|e| {
        let at = e.span().map_or(String::new(), |s| {
            let before = &text[..s.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |n| n + 1) + 1;
            format!(" at line {line}, column {column}")
        });
        format!("not valid TOML{at}: {}", e.message().trim())
    })?;
    let rules = file
        .rules
        .ok_or_else(|| "no rules = [\"...\"] list in this file".to_string())?;
    Ok((rules, file.other.into_keys().collect()))
}

/// The rule texts of a `check`: `--rule`s, then `--rules FILE|default`, else `tracelens.toml`
/// in the working directory, else the default set.
pub fn collect_rules(
    rules: &[String],
    file: Option<&Path>,
    stderr: &mut dyn std::io::Write,
) -> Result<Vec<String>, Stop> {
    let mut out: Vec<String> = rules.to_vec();
    let from_file = |p: &Path, stderr: &mut dyn std::io::Write| -> Result<Vec<String>, Stop> {
        let text =
            std::fs::read_to_string(p).map_err(|e| fail(stderr, p, input::read_problem(&e)))?;
        let (rules, unknown) = rules_from_file(&text).map_err(|why| fail(stderr, p, why))?;
        for key in unknown {
            let _ = writeln!(
                stderr,
                "tracelens: warning: {}: unknown key '{}' ignored (tracelens reads 'rules')",
                terminal_text(&p.display().to_string()),
                terminal_text(&key)
            );
        }
        if rules.is_empty() {
            return Err(fail(stderr, p, "the rules list is empty"));
        }
        Ok(rules)
    };
    match file {
        Some(p) if p.as_os_str() == "default" => {
            out.extend(DEFAULT_RULES.iter().map(|r| r.to_string()))
        }
        Some(p) => out.extend(from_file(p, stderr)?),
        // Anything named tracelens.toml is the rules file: a dangling link, a folder or an
        // unreadable file is an error, never a silent fall-back to the default rules.
        None if out.is_empty() && std::fs::symlink_metadata(RULES_FILE).is_ok() => {
            out.extend(from_file(Path::new(RULES_FILE), stderr)?)
        }
        None if out.is_empty() => out.extend(DEFAULT_RULES.iter().map(|r| r.to_string())),
        None => {}
    }
    Ok(out)
}

/// Parses every rule; a bad one is one line naming it and exit 2.
pub fn parse_all(
    texts: &[String],
    stderr: &mut dyn std::io::Write,
) -> Result<Vec<(String, Rule)>, Stop> {
    texts
        .iter()
        .map(|t| match parse_rule(t) {
            Ok(r) => Ok((t.clone(), r)),
            Err(e) => {
                let _ = writeln!(stderr, "tracelens: error: rule '{}': {e}", terminal_text(t));
                Err(Stop::Refused)
            }
        })
        .collect()
}

/// Refuses (exit 2) rules that read a figure the run cannot give, one line each: a GPU rule
/// on a CPU-only trace must not pass silently.
pub fn refuse_not_measured(
    rules: &[(String, Rule)],
    metrics: &Metrics,
    stderr: &mut dyn std::io::Write,
) -> Result<(), Stop> {
    let mut refused = false;
    for (text, rule) in rules {
        for name in rule.metric_names() {
            if let Some(why) = metrics.not_measured(name) {
                let _ = writeln!(
                    stderr,
                    "tracelens: error: rule '{}': {name} is not measured: {why}",
                    terminal_text(text)
                );
                refused = true;
            }
        }
    }
    if refused {
        Err(Stop::Refused)
    } else {
        Ok(())
    }
}

/// `metric = value` for each metric a rule reads.
fn measured(rule: &Rule, metrics: &Metrics) -> String {
    rule.metric_names()
        .iter()
        .filter_map(|n| {
            metrics
                .get(n)
                .map(|m| format!("{n} = {}", m.unit.show(m.value)))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Evaluates `rules`; prints each with its measured values. Returns whether any fired.
pub fn report_rules(
    out: &mut Sink,
    label: &str,
    rules: &[(String, Rule)],
    metrics: &Metrics,
) -> Result<bool, Stop> {
    refuse_not_measured(rules, metrics, out.stderr)?;
    let fired: Vec<bool> = rules.iter().map(|(_, r)| r.fires(metrics)).collect();
    let failing = fired.iter().filter(|&&f| f).count();
    out.print(&format!(
        "tracelens check: {} — {}\n",
        terminal_text(label),
        if failing == 0 {
            format!("all {} rules hold", rules.len())
        } else {
            format!("{failing} of {} rules fail", rules.len())
        }
    ))?;
    for ((text, rule), fired) in rules.iter().zip(&fired) {
        out.print(&format!(
            "  {}  {}\n        measured: {}\n",
            if *fired { "FAIL" } else { "ok  " },
            terminal_text(text),
            measured(rule, metrics)
        ))?;
    }
    Ok(failing > 0)
}

/// `::warning` lines for findings of severity `min` or more whose Python call site is a file
/// under `root`, named by its path there (`file.py:LINE function` → `file=src/file.py`).
pub fn github_annotations(r: &Results, min: Severity, root: &Path) -> String {
    // Escaped as the command format wants; control characters (ESC, BEL) and bidi controls
    // from trace names dropped first.
    let data = |s: &str| {
        let visible: String = s
            .chars()
            .filter(|&c| c == '\n' || c == '\r' || !c.is_control())
            .collect();
        tracelens_report::escape::terminal_text(&visible.replace(['\r', '\n'], " "))
            .replace('%', "%25")
    };
    let prop = |s: &str| data(s).replace(':', "%3A").replace(',', "%2C");
    let mut out = String::new();
    for f in r.findings.iter().filter(|f| f.severity >= min) {
        let Some(site) = &f.call_site else { continue };
        let location = site.split_whitespace().next().unwrap_or(site);
        let Some((file, line)) = location.rsplit_once(':') else {
            continue;
        };
        if line.parse::<u32>().is_err() {
            continue;
        }
        let Some(file) = file_in(root, file) else {
            continue;
        };
        out.push_str(&format!(
            "::warning file={},line={line},title={}::{} — fix: {}\n",
            prop(&file),
            prop(&format!("tracelens: {}", f.kind.label().replace('_', " "))),
            data(&f.title),
            data(&f.fix)
        ));
    }
    out
}

/// `--fail-on` after the outputs are written: each fired rule on stderr with its measured
/// values; exit 1 if any fired.
pub fn fail_on(
    rules: &[(String, Rule)],
    metrics: &Metrics,
    stderr: &mut dyn std::io::Write,
) -> Result<(), Stop> {
    refuse_not_measured(rules, metrics, stderr)?;
    let mut any = false;
    for (text, rule) in rules {
        if rule.fires(metrics) {
            any = true;
            let _ = writeln!(
                stderr,
                "tracelens: gate failed: {} (measured {})",
                terminal_text(text),
                measured(rule, metrics)
            );
        }
    }
    if any {
        Err(Stop::RuleFired)
    } else {
        Ok(())
    }
}

/// The path under `root` of a call site's file: the longest tail of its path that names a
/// file there (`/home/ci/work/repo/src/train.py` → `src/train.py`), or none (a library file
/// outside the checkout).
fn file_in(root: &Path, file: &str) -> Option<String> {
    let parts: Vec<&str> = file
        .split(['/', '\\'])
        .filter(|p| !p.is_empty() && *p != "." && *p != "..")
        .collect();
    (0..parts.len())
        .map(|skip| parts[skip..].join("/"))
        .find(|tail| root.join(tail).is_file())
}

/// Where a diff goes and in which format, from `-o`/`--format`.
pub fn diff_target(output: Option<&PathBuf>) -> Option<&PathBuf> {
    output.filter(|p| p.as_os_str() != "-")
}

impl crate::args::AnnotationArgs {
    /// The annotation lines for `results`, when asked for.
    pub(crate) fn lines(&self, results: &tracelens_results::Results) -> Option<String> {
        self.annotations?;
        let min = match self.min_severity {
            crate::args::MinSeverity::Low => Severity::Low,
            crate::args::MinSeverity::Medium => Severity::Medium,
            crate::args::MinSeverity::High => Severity::High,
        };
        let root = self
            .source_root
            .clone()
            .or_else(|| std::env::var_os("GITHUB_WORKSPACE").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("."));
        Some(github_annotations(results, min, &root))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_site_files_are_found_in_the_checkout_by_their_longest_tail() {
        let root = std::env::temp_dir().join(format!("tracelens-file-in-{}", std::process::id()));
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/train.py"), "").unwrap();
        let found = |f: &str| file_in(&root, f);
        assert_eq!(
            found("/home/ci/work/repo/src/train.py").as_deref(),
            Some("src/train.py")
        );
        assert_eq!(found("src/train.py").as_deref(), Some("src/train.py"));
        assert_eq!(found("transformers/models/owlv2/modeling_owlv2.py"), None);
        assert_eq!(found("../../etc/passwd"), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
