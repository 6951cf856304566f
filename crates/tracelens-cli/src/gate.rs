//! `tracelens check` and `tracelens diff`, `--fail-on` and `--annotations github`: the CI
//! side. Results come from a trace (analysed now) or from a stored `--format json` document.

use crate::args::NotMeasured;
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

/// The default set's texts, marked as such.
fn default_set() -> impl Iterator<Item = (String, bool)> {
    DEFAULT_RULES.iter().map(|r| (r.to_string(), true))
}

/// The rules file looked for in the working directory.
pub const RULES_FILE: &str = "tracelens.toml";

/// The results of a trace (analysed now) or of a stored result document.
pub fn results_of(path: &Path, stderr: &mut dyn std::io::Write) -> Result<Results, Stop> {
    Ok(stored_or_analysed(path, stderr)?.0)
}

/// The results of a trace or stored document, and the job around them when the document is
/// a job's (its gate rank's results, which rules and diffs read).
pub fn stored_or_analysed(
    path: &Path,
    stderr: &mut dyn std::io::Write,
) -> Result<(Results, Option<tracelens_results::Job>), Stop> {
    if input::is_result_document(path) {
        let text =
            input::read_result_text(path, MAX_RESULT_BYTES).map_err(|p| fail(stderr, path, p))?;
        return stored(&text).map_err(|p| fail(stderr, path, p));
    }
    let mut trace = match input::open(path) {
        Ok(trace) => trace,
        // A result document whose keys were reordered (`jq -S`, a JSON library that sorts
        // them) does not name itself in its first bytes: read it as one before giving up.
        Err(e) => {
            return input::read_result_text(path, MAX_RESULT_BYTES)
                .ok()
                .and_then(|text| stored(&text).ok())
                .ok_or_else(|| fail(stderr, path, e))
        }
    };
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
    Ok((Results::of(&trace.source, &d), None))
}

/// The results of a stored document, a run's or a job's (its gate rank's, with the job).
fn stored(text: &str) -> Result<(Results, Option<tracelens_results::Job>), String> {
    if tracelens_results::JobDocument::is_job(text) {
        let doc = tracelens_results::JobDocument::from_json(text)?;
        let results = doc.gate_results()?.clone();
        return Ok((results, Some(doc.job)));
    }
    tracelens_results::results_of_document(text).map(|r| (r, None))
}

/// Largest result document read back (results are kilobytes, a job's a few megabytes; this
/// bounds a hostile file).
pub const MAX_RESULT_BYTES: u64 = 256 << 20;

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

/// The rules of a `check`: `--rule`s, then `--rules FILE|default`, else `tracelens.toml` in
/// the working directory, else the default set. The default set's rules pass as "not
/// measured" where the capture cannot give their figure (a CPU-only run has no GPU idle to
/// gate); the user's own follow `not_measured`.
pub fn collect_rules(
    rules: &[String],
    file: Option<&Path>,
    not_measured: NotMeasured,
    stderr: &mut dyn std::io::Write,
) -> Result<Vec<GateRule>, Stop> {
    let texts = collect_rule_texts(rules, file, stderr)?;
    let mut out = Vec::with_capacity(texts.len());
    for (text, from_default_set) in texts {
        let policy = if from_default_set {
            NotMeasured::Pass
        } else {
            not_measured
        };
        out.extend(parse_all(&[text], policy, stderr)?);
    }
    Ok(out)
}

/// The rule texts, each marked when it comes from the default set.
fn collect_rule_texts(
    rules: &[String],
    file: Option<&Path>,
    stderr: &mut dyn std::io::Write,
) -> Result<Vec<(String, bool)>, Stop> {
    let mut out: Vec<(String, bool)> = rules.iter().map(|r| (r.clone(), false)).collect();
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
        Some(p) if p.as_os_str() == "default" => out.extend(default_set()),
        Some(p) => out.extend(from_file(p, stderr)?.into_iter().map(|r| (r, false))),
        // Anything named tracelens.toml is the rules file: a dangling link, a folder or an
        // unreadable file is an error, never a silent fall-back to the default rules.
        None if out.is_empty() && std::fs::symlink_metadata(RULES_FILE).is_ok() => out.extend(
            from_file(Path::new(RULES_FILE), stderr)?
                .into_iter()
                .map(|r| (r, false)),
        ),
        None if out.is_empty() => out.extend(default_set()),
        None => {}
    }
    Ok(out)
}

/// A rule to evaluate: its text, its parsed form, and what a figure the run cannot give
/// makes of it.
pub struct GateRule {
    pub text: String,
    pub rule: Rule,
    /// `true`: a rule reading a figure this capture does not give passes as "not measured",
    /// with the reason (the default set, and `--not-measured pass`); `false`: it is refused
    /// (exit 2), never read as "holds".
    pub not_measured_passes: bool,
}

