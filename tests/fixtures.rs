//! Every trace under `fixtures/kineto/` is analyzed and must contain what its
//! `<name>.expect.json` says (a subset of the JSON document).

use std::path::PathBuf;
use tracelens_tests::{fixtures_dir, subset_mismatches, tracelens};

fn fixture_pairs() -> Vec<(PathBuf, PathBuf)> {
    let dir = fixtures_dir().join("kineto");
    let mut pairs = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("fixtures/kineto exists") {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".expect.json") {
            let trace = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| {
                    let n = p.file_name().unwrap().to_string_lossy();
                    !n.ends_with(".expect.json")
                        && (n == stem
                            || n.strip_prefix(stem)
                                .is_some_and(|rest| rest.starts_with('.')))
                })
                .unwrap_or_else(|| panic!("no trace for {name}"));
            pairs.push((trace, path));
        }
    }
    pairs.sort();
    pairs
}

#[test]
fn every_fixture_yields_its_expectations() {
    let pairs = fixture_pairs();
    assert!(
        pairs.len() >= 10,
        "expected at least 10 fixtures, found {}",
        pairs.len()
    );
    let mut failures = Vec::new();
    for (trace, expect) in &pairs {
        let run = tracelens([
            "analyze".into(),
            trace.clone().into_os_string(),
            "--format".into(),
            "json".into(),
        ]);
        if run.code != 0 {
            failures.push(format!(
                "{}: exit {} {}",
                trace.display(),
                run.code,
                run.stderr
            ));
            continue;
        }
        let actual: serde_json::Value = serde_json::from_str(&run.stdout).expect("valid JSON");
        let expected: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(expect).unwrap())
                .expect("valid expectation");
        for m in subset_mismatches(&expected, &actual, "") {
            failures.push(format!("{}: {m}", trace.display()));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn json_output_is_deterministic() {
    let trace = fixtures_dir().join("kineto/modern_base_ns.json");
    let a = tracelens([
        "analyze".into(),
        trace.clone().into_os_string(),
        "--format".into(),
        "json".into(),
    ]);
    let b = tracelens([
        "analyze".into(),
        trace.into_os_string(),
        "--format".into(),
        "json".into(),
    ]);
    assert_eq!(a.code, 0);
    assert_eq!(a.stdout, b.stdout);
    assert!(a
        .stdout
        .starts_with("{\n  \"schema_version\": 2,\n  \"tool\""));
}

#[test]
fn text_summary_names_format_device_and_busy_idle() {
    let trace = fixtures_dir().join("kineto/modern_base_ns.json");
    let run = tracelens([
        "analyze".into(),
        trace.into_os_string(),
        "--no-report".into(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for needle in [
        "kineto_base_ns",
        "GPU 0       NVIDIA H100 80GB HBM3",
        "window        total     0.500 ms  busy     0.270 ms ( 54.0 %)  idle     0.230 ms",
        "first-last op total     0.350 ms  busy     0.250 ms ( 71.4 %)  idle     0.100 ms",
        "window      1 step, 0.500 ms in all: mean step 0.500 ms",
        "warnings    none",
    ] {
        assert!(
            run.stdout.contains(needle),
            "missing {needle:?} in\n{}",
            run.stdout
        );
    }
}

#[test]
fn output_file_is_written_whole_and_format_follows_extension() {
    let dir = std::env::temp_dir().join(format!("tracelens-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("summary.json");
    let trace = fixtures_dir().join("kineto/modern_base_ns.json");
    let run = tracelens([
        "analyze".into(),
        trace.into_os_string(),
        "-o".into(),
        out.clone().into_os_string(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok());
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "temp files left behind: {leftovers:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
