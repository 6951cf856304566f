//! The GitHub Action (`action.yml`, `action/*.sh`) run as the runner runs it, with a simulated
//! environment (`GITHUB_OUTPUT`, `GITHUB_STEP_SUMMARY`, `GITHUB_WORKSPACE`, `RUNNER_TEMP`):
//! outputs, summary and exit codes for a passing gate, a failing one and `gate: false`, on a
//! file, a folder written with `tensorboard_trace_handler`'s names and a glob; annotations only
//! for files in the checkout; the baseline cache; the sticky comment (with a stand-in `gh`).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use tracelens_tests::{fixtures_dir, repo_root};

/// A simulated runner: its folders, and a PATH whose `tracelens` is the test build.
struct Runner {
    root: PathBuf,
    bin: PathBuf,
}

/// What one step left behind.
struct Step {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    outputs: BTreeMap<String, String>,
    summary: String,
}

impl Runner {
    fn new(test: &str) -> Runner {
        let root =
            std::env::temp_dir().join(format!("tracelens-action-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let bin = root.join("bin");
        for d in ["bin", "workspace", "temp"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        #[cfg(unix)]
        std::os::unix::fs::symlink(
            env!("CARGO_BIN_EXE_tracelens_for_tests"),
            bin.join("tracelens"),
        )
        .unwrap();
        Runner { root, bin }
    }

    fn workspace(&self) -> PathBuf {
        self.root.join("workspace")
    }

    /// Runs `action/SCRIPT` with `env` (the step's `env:` block) as the runner would.
    fn step(&self, script: &str, env: &[(&str, &str)]) -> Step {
        let (outputs, summary) = (self.root.join("outputs"), self.root.join("summary.md"));
        let _ = std::fs::remove_file(&outputs);
        let _ = std::fs::remove_file(&summary);
        let path = format!(
            "{}:{}",
            self.bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let done = Command::new("bash")
            .arg(repo_root().join("action").join(script))
            .current_dir(self.workspace())
            .env_clear()
            .env("PATH", path)
            .env("HOME", &self.root)
            .env("GITHUB_OUTPUT", &outputs)
            .env("GITHUB_STEP_SUMMARY", &summary)
            .env("GITHUB_WORKSPACE", self.workspace())
            .env("RUNNER_TEMP", self.root.join("temp"))
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let outputs = std::fs::read_to_string(&outputs)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Step {
            code: done.status.code(),
            stdout: String::from_utf8_lossy(&done.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&done.stderr).into_owned(),
            outputs,
            summary: std::fs::read_to_string(&summary).unwrap_or_default(),
        }
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn scenario(name: &str) -> PathBuf {
    fixtures_dir().join(format!("scenarios/{name}.json"))
}

/// `src` gzipped to `dst`, as `tensorboard_trace_handler(..., use_gzip=True)` writes it.
fn gzip_to(src: &Path, dst: &Path) {
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(dst).unwrap(),
        flate2::Compression::fast(),
    );
    gz.write_all(&std::fs::read(src).unwrap()).unwrap();
    gz.finish().unwrap();
}

fn show(s: &Step) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}\noutputs: {:?}",
        s.code, s.stdout, s.stderr, s.outputs
    )
}

#[cfg(unix)]
#[test]
fn pass_fail_and_report_only_gates() {
    let runner = Runner::new("gates");
    let good = scenario("dataloader_multi_process_fast");
    let bad = scenario("dataloader_single_process");
    // Pass: every output set, the summary written, exit 0.
    let s = runner.step("run.sh", &[("TL_TRACE", good.to_str().unwrap())]);
    assert_eq!(s.code, Some(0), "{}", show(&s));
    assert_eq!(s.outputs["gate"], "pass");
    assert!(s.outputs["verdict"].starts_with("GPU busy"), "{}", show(&s));
    assert!(s.outputs["gpu-busy-percent"].parse::<f64>().unwrap() > 90.0);
    assert!(s.outputs["step-ms"].parse::<f64>().unwrap() > 0.0);
    let results = PathBuf::from(&s.outputs["results-json"]);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    // The result names the file, never the runner's folders.
    assert_eq!(doc["input"]["path"], "dataloader_multi_process_fast.json");
    assert!(runner.workspace().join(&s.outputs["report"]).is_file());
    assert!(s.summary.contains("tracelens"), "{}", s.summary);
    assert!(s.stdout.contains("all 3 rules hold"), "{}", show(&s));
    // Fail: the default rules fire on a DataLoader stall; the report is still written.
    std::fs::remove_file(runner.workspace().join("tracelens-report.html")).unwrap();
    let s = runner.step("run.sh", &[("TL_TRACE", bad.to_str().unwrap())]);
    assert_eq!(s.code, Some(1), "{}", show(&s));
    assert_eq!(s.outputs["gate"], "fail");
    assert!(s.outputs["verdict"].contains("DataLoader"), "{}", show(&s));
    assert!(runner.workspace().join("tracelens-report.html").is_file());
    assert!(s.stdout.contains("FAIL"), "{}", show(&s));
    // gate: false reports the failure without failing the step.
    let s = runner.step(
        "run.sh",
        &[("TL_TRACE", bad.to_str().unwrap()), ("TL_GATE", "false")],
    );
    assert_eq!(s.code, Some(0), "{}", show(&s));
    assert_eq!(s.outputs["gate"], "fail");
    // A bad input is exit 2 with one line, not a silent pass.
    let s = runner.step("run.sh", &[("TL_TRACE", "traces/nothing-here-*.json")]);
    assert_eq!(s.code, Some(2), "{}", show(&s));
    assert!(s.stderr.contains("no such file, folder or matching trace"));
    let s = runner.step(
        "run.sh",
        &[("TL_TRACE", good.to_str().unwrap()), ("TL_GATE", "maybe")],
    );
    assert_eq!(s.code, Some(2), "{}", show(&s));
}

#[cfg(unix)]
#[test]
fn a_folder_from_the_trace_handler_and_a_glob() {
    let runner = Runner::new("folder");
    // `tensorboard_trace_handler("traces", use_gzip=True)` names files
    // `<host>_<pid>.<time.time_ns()>.pt.trace.json.gz` (milliseconds in older PyTorch), one per
    // profiling cycle: the newest cycle of the worker is the one read (here, the one with the
    // DataLoader stall).
    let traces = runner.workspace().join("traces");
    std::fs::create_dir_all(&traces).unwrap();
    gzip_to(
        &scenario("dataloader_multi_process_fast"),
        &traces.join("ci-host_4242.1733000000000.pt.trace.json.gz"),
    );
    gzip_to(
        &scenario("dataloader_single_process"),
        &traces.join("ci-host_4242.1733000009000123456.pt.trace.json.gz"),
    );
    let s = runner.step("run.sh", &[("TL_TRACE", "traces/")]);
    assert_eq!(s.code, Some(1), "{}", show(&s));
    assert!(s.outputs["verdict"].contains("DataLoader"), "{}", show(&s));
    // `tracelens check traces/` reads the folder the same way.
    let check = tracelens_tests::tracelens(["check", traces.to_str().unwrap()]);
    assert_eq!(check.code, 1, "{}", check.stderr);
    // A glob matching one file is that file.
    let s = runner.step(
        "run.sh",
        &[("TL_TRACE", "traces/*.1733000000000.pt.trace.json.gz")],
    );
    assert_eq!(s.code, Some(0), "{}", show(&s));
    // A second worker makes the folder a job of two ranks.
    gzip_to(
        &scenario("dataloader_multi_process_fast"),
        &traces.join("ci-host_4343.1733000009500.pt.trace.json.gz"),
    );
    let s = runner.step(
        "run.sh",
        &[
            ("TL_TRACE", "traces/*.pt.trace.json.gz"),
            ("TL_GATE", "false"),
        ],
    );
    assert_eq!(s.code, Some(0), "{}", show(&s));
    assert!(s.outputs["verdict"].starts_with("2 ranks"), "{}", show(&s));
    assert!(s.summary.contains("rank"), "{}", s.summary);
}

#[cfg(unix)]
#[test]
fn annotations_only_for_files_in_the_checkout() {
    let runner = Runner::new("annotations");
    let trace = scenario("item_every_step");
    let env = [("TL_TRACE", trace.to_str().unwrap()), ("TL_GATE", "false")];
    let s = runner.step("run.sh", &env);
    assert!(!s.stdout.contains("::warning"), "{}", show(&s));
    std::fs::write(runner.workspace().join("train.py"), "").unwrap();
    let s = runner.step("run.sh", &env);
    assert!(
        s.stdout.contains("::warning file=train.py,line=52"),
        "{}",
        show(&s)
    );
    let s = runner.step(
        "run.sh",
        &[
            ("TL_TRACE", trace.to_str().unwrap()),
            ("TL_GATE", "false"),
            ("TL_ANNOTATIONS", "false"),
        ],
    );
    assert!(!s.stdout.contains("::warning"), "{}", show(&s));
}

#[cfg(unix)]
#[test]
fn the_default_branch_result_is_the_next_runs_baseline() {
    let runner = Runner::new("baseline");
    let cache = runner.root.join("temp/tracelens-baseline/results.json");
    let cache = cache.to_str().unwrap();
    let first = scenario("item_read_every_n_steps");
    let s = runner.step(
        "run.sh",
        &[
            ("TL_TRACE", first.to_str().unwrap()),
            ("TL_BASELINE_CACHE", cache),
        ],
    );
    assert_eq!(s.code, Some(0), "{}", show(&s));
    assert!(Path::new(cache).is_file());
    let second = scenario("item_every_step");
    let s = runner.step(
        "run.sh",
        &[
            ("TL_TRACE", second.to_str().unwrap()),
            ("TL_BASELINE_CACHE", cache),
            ("TL_GATE", "false"),
        ],
    );
    assert_eq!(s.code, Some(0), "{}", show(&s));
    assert!(s.summary.contains("diff"), "{}", s.summary);
}

#[cfg(unix)]
#[test]
fn the_pr_comment_is_updated_in_place() {
    let runner = Runner::new("comment");
    // A stand-in `gh` that logs its calls and knows one earlier tracelens comment.
    let log = runner.root.join("gh.log");
    let gh = runner.bin.join("gh");
    std::fs::write(
        &gh,
        format!(
            "#!/usr/bin/env bash\necho \"$*\" >> '{}'\ncase \"$*\" in *--paginate*) echo 777 ;; esac\n",
            log.display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let event = runner.root.join("event.json");
    std::fs::write(&event, r#"{"pull_request": {"number": 12}}"#).unwrap();
    let summary = runner.root.join("s.md");
    std::fs::write(&summary, "## tracelens\nGPU idle 74 %\n").unwrap();
    let s = runner.step(
        "comment.sh",
        &[
            ("TL_SUMMARY", summary.to_str().unwrap()),
            ("GITHUB_REPOSITORY", "acme/train"),
            ("GITHUB_EVENT_PATH", event.to_str().unwrap()),
        ],
    );
    assert_eq!(s.code, Some(0), "{}", show(&s));
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(
        calls.contains("repos/acme/train/issues/12/comments"),
        "{calls}"
    );
    assert!(
        calls.contains("--method PATCH repos/acme/train/issues/comments/777"),
        "{calls}"
    );
    assert!(!calls.contains("--method POST"), "{calls}");
    // Issue 40: only the bot's own comment is updated, not anyone's that starts with the
    // marker.
    assert!(
        calls.contains(r#".user.login == "github-actions[bot]""#),
        "{calls}"
    );
}

#[test]
fn action_inputs_never_reach_a_script_as_text() {
    // GitHub's hardening guide: `${{ … }}` inside `run:` is pasted into the script before bash
    // reads it. Every `run:` here must be free of it (inputs go through `env:`).
    let action = std::fs::read_to_string(repo_root().join("action.yml")).unwrap();
    let mut in_run = false;
    for line in action.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("run:") {
            in_run = true;
            assert!(
                !trimmed.contains("${{"),
                "input pasted into a script: {line}"
            );
            continue;
        }
        if in_run && (trimmed.starts_with("- ") || trimmed.ends_with(':') && !trimmed.contains(' '))
        {
            in_run = false;
        }
        if in_run {
            assert!(!line.contains("${{"), "input pasted into a script: {line}");
        }
    }
    // Every output the issue promises is declared.
    for output in [
        "verdict",
        "gpu-busy-percent",
        "step-ms",
        "results-json",
        "report",
        "gate",
    ] {
        assert!(
            action.contains(&format!("\n  {output}:\n")),
            "no output {output}"
        );
    }
}