/// Parses every rule; a bad one is one line naming it and exit 2.
pub fn parse_all(
    texts: &[String],
    not_measured: NotMeasured,
    stderr: &mut dyn std::io::Write,
) -> Result<Vec<GateRule>, Stop> {
    texts
        .iter()
        .map(|t| match parse_rule(t) {
            Ok(rule) => Ok(GateRule {
                text: t.clone(),
                rule,
                not_measured_passes: not_measured == NotMeasured::Pass,
            }),
            Err(e) => {
                let _ = writeln!(stderr, "tracelens: error: rule '{}': {e}", terminal_text(t));
                Err(Stop::Refused)
            }
        })
        .collect()
}

/// The first metric of `rule` the run cannot give, with the reason.
fn first_not_measured(rule: &Rule, metrics: &Metrics) -> Option<(String, &'static str)> {
    rule.metric_names().into_iter().find_map(|name| {
        metrics
            .not_measured(name)
            .map(|why| (name.to_string(), why))
    })
}

/// Refuses (exit 2) rules that read a figure the run cannot give and may not pass on it, one
/// line each: a GPU rule the user wrote must not pass silently on a CPU-only trace.
fn refuse_not_measured(
    rules: &[GateRule],
    metrics: &Metrics,
    stderr: &mut dyn std::io::Write,
) -> Result<(), Stop> {
    let mut refused = false;
    for r in rules.iter().filter(|r| !r.not_measured_passes) {
        for name in r.rule.metric_names() {
            if let Some(why) = metrics.not_measured(name) {
                let _ = writeln!(
                    stderr,
                    "tracelens: error: rule '{}': {name} is not measured: {why} (--not-measured pass lets it pass with this note)",
                    terminal_text(&r.text)
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

/// A rule's outcome on one run.
enum Outcome {
    Holds,
    Fires,
    /// Passes: the run cannot give this figure (metric, reason).
    NotMeasured(String, &'static str),
}

fn outcome(r: &GateRule, metrics: &Metrics) -> Outcome {
    if let Some((name, why)) = first_not_measured(&r.rule, metrics) {
        return Outcome::NotMeasured(name, why);
    }
    if r.rule.fires(metrics) {
        Outcome::Fires
    } else {
        Outcome::Holds
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
    rules: &[GateRule],
    metrics: &Metrics,
) -> Result<bool, Stop> {
    refuse_not_measured(rules, metrics, out.stderr)?;
    let outcomes: Vec<Outcome> = rules.iter().map(|r| outcome(r, metrics)).collect();
    let failing = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Fires))
        .count();
    let unmeasured = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::NotMeasured(..)))
        .count();
    let n = rules.len();
    let rules_word = if n == 1 { "rule" } else { "rules" };
    let headline = match (failing, unmeasured) {
        (0, 0) if n == 1 => "the rule holds".to_string(),
        (0, 0) => format!("all {n} rules hold"),
        (0, u) => format!("no rule fails ({u} of {n} not measured on this capture)"),
        (1, 0) if n == 1 => "the rule fails".to_string(),
        (f, 0) => format!("{f} of {n} {rules_word} fail"),
        (f, u) => format!("{f} of {n} {rules_word} fail ({u} not measured on this capture)"),
    };
    out.print(&format!(
        "tracelens check: {} — {headline}\n",
        terminal_text(label)
    ))?;
    for (r, o) in rules.iter().zip(&outcomes) {
        let (mark, detail) = match o {
            Outcome::Fires => ("FAIL", format!("measured: {}", measured(&r.rule, metrics))),
            Outcome::Holds => ("ok  ", format!("measured: {}", measured(&r.rule, metrics))),
            Outcome::NotMeasured(name, why) => {
                ("n/a ", format!("not measured, passes: {name}: {why}"))
            }
        };
        out.print(&format!(
            "  {mark}  {}\n        {detail}\n",
            terminal_text(&r.text)
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
/// values (and a note for each that passes unmeasured); exit 1 if any fired.
pub fn fail_on(
    rules: &[GateRule],
    metrics: &Metrics,
    stderr: &mut dyn std::io::Write,
) -> Result<(), Stop> {
    refuse_not_measured(rules, metrics, stderr)?;
    let mut any = false;
    for r in rules {
        match outcome(r, metrics) {
            Outcome::Fires => {
                any = true;
                let _ = writeln!(
                    stderr,
                    "tracelens: gate failed: {} (measured {})",
                    terminal_text(&r.text),
                    measured(&r.rule, metrics)
                );
            }
            Outcome::NotMeasured(name, why) => {
                let _ = writeln!(
                    stderr,
                    "tracelens: note: rule '{}' passes, not measured on this capture: {name}: {why}",
                    terminal_text(&r.text)
                );
            }
            Outcome::Holds => {}
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
