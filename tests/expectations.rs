//! The expectations of `tests/expectations.toml` on the real-trace corpus: for each listed trace,
//! the top finding, its sub-cause and the words its fix must and must not contain — what an
//! expert reading the trace would say, written down trace by trace.

use serde::Deserialize;
use std::path::Path;
use tracelens_analysis::{diagnose, Finding};
use tracelens_tests::corpus_dir;

#[derive(Deserialize)]
struct Expectations {
    trace: Vec<Expected>,
}

#[derive(Deserialize)]
struct Expected {
    path: String,
    about: String,
    top: String,
    sub_cause: Option<String>,
    #[serde(default)]
    must: Vec<String>,
    #[serde(default)]
    must_not: Vec<String>,
    #[serde(default)]
    present: Vec<String>,
    /// Finding kinds that must not appear (claims the capture cannot support).
    #[serde(default)]
    absent: Vec<String>,
    /// Words the verdict must hold, and must not.
    #[serde(default)]
    verdict: Vec<String>,
    #[serde(default)]
    verdict_not: Vec<String>,
    /// Words the program line must hold.
    #[serde(default)]
    program: Vec<String>,
    /// Words no finding's fix, advice or snippet may name: another tool's vocabulary.
    #[serde(default)]
    nowhere: Vec<String>,
    /// The kind of the report's first finding (ranked by expected gain, one-time work last
    /// where the work repeats), and words its fix must hold.
    first: Option<String>,
    #[serde(default)]
    first_must: Vec<String>,
    /// The lever the first finding's fix pulls (`diagnose/lever.rs`).
    first_lever: Option<String>,
    /// Where the window comes from (`profiled_steps`, `found_iterations`, `gpu_extent`, …)
    /// and, for found iterations, how many and from which range.
    window: Option<String>,
    iterations: Option<usize>,
    iterations_from: Option<String>,
    /// Words that some finding's one-time note must hold (one-time work set apart).
    #[serde(default)]
    one_time: Vec<String>,
}

fn sub_cause(f: &Finding) -> Option<String> {
    f.sub_cause.map(|s| s.label().to_string())
}

