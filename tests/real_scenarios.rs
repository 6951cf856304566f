//! Ground truth from real PyTorch runs: each case of `scenarios/train.py` plants one known
//! problem (or its fix), and `scenarios/expected/<case>.toml` says which findings
//! `tracelens` must report on its recorded trace, at which planted line, and which it must
//! not. Recorded traces live in `fixtures/real/<case>/` (they need a lent GPU; see
//! `scenarios/README.md`).

use serde::Deserialize;
use std::path::{Path, PathBuf};
use tracelens_analysis::FindingKind;
use tracelens_tests::{repo_root, tracelens};

/// One `expected/<case>.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expected {
    case: String,
    /// The fixed twin: it must not have this case's present findings.
    twin: Option<String>,
    #[serde(default)]
    present: Vec<Present>,
    #[serde(default)]
    absent: Vec<Absent>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Present {
    kind: FindingKind,
    /// `file:line` of the planted code.
    call_site: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Absent {
    kind: FindingKind,
}

fn scenarios() -> PathBuf {
    repo_root().join("scenarios")
}

fn expectations() -> Vec<Expected> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(scenarios().join("expected"))
        .expect("scenarios/expected")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let e: Expected =
                toml::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}", f.display()));
            assert_eq!(
                Some(e.case.as_str()),
                f.file_stem().and_then(|s| s.to_str()),
                "{}: case and file name differ",
                f.display()
            );
            e
        })
        .collect()
}

/// What the checker finds wrong with one analysed trace (`diagnosis` of the JSON output)
/// against what must be present and absent.
fn problems(
    results: &serde_json::Value,
    present: &[Present],
    absent: &[FindingKind],
) -> Vec<String> {
    let findings = results["findings"].as_array().cloned().unwrap_or_default();
    let has = |kind: FindingKind| {
        findings
            .iter()
            .filter(move |f| f["kind"] == kind.label())
            .map(|f| f["call_site"].as_str().unwrap_or("").to_string())
    };
    let mut out = Vec::new();
    for p in present {
        let sites: Vec<String> = has(p.kind).collect();
        // A call site reads `train.py:140 log_loss`: the file and line must match.
        let found = sites
            .iter()
            .any(|s| s.split_whitespace().next() == Some(p.call_site.as_str()));
        if !found {
            out.push(format!(
                "no {} at {} (found at: {sites:?})",
                p.kind.label(),
                p.call_site
            ));
        }
    }
    for &kind in absent {
        let sites: Vec<String> = has(kind).collect();
        if !sites.is_empty() {
            out.push(format!("unexpected {} (at {sites:?})", kind.label()));
        }
    }
    out
}

fn results_of(trace: &Path) -> serde_json::Value {
    let run = tracelens([
        "analyze".as_ref(),
        trace.as_os_str(),
        "--format".as_ref(),
        "json".as_ref(),
    ]);
    assert_eq!(run.code, 0, "{}: {}", trace.display(), run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    doc["diagnosis"].clone()
}

/// Every expectation names a case the script has, a twin that has expectations too, and a
/// call site on a line of `train.py` marked as planted for that case, so the expectations
/// cannot drift from the script.
#[test]
fn expectations_point_at_the_planted_lines() {
    let script = std::fs::read_to_string(scenarios().join("train.py")).unwrap();
    let lines: Vec<&str> = script.lines().collect();
    let all = expectations();
    assert!(all.len() >= 10, "{} cases", all.len());
    let names: Vec<&str> = all.iter().map(|e| e.case.as_str()).collect();
    for e in &all {
        assert!(
            script.contains(&format!("\"{}\":", e.case)),
            "{} is not a case of train.py",
            e.case
        );
        if let Some(twin) = &e.twin {
            assert!(names.contains(&twin.as_str()), "{}: no twin {twin}", e.case);
        }
        assert!(
            !e.present.is_empty() || !e.absent.is_empty(),
            "{}: expects nothing",
            e.case
        );
        for p in &e.present {
            let (file, line) = p.call_site.split_once(':').expect("file:line");
            assert_eq!(file, "train.py", "{}", e.case);
            let n: usize = line.parse().expect("a line number");
            let text = lines.get(n - 1).copied().unwrap_or("");
            let planted = text
                .split_once("# planted:")
                .map(|(_, cases)| cases.split(',').any(|c| c.trim() == e.case))
                .unwrap_or(false);
            assert!(
                planted,
                "{}: train.py:{n} is not marked `# planted: {}`: {text:?}",
                e.case, e.case
            );
        }
    }
}

/// The checker itself, on the synthetic twins of `fixtures/scenarios`: it passes the right
/// expectation and fails a wrong line, a missing finding and an unexpected one.
#[test]
fn the_checker_accepts_the_truth_and_refuses_the_rest() {
    let dir = tracelens_tests::fixtures_dir().join("scenarios");
    let planted = results_of(&dir.join("item_every_step.json"));
    let fixed = results_of(&dir.join("item_read_every_n_steps.json"));
    let at = |site: &str| {
        vec![Present {
            kind: FindingKind::ImplicitSync,
            call_site: site.into(),
        }]
    };
    assert_eq!(
        problems(
            &planted,
            &at("train.py:52"),
            &[FindingKind::DataLoaderStall]
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        problems(&fixed, &[], &[FindingKind::ImplicitSync]),
        Vec::<String>::new()
    );
    assert_eq!(problems(&planted, &at("train.py:53"), &[]).len(), 1);
    assert_eq!(problems(&fixed, &at("train.py:52"), &[]).len(), 1);
    assert_eq!(
        problems(&planted, &[], &[FindingKind::ImplicitSync]).len(),
        1
    );
}

/// The recorded traces: each case's planted findings at their lines, nothing it must not
/// have, and its fixed twin without the planted findings.
#[test]
#[cfg_attr(
    no_real_traces,
    ignore = "no PyTorch scenario traces recorded under fixtures/real/ yet: they need a lent GPU (scenarios/README.md)"
)]
fn recorded_scenarios_show_what_their_expectations_say() {
    let real = repo_root().join("fixtures/real");
    let trace_of = |case: &str| -> Option<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(real.join(case))
            .ok()?
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
            .collect();
        files.sort();
        files.pop()
    };
    let mut checked = 0;
    let mut failures = Vec::new();
    for e in expectations() {
        let Some(trace) = trace_of(&e.case) else {
            failures.push(format!("{}: not recorded", e.case));
            continue;
        };
        let absent: Vec<FindingKind> = e.absent.iter().map(|a| a.kind).collect();
        for p in problems(&results_of(&trace), &e.present, &absent) {
            failures.push(format!("{}: {p}", e.case));
        }
        if let Some(twin) = &e.twin {
            let kinds: Vec<FindingKind> = e.present.iter().map(|p| p.kind).collect();
            match trace_of(twin) {
                Some(t) => {
                    for p in problems(&results_of(&t), &[], &kinds) {
                        failures.push(format!("{} (twin of {}): {p}", twin, e.case));
                    }
                }
                None => failures.push(format!("{twin}: not recorded")),
            }
        }
        checked += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 10, "{checked} cases checked");
}
