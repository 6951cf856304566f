//! Hostile traces (issue 9): nothing is written over an input, no secret reaches any output,
//! trace strings cannot inject Markdown or terminal escapes, crafted inputs end in a clear
//! line rather than a crash, and the plumbing (stdin, FIFOs, full devices) reports honestly.
//! Every input here is made by the test; the crafted bombs at full size live in
//! `tracelens-hostile` (`just hostile`), which measures their time and memory.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use tracelens_tests::nsys_export::Export;
use tracelens_tests::{fixtures_dir, tracelens};

/// A fresh scratch folder for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tracelens-hostile-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A fresh scratch folder holding the small trace as `t.json`.
fn scratch_with_trace(test: &str) -> (PathBuf, PathBuf) {
    let dir = scratch(test);
    let trace = dir.join("t.json");
    std::fs::write(&trace, small_trace()).unwrap();
    (dir, trace)
}

/// `tracelens analyze PATH ARGS…`, in process.
fn analyze(path: &Path, args: &[&str]) -> tracelens_tests::Run {
    let mut argv: Vec<std::ffi::OsString> = vec!["analyze".into(), path.into()];
    argv.extend(args.iter().map(std::ffi::OsString::from));
    tracelens(argv)
}

/// Analyses `path` (exit 0) and checks that the summary says `message`.
fn assert_says(path: &Path, message: &str) {
    let run = analyze(path, &["--no-report", "--verbose"]);
    assert_eq!(run.code, 0, "{}: {}", path.display(), run.stderr);
    // The summary wraps lines: compare with whitespace collapsed.
    let flat = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains(message), "{}", run.stdout);
}

fn exe() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tracelens_for_tests"))
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

fn small_trace() -> Vec<u8> {
    std::fs::read(fixtures_dir().join("scenarios/item_every_step.json")).unwrap()
}

/// A tiny Nsight Systems export with one launch and one kernel.
fn small_export(path: &Path) -> Export {
    let mut e = Export::create(path, "META_DATA_EXPORT", "3.7.2");
    e.runtime("cudaLaunchKernel", 10, 11, 1_000, 2_000, 1);
    e.kernel("k", 10, 0, 7, 3_000, 9_000, 1);
    e
}

// ---- 1. never write over the input ----

#[test]
fn output_over_the_input_is_refused_through_any_name() {
    let dir = scratch("overwrite");
    let json = dir.join("t.json");
    std::fs::write(&json, small_trace()).unwrap();
    let gz = dir.join("t.json.gz");
    std::fs::write(&gz, gzip(&small_trace())).unwrap();
    let sqlite = dir.join("t.sqlite");
    drop(small_export(&sqlite));
    let soft = dir.join("soft.json");
    std::os::unix::fs::symlink(&json, &soft).unwrap();
    let hard = dir.join("hard.json");
    std::fs::hard_link(&json, &hard).unwrap();
    let cases: [(&Path, &Path); 6] = [
        (&json, &json),
        (&gz, &gz),
        (&sqlite, &sqlite),
        (&soft, &json),
        (&json, &soft),
        (&json, &hard),
    ];
    for (input, output) in cases {
        let before = std::fs::read(input).unwrap();
        let run = tracelens([
            "analyze".into(),
            input.as_os_str().to_owned(),
            "-o".into(),
            output.as_os_str().to_owned(),
        ]);
        assert_eq!(run.code, 2, "{} -o {}", input.display(), output.display());
        assert!(
            run.stderr
                .contains("refusing to write the output over the input trace"),
            "{}",
            run.stderr
        );
        assert_eq!(run.stderr.lines().count(), 1);
        assert_eq!(std::fs::read(input).unwrap(), before, "{}", input.display());
    }
    // The default report path when it is a hard link to the trace: not ours, so the report
    // goes to a name of its own and the trace is untouched.
    std::fs::hard_link(&json, dir.join("t.tracelens.html")).unwrap();
    let out = exe()
        .current_dir(&dir)
        .args(["analyze", "t.json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("is not this trace's report"), "{stdout}");
    assert_eq!(std::fs::read(&json).unwrap(), small_trace());
    // The rule mode's CSV folder may not be the export either.
    let run = tracelens([
        "analyze".into(),
        "--rules".into(),
        "nsys".into(),
        sqlite.as_os_str().to_owned(),
        "-o".into(),
        sqlite.as_os_str().to_owned(),
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- 2. secrets ----

/// Secret markers: none of these may appear in any output.
const SECRETS: [&str; 30] = [
    "LISTSECRET1",
    "NESTEDSECRET2",
    "DEEPSECRET3",
    "FLAGSECRET4",
    "FLAGSECRET5",
    "BEARERSECRET6",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJTRUNSRVQifQ.c2lnbmF0dXJl",
    "URLSECRET8",
    "INITSECRET9",
    "QUERYSECRET10",
    "hf_VERSIONSECRET11abcdefgh",
    "SLACKSECRET12",
    "ACCOUNTSECRET13",
    "ghp_THREADSECRET14abcdefgh",
    "DICTSECRET15",
    "HEADERSECRET16",
    "GLUEDSECRET17",
    "PYPISECRET18",
    "NPMSECRET19",
    "GOOGLESECRET20",
    "GPUSECRET21",
    // Issue 40: forms that escaped.
    "GPUBEARER22",
    "URLLIST23",
    "NETRC24",
    "PASSPHRASE25",
    "MYSQL26",
    "SSHPASS27",
    "PCTSECRET28",
    "ARGVSECRET29",
    "SESSION30",
];

fn secret_trace() -> String {
    let events = r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 100, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 1}},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 98, "dur": 1, "args": {"correlation": 1}},
      {"ph": "X", "cat": "cpu_op", "name": "aten::add --token=ghp_THREADSECRET14abcdefgh", "pid": 1, "tid": 1, "ts": 90, "dur": 9},
      {"ph": "X", "cat": "user_annotation", "name": "fetch Authorization:Bearer GLUEDSECRET17", "pid": 1, "tid": 1, "ts": 91, "dur": 2},
      {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "worker Authorization: Bearer BEARERSECRET6"}}"#;
    format!(
        r#"{{"traceEvents": [{events}],
  "traceName": "https://x.io/run?token=QUERYSECRET10&page=1",
  "tokenizer_version": "hf_VERSIONSECRET11abcdefgh",
  "distributedInfo": {{"backend": "nccl", "rank": 0, "world_size": 2, "init_method": "tcp://root:INITSECRET9@10.0.0.1:29500"}},
  "env": ["PATH=/bin", "WANDB_API_KEY=LISTSECRET1"],
  "config": {{"HF_TOKEN": {{"value": "NESTEDSECRET2"}}, "api": [["x", {{"accessToken": [["DEEPSECRET3"]]}}]]}},
  "argv": "python train.py --password=FLAGSECRET4 --token FLAGSECRET5 --lr 3",
  "auth_header": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJTRUNSRVQifQ.c2lnbmF0dXJl",
  "db": "postgres://u:URLSECRET8@db:5432/x",
  "hook": "https://hooks.slack.com/services/T0/B0/SLACKSECRET12",
  "storage": "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=ACCOUNTSECRET13;EndpointSuffix=core",
  "config_dump": "{{'db_password': 'DICTSECRET15', 'lr': 3}}",
  "headers": "X-Api-Key: HEADERSECRET16",
  "publish": "pypi-AgEIcHlwaS5vcmcPYPISECRET18abcdef",
  "registry": "npm_NPMSECRET19abcdefghijklmnopqrstuvwxyz",
  "gcloud": "ya29.GOOGLESECRET20abcdefgh",
  "mirrors": "https://a:p1@h1,https://u:URLLIST23@h2",
  "netrc": "machine h login u password NETRC24",
  "gpg": "PASSPHRASE=PASSPHRASE25",
  "backup": "mysql -uroot -pMYSQL26 db",
  "deploy": "sshpass -p SSHPASS27 ssh host",
  "callback": "next=%2Flogin%3Fpassword%3DPCTSECRET28",
  "cookie": "sessionid=SESSION30",
  "deviceProperties": [{{"id": 0, "name": "A100 password=GPUSECRET21"}}, {{"id": 1, "name": "H100 Bearer GPUBEARER22"}}]
}}"#
    )
}