fn check(root: &Path, e: &Expected) -> Vec<String> {
    let path = root.join(&e.path);
    let opened = if e.path.ends_with(".sqlite") {
        tracelens_nsys::import_file(&path).map_err(|err| err.to_string())
    } else {
        tracelens_load::open(&path).map_err(|err| err.to_string())
    };
    let trace = match opened {
        Ok(t) => t,
        Err(err) => return vec![format!("{}: does not open: {err}", e.path)],
    };
    let d = diagnose(&trace);
    let mut errors = Vec::new();
    let at = |what: String| format!("{} ({}): {what}", e.path, e.about);
    for word in &e.verdict {
        if !d.verdict.text.contains(word.as_str()) {
            errors.push(at(format!("verdict lacks {word:?}: {}", d.verdict.text)));
        }
    }
    for word in &e.verdict_not {
        if d.verdict.text.contains(word.as_str()) {
            errors.push(at(format!("verdict says {word:?}: {}", d.verdict.text)));
        }
    }
    for word in &e.program {
        if !d.program.contains(word.as_str()) {
            errors.push(at(format!("program line lacks {word:?}: {}", d.program)));
        }
    }
    for f in &d.findings {
        for word in &e.nowhere {
            for text in [&f.fix, &f.advice, &f.snippet] {
                if text.contains(word.as_str()) {
                    errors.push(at(format!("{} names {word:?}: {text}", f.kind.label())));
                }
            }
        }
        if e.absent.iter().any(|k| k == f.kind.label()) {
            errors.push(at(format!(
                "unsupported {} finding: {}",
                f.kind.label(),
                f.title
            )));
        }
    }
    if let Some(kind) = &e.window {
        let got = d.window.as_ref().map(|w| {
            serde_json::to_value(w.kind)
                .unwrap()
                .as_str()
                .unwrap_or("")
                .to_string()
        });
        if got.as_deref() != Some(kind.as_str()) {
            errors.push(at(format!("window {got:?}, expected {kind}")));
        }
    }
    if let Some(n) = e.iterations {
        let got = d.window.as_ref().map_or(0, |w| w.steps.len());
        if got != n {
            errors.push(at(format!("{got} iterations, expected {n}")));
        }
    }
    if let Some(from) = &e.iterations_from {
        let got = d.window.as_ref().and_then(|w| w.iterations_from.clone());
        if !got.as_deref().is_some_and(|g| g.contains(from.as_str())) {
            errors.push(at(format!("iterations from {got:?}, expected {from:?}")));
        }
    }
    for word in &e.one_time {
        if !d.findings.iter().any(|f| {
            f.one_time
                .as_deref()
                .is_some_and(|o| o.contains(word.as_str()))
        }) {
            errors.push(at(format!(
                "no finding set apart as one-time work {word:?}"
            )));
        }
    }
    if let Some(kind) = &e.first {
        match d.findings.first() {
            Some(f) if f.kind.label() == kind => {
                for word in &e.first_must {
                    if !f.fix.contains(word.as_str()) {
                        errors.push(at(format!("first fix lacks {word:?}: {}", f.fix)));
                    }
                }
                if let Some(lever) = &e.first_lever {
                    let got = f.lever.map(|l| {
                        serde_json::to_value(l)
                            .unwrap()
                            .as_str()
                            .unwrap_or("")
                            .to_string()
                    });
                    if got.as_deref() != Some(lever.as_str()) {
                        errors.push(at(format!("first lever {got:?}, expected {lever}")));
                    }
                }
            }
            other => errors.push(at(format!(
                "first finding {:?}, expected {kind}",
                other.map(|f| f.title.clone())
            ))),
        }
    }
    // The largest problem: the finding with the largest win (the report ranks by predicted
    // gain, which can put a smaller problem with a surer fix first).
    let largest = d
        .findings
        .iter()
        .enumerate()
        .max_by_key(|(i, f)| (f.estimated_win_ns, std::cmp::Reverse(*i)))
        .map(|(_, f)| f);
    let Some(top) = largest else {
        if e.top != "none" {
            errors.push(at(format!("no finding, expected {}", e.top)));
        }
        return errors;
    };
    if top.kind.label() != e.top {
        errors.push(at(format!(
            "top finding is {} ({}), expected {}",
            top.kind.label(),
            top.title,
            e.top
        )));
        return errors;
    }
    if e.sub_cause.is_some() && sub_cause(top) != e.sub_cause {
        errors.push(at(format!(
            "sub-cause {:?}, expected {:?}",
            sub_cause(top),
            e.sub_cause
        )));
    }
    for word in &e.must {
        if !top.fix.contains(word.as_str()) {
            errors.push(at(format!("fix lacks {word:?}: {}", top.fix)));
        }
    }
    for word in &e.must_not {
        if top.fix.contains(word.as_str()) {
            errors.push(at(format!("fix names {word:?}: {}", top.fix)));
        }
    }
    for kind in &e.present {
        if !d
            .findings
            .iter()
            .any(|f| f.kind.label() == kind && !std::ptr::eq(f, top))
        {
            errors.push(at(format!("no other {kind} finding")));
        }
    }
    errors
}

#[test]
#[cfg_attr(
    no_corpus,
    ignore = "no trace corpus: set TRACELENS_CORPUS to shared/traces"
)]
fn the_corpus_traces_get_the_diagnosis_an_expert_would_give() {
    let Some(root) = corpus_dir("the_corpus_traces_get_the_diagnosis_an_expert_would_give") else {
        return;
    };
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("expectations.toml"))
            .unwrap();
    let expectations: Expectations = toml::from_str(&text).unwrap();
    assert!(
        expectations.trace.len() >= 25,
        "at least 25 traces, found {}",
        expectations.trace.len()
    );
    let kinds: std::collections::BTreeSet<&str> =
        expectations.trace.iter().map(|e| e.top.as_str()).collect();
    assert!(
        kinds.len() >= 8,
        "the expectations cover few kinds: {kinds:?}"
    );
    let errors: Vec<String> = expectations
        .trace
        .iter()
        .flat_map(|e| check(&root, e))
        .collect();
    assert!(errors.is_empty(), "\n{}", errors.join("\n"));
}
