//! `tracelens check`, `diff` and `--fail-on`: exit codes, measured values, the diff of real
//! pairs and of each scenario with its fixed twin, and the round trip through stored JSON.

use std::path::{Path, PathBuf};
use tracelens_tests::{corpus_dir, fixtures_dir, tracelens};

fn scenario(name: &str) -> PathBuf {
    fixtures_dir()
        .join("scenarios")
        .join(format!("{name}.json"))
}

fn run(args: &[&str]) -> tracelens_tests::Run {
    tracelens(args.iter().map(|s| s.to_string()))
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// (problem, its fixed twin, a rule that catches the problem).
const PAIRS: [(&str, &str, &str); 5] = [
    (
        "dataloader_single_process",
        "dataloader_multi_process_fast",
        "finding.data_loader_stall.win_percent > 10",
    ),
    (
        "item_every_step",
        "item_read_every_n_steps",
        "finding.implicit_sync.count_per_step >= 1",
    ),
    (
        "device_sync_every_step",
        "no_device_sync",
        "finding.implicit_sync.present == 1",
    ),
    (
        "pageable_sync_copy",
        "pinned_non_blocking_copy",
        // A synchronous pageable copy blocks the host: it is reported as the sync it is.
        "finding.implicit_sync.present == 1",
    ),
    (
        "launch_bound_tiny_kernels",
        "fused_kernels",
        "finding.launch_bound.present == 1",
    ),
];

#[test]
fn each_problem_fails_its_gate_and_its_fixed_twin_passes() {
    for (bad, good, rule) in PAIRS {
        let failing = run(&["check", p(&scenario(bad)), "--rule", rule]);
        assert_eq!(
            failing.code, 1,
            "{bad}: {}{}",
            failing.stdout, failing.stderr
        );
        assert!(failing.stdout.contains("FAIL"), "{}", failing.stdout);
        assert!(failing.stdout.contains("measured: "), "{}", failing.stdout);
        let passing = run(&["check", p(&scenario(good)), "--rule", rule]);
        assert_eq!(
            passing.code, 0,
            "{good}: {}{}",
            passing.stdout, passing.stderr
        );
        assert!(
            passing.stdout.contains("the rule holds"),
            "{}",
            passing.stdout
        );
        // The diff of the problem and its twin names the finding as resolved.
        let d = run(&[
            "diff",
            p(&scenario(bad)),
            p(&scenario(good)),
            "--format",
            "json",
        ]);
        assert_eq!(d.code, 0, "{}", d.stderr);
        let doc: serde_json::Value = serde_json::from_str(&d.stdout).unwrap();
        assert!(
            !doc["diff"]["resolved"].as_array().unwrap().is_empty(),
            "{bad} → {good}: nothing resolved: {}",
            d.stdout
        );
    }
}

#[test]
fn bad_rules_and_inputs_exit_2_with_one_line() {
    let trace = scenario("item_every_step");
    let r = run(&["check", p(&trace), "--rule", "gpu.idle_precent > 5"]);
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr.trim_end(),
        "tracelens: error: rule 'gpu.idle_precent > 5': column 1: unknown metric 'gpu.idle_precent'; did you mean 'gpu.idle_percent'? (docs/rules.md lists them)"
    );
    let r = run(&[
        "analyze",
        p(&trace),
        "--no-report",
        "--fail-on",
        "gpu.idle_percent >",
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stdout.is_empty(),
        "nothing is written before a bad rule is refused"
    );
    let r = run(&["check", "/no/such/trace.json", "--rules", "default"]);
    assert_eq!(r.code, 2);
}

#[test]
fn analyze_fail_on_writes_the_report_then_gates() {
    let trace = scenario("dataloader_single_process");
    let dir = std::env::temp_dir().join(format!("tracelens-failon-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("r.json");
    let r = run(&[
        "analyze",
        p(&trace),
        "-o",
        p(&out),
        "--fail-on",
        "idle.data_loading.percent > 10",
        "--annotations",
        "github",
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(out.is_file(), "the report is written before the gate");
    assert!(
        r.stderr.contains(
            "gate failed: idle.data_loading.percent > 10 (measured idle.data_loading.percent = "
        ),
        "{}",
        r.stderr
    );
    // Annotations only for files in the checkout: none while train.py is not there, then
    // one once it is.
    let annotate = |root: &Path, min: &str| {
        run(&[
            "analyze",
            p(&scenario("item_every_step")),
            "--no-report",
            "--annotations",
            "github",
            "--min-severity",
            min,
            "--source-root",
            p(root),
        ])
    };
    let checkout = dir.join("checkout");
    std::fs::create_dir_all(&checkout).unwrap();
    let r = annotate(&checkout, "medium");
    assert_eq!(r.code, 0);
    assert!(!r.stdout.contains("::warning"), "{}", r.stdout);
    std::fs::write(checkout.join("train.py"), "").unwrap();
    let r = annotate(&checkout, "medium");
    assert!(
        r.stdout
            .contains("::warning file=train.py,line=52,title=tracelens%3A implicit sync::"),
        "{}",
        r.stdout
    );
    // A finding under the chosen severity is no annotation: the .item() finding is Medium
    // (3.0 % of the step), so `high` drops it and `low` keeps it.
    let r = annotate(&checkout, "high");
    assert!(!r.stdout.contains("::warning"), "{}", r.stdout);
    let r = annotate(&checkout, "low");
    assert_eq!(r.stdout.matches("::warning").count(), 1, "{}", r.stdout);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn stored_results_give_the_same_rules_and_diff_as_the_traces() {
    let dir = std::env::temp_dir().join(format!("tracelens-roundtrip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (bad, good) = (
        scenario("item_every_step"),
        scenario("item_read_every_n_steps"),
    );
    let (bad_json, good_json) = (dir.join("bad.json"), dir.join("good.json"));
    for (t, j) in [(&bad, &bad_json), (&good, &good_json)] {
        assert_eq!(
            run(&["analyze", p(t), "--format", "json", "-o", p(j)]).code,
            0
        );
    }
    let rules = [
        "--rules",
        "default",
        "--rule",
        "step.time_ms > 1",
        "--rule",
        "finding.implicit_sync.count_per_step >= 1",
    ];
    let from = |input: &Path, baseline: &Path| {
        let mut args = vec!["check", p(input), "--baseline", p(baseline)];
        args.extend(rules);
        args.extend([
            "--rule",
            "diff.step_time_percent > 1 or diff.resolved_findings >= 1",
        ]);
        let r = run(&args);
        (
            r.code,
            r.stdout.lines().skip(1).collect::<Vec<_>>().join("\n"),
        )
    };
    assert_eq!(from(&good, &bad), from(&good_json, &bad_json));
    let diff = |a: &Path, b: &Path| {
        let r = run(&["diff", p(a), p(b), "--format", "json"]);
        let mut v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        v["diff"]["before"] = serde_json::Value::Null;
        v["diff"]["after"] = serde_json::Value::Null;
        v
    };
    assert_eq!(diff(&bad, &good), diff(&bad_json, &good_json));
    // A document of the former layout (version 4: the same report plus a stored `results`
    // section, as cached CI baselines hold) still gates and diffs the same; `report` asks
    // for a new analysis instead of rendering it.
    let (bad_v4, good_v4) = (dir.join("bad_v4.json"), dir.join("good_v4.json"));
    for (j, v4) in [(&bad_json, &bad_v4), (&good_json, &good_v4)] {
        let text = std::fs::read_to_string(j).unwrap();
        let report = tracelens_report::Report::from_json(&text).unwrap();
        // Key order as written then: `schema_version` first, `results` last.
        let current = format!("\"schema_version\": {}", tracelens_report::SCHEMA_VERSION);
        let body = text.trim_end().strip_suffix('}').unwrap();
        let results = serde_json::to_string(&report.results()).unwrap();
        let old = format!("{},\n  \"results\": {results}\n}}\n", body.trim_end()).replacen(
            &current,
            "\"schema_version\": 4",
            1,
        );
        std::fs::write(v4, old).unwrap();
    }
    assert_eq!(from(&good, &bad), from(&good_v4, &bad_v4));
    assert_eq!(diff(&bad, &good), diff(&bad_v4, &good_v4));
    let r = run(&["report", p(&bad_v4), "--format", "md"]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(r.stderr.contains("analyse the trace again"), "{}", r.stderr);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[cfg_attr(
    no_corpus,
    ignore = "no trace corpus: set TRACELENS_CORPUS to shared/traces"
)]
fn real_pairs_diff_and_check() {
    let Some(root) = corpus_dir("real_pairs_diff_and_check") else {
        return;
    };
    let samples = root.join("kineto/tb_plugin/samples");
    let nw0 = samples.join("resnet50_num_workers_0/worker0.pt.trace.json.gz");
    let nw4 = samples.join("resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz");
    let d = run(&["diff", p(&nw0), p(&nw4), "--format", "md"]);
    assert_eq!(d.code, 0, "{}", d.stderr);
    assert!(
        d.stdout.contains("data loader stall resolved"),
        "{}",
        d.stdout
    );
    assert!(d.stdout.contains("### Resolved"), "{}", d.stdout);
    let c = run(&["check", p(&nw0), "--rules", "default"]);
    assert_eq!(c.code, 1, "{}", c.stdout);
    let c = run(&["check", p(&nw4), "--rules", "default"]);
    assert_eq!(c.code, 0, "{}", c.stdout);
    // HTA's trace_diff pair and a 2-GPU Nsight pair: each diff renders in every format.
    let pairs = [
        (
            root.join("hta/trace_diff/control/control.json.gz"),
            root.join("hta/trace_diff/test/test.json.gz"),
        ),
        (
            root.join("nsys/public/GindaChen__nsys-ai/tests/fixtures/mfu_2gpu_before.sqlite"),
            root.join("nsys/public/GindaChen__nsys-ai/tests/fixtures/mfu_2gpu_after.sqlite"),
        ),
    ];
    for (a, b) in &pairs {
        for format in ["text", "md", "json", "html"] {
            let d = run(&["diff", p(a), p(b), "--format", format]);
            assert_eq!(d.code, 0, "{format}: {}", d.stderr);
            assert!(
                d.stdout.contains("step") || d.stdout.contains("window"),
                "{}",
                d.stdout
            );
        }
    }
    // HTA's test run is 60 % slower than its control: a regression beyond the noise, gated.
    let (a, b) = &pairs[0];
    let d = run(&["diff", p(a), p(b), "--format", "md"]);
    assert!(
        d.stdout.contains("a regression beyond the noise"),
        "{}",
        d.stdout
    );
    let c = run(&[
        "check",
        p(b),
        "--baseline",
        p(a),
        "--rule",
        "diff.regression == 1",
    ]);
    assert_eq!(c.code, 1, "{}", c.stdout);
    let (a, b) = &pairs[1];
    let c = run(&[
        "check",
        p(b),
        "--baseline",
        p(a),
        "--rule",
        "diff.regression == 1",
    ]);
    assert_eq!(c.code, 0, "{}", c.stdout);
}

/// Issue 40: a rule on a figure one trace cannot give (a diff without a baseline, rank
/// figures of a single trace) is refused, never "holds" — not even under `not`, and not
/// through `analyze --fail-on`.
#[test]
fn rules_without_their_evidence_are_refused_not_passed() {
    let trace = scenario("item_every_step");
    for (rule, why) in [
        ("diff.regression > 0", "pass --baseline"),
        ("ranks.count < 2", "check the folder of every rank's trace"),
        ("not (ranks.max_wait_ms > 1)", "not a job"),
    ] {
        let r = run(&["check", p(&trace), "--rule", rule]);
        assert_eq!(r.code, 2, "{rule}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains("is not measured") && r.stderr.contains(why),
            "{}",
            r.stderr
        );
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        let r = run(&["analyze", p(&trace), "--no-report", "--fail-on", rule]);
        assert_eq!(r.code, 2, "analyze --fail-on {rule}: {}", r.stderr);
    }
    // With the baseline the diff rule is measured and gates.
    let r = run(&[
        "check",
        p(&trace),
        "--baseline",
        p(&trace),
        "--rule",
        "diff.regression > 0",
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
}

#[test]
fn a_rules_file_is_read_as_toml() {
    let dir = std::env::temp_dir().join(format!("tracelens-toml-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = scenario("item_every_step");
    let file = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    // A literal string and a multi-line array with a comment: the rule is read and fires.
    let literal = file(
        "literal.toml",
        "# the gate\nrules = [\n  'finding.implicit_sync.count_per_step >= 1', # per step\n]\n",
    );
    let r = run(&["check", p(&trace), "--rules", p(&literal)]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r
        .stdout
        .contains("FAIL  finding.implicit_sync.count_per_step >= 1"));
    // Unknown keys are named on stderr, not silently read.
    let unknown = file(
        "unknown.toml",
        "rules = [\"gpu.idle_percent > 100\"]\nfail_on = [\"x\"]\n",
    );
    let r = run(&["check", p(&trace), "--rules", p(&unknown)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("unknown key 'fail_on' ignored"),
        "{}",
        r.stderr
    );
    // Not TOML, or no list: one line, exit 2, before the trace is read.
    for (name, text, why) in [
        (
            "broken.toml",
            "rules = [\"a > 1\"\n",
            "not valid TOML at line",
        ),
        ("typed.toml", "rules = [5]\n", "not valid TOML at line 1"),
        ("none.toml", "other = 1\n", "no rules = [\"...\"] list"),
    ] {
        let path = file(name, text);
        let r = run(&["check", "/no/such/trace.json", "--rules", p(&path)]);
        assert_eq!(r.code, 2, "{name}");
        assert_eq!(r.stderr.lines().count(), 1, "{name}: {}", r.stderr);
        assert!(r.stderr.contains(why), "{name}: {}", r.stderr);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_rule_is_refused_before_the_trace_is_read() {
    // The trace does not exist: the rule's error is what the user sees, from every entry point.
    for args in [
        vec![
            "analyze",
            "/no/such/trace.json",
            "--fail-on",
            "gpu.idle_percnt > 5",
        ],
        vec![
            "check",
            "/no/such/trace.json",
            "--rule",
            "gpu.idle_percnt > 5",
        ],
    ] {
        let r = run(&args);
        assert_eq!(r.code, 2);
        assert!(
            r.stderr.contains("rule 'gpu.idle_percnt > 5'"),
            "{}",
            r.stderr
        );
        assert!(!r.stderr.contains("no such file"), "{}", r.stderr);
    }
}

/// A CPU-only run (a smoke test without a GPU): three steps, each a quarter in the
/// single-process DataLoader and the rest in CPU ops.
fn cpu_only_trace() -> String {
    let mut events = Vec::new();
    for step in 0..3 {
        let t0 = 1_000 + step * 10_000;
        events.push(format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{step}","pid":1,"tid":1,"ts":{t0},"dur":10000}}"#
        ));
        events.push(format!(
            r#"{{"ph":"X","cat":"cpu_op","name":"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__","pid":1,"tid":1,"ts":{},"dur":2500}}"#,
            t0 + 1
        ));
        events.push(format!(
            r#"{{"ph":"X","cat":"cpu_op","name":"aten::addmm","pid":1,"tid":1,"ts":{},"dur":7000}}"#,
            t0 + 2_600
        ));
    }
    format!(r#"{{"traceEvents":[{}]}}"#, events.join(","))
}

#[test]
fn gpu_rules_on_a_cpu_only_run_are_errors_the_default_set_adapts_and_step_rules_gate_it() {
    let dir = std::env::temp_dir().join(format!("tracelens-cpu-only-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("cpu.json");
    std::fs::write(&trace, cpu_only_trace()).unwrap();
    // A GPU metric is not measured: exit 2 saying so, not a silent pass.
    for command in ["check", "analyze"] {
        let flag = if command == "check" {
            "--rule"
        } else {
            "--fail-on"
        };
        let r = run(&[
            command,
            p(&trace),
            "--no-report",
            flag,
            "idle.data_loading.percent > 10",
        ]
        .into_iter()
        .filter(|a| command == "analyze" || *a != "--no-report")
        .collect::<Vec<_>>());
        assert_eq!(r.code, 2, "{command}: {}", r.stderr);
        assert!(
            r.stderr.contains(
                "idle.data_loading.percent is not measured: the trace records no GPU activity"
            ),
            "{}",
            r.stderr
        );
    }
    // Issue 43: the default set is valid on every capture: its GPU rules pass as "not
    // measured", each with the reason, and the user's own pass with `--not-measured pass`.
    let r = run(&["check", p(&trace), "--rules", "default"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains("no rule fails (3 of 3 not measured on this capture)"),
        "{}",
        r.stdout
    );
    assert_eq!(r.stdout.matches("n/a ").count(), 3, "{}", r.stdout);
    // The default set beside a rule of the user's: the user's is still refused.
    let r = run(&[
        "check",
        p(&trace),
        "--rules",
        "default",
        "--rule",
        "gpu.idle_percent > 5",
    ]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    for command in ["check", "analyze"] {
        let flag = if command == "check" {
            "--rule"
        } else {
            "--fail-on"
        };
        let mut args = vec![command, p(&trace)];
        if command == "analyze" {
            args.push("--no-report");
        }
        args.extend([
            flag,
            "idle.data_loading.percent > 10",
            "--not-measured",
            "pass",
        ]);
        let r = run(&args);
        assert_eq!(r.code, 0, "{command}: {}{}", r.stdout, r.stderr);
        let said = format!("{}{}", r.stdout, r.stderr);
        assert!(said.contains("the trace records no GPU activity"), "{said}");
    }
    // The step breakdown gates it: the DataLoader is a quarter of each step.
    let r = run(&[
        "check",
        p(&trace),
        "--rule",
        "step.data_loader.percent > 20",
    ]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stdout.contains("step.data_loader.percent = 25.0 %"),
        "{}",
        r.stdout
    );
    let r = run(&[
        "check",
        p(&trace),
        "--rule",
        "step.data_loader.percent > 30",
    ]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    // A GPU trace measures both.
    let r = run(&[
        "check",
        p(&scenario("dataloader_single_process")),
        "--rule",
        "idle.data_loading.percent > 10",
        "--rule",
        "step.data_loader.percent > 10",
    ]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("2 of 2 rules fail"), "{}", r.stdout);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn memory_metrics_gate_and_say_when_not_recorded() {
    // Two steps of one kernel each; the allocator reaches 6 GB allocated, 8 GB reserved on
    // a 10 GB device.
    let mut events = vec![
        r#"{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":1000}"#.to_string(),
        r#"{"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":1,"tid":1,"ts":1000,"dur":1000}"#.to_string(),
    ];
    for (i, ts) in [0, 1000].iter().enumerate() {
        events.push(format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"correlation":{i}}}}}"#,
            ts + 10
        ));
        events.push(format!(
            r#"{{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":{},"dur":900,"args":{{"correlation":{i},"device":0,"stream":7}}}}"#,
            ts + 20
        ));
    }
    for (ts, bytes, total, reserved) in [
        (100, 4_000_000_000i64, 4_000_000_000i64, 6_000_000_000i64),
        (1100, 2_000_000_000, 6_000_000_000, 8_000_000_000),
        (1500, -2_000_000_000, 4_000_000_000, 8_000_000_000),
    ] {
        events.push(format!(
            r#"{{"ph":"i","s":"t","name":"[memory]","pid":1,"tid":1,"ts":{ts},"args":{{"Device Type":1,"Device Id":0,"Bytes":{bytes},"Total Allocated":{total},"Total Reserved":{reserved}}}}}"#
        ));
    }
    // A thread seen only in an allocator sample is not a CPU thread of the overview.
    events.push(
        r#"{"ph":"i","s":"t","name":"[memory]","pid":1,"tid":9,"ts":1600,"args":{"Device Type":1,"Device Id":0,"Bytes":1,"Total Allocated":4000000001,"Total Reserved":8000000000}}"#.to_string(),
    );
    let trace = format!(
        r#"{{"deviceProperties":[{{"id":0,"name":"Test GPU","totalGlobalMem":10000000000}}],"traceEvents":[{}]}}"#,
        events.join(",")
    );
    let dir = std::env::temp_dir().join(format!("tracelens-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mem.json");
    std::fs::write(&path, trace).unwrap();
    let r = run(&["check", p(&path), "--rule", "memory.peak_percent > 75"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("memory.peak_percent = 80.0 %"),
        "{}",
        r.stdout
    );
    let r = run(&["check", p(&path), "--rule", "memory.peak_gb > 8.5"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // Headroom is what the peak leaves of the device: 100 - 80 %.
    let r = run(&["check", p(&path), "--rule", "memory.headroom_percent < 25"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("memory.headroom_percent = 20.0 %"),
        "{}",
        r.stdout
    );
    let doc: serde_json::Value =
        serde_json::from_str(&run(&["analyze", p(&path), "--format", "json"]).stdout).unwrap();
    assert_eq!(doc["overview"]["cpu_threads"], 1);
    assert_eq!(doc["diagnosis"]["memory"][0]["allocations"], 3);
    // The summary gives the peak and the headroom.
    let r = run(&["analyze", p(&path), "--no-report"]);
    let flat = r.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("GPU 0 peak 6.00 GB allocated, 8.00 GB reserved of 10.00 GB (fits ×1.2)"),
        "{}",
        r.stdout
    );
    // Without allocator samples the metric is not measured: exit 2, not a silent pass.
    let r = run(&[
        "check",
        p(&scenario("item_every_step")),
        "--rule",
        "memory.peak_gb > 1",
    ]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(r.stderr.contains("profile_memory=True"), "{}", r.stderr);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[cfg_attr(
    no_corpus,
    ignore = "no trace corpus: set TRACELENS_CORPUS to shared/traces"
)]
fn efficiency_and_named_metrics_gate_and_say_when_not_measured() {
    let Some(root) = corpus_dir("efficiency_and_named_metrics_gate_and_say_when_not_measured")
    else {
        return;
    };
    let bert = root.join("other/TraceLens/h100/gaunernst_bert-small-uncased__1016001.json.gz");
    // BERT-small at batch 1 on an H100: MFU 0.2 %.
    let r = run(&["check", p(&bert), "--rule", "gpu.mfu_percent < 1"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("gpu.mfu_percent = 0.2 %"), "{}", r.stdout);
    let r = run(&["check", p(&bert), "--rule", "gpu.mfu_percent < 0.1"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // An operator and a region by name.
    let r = run(&[
        "check",
        p(&bert),
        "--rule",
        r#"op."aten::linear".gpu_ms > 0.1ms"#,
    ]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let r = run(&[
        "check",
        p(&bert),
        "--rule",
        r#"op."aten::linear".gpu_ms > 100ms"#,
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // A name the run lacks is refused with the reason, never read as 0.
    let r = run(&[
        "check",
        p(&bert),
        "--rule",
        r#"op."aten::lineer".gpu_ms > 1ms"#,
    ]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(
        r.stderr.contains("no operator of that name"),
        "{}",
        r.stderr
    );
    // A trace recorded without shapes: MFU is not measured, and the error says how to get it.
    let r = run(&[
        "check",
        p(&scenario("item_every_step")),
        "--rule",
        "gpu.mfu_percent < 30",
    ]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(r.stderr.contains("record_shapes=True"), "{}", r.stderr);
}

#[test]
fn predicted_steps_and_the_critical_path_gate() {
    // num_workers=0 on the simulator: 32.902 ms steps, 24.234 ms of them DataLoader waits; the
    // replay predicts 8.668 ms without them.
    let loader = scenario("dataloader_single_process");
    let r = run(&[
        "check",
        p(&loader),
        "--rule",
        "finding.data_loader_stall.predicted_step_ms > 10ms",
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let r = run(&[
        "check",
        p(&loader),
        "--rule",
        "finding.data_loader_stall.predicted_step_ms < 10ms",
    ]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains("finding.data_loader_stall.predicted_step_ms = 8.668 ms"),
        "{}",
        r.stdout
    );
    // The DataLoader is 73.7 % of the critical path; its fixed twin has none.
    let rule = "critical_path.data_loader.percent > 50";
    let r = run(&["check", p(&loader), "--rule", rule]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains("critical_path.data_loader.percent = 73.7 %"),
        "{}",
        r.stdout
    );
    let twin = scenario("dataloader_multi_process_fast");
    let r = run(&["check", p(&twin), "--rule", rule]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // A kind the run did not find predicts the step unchanged; a finding the replay cannot
    // model is not measured, with the reason.
    let r = run(&[
        "check",
        p(&twin),
        "--rule",
        "finding.data_loader_stall.predicted_step_ms > 8ms",
    ]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains("finding.data_loader_stall.predicted_step_ms = 8.670 ms"),
        "{}",
        r.stdout
    );
    let slow = scenario("slow_python_between_kernels");
    let r = run(&[
        "check",
        p(&slow),
        "--rule",
        "finding.host_compute.predicted_step_ms > 1ms",
    ]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(r.stderr.contains("no prediction"), "{}", r.stderr);
}

#[test]
fn a_diff_checks_the_earlier_runs_prediction_against_the_later_run() {
    let r = run(&[
        "diff",
        p(&scenario("dataloader_single_process")),
        p(&scenario("dataloader_multi_process_fast")),
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let row = r
        .stdout
        .lines()
        .find(|l| l.contains("predicted step, data loader stall fixed"))
        .unwrap_or_else(|| panic!("no prediction row:\n{}", r.stdout));
    // Predicted 8.668 ms, measured 8.670 ms.
    assert!(
        row.contains("8.668 ms") && row.contains("8.670 ms"),
        "{row}"
    );
    assert!(row.contains("prediction ±0.0 %"), "{row}");
}

/// The subcommands that text names as `tracelens <word>`: in the README and docs (inside
/// backticks) and in the string literals of the analysis crate, where fixes are written.
fn named_subcommands() -> std::collections::BTreeMap<String, String> {
    let root = tracelens_tests::repo_root();
    let mut texts: Vec<(String, String)> = Vec::new();
    let mut push_dir = |dir: PathBuf, ext: &str| {
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == ext) {
                    let text = std::fs::read_to_string(&path).unwrap();
                    texts.push((path.display().to_string(), text));
                }
            }
        }
    };
    push_dir(root.join("docs"), "md");
    push_dir(root.join("crates/tracelens-analysis/src"), "rs");
    texts.push((
        "README.md".into(),
        std::fs::read_to_string(root.join("README.md")).unwrap(),
    ));
    let mut found = std::collections::BTreeMap::new();
    for (file, text) in texts {
        let rust = file.ends_with(".rs");
        for line in text.lines() {
            if rust && line.trim_start().starts_with("#[cfg(test)]") {
                break;
            }
            // In Rust sources only string literals count (not `tracelens_model` paths).
            if rust && !line.contains('"') {
                continue;
            }
            let mut rest = line;
            while let Some(at) = rest.find("tracelens ") {
                let before = rest[..at].chars().last();
                let word: String = rest[at + "tracelens ".len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '-')
                    .collect();
                // `tracelens analyze`, `` `tracelens job` ``: a command, not prose ("tracelens
                // reads"); prose is told apart by the backtick or quote before it.
                if matches!(before, Some('`' | '"' | '$' | ' ' | '(')) && !word.is_empty() {
                    let quoted = matches!(before, Some('`' | '"'));
                    if quoted || rust {
                        found.entry(word).or_insert_with(|| file.clone());
                    }
                }
                rest = &rest[at + "tracelens ".len()..];
            }
        }
    }
    found
}

#[test]
fn every_tracelens_command_a_fix_or_doc_names_exists() {
    let named = named_subcommands();
    assert!(
        named.contains_key("analyze") && named.contains_key("check"),
        "the scan finds the documented commands: {named:?}"
    );
    // Words that follow "tracelens " in a literal without being a command.
    let prose = [
        "does", "is", "reads", "writes", "can", "cannot", "has", "does-not",
    ];
    for (word, file) in named {
        if prose.contains(&word.as_str()) {
            continue;
        }
        let run = tracelens([word.as_str(), "--help"]);
        assert_eq!(
            run.code, 0,
            "`tracelens {word}` (named in {file}) is not a command: {}",
            run.stderr
        );
    }
}
