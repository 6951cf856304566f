//! `tracelens history` over a series built from the corpus's before/after pair (resnet50 with
//! four DataLoader workers, then with none) and generated runs around them (the same results
//! with their step time moved inside the runs' own spread): the regression is found at the
//! run where it starts, named by the finding that appeared, and nothing is found on noise.

use serde_json::Value;
use std::path::{Path, PathBuf};
use tracelens_tests::{corpus_dir, tracelens};

/// The stored result of `trace` labelled `label`, with its step time scaled by `scale`
/// (generated runs: the same program with run-to-run noise).
fn result_doc(trace: &Path, label: &str, scale: f64, dir: &Path, n: usize) -> PathBuf {
    let r = tracelens([
        "analyze".into(),
        trace.as_os_str().to_owned(),
        "--format".into(),
        "json".into(),
        "--label".into(),
        label.into(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut doc: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["label"], label);
    for pointer in [
        "/diagnosis/verdict/step_ns",
        "/diagnosis/window/step/mean_ns",
    ] {
        let v = doc.pointer_mut(pointer).unwrap();
        *v = Value::from(tracelens_analysis::num::float_ns(
            (v.as_f64().unwrap() * scale).round(),
        ));
    }
    let path = dir.join(format!("run{n:02}.json"));
    std::fs::write(&path, serde_json::to_string(&doc).unwrap()).unwrap();
    path
}

#[test]
#[cfg_attr(
    no_corpus,
    ignore = "no trace corpus: set TRACELENS_CORPUS to shared/traces"
)]
fn history_finds_the_planted_regression_and_not_the_noise() {
    let Some(root) = corpus_dir("history_finds_the_planted_regression_and_not_the_noise") else {
        return;
    };
    let samples = root.join("kineto/tb_plugin/samples");
    let fast = samples.join("resnet50_num_workers_4/worker0.1623213129365.pt.trace.json.gz");
    let slow = samples.join("resnet50_num_workers_0/worker0.pt.trace.json.gz");
    let dir = std::env::temp_dir().join(format!("tracelens-history-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // In the traces' own time order: three runs without workers (January 2021), three with
    // four (June 2021: 4 % faster, inside these runs' 8-20 % step spread, so not a change),
    // then three generated from the June run with a planted 35 % step regression.
    let plan = [
        (&slow, 1.00),
        (&slow, 1.02),
        (&slow, 0.99),
        (&fast, 1.00),
        (&fast, 0.985),
        (&fast, 1.01),
        (&fast, 1.35),
        (&fast, 1.36),
        (&fast, 1.34),
    ];
    let docs: Vec<PathBuf> = plan
        .iter()
        .enumerate()
        .map(|(i, (trace, scale))| {
            result_doc(trace, &format!("commit{:02}", i + 1), *scale, &dir, i + 1)
        })
        .collect();
    let mut args: Vec<String> = vec!["history".into()];
    args.extend(docs.iter().map(|d| d.display().to_string()));
    args.extend(["--format".into(), "json".into()]);
    let r = tracelens(args.clone());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let h: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(h["order"], "by the time each trace was recorded");
    let changes = h["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{}", r.stdout);
    assert_eq!(changes[0]["at"], 6, "{}", r.stdout);
    assert!(changes[0]["change_percent"].as_f64().unwrap() > 20.0);
    // Noise alone (the first six runs: two traces, their jitter): nothing.
    let mut noise: Vec<String> = vec!["history".into()];
    noise.extend(docs[..6].iter().map(|d| d.display().to_string()));
    let r = tracelens(noise);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .starts_with("6 runs: no change in step time beyond the noise"),
        "{}",
        r.stdout
    );
    // The gate: run 7 against the six before it regresses beyond their noise; run 6 against
    // the five before it does not.
    let gate = |this: &PathBuf, earlier: &[PathBuf]| {
        let mut args: Vec<String> = vec![
            "check".into(),
            this.display().to_string(),
            "--rule".into(),
            "history.regression == 1".into(),
            "--history".into(),
        ];
        args.extend(earlier.iter().map(|d| d.display().to_string()));
        tracelens(args)
    };
    let r = gate(&docs[6], &docs[..6]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let r = gate(&docs[5], &docs[..5]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // Without earlier runs the rule is refused, not passed.
    let r = tracelens([
        "check".to_string(),
        docs[6].display().to_string(),
        "--rule".into(),
        "history.regression == 1".into(),
    ]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(r.stderr.contains("--history"), "{}", r.stderr);
    // The page: one chart per figure, the runs linking their reports, the change named.
    let html = dir.join("history.html");
    let mut page = args[..args.len() - 2].to_vec();
    page.extend(["-o".into(), html.display().to_string()]);
    let r = tracelens(page);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(text.contains("<h2>Step time</h2>") && text.contains("<h2>GPU busy</h2>"));
    assert!(text.contains("run 7 (commit07)"), "the change is named");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A finding that appears at the change is named there (runs recorded at one time keep the
/// order given).
#[test]
fn the_finding_that_appeared_is_named_at_the_change() {
    let dir = std::env::temp_dir().join(format!("tracelens-history-f-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let scenarios = tracelens_tests::fixtures_dir().join("scenarios");
    let fast = scenarios.join("dataloader_multi_process_fast.json");
    let slow = scenarios.join("dataloader_single_process.json");
    let plan = [
        (&fast, 1.0),
        (&fast, 1.01),
        (&fast, 0.99),
        (&slow, 1.0),
        (&slow, 1.01),
    ];
    let docs: Vec<String> = plan
        .iter()
        .enumerate()
        .map(|(i, (t, s))| {
            result_doc(t, &format!("run{}", i + 1), *s, &dir, i + 1)
                .display()
                .to_string()
        })
        .collect();
    let mut args = vec!["history".to_string()];
    args.extend(docs);
    let r = tracelens(args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let flat = r.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("run 4 (run4): step"), "{}", r.stdout);
    assert!(
        flat.contains("new: 74 % of step time the GPU waits for the DataLoader"),
        "{}",
        r.stdout
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn history_refuses_what_is_not_a_result() {
    let r = tracelens(["history", "/nonexistent/run.json"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("/nonexistent/run.json"), "{}", r.stderr);
}

/// A label is the document's text: one plain line in the terminal, escaped in Markdown, never
/// a workflow command or markup of its own.
#[test]
fn a_hostile_label_stays_text() {
    let dir = std::env::temp_dir().join(format!("tracelens-history-h-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let trace = tracelens_tests::fixtures_dir().join("scenarios/item_every_step.json");
    let label = "v1\n::error::pwned ``` ![x](http://127.0.0.1:9/p.png) <b>";
    let docs: Vec<String> = (1..=2)
        .map(|n| {
            result_doc(&trace, label, 1.0, &dir, n)
                .display()
                .to_string()
        })
        .collect();
    let mut args = vec!["history".to_string()];
    args.extend(docs.clone());
    let r = tracelens(args.clone());
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.lines().all(|l| !l.starts_with("::")),
        "{}",
        r.stdout
    );
    args.extend(["--format".into(), "md".into()]);
    let md = tracelens(args).stdout;
    assert!(
        md.lines().all(|l| !l.trim_start().starts_with("::")),
        "{md}"
    );
    assert!(!md.contains("![x]") && !md.contains("<b>"), "{md}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A folder of result documents reads as those documents (anything else in it left alone),
/// and Parquet tables are runs too: one rank's folder, or a job's folder of rank folders
/// (whose run is its gate rank, as the job's stored result).
#[test]
fn history_reads_folders_of_results_and_parquet_tables() {
    let dir = std::env::temp_dir().join(format!("tracelens-history-d-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let results = dir.join("results");
    std::fs::create_dir_all(&results).unwrap();
    let scenarios = tracelens_tests::fixtures_dir().join("scenarios");
    let fast = scenarios.join("dataloader_multi_process_fast.json");
    let slow = scenarios.join("dataloader_single_process.json");
    let docs: Vec<String> = [(&fast, 1.0), (&fast, 1.01), (&slow, 1.0)]
        .iter()
        .enumerate()
        .map(|(i, (t, s))| {
            result_doc(t, &format!("run{}", i + 1), *s, &results, i + 1)
                .display()
                .to_string()
        })
        .collect();
    // Not results: a trace and a note.
    std::fs::copy(&fast, results.join("trace.json")).unwrap();
    std::fs::write(results.join("notes.txt"), "not a run").unwrap();
    let history_json = |args: Vec<String>| -> Value {
        let mut all = vec!["history".to_string()];
        all.extend(args);
        all.extend(["--format".into(), "json".into()]);
        let r = tracelens(all);
        assert_eq!(r.code, 0, "{}", r.stderr);
        serde_json::from_str(&r.stdout).unwrap()
    };
    let of_files = history_json(docs);
    let of_folder = history_json(vec![results.display().to_string()]);
    assert_eq!(of_folder["runs"].as_array().unwrap().len(), 3);
    assert_eq!(of_folder, of_files);

    // Two jobs mapped to Parquet: the second has a rank that loads data 11 ms longer.
    let mut job_steps = Vec::new();
    for (name, slow_rank) in [("balanced", None), ("straggler", Some(2))] {
        let traces = dir.join(format!("{name}-traces"));
        tracelens_tests::synthetic_job::write_job(&traces, 4, slow_rank);
        let tables = dir.join(name);
        for r in 0..4 {
            let run = tracelens([
                "analyze".to_string(),
                traces.join(format!("rank{r}.json")).display().to_string(),
                "--format".into(),
                "parquet".into(),
                "-o".into(),
                tables.join(format!("rank-{r}")).display().to_string(),
            ]);
            assert_eq!(run.code, 0, "{}", run.stderr);
        }
        let direct = tracelens([
            "analyze".to_string(),
            traces.display().to_string(),
            "--format".into(),
            "json".into(),
            "--no-report".into(),
        ]);
        assert_eq!(direct.code, 0, "{}", direct.stderr);
        let direct: Value = serde_json::from_str(&direct.stdout).unwrap();
        job_steps.push(direct["gate_rank"]["results"]["step_ns"].clone());
    }
    let h = history_json(vec![
        dir.join("balanced").display().to_string(),
        dir.join("straggler").display().to_string(),
        dir.join("straggler/rank-0").display().to_string(),
    ]);
    let runs = h["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3, "{h}");
    assert_eq!(runs[0]["label"], "balanced");
    assert_eq!(runs[1]["label"], "straggler");
    assert_eq!(runs[2]["label"], "rank-0");
    // A job's run is its gate rank's, as `analyze DIR/` stores it.
    assert_eq!(runs[0]["step_ns"], job_steps[0], "{h}");
    assert_eq!(runs[1]["step_ns"], job_steps[1], "{h}");
    std::fs::remove_dir_all(&dir).unwrap();
}
