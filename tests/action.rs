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
        let path = format!(
            "{}:{}",
            self.bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        self.step_on(script, env, &path)
    }

    /// A bare self-hosted runner: a PATH of this runner's `bin/` and only the basic tools
    /// (no `gh`, whatever this machine has installed).
    fn bare_path(&self) -> String {
        let bare = self.root.join("bare-bin");
        std::fs::create_dir_all(&bare).unwrap();
        let system = std::env::var("PATH").unwrap_or_default();
        for tool in [
            "bash",
            "sh",
            "env",
            "mkdir",
            "mktemp",
            "rm",
            "cp",
            "cat",
            "head",
            "tar",
            "gzip",
            "sha256sum",
            "shasum",
            "curl",
            "python3",
            "find",
            "sort",
            "xargs",
            "cut",
            "sed",
            "dirname",
            "basename",
            "chmod",
            "ls",
        ] {
            let found = if tool == "python3" {
                // The interpreter itself, not a version manager's shim script.
                Command::new("python3")
                    .args(["-c", "import sys; print(sys.executable)"])
                    .output()
                    .ok()
                    .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
                    .filter(|p| p.is_file())
            } else {
                std::env::split_paths(&system)
                    .map(|d| d.join(tool))
                    .find(|p| p.is_file())
            };
            if let Some(found) = found {
                let _ = std::os::unix::fs::symlink(found, bare.join(tool));
            }
        }
        format!("{}:{}", self.bin.display(), bare.display())
    }

    /// Runs `action/SCRIPT` with `PATH` as given.
    fn step_on(&self, script: &str, env: &[(&str, &str)], path: &str) -> Step {
        let (outputs, summary) = (self.root.join("outputs"), self.root.join("summary.md"));
        let _ = std::fs::remove_file(&outputs);
        let _ = std::fs::remove_file(&summary);
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

/// Issue 45: the history kept across runs of a branch: each run's result joins it (labelled
/// with the commit and run number), the oldest beyond `history-runs` go, the page is drawn,
/// and the rules get `--history`.
#[cfg(unix)]
#[test]
fn the_history_is_kept_across_runs() {
    let runner = Runner::new("history");
    let history = runner.root.join("temp/tracelens-history");
    let trace = scenario("dataloader_multi_process_fast");
    let rules = runner.workspace().join("rules.toml");
    std::fs::write(&rules, "rules = [\"history.runs > 5\"]\n").unwrap();
    for run in 1..=4 {
        let number = run.to_string();
        let s = runner.step(
            "run.sh",
            &[
                ("TL_TRACE", trace.to_str().unwrap()),
                ("TL_HISTORY_DIR", history.to_str().unwrap()),
                ("TL_HISTORY_RUNS", "3"),
                (
                    "TL_RULES",
                    if run == 1 {
                        "default"
                    } else {
                        rules.to_str().unwrap()
                    },
                ),
                ("GITHUB_SHA", "0123456789abcdef"),
                ("GITHUB_RUN_NUMBER", number.as_str()),
            ],
        );
        assert_eq!(s.code, Some(0), "run {run}: {}", show(&s));
        let kept = std::fs::read_dir(&history).unwrap().count();
        assert_eq!(kept, run.min(3), "run {run}");
        let page = &s.outputs["history-html"];
        assert!(Path::new(page).is_file(), "run {run}: {page}");
        assert!(
            s.summary.contains(&format!("{} runs:", run.min(3))),
            "{}",
            s.summary
        );
        // The rule read the earlier runs (at most three kept, so never more than five).
        if run > 1 {
            assert!(s.stdout.contains("history.runs = "), "{}", show(&s));
        }
    }
    let page = std::fs::read_to_string(
        std::fs::read_dir(&history)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .max()
            .unwrap(),
    )
    .unwrap();
    assert!(
        page.contains("\"label\": \"012345678 #4\""),
        "the run is labelled"
    );
}

/// Writes an executable script.
#[cfg(unix)]
fn script(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A release as `release.yml` publishes it, in a local folder: `tracelens-TARGET.tar.gz` (a
/// stand-in binary that prints its version) and its `.sha256`.
#[cfg(unix)]
fn local_release(runner: &Runner, tag: &str) -> PathBuf {
    let release = runner
        .root
        .join("releases/acme/tracelens/releases/download")
        .join(tag);
    std::fs::create_dir_all(&release).unwrap();
    let staging = runner.root.join("staging");
    std::fs::create_dir_all(&staging).unwrap();
    script(
        &staging.join("tracelens"),
        "#!/bin/sh\necho 'tracelens 0.9.0 (stand-in)'\n",
    );
    let archive = "tracelens-x86_64-unknown-linux-musl.tar.gz";
    let ok = Command::new("tar")
        .args(["-czf"])
        .arg(release.join(archive))
        .arg("-C")
        .arg(&staging)
        .arg("tracelens")
        .status()
        .unwrap();
    assert!(ok.success());
    let sum = Command::new("sha256sum")
        .arg(archive)
        .current_dir(&release)
        .output()
        .unwrap();
    std::fs::write(release.join(format!("{archive}.sha256")), sum.stdout).unwrap();
    release
}

/// Issue 43: the binary installs on a runner with `gh` and on a bare one without it (plain
/// HTTPS, checksum checked), and a tampered archive is refused.
#[cfg(unix)]
#[test]
fn the_release_binary_installs_with_and_without_gh() {
    let runner = Runner::new("install");
    let release = local_release(&runner, "v0.9.0");
    let path_file = runner.root.join("github_path");
    let install = |runner: &Runner, path: &str, bin_dir: &Path| {
        let _ = std::fs::remove_file(&path_file);
        let base = format!("file://{}", runner.root.join("releases").display());
        runner.step_on(
            "install.sh",
            &[
                ("TL_VERSION", "v0.9.0"),
                ("TL_REPO", "acme/tracelens"),
                ("TL_BIN_DIR", bin_dir.to_str().unwrap()),
                ("TL_DOWNLOAD_BASE", &base),
                ("RUNNER_OS", "Linux"),
                ("RUNNER_ARCH", "X64"),
                ("GITHUB_PATH", path_file.to_str().unwrap()),
                ("GITHUB_ACTION_PATH", repo_root().to_str().unwrap()),
            ],
            path,
        )
    };
    // Without gh: plain HTTPS (here file://) and the SHA-256 check.
    let bare = runner.bare_path();
    assert!(
        !std::env::split_paths(&bare).any(|d| d.join("gh").exists()),
        "{bare}"
    );
    let bin_dir = runner.root.join("tl-bin-https");
    let s = install(&runner, &bare, &bin_dir);
    assert_eq!(s.code, Some(0), "{}", show(&s));
    assert!(
        s.stdout.contains("(https, SHA-256 checked)"),
        "{}",
        show(&s)
    );
    assert!(bin_dir.join("tracelens").is_file());
    assert_eq!(
        std::fs::read_to_string(&path_file).unwrap().trim(),
        bin_dir.to_str().unwrap()
    );
    // With gh on the PATH: `gh release download` (a stand-in that copies the local release).
    let gh_log = runner.root.join("gh.log");
    script(
        &runner.bin.join("gh"),
        &format!(
            "#!/usr/bin/env bash\necho \"$*\" >> '{}'\ndir=\"\"; while [ $# -gt 0 ]; do [ \"$1\" = --dir ] && dir=\"$2\"; shift; done\ncp '{}'/* \"$dir\"/\n",
            gh_log.display(),
            release.display()
        ),
    );
    let bin_dir = runner.root.join("tl-bin-gh");
    let s = install(&runner, &bare, &bin_dir);
    assert_eq!(s.code, Some(0), "{}", show(&s));
    assert!(s.stdout.contains("(gh, SHA-256 checked)"), "{}", show(&s));
    assert!(std::fs::read_to_string(&gh_log)
        .unwrap()
        .contains("release download v0.9.0 --repo acme/tracelens"));
    // A cached binary is used as it is.
    let s = install(&runner, &bare, &bin_dir);
    assert!(s.stdout.contains("cached tracelens 0.9.0"), "{}", show(&s));
    std::fs::remove_file(runner.bin.join("gh")).unwrap();
    // A tampered archive is refused, whatever fetched it.
    let sum = release.join("tracelens-x86_64-unknown-linux-musl.tar.gz.sha256");
    let text = std::fs::read_to_string(&sum).unwrap();
    std::fs::write(&sum, format!("{}{}", "0".repeat(64), &text[64..])).unwrap();
    let bin_dir = runner.root.join("tl-bin-tampered");
    let s = install(&runner, &bare, &bin_dir);
    assert_eq!(s.code, Some(2), "{}", show(&s));
    assert!(
        s.stderr.contains("does not match its published SHA-256"),
        "{}",
        show(&s)
    );
    assert!(!bin_dir.join("tracelens").exists());
}

/// Issue 43: an empty `github.action_ref` (composite actions may get one) still gives a
/// version, and the cache key always carries the version and a hash of the source.
#[cfg(unix)]
#[test]
fn the_version_and_cache_key_never_depend_on_an_empty_ref() {
    let runner = Runner::new("version");
    let manifest = std::fs::read_to_string(repo_root().join("Cargo.toml")).unwrap();
    let version = manifest
        .split("[workspace.package]")
        .nth(1)
        .and_then(|t| t.lines().find(|l| l.starts_with("version")))
        .and_then(|l| l.split('"').nth(1))
        .unwrap()
        .to_string();
    let root = repo_root();
    let env = |r: &'static str| {
        vec![
            ("TL_REF", r),
            ("GITHUB_ACTION_PATH", root.to_str().unwrap()),
            ("RUNNER_OS", "Linux"),
            ("RUNNER_ARCH", "X64"),
        ]
    };
    let empty = runner.step("version.sh", &env(""));
    assert_eq!(empty.code, Some(0), "{}", show(&empty));
    assert_eq!(empty.outputs["version"], format!("v{version}"));
    let key = &empty.outputs["cache-key"];
    assert!(
        key.starts_with(&format!("tracelens-bin-Linux-X64-v{version}-")),
        "{key}"
    );
    let tagged = runner.step("version.sh", &env("v7.1.2"));
    assert_eq!(tagged.outputs["version"], "v7.1.2");
    assert_ne!(&tagged.outputs["cache-key"], key);
    // A branch ref has no release of its own: the crate's version is tried, then a build.
    let branch = runner.step("version.sh", &env("main"));
    assert_eq!(branch.outputs["version"], format!("v{version}"));
    let action = std::fs::read_to_string(repo_root().join("action.yml")).unwrap();
    assert!(action.contains("key: ${{ steps.version.outputs.cache-key }}"));
    assert!(!action.contains(
        "key: tracelens-bin-${{ runner.os }}-${{ runner.arch }}-${{ github.action_ref }}"
    ));
}

/// Issue 43: the PR comment without `gh` (a bare self-hosted runner): GitHub's REST API over
/// curl, paging through the comments, updating the bot's own one.
#[cfg(unix)]
#[test]
fn the_pr_comment_works_without_gh() {
    let runner = Runner::new("comment-curl");
    let log = runner.root.join("curl.log");
    // A stand-in curl: page 1 is full of other comments, page 2 holds the bot's.
    script(
        &runner.bin.join("curl"),
        &format!(
            r#"#!/usr/bin/env bash
echo "$*" >> '{log}'
case "$*" in
  *"&page=1") python3 -c 'import json; print(json.dumps([{{"id": i, "user": {{"login": "someone"}}, "body": "<!-- tracelens-sticky-comment --> fake"}} for i in range(100)]))' ;;
  *"&page=2") echo '[{{"id": 4242, "user": {{"login": "github-actions[bot]"}}, "body": "<!-- tracelens-sticky-comment -->\nold"}}]' ;;
  *) for a in "$@"; do case "$a" in @*) cp "${{a#@}}" '{log}.body' ;; esac; done; echo '{{}}' ;;
esac
"#,
            log = log.display()
        ),
    );
    let event = runner.root.join("event.json");
    std::fs::write(&event, r#"{"pull_request": {"number": 12}}"#).unwrap();
    let summary = runner.root.join("s.md");
    std::fs::write(
        &summary,
        "## tracelens
GPU idle \"74 %\"
",
    )
    .unwrap();
    let s = runner.step_on(
        "comment.sh",
        &[
            ("TL_SUMMARY", summary.to_str().unwrap()),
            ("GITHUB_REPOSITORY", "acme/train"),
            ("GITHUB_EVENT_PATH", event.to_str().unwrap()),
            ("GITHUB_API_URL", "https://api.example"),
            ("GH_TOKEN", "t0ken"),
        ],
        &runner.bare_path(),
    );
    assert_eq!(s.code, Some(0), "{}", show(&s));
    assert!(
        s.stdout.contains("updated comment 4242 on #12"),
        "{}",
        show(&s)
    );
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(
        calls.contains(
            "https://api.example/repos/acme/train/issues/12/comments?per_page=100&page=2"
        ),
        "{calls}"
    );
    assert!(
        calls.contains("-X PATCH")
            && calls.contains("https://api.example/repos/acme/train/issues/comments/4242"),
        "{calls}"
    );
    assert!(!calls.contains("-X POST"), "{calls}");
    assert!(calls.contains("Authorization: Bearer t0ken"), "{calls}");
    // The body is JSON holding the marker and the summary as written.
    let body: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{}.body", log.display())).unwrap())
            .unwrap();
    assert_eq!(
        body["body"].as_str().unwrap(),
        "<!-- tracelens-sticky-comment -->\n## tracelens\nGPU idle \"74 %\"\n"
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
