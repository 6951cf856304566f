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
    let head = format!(
        "{{\n  \"schema_version\": {},\n  \"tool\"",
        tracelens_report::SCHEMA_VERSION
    );
    assert!(a.stdout.starts_with(&head), "{}", &a.stdout[..40]);
}

#[test]
fn text_summary_names_format_device_and_busy_idle() {
    let trace = fixtures_dir().join("kineto/modern_base_ns.json");
    let run = tracelens([
        "analyze".into(),
        trace.into_os_string(),
        "--no-report".into(),
        "--verbose".into(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for needle in [
        "kineto_base_ns",
        "GPU 0      NVIDIA H100 80GB HBM3: busy 54.0 %, idle 0.230 ms of the 0.500 ms",
        "GPU 0 idle 0.230 ms of the 0.500 ms step, by cause:",
        "first to last op: total 0.350 ms, busy 0.250 ms (71.4 %), idle",
        "window     1 step, 0.500 ms in all: mean step 0.500 ms",
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

#[test]
fn the_command_line_helps_people_who_mistype() {
    let trace = fixtures_dir().join("kineto/modern_base_ns.json");
    let trace = trace.to_str().unwrap();
    // British spelling is an alias; a misspelt flag gets a suggestion.
    let run = tracelens(["analyse", trace, "--no-report"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = tracelens(["analyze", trace, "--formt", "json"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("--format"), "{}", run.stderr);
    let run = tracelens(["analyz", trace]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("analyze"), "{}", run.stderr);
    // Help names both input formats and shows examples.
    let run = tracelens(["analyze", "--help"]);
    assert!(
        run.stdout.contains("Nsight Systems SQLite"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("Examples:"), "{}", run.stdout);
    // A missing output folder is refused before any work: nothing on stdout.
    let run = tracelens(["analyze", trace, "-o", "/no/such/dir/x.html"]);
    assert_eq!(run.code, 2);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(run.stderr.contains("no such directory"), "{}", run.stderr);
}

#[test]
fn default_reports_of_two_traces_with_one_name_do_not_collide() {
    let dir = std::env::temp_dir().join(format!("tracelens-collide-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for sub in ["a", "b"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        std::fs::copy(
            fixtures_dir().join("kineto/modern_base_ns.json"),
            dir.join(sub).join("trace.json"),
        )
        .unwrap();
    }
    let exe = env!("CARGO_BIN_EXE_tracelens_for_tests");
    let run = |rel: &str| {
        let out = std::process::Command::new(exe)
            .current_dir(&dir)
            .args(["analyze", rel])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8(out.stdout).unwrap()
    };
    let first = run("a/trace.json");
    assert!(first.contains("report: trace.tracelens.html"), "{first}");
    let second = run("b/trace.json");
    assert!(second.contains("is not this trace's report"), "{second}");
    // Running the first again rewrites its own report, under the plain name.
    let again = run("a/trace.json");
    assert!(again.contains("report: trace.tracelens.html"), "{again}");
    let reports = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "html")
        })
        .count();
    assert_eq!(reports, 2);
    std::fs::remove_dir_all(&dir).unwrap();
}