fn assert_no_secret(what: &str, text: &str) {
    for s in SECRETS {
        assert!(!text.contains(s), "{what} leaks {s}");
    }
}

#[test]
fn no_secret_reaches_any_output() {
    let dir = scratch("secrets");
    let path = dir.join("secrets.json");
    std::fs::write(&path, secret_trace()).unwrap();
    for format in ["json", "md", "html", "text"] {
        let run = analyze(&path, &["--format", format, "-o", "-"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_no_secret(format, &run.stdout);
    }
    let run = analyze(&path, &["--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let redacted = doc["metadata"]["redacted"].as_array().unwrap();
    assert!(redacted.len() >= 10, "{redacted:?}");
    // What stays: the redaction keeps keys, hosts and harmless values readable.
    assert!(run.stdout.contains("tcp://root:<redacted>@10.0.0.1:29500"));
    assert!(run.stdout.contains("PATH=/bin"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn nsight_command_lines_and_environment_are_redacted() {
    let dir = scratch("nsys-secrets");
    let path = dir.join("secrets.sqlite");
    let e = small_export(&path);
    e.conn
        .execute_batch(
            "CREATE TABLE META_DATA_CAPTURE (name TEXT NOT NULL, value TEXT);
             INSERT INTO META_DATA_CAPTURE VALUES
               ('PROCESS_1:COMMAND', 'python train.py --password=FLAGSECRET4 --token FLAGSECRET5'),
               ('PROCESS_1:ARGUMENT_0', 'train.py'),
               ('PROCESS_1:ARGUMENT_1', '--hf-token'),
               ('PROCESS_1:ARGUMENT_2', 'ARGVSECRET29'),
               ('PROCESS_1:ARGUMENT_3', '--lr'),
               ('PROCESS_1:ARGUMENT_4', '3'),
               ('ENVIRONMENT_VARIABLE', 'HF_TOKEN=NESTEDSECRET2'),
               ('ENVIRONMENT_VARIABLE', 'DATABASE_URL=postgres://u:URLSECRET8@db/x'),
               ('ENVIRONMENT_VARIABLE', 'HOME=/home/ALICEHOME'),
               ('ENVIRONMENT_VARIABLE', 'SLURM_JOB_ID=JOBID777'),
               ('ENVIRONMENT_VARIABLE', 'NCCL_DEBUG=INFO');",
        )
        .unwrap();
    drop(e);
    for format in ["json", "md", "html", "text"] {
        let run = analyze(&path, &["--format", format, "-o", "-"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_no_secret(format, &run.stdout);
        // Only variables that bear on performance are kept from the captured environment.
        assert!(
            !run.stdout.contains("ALICEHOME") && !run.stdout.contains("JOBID777"),
            "{format}"
        );
    }
    let run = analyze(&path, &["--format", "json", "-o", "-"]);
    // The arguments around the secret stay readable.
    assert!(run.stdout.contains("--hf-token"), "{}", run.stdout);
    assert!(
        run.stdout.contains("capture.env.NCCL_DEBUG"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("capture.env_not_kept"),
        "{}",
        run.stdout
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- 3 and 4. Markdown and terminal injection ----

fn hostile_names_trace() -> String {
    let frame = "evil.py(1): f\n| injected | row |\n## Heading <script>alert(1)</script> @octocat ![x](https://evil.example/p.png) <img src=x onerror=alert(1)> <svg onload=alert(1)> <details>";
    let gpu = "GPU\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2J\u{1b}]0;title\u{7}\nforged: all good";
    let ev = |v: serde_json::Value| v.to_string();
    let mut events = Vec::new();
    for step in 0..3 {
        let t0 = 1_000 + step * 10_000;
        events.push(ev(serde_json::json!({"ph": "X", "cat": "user_annotation", "name": format!("ProfilerStep#{step}"), "pid": 1, "tid": 1, "ts": t0, "dur": 9_000})));
        events.push(ev(serde_json::json!({"ph": "X", "cat": "python_function", "name": frame, "pid": 1, "tid": 1, "ts": t0 + 10, "dur": 8_000})));
        events.push(ev(serde_json::json!({"ph": "X", "cat": "cpu_op", "name": "aten::item", "pid": 1, "tid": 1, "ts": t0 + 100, "dur": 6_000})));
        events.push(ev(serde_json::json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": t0 + 110, "dur": 5_900, "args": {"correlation": step * 2 + 1}})));
        events.push(ev(serde_json::json!({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "pid": 0, "tid": 7, "ts": t0 + 5_990, "dur": 10, "args": {"device": 0, "stream": 7, "correlation": step * 2 + 1, "bytes": 4}})));
        events.push(ev(serde_json::json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t0 + 6_200, "dur": 5, "args": {"correlation": step * 2 + 2}})));
        events.push(ev(serde_json::json!({"ph": "X", "cat": "kernel", "name": "k|x\n<script>", "pid": 0, "tid": 7, "ts": t0 + 6_210, "dur": 2_500, "args": {"device": 0, "stream": 7, "correlation": step * 2 + 2}})));
    }
    format!(
        "{{\"traceEvents\": [{}], \"deviceProperties\": [{}]}}",
        events.join(", "),
        ev(serde_json::json!({"id": 0, "name": gpu}))
    )
}

#[test]
fn markdown_cannot_be_broken_out_of() {
    let dir = scratch("markdown");
    let path = dir.join("names.json");
    std::fs::write(&path, hostile_names_trace()).unwrap();
    let run = analyze(&path, &["--format", "md"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let md = &run.stdout;
    assert!(md.contains(".item()"), "the sync finding is there:\n{md}");
    for raw in ["<script", "<img", "<svg", "<details", "![", "\u{1b}"] {
        assert!(!md.contains(raw), "raw {raw:?} in\n{md}");
    }
    assert!(
        !md.replace("\\]", "").contains("]("),
        "a live link in\n{md}"
    );
    assert!(!md.contains("@octocat"), "a live mention in\n{md}");
    // No trace line starts a heading or a table row of its own; every table row keeps its
    // column count (escaped pipes do not count).
    for line in md.lines() {
        assert!(!line.starts_with("## Heading"), "{line}");
        assert!(!line.starts_with("| injected"), "{line}");
        if line.starts_with('|') {
            let cells = line.replace("\\|", "").matches('|').count();
            // Facts: 2 columns; operators: 5; findings: 6.
            assert!(matches!(cells, 3 | 6 | 7), "{cells} pipes: {line}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn terminal_output_carries_no_escape_sequence_from_the_trace() {
    let dir = scratch("terminal");
    let name = "evil\u{1b}]0;pwned\u{7}\nforged.json";
    let path = dir.join(name);
    std::fs::write(&path, hostile_names_trace()).unwrap();
    let out = exe()
        .current_dir(&dir)
        .args(["analyze", name])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains('\u{1b}'), "ESC in piped output:\n{text}");
    assert!(!text.contains('\u{7}'));
    assert!(!text.lines().any(|l| l.starts_with("forged")), "{text}");
    // The same for errors naming the file, and for a top-level key listed in an error.
    let bad = dir.join("bad\u{1b}[2J.json");
    std::fs::write(&bad, "{\"\u{1b}]52;c;eA==\u{7}key\": 1}").unwrap();
    let out = exe().arg("analyze").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a Chrome/Kineto trace"), "{err}");
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 40: bidi overrides and isolates in trace strings (a kernel named
/// `k\u{202E}gpj.exe`) reach no output: HTML kept them while text and Markdown dropped them.
#[test]
fn no_output_carries_bidi_controls_from_the_trace() {
    let dir = scratch("bidi");
    let path = dir.join("bidi.json");
    let trace = hostile_names_trace()
        .replace("k|x\\n<script>", "k\\u202egpj.exe\\u2066x\\u2069")
        .replace("evil.py(1): f", "evil\\u202e.py(1): f");
    assert!(trace.contains("u202e"), "the names were replaced");
    std::fs::write(&path, &trace).unwrap();
    for format in ["html", "md", "json", "text"] {
        let out = dir.join(format!("out.{format}"));
        let run = analyze(&path, &["--format", format, "-o", out.to_str().unwrap()]);
        assert_eq!(run.code, 0, "{format}: {}", run.stderr);
        let text = std::fs::read_to_string(&out).unwrap();
        if format == "json" {
            // JSON keeps the data as it was (escaped by serde); a reader decides.
            continue;
        }
        for c in ['\u{202E}', '\u{2066}', '\u{2069}'] {
            assert!(!text.contains(c), "{format} keeps {:?}", c);
        }
        // The names are shown without them: the kernel in the HTML's kernel table, the
        // Python frame in the Markdown's findings (the terminal summary shows neither).
        let shown = match format {
            "html" => "gpj.exe",
            "md" => "evil.py",
            _ => "",
        };
        assert!(text.contains(shown), "{format}: the name is still shown");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- 3b. CI output: no workflow command from the trace ----

/// A trace whose names carry GitHub workflow commands at every position a wrap could put at
/// the start of a line, and control characters.
fn workflow_command_trace() -> String {
    let commands = [
        "::error::pwned",
        "::add-mask::secret",
        "::set-output name=verdict::pass",
        "::stop-commands::token",
        "##[set-output name=x;]y",
        "##\u{200B}[error]z",
    ];
    let mut text = hostile_names_trace();
    for (i, c) in commands.iter().enumerate() {
        // Padding of every length moves the command across wrap points.
        let name = format!("{}{} \u{1b}]0;t\u{7}", "k".repeat(i * 13 % 71 + 1), c);
        text = text.replacen("k|x\n<script>", &name, 1);
    }
    text.replace(
        "evil.py(1): f\n| injected | row |",
        "::error file=x::pwned\n##[error]evil.py(1): f",
    )
    .replace("forged: all good", "::notice::forged ##[warning]x")
}

/// Every line a CI runner would read as a command, with what it is.
fn workflow_commands_in(what: &str, text: &str) -> Vec<String> {
    let invisible = |c: char| matches!(c, '\u{200B}'..='\u{200F}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}' | '\u{00AD}');
    text.lines()
        .filter_map(|line| {
            let seen: String = line
                .trim_start_matches(|c: char| c.is_whitespace() || c.is_control() || invisible(c))
                .chars()
                .filter(|&c| !invisible(c))
                .collect();
            // tracelens's own annotations are commands, with escaped data and no control
            // characters.
            if seen.starts_with("::warning file=") && !line.chars().any(char::is_control) {
                return None;
            }
            (seen.starts_with("::") || seen.contains("##[")).then(|| format!("{what}: {line:?}"))
        })
        .collect()
}

#[test]
fn ci_output_carries_no_workflow_command_from_the_trace() {
    let dir = scratch("workflow");
    let path = dir.join("commands.json");
    std::fs::write(&path, workflow_command_trace()).unwrap();
    let copy = dir.join("commands2.json");
    std::fs::write(&copy, workflow_command_trace()).unwrap();
    let p = |x: &Path| x.to_str().unwrap().to_string();
    // Annotations name only files in the checkout: put the call sites' files in one.
    let root = dir.join("checkout");
    std::fs::create_dir_all(&root).unwrap();
    let doc: serde_json::Value =
        serde_json::from_str(&tracelens(["analyze", &p(&path), "--format", "json"]).stdout)
            .unwrap();
    for f in doc["diagnosis"]["findings"].as_array().unwrap() {
        let site = f["call_site"].as_str().unwrap_or_default();
        let location = site.split_whitespace().next().unwrap_or_default();
        if let Some((file, _)) = location.rsplit_once(':') {
            if !file.is_empty() && !file.contains('/') {
                std::fs::write(root.join(file), "").unwrap();
            }
        }
    }
    let runs = [
        (
            "analyze",
            vec!["analyze".into(), p(&path), "--no-report".into()],
        ),
        (
            "analyze --verbose",
            vec![
                "analyze".into(),
                p(&path),
                "--no-report".into(),
                "--verbose".into(),
            ],
        ),
        (
            "analyze --format md",
            vec!["analyze".into(), p(&path), "--format".into(), "md".into()],
        ),
        (
            "check --annotations github",
            vec![
                "check".into(),
                p(&path),
                "--annotations".into(),
                "github".into(),
                "--min-severity".into(),
                "low".into(),
                "--source-root".into(),
                p(&root),
                "--rule".into(),
                "gpu.idle_percent > 0".into(),
            ],
        ),
        (
            "analyze --fail-on",
            vec![
                "analyze".into(),
                p(&path),
                "--no-report".into(),
                "--fail-on".into(),
                "gpu.idle_percent > 0".into(),
            ],
        ),
        ("diff", vec!["diff".into(), p(&path), p(&copy)]),
    ];
    let mut found = Vec::new();
    for (what, args) in runs {
        let run = tracelens(args);
        assert!(run.code <= 1, "{what}: exit {}: {}", run.code, run.stderr);
        found.extend(workflow_commands_in(&format!("{what} stdout"), &run.stdout));
        found.extend(workflow_commands_in(&format!("{what} stderr"), &run.stderr));
        if what.starts_with("check") {
            assert!(
                run.stdout.contains("::warning file="),
                "{what}: no annotation:\n{}",
                run.stdout
            );
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- 3c. rules: bounded, never silently dropped ----

#[test]
fn deep_long_and_misplaced_rules_end_in_a_clear_outcome() {
    let (dir, trace) = scratch_with_trace("rules");
    let t = trace.to_str().unwrap();
    let deep = format!(
        "{}gpu.idle_percent > 5{}",
        "(".repeat(7000),
        ")".repeat(7000)
    );
    let nots = format!("{}gpu.idle_percent > 5", "not ".repeat(20_000));
    let nested = format!(
        "{}gpu.idle_percent > 5{}",
        "(".repeat(1000),
        ")".repeat(1000)
    );
    for rule in [&deep, &nots, &nested] {
        for args in [
            vec!["check", t, "--rule", rule.as_str()],
            vec!["analyze", t, "--no-report", "--fail-on", rule.as_str()],
        ] {
            let out = exe().args(&args).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{}: {err}", args[0]);
            assert!(
                err.contains("longer than 4096") || err.contains("nests deeper than 32"),
                "{err}"
            );
            assert_eq!(err.lines().count(), 1, "{err}");
        }
    }
    // `check t.json` in the folder, with `rules` as its tracelens.toml: the exit code.
    let check_with = |rules: &str| {
        std::fs::write(dir.join("tracelens.toml"), rules).unwrap();
        let out = exe()
            .current_dir(&dir)
            .args(["check", "t.json"])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // The same through tracelens.toml.
    let (code, err) = check_with(&format!("rules = [\"{nested}\"]"));
    assert_eq!(code, Some(2), "{err}");
    // A TOML literal string is a rule like any other: this one fires.
    let (code, err) = check_with("rules = ['gpu.idle_percent >= 0']");
    assert_eq!(code, Some(1), "{err}");
    // A dangling tracelens.toml is an error, not the default rules.
    std::fs::remove_file(dir.join("tracelens.toml")).unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(dir.join("missing.toml"), dir.join("tracelens.toml")).unwrap();
        let out = exe()
            .current_dir(&dir)
            .args(["check", "t.json"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("tracelens.toml"), "{err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- 3d. temporary files ----

#[test]
fn concurrent_writers_each_get_a_whole_file_and_leave_no_temp_file() {
    let (dir, trace) = scratch_with_trace("tempfiles");
    let out = dir.join("out.json");
    // The temporary names of an earlier version (`.NAME.tracelens-tmp-PID`, PIDs just after
    // ours), planted as symlinks to a victim: never followed (names are random now, and
    // created exclusively).
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "keep").unwrap();
    #[cfg(unix)]
    for pid in std::process::id()..std::process::id() + 4000 {
        let _ =
            std::os::unix::fs::symlink(&victim, dir.join(format!(".out.json.tracelens-tmp-{pid}")));
    }
    let children: Vec<_> = (0..6)
        .map(|_| {
            exe()
                .args(["analyze", trace.to_str().unwrap(), "--format", "json", "-o"])
                .arg(&out)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let done = child.wait_with_output().unwrap();
        assert_eq!(
            done.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&done.stderr)
        );
    }
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert!(doc["diagnosis"].is_object());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tracelens-tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A Kineto trace of `launches` CPU ops, each launching one kernel (about 400 bytes each).
fn many_launches_trace(launches: usize) -> String {
    let mut events = Vec::with_capacity(launches * 3);
    for i in 0..launches {
        let ts = i * 10;
        events.push(format!(
            r#"{{"ph":"X","cat":"cpu_op","name":"aten::mul","pid":1,"tid":1,"ts":{ts},"dur":4}}"#
        ));
        events.push(format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":2,"args":{{"correlation":{i}}}}}"#,
            ts + 1
        ));
        events.push(format!(
            r#"{{"ph":"X","cat":"kernel","name":"mul_kernel","pid":0,"tid":7,"ts":{},"dur":5,"args":{{"correlation":{i},"stream":7,"device":0}}}}"#,
            ts + 4
        ));
    }
    format!(r#"{{"traceEvents":[{}]}}"#, events.join(","))
}

#[cfg(unix)]
#[test]
fn sigterm_mid_write_leaves_no_temp_file() {
    let dir = scratch("sigterm");
    let trace = dir.join("big.json");
    std::fs::write(&trace, many_launches_trace(150_000)).unwrap();
    let out = dir.join("big.annotated.json.gz");
    let mut child = exe()
        .args(["annotate", trace.to_str().unwrap(), "-o"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let temp_files = || -> Vec<PathBuf> {
        std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".tracelens-tmp"))
            .collect()
    };
    // Wait until the copy is being written (a temporary file beside the output), then end
    // the run the way a CI runner's timeout does.
    let started = std::time::Instant::now();
    while temp_files().is_empty() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "annotate ended before its temporary file was seen: make the trace larger"
        );
        assert!(
            started.elapsed().as_secs() < 120,
            "no temporary file appeared"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let pid = i32::try_from(child.id()).unwrap();
    assert!(Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap()
        .success());
    let status = child.wait().unwrap();
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(15), "{status:?}");
    }
    assert!(temp_files().is_empty(), "{:?}", temp_files());
    assert!(!out.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- 3e. multi-rank inputs ----

#[test]
fn an_input_given_twice_is_refused_and_jobs_are_clamped() {
    let dir = scratch("twice");
    let a = dir.join("a.json");
    let b = dir.join("b.json");
    std::fs::write(&a, small_trace()).unwrap();
    std::fs::write(&b, small_trace()).unwrap();
    let (sa, sb) = (a.to_str().unwrap(), b.to_str().unwrap());
    // The same file twice, directly or through another path.
    let other = format!("{}/./a.json", dir.display());
    for second in [sa, other.as_str()] {
        let run = tracelens(["analyze", sa, second, "--format", "json"]);
        assert_eq!(run.code, 2, "{}", run.stdout);
        assert!(run.stderr.contains("given twice"), "{}", run.stderr);
    }
    // --jobs 100000 runs on at most the cores, and ends.
    let run = tracelens(["analyze", sa, sb, "--format", "json", "--jobs", "100000"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The same rank folder twice in a merge.
    let d = dir.join("rank0");
    let run = tracelens([
        "analyze",
        sa,
        "--format",
        "parquet",
        "-o",
        d.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = tracelens(["merge", d.to_str().unwrap(), d.to_str().unwrap()]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(run.stderr.contains("given twice"), "{}", run.stderr);
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- 3f. sizes from the trace ----

#[test]
fn a_huge_name_is_shortened_for_display_and_kept_in_json() {
    let dir = scratch("huge-name");
    let path = dir.join("t.json");
    let gpu = "G".repeat(4 << 20);
    let kernel = format!("k{}", "x".repeat(1 << 20));
    let text = String::from_utf8(small_trace())
        .unwrap()
        .replacen("sm90_xmma_gemm_bf16_kernel", &kernel, 1)
        .replacen("NVIDIA H100 80GB HBM3", &gpu, 1);
    std::fs::write(&path, text).unwrap();
    let run = analyze(&path, &["--no-report"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.len() < 64 << 10,
        "{} bytes of summary",
        run.stdout.len()
    );
    let run = analyze(&path, &["--format", "md"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let longest = run.stdout.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 16 << 10, "a Markdown line of {longest} bytes");
    assert!(
        run.stdout.len() < 1 << 20,
        "{} bytes of Markdown",
        run.stdout.len()
    );
    let run = analyze(&path, &["--format", "json"]);
    assert!(run.stdout.contains(&gpu), "the JSON keeps the full name");
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- 3g. small surfaces ----

#[test]
fn dash_means_stdout_and_newer_documents_are_refused() {
    let (dir, trace) = scratch_with_trace("small-surfaces");
    // `annotate -o -` writes the annotated trace to stdout, not to a file named `-`.
    let out = exe()
        .current_dir(&dir)
        .args(["annotate", "t.json", "-o", "-"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc["traceEvents"].as_array().is_some_and(|e| e.len() > 100));
    assert!(!dir.join("-").exists());
    // A gzip trace cut short: the input's problem, named as such.
    let gz = gzip(&small_trace());
    let cut = dir.join("cut.json.gz");
    std::fs::write(&cut, &gz[..gz.len() * 3 / 4]).unwrap();
    let run = tracelens([
        "annotate",
        cut.to_str().unwrap(),
        "-o",
        dir.join("cut.annotated.json").to_str().unwrap(),
    ]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("cut.json.gz: cannot be copied"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("cannot write output"),
        "{}",
        run.stderr
    );
    // A gzip bomb (72 MB of top-level keys) is not copied: annotate would recompress it all.
    let mut bomb = br#"{"traceEvents": [], "#.to_vec();
    bomb.extend(br#""k": 1, "#.repeat(9 << 20));
    bomb.extend(br#""end": 1}"#);
    let path = dir.join("bomb.json.gz");
    std::fs::write(&path, gzip(&bomb)).unwrap();
    let run = tracelens(["annotate", path.to_str().unwrap(), "-o", "-"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("likely gzip bomb"), "{}", run.stderr);
    assert!(
        run.stderr.contains("decompresses more than"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty());
    // A result document from a newer tracelens is refused, not read as if it were ours.
    let run = tracelens(["analyze", trace.to_str().unwrap(), "--format", "json"]);
    let newer = run.stdout.replacen(
        &format!("\"schema_version\": {}", tracelens_report::SCHEMA_VERSION),
        "\"schema_version\": 99",
        1,
    );
    let stored = dir.join("newer.json");
    std::fs::write(&stored, newer).unwrap();
    let run = tracelens(["check", stored.to_str().unwrap()]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr.contains("newer than this tracelens reads"),
        "{}",
        run.stderr
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- 5. crafted inputs end cleanly ----

#[test]
fn crafted_nesting_and_sizes_end_in_a_clear_outcome() {
    let dir = scratch("bombs");
    let one_kernel = tracelens_bench_free_kernel();
    // 50 kB of nesting: read, not a stack overflow.
    let deep = format!(
        "{{\"traceEvents\": [{one_kernel}], \"meta\": {}{}}}",
        "[".repeat(25_000),
        "]".repeat(25_000)
    );
    let path = dir.join("deep.json");
    std::fs::write(&path, deep).unwrap();
    let out = exe()
        .arg("analyze")
        .arg(&path)
        .arg("--no-report")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Thousands of top-level keys: the first 256 are read, the rest skipped with a warning.
    let keys: String = (0..5_000).map(|i| format!(", \"k{i}\": {i}")).collect();
    let path = dir.join("keys.json");
    std::fs::write(&path, format!("{{\"traceEvents\": [{one_kernel}]{keys}}}")).unwrap();
    let run = analyze(&path, &["--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("4745 top-level keys past the first 256 were skipped"),
        "{}",
        run.stdout
    );
    // An array that never closes, gzip: one clear line, exit 2.
    let path = dir.join("open.json.gz");
    std::fs::write(&path, gzip(&b"[".repeat(8 << 20))).unwrap();
    let run = analyze(&path, &["--no-report"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("truncated"), "{}", run.stderr);
    // Over the memory budget: one line and exit 2, not an abort.
    let path = dir.join("big.json");
    std::fs::write(&path, small_trace().repeat(1)).unwrap();
    let out = exe()
        .env("TRACELENS_MAX_MEMORY", "3M")
        .arg("analyze")
        .arg(&path)
        .arg("--no-report")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("needs more than 3 MB of memory"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 40: at the memory budget, a run ended on one thread while another held a lock it
/// needed (stderr's, stdout's exit flush) or waited on a channel for it: 1 run in 6 of a
/// 100,000-op trace under 40 MB hung. The over-budget path takes no lock: every run ends,
/// with the one line and exit 2, well inside a deadline.
#[test]
fn every_run_over_the_memory_budget_ends_with_one_line() {
    let dir = scratch("budget-stress");
    let path = dir.join("ops.json");
    let mut events = Vec::with_capacity(100_000);
    for i in 0..33_334u64 {
        let t = 10 + i * 20;
        events.push(format!(r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": {t}, "dur": 8}}"#));
        events.push(format!(r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {}, "dur": 2, "args": {{"correlation": {i}}}}}"#, t + 1));
        events.push(format!(r#"{{"ph": "X", "cat": "kernel", "name": "gemm_{}", "pid": 0, "tid": 7, "ts": {}, "dur": 9, "args": {{"device": 0, "stream": 7, "correlation": {i}}}}}"#, i % 97, t + 4));
    }
    std::fs::write(
        &path,
        format!("{{\"traceEvents\": [{}]}}", events.join(",\n")),
    )
    .unwrap();
    let out_html = dir.join("out.html");
    // Budgets from 12 to 26 MB stop the run in every phase: parsing on worker threads,
    // building the model, the analyses (the whole run peaks near 27 MB). The old path hung
    // in 11 of 48 such runs.
    for run in 0..24u32 {
        let budget = format!("{:.1}M", 12.0 + f64::from((run * 7) % 24) * 0.6);
        let mut child = exe()
            .env("TRACELENS_MAX_MEMORY", &budget)
            .arg("analyze")
            .arg(&path)
            .arg("-o")
            .arg(&out_html)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("run {run} under {budget} hung past 30 s at the memory budget");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(2), "run {run} under {budget}: {err}");
        assert!(err.contains("of memory"), "run {run} under {budget}: {err}");
        assert_eq!(err.lines().count(), 1, "run {run} under {budget}: {err}");
        assert!(
            !out_html.exists(),
            "run {run}: a half-written report was left"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 40: shapes that claim more FLOPs than the device can run in the measured time (a
/// 8192³ bf16 matmul in 1 µs on an H100: over 1,000 PFLOP/s) gave "MFU 100 %", clamped in
/// silence. No MFU is given, and the view says the shapes and times disagree.
#[test]
fn flops_above_the_devices_peak_give_no_mfu_and_say_why() {
    let dir = scratch("above-peak");
    let path = dir.join("above.json");
    let ev = |v: serde_json::Value| v.to_string();
    let mut events = Vec::new();
    for step in 0..3_i64 {
        let t0 = 1_000 + step * 100;
        events.push(ev(serde_json::json!({"ph": "X", "cat": "user_annotation", "name": format!("ProfilerStep#{step}"), "pid": 1, "tid": 1, "ts": t0, "dur": 90})));
        events.push(ev(serde_json::json!({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t0 + 5, "dur": 20,
            "args": {"Input Dims": [[8192, 8192], [8192, 8192]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}})));
        events.push(ev(serde_json::json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t0 + 10, "dur": 5, "args": {"correlation": step + 1}})));
        events.push(ev(serde_json::json!({"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32", "pid": 0, "tid": 7, "ts": t0 + 20, "dur": 1,
            "args": {"device": 0, "stream": 7, "correlation": step + 1}})));
    }
    let trace = format!(
        "{{\"traceEvents\": [{}], \"deviceProperties\": [{}]}}",
        events.join(", "),
        ev(
            serde_json::json!({"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0, "totalGlobalMem": 85_000_000_000_u64, "numSms": 132})
        )
    );
    std::fs::write(&path, trace).unwrap();
    let run = analyze(&path, &["--format", "json", "-o", "-"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let e = &doc["diagnosis"]["efficiency"];
    assert_eq!(e["device"], "NVIDIA H100 SXM", "{e}");
    assert!(e["mfu_percent"].is_null(), "{e}");
    assert_eq!(e["gaps"][0], "above_peak", "{e}");
    let md = analyze(&path, &["--format", "md", "-o", "-"]);
    assert!(
        md.stdout.contains("the shapes and the times disagree"),
        "{}",
        md.stdout
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn tracelens_bench_free_kernel() -> &'static str {
    r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 100, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 1}}, {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 98, "dur": 1, "args": {"correlation": 1}}"#
}

// ---- 6. honest failures ----

#[test]
fn gzip_checksum_mismatch_is_a_warning() {
    let dir = scratch("crc");
    let mut gz = gzip(&small_trace());
    let n = gz.len();
    gz[n - 8] ^= 0xff; // CRC-32
    let path = dir.join("crc.json.gz");
    std::fs::write(&path, &gz).unwrap();
    assert_says(&path, "fails its CRC-32/length check");
    // The gate says it too: it decides on data that may be corrupt.
    let run = tracelens(["check", path.to_str().unwrap()]);
    assert!(run.code <= 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("fails its CRC-32/length check"),
        "{}",
        run.stderr
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn duplicated_events_are_counted_once() {
    let dir = scratch("dup");
    let mut doc: serde_json::Value = serde_json::from_slice(&small_trace()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap().clone();
    let twenty: Vec<serde_json::Value> = events
        .iter()
        .flat_map(|e| std::iter::repeat_n(e.clone(), 20))
        .collect();
    doc["traceEvents"] = serde_json::Value::Array(twenty);
    let path = dir.join("dup.json");
    std::fs::write(&path, doc.to_string()).unwrap();
    let once = tracelens([
        "analyze".into(),
        fixtures_dir()
            .join("scenarios/item_every_step.json")
            .into_os_string(),
        "--format".into(),
        "json".into(),
    ]);
    let run = analyze(&path, &["--format", "json"]);
    assert_eq!(run.code, 0);
    let a: serde_json::Value = serde_json::from_str(&once.stdout).unwrap();
    let b: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(a["diagnosis"]["findings"], b["diagnosis"]["findings"]);
    assert!(
        run.stdout.contains("appear more than once"),
        "{}",
        run.stdout
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn nsys_exports_say_what_they_could_not_read() {
    let dir = scratch("nsys-honest");
    // A write-ahead log beside the export is named.
    let path = dir.join("wal.sqlite");
    drop(small_export(&path));
    std::fs::write(dir.join("wal.sqlite-wal"), b"not empty").unwrap();
    assert_says(
        &path,
        "wal.sqlite-wal (9 bytes) beside the export was not read",
    );
    // A view standing where a table should is named, not silently dropped.
    let path = dir.join("view.sqlite");
    let e = small_export(&path);
    e.conn
        .execute_batch(
            "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME TO k_rows;
             CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS SELECT * FROM k_rows;",
        )
        .unwrap();
    drop(e);
    assert_says(&path, "CUPTI_ACTIVITY_KIND_KERNEL is a view");
    // Issue 40: a generated column is SQL run on every row read (12 rows took 5.7 s and
    // 398 MB); such a table, and a virtual one, is refused by name; triggers never run.
    let path = dir.join("generated.sqlite");
    let e = small_export(&path);
    e.conn
        .execute_batch(
            "ALTER TABLE CUPTI_ACTIVITY_KIND_RUNTIME ADD COLUMN spin INTEGER
               GENERATED ALWAYS AS (length(hex(zeroblob(50000000)))) VIRTUAL;
             CREATE TRIGGER t AFTER INSERT ON StringIds BEGIN DELETE FROM StringIds; END;",
        )
        .unwrap();
    drop(e);
    assert_says(
        &path,
        "CUPTI_ACTIVITY_KIND_RUNTIME was not read: it has generated or hidden columns",
    );
    assert_says(&path, "the export holds 1 triggers: none ran");
    // Names missing from StringIds are a warning.
    let path = dir.join("names.sqlite");
    let e = small_export(&path);
    e.conn.execute_batch("DELETE FROM StringIds;").unwrap();
    drop(e);
    assert_says(&path, "names could not be resolved");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn nsys_rules_fail_on_sql_errors_and_survive_huge_names() {
    let dir = scratch("nsys-rules");
    // A runtime table without the columns the rules query: an error, not "no problem found".
    let path = dir.join("broken.sqlite");
    let e = small_export(&path);
    e.conn
        .execute_batch(
            "DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME;
             CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER);",
        )
        .unwrap();
    drop(e);
    let run = tracelens([
        "analyze".into(),
        "--rules".into(),
        "nsys".into(),
        path.as_os_str().to_owned(),
    ]);
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("cannot read the Nsight Systems export"),
        "{}",
        run.stderr
    );
    // An API name over 65,535 characters is printed, not a panic.
    let path = dir.join("long.sqlite");
    let mut e = small_export(&path);
    let long = format!("cudaDeviceSynchronize{}", "x".repeat(70_000));
    e.runtime(&long, 10, 11, 10_000, 20_000, 5);
    drop(e);
    let run = tracelens([
        "analyze".into(),
        "--rules".into(),
        "nsys".into(),
        path.as_os_str().to_owned(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains(&long));
    // Names with line breaks, commas and escapes stay inside their cell and CSV field.
    let path = dir.join("names.sqlite");
    let mut e = small_export(&path);
    e.runtime(
        "cudaDeviceSynchronize,x\n\u{1b}]0;t\u{7}forged",
        10,
        11,
        10_000,
        20_000,
        5,
    );
    drop(e);
    let run = tracelens([
        "analyze".into(),
        "--rules".into(),
        "nsys".into(),
        path.as_os_str().to_owned(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stdout.contains('\u{1b}'));
    assert!(!run.stdout.lines().any(|l| l.starts_with("forged")));
    let csv_dir = dir.join("csv");
    let run = tracelens([
        "analyze".into(),
        "--rules".into(),
        "nsys".into(),
        path.as_os_str().to_owned(),
        "-o".into(),
        csv_dir.as_os_str().to_owned(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let csv = std::fs::read_to_string(csv_dir.join("names_cuda_api_sync.csv")).unwrap();
    assert!(csv.contains(",\"cudaDeviceSynchronize,x"), "{csv}");
    assert_eq!(csv.lines().count(), 2, "{csv}");
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- 7. plumbing ----

#[test]
fn stdin_and_fifos_are_read_once() {
    let trace = small_trace();
    for input in [trace.clone(), gzip(&trace)] {
        let mut child = exe()
            .args(["analyze", "-", "--format", "json"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || stdin.write_all(&input));
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("\"findings\""));
    }
    // A named FIFO, and an Nsight export through a pipe.
    let dir = scratch("fifo");
    let fifo = dir.join("trace.fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let f2 = fifo.clone();
    let writer = std::thread::spawn(move || std::fs::write(&f2, small_trace()));
    let run = analyze(&fifo, &["--format", "json"]);
    writer.join().unwrap().unwrap();
    assert_eq!(run.code, 0, "{}", run.stderr);
    // `annotate` reads its input twice: a FIFO is refused after the first read instead of
    // waiting forever for a second writer.
    let f2 = fifo.clone();
    let writer = std::thread::spawn(move || std::fs::write(&f2, small_trace()));
    let out_path = dir.join("annotated.json");
    let run = tracelens([
        "annotate",
        fifo.to_str().unwrap(),
        "-o",
        out_path.to_str().unwrap(),
    ]);
    // Refused after its first bytes: the writer may see a broken pipe.
    let _ = writer.join().unwrap();
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("not a pipe or FIFO"), "{}", run.stderr);
    assert!(!out_path.exists());
    let export = dir.join("e.sqlite");
    drop(small_export(&export));
    let out = exe()
        .args(["analyze", "-", "--format", "json"])
        .stdin(std::fs::File::open(&export).unwrap())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("nsys_sqlite"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn write_errors_are_reported_as_write_errors() {
    let trace = fixtures_dir().join("scenarios/item_every_step.json");
    if !Path::new("/dev/full").exists() {
        eprintln!("*** SKIPPED write_errors_are_reported_as_write_errors: no /dev/full ***");
        return;
    }
    for args in [
        vec!["--format", "json"],
        vec!["-o", "-"],
        vec!["--no-report"],
    ] {
        let out = exe()
            .arg("analyze")
            .arg(&trace)
            .args(&args)
            .stdout(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/full")
                    .unwrap(),
            )
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("<stdout>: cannot write output: no space left on device"),
            "{err}"
        );
    }
    let run = tracelens([
        "analyze".into(),
        trace.into_os_string(),
        "-o".into(),
        "/dev/full".into(),
    ]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("/dev/full: cannot write output: no space left on device"),
        "{}",
        run.stderr
    );
}

#[test]
fn unusual_encodings_get_precise_messages() {
    let dir = scratch("encodings");
    let trace = small_trace();
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(
            String::from_utf8(trace.clone())
                .unwrap()
                .encode_utf16()
                .flat_map(u16::to_le_bytes),
        )
        .collect();
    let cases: [(&str, Vec<u8>, &str); 3] = [
        ("utf16.json", utf16, "UTF-16 text"),
        ("nested.json.gz", gzip(&gzip(&trace)), "gzip inside gzip"),
        (
            "blank.json",
            b"  \n\t \n".to_vec(),
            "no JSON: the file holds only 6 bytes of whitespace",
        ),
    ];
    for (name, bytes, message) in cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let run = tracelens(["analyze".into(), path.as_os_str().to_owned()]);
        assert_eq!(run.code, 2, "{name}");
        assert!(run.stderr.contains(message), "{name}: {}", run.stderr);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn extreme_times_do_not_overflow() {
    // Found by the nsys_import fuzz target: a row ending before the earliest time.
    let dir = scratch("extreme");
    let path = dir.join("extreme.sqlite");
    let mut e = small_export(&path);
    e.kernel("k2", 10, 0, 7, i64::MAX, i64::MIN, 2);
    e.runtime("cudaLaunchKernel", 10, 11, i64::MIN, i64::MAX, 3);
    e.kernel("k3", 10, 0, 7, -4_500_000_000_000_000_000, 0, 3);
    drop(e);
    let run = analyze(&path, &["--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Kineto timestamps at both ends of the i64 range (in µs, then ns).
    let events = r#"{"traceEvents": [
      {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": -9000000000000000, "dur": 5, "args": {"device": 0, "stream": 7}},
      {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": 9000000000000000, "dur": 5, "args": {"device": 0, "stream": 7}},
      {"ph": "X", "cat": "kernel", "name": "c", "pid": 0, "tid": 7, "ts": -4000000000000000, "dur": 5, "args": {"device": 0, "stream": 7}},
      {"ph": "X", "cat": "kernel", "name": "d", "pid": 0, "tid": 7, "ts": 3999999999999000, "dur": 5, "args": {"device": 0, "stream": 7}},
      {"ph": "X", "cat": "cpu_op", "name": "e", "pid": 1, "tid": 1, "ts": -3999999999999000, "dur": 86400000000, "args": {}}
    ]}"#;
    let path = dir.join("extreme.json");
    std::fs::write(&path, events).unwrap();
    for format in ["json", "md", "html", "text"] {
        let run = analyze(&path, &["--format", format, "-o", "-"]);
        assert_eq!(run.code, 0, "{format}: {}", run.stderr);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 40: `tracelens report` drew a stored result's timeline as stored, so 97 MB of
/// crafted runs made a 235 MB page. A result read back is held to what an analysis makes
/// (eleven lanes, one run per column at most): the page stays the size of an honest one.
#[test]
fn a_crafted_timeline_cannot_size_the_report() {
    let (dir, trace) = scratch_with_trace("timeline-bomb");
    let honest = dir.join("honest.json");
    let run = analyze(
        &trace,
        &["--format", "json", "-o", honest.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&honest).unwrap()).unwrap();
    // 40 lanes of 20,000 runs each, overlapping and past the columns.
    let runs: Vec<serde_json::Value> = (0..20_000)
        .map(|i| serde_json::json!({"start": i % 3_000, "len": 5, "class": "kernel"}))
        .collect();
    let lanes: Vec<serde_json::Value> = (0..40)
        .map(|i| serde_json::json!({"label": format!("lane {i}"), "runs": runs}))
        .collect();
    doc["timeline"]["lanes"] = serde_json::Value::Array(lanes);
    doc["timeline"]["columns"] = serde_json::json!(4_000_000_000u32);
    let crafted = dir.join("crafted.json");
    std::fs::write(&crafted, doc.to_string()).unwrap();
    let html_of = |result: &Path, name: &str| {
        let out = dir.join(name);
        let run = tracelens([
            "report",
            result.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        std::fs::read_to_string(out).unwrap()
    };
    let honest_html = html_of(&honest, "honest.html");
    let crafted_html = html_of(&crafted, "crafted.html");
    assert!(
        crafted_html.len() < honest_html.len() + (2 << 20),
        "{} bytes of page from a crafted timeline ({} from the honest one)",
        crafted_html.len(),
        honest_html.len()
    );
    // Held, not dropped: the lanes it keeps are drawn.
    assert!(crafted_html.contains("lane 10"), "lane 10 missing");
    assert!(!crafted_html.contains("lane 11"), "lane 11 drawn");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 62: a repeated top-level range names the found iterations in the window line, so a
/// range named with a terminal escape sequence must not reach the terminal through it.
#[test]
fn a_hostile_iteration_marker_reaches_no_output_raw() {
    let dir = scratch("iteration_marker");
    let path = dir.join("loop.json");
    let mut events = Vec::new();
    for k in 0..4 {
        let t = k * 1000;
        events.push(format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"\u001b]0;pwned\u0007loop|x","pid":1,"tid":1,"ts":{t},"dur":900}}"#
        ));
        events.push(format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"correlation":{}}}}}"#,
            t + 10,
            k + 1
        ));
        events.push(format!(
            r#"{{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":{},"dur":500,"args":{{"correlation":{},"device":0,"stream":7}}}}"#,
            t + 20,
            k + 1
        ));
    }
    std::fs::write(&path, format!("{{\"traceEvents\":[{}]}}", events.join(","))).unwrap();
    let run = analyze(&path, &["--no-report", "--verbose"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("4 iterations"), "{}", run.stdout);
    assert!(
        !run.stdout.contains('\u{1b}') && !run.stdout.contains('\u{7}'),
        "{:?}",
        run.stdout
    );
    let md = dir.join("out.md");
    let run = analyze(&path, &["--format", "md", "-o", md.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(
        !text.contains('\u{1b}') && !text.contains("loop|x"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
