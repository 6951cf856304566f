//! `tracelens annotate`: the output is Chrome-trace JSON that Perfetto and chrome://tracing
//! open, holding every original event plus our tracks; analysing it gives the analysis of the
//! original (our events are skipped on import); its size is the input plus the annotations.

use std::path::Path;
use tracelens_tests::{corpus_dir, fixtures_dir, tracelens};

fn decoded(path: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut tracelens_load::open_decoded(path).unwrap(), &mut out).unwrap();
    out
}

/// Annotates `trace`, then checks format, round trip and size.
fn check_round_trip(trace: &Path, out_name: &str) -> serde_json::Value {
    let dir = std::env::temp_dir().join(format!(
        "tracelens-annotate-{}-{out_name}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(out_name);
    let run = tracelens([
        "annotate".into(),
        trace.as_os_str().to_owned(),
        "-o".into(),
        out.as_os_str().to_owned(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("ui.perfetto.dev"), "{}", run.stdout);
    // Chrome trace format: an object with a traceEvents array; ours are well-formed.
    let text = decoded(&out);
    let doc: serde_json::Value = serde_json::from_slice(&text).expect("valid JSON");
    // Both containers Perfetto reads: {"traceEvents": [...]} and the bare array.
    let events = doc
        .get("traceEvents")
        .unwrap_or(&doc)
        .as_array()
        .expect("traceEvents");
    let ours: Vec<&serde_json::Value> = events.iter().filter(|e| e["cat"] == "tracelens").collect();
    assert!(!ours.is_empty());
    let mut annotation_bytes = 0;
    for e in &ours {
        annotation_bytes += e.to_string().len() + 2;
        let ph = e["ph"].as_str().unwrap();
        assert!(["X", "M", "s", "f"].contains(&ph), "{e}");
        assert!(e["pid"].is_number() || e["pid"].is_string(), "{e}");
        if ph != "M" {
            assert!(e["ts"].is_number(), "{e}");
        }
        if ph == "X" {
            assert!(e["dur"].as_f64().unwrap() >= 0.0, "{e}");
        }
    }
    // Every original event is there, unchanged in number.
    let original: serde_json::Value = serde_json::from_slice(&decoded(trace)).unwrap();
    let original_events = original
        .get("traceEvents")
        .or(Some(&original))
        .and_then(|v| v.as_array())
        .unwrap();
    assert_eq!(events.len(), original_events.len() + ours.len());
    // The same analysis.
    let json = |p: &Path| {
        let run = tracelens([
            "analyze".into(),
            p.as_os_str().to_owned(),
            "--format".into(),
            "json".into(),
        ]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let mut v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        v.as_object_mut().unwrap().remove("input");
        v
    };
    assert_eq!(
        json(trace),
        json(&out),
        "the annotated trace analyses differently"
    );
    // Size: within 10 % of the input plus the annotations.
    let input_len = decoded(trace).len();
    assert!(
        text.len() as f64 <= input_len as f64 * 1.1 + annotation_bytes as f64,
        "{} bytes from {input_len} + {annotation_bytes}",
        text.len()
    );
    std::fs::remove_dir_all(&dir).unwrap();
    doc
}

#[test]
fn annotated_fixture_round_trips_with_findings_idle_and_flows() {
    let doc = check_round_trip(
        &fixtures_dir().join("scenarios/item_every_step.json"),
        "item.annotated.json",
    );
    let events = doc["traceEvents"].as_array().unwrap();
    let ours = |ph: &str| {
        events
            .iter()
            .filter(|e| e["cat"] == "tracelens" && e["ph"] == ph)
            .count()
    };
    assert!(ours("X") > 0 && ours("s") > 0 && ours("s") == ours("f"));
    let finding = events
        .iter()
        .find(|e| e["cat"] == "tracelens" && e["tid"] == 1 && e["ph"] == "X")
        .expect("a finding slice");
    assert!(finding["args"]["title"]
        .as_str()
        .unwrap()
        .contains(".item()"));
    assert!(finding["args"]["fix"].is_string() && finding["args"]["win"].is_string());
    assert!(events.iter().any(|e| e["name"] == "idle: sync drain"));
    // The critical path: slices back to back on its own track, arrows where it changes
    // between host and GPU and where it enters a thread.
    let path: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["cat"] == "tracelens" && e["tid"] == 2 && e["ph"] == "X")
        .collect();
    assert!(path.len() > 3, "{} critical-path slices", path.len());
    let us = |v: &serde_json::Value| v.as_f64().unwrap();
    for w in path.windows(2) {
        let end = us(&w[0]["ts"]) + us(&w[0]["dur"]);
        assert!(
            (end - us(&w[1]["ts"])).abs() < 1e-3,
            "{} then {}",
            w[0],
            w[1]
        );
    }
    assert!(path.iter().any(|e| e["args"]["kind"] == "kernel"));
    assert!(events
        .iter()
        .any(|e| e["cat"] == "tracelens" && e["name"] == "critical path" && e["ph"] == "s"));
}

#[test]
#[cfg_attr(
    no_corpus,
    ignore = "no trace corpus: set TRACELENS_CORPUS to shared/traces"
)]
fn annotated_corpus_trace_round_trips() {
    let Some(root) = corpus_dir("annotated_corpus_trace_round_trips") else {
        return;
    };
    check_round_trip(
        &root.join("kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.pt.trace.json.gz"),
        "resnet.annotated.json.gz",
    );
}

#[test]
fn a_bare_array_trace_stays_a_bare_array() {
    let doc = check_round_trip(
        &fixtures_dir().join("kineto/bare_array_2020.json"),
        "bare.annotated.json",
    );
    assert!(doc.is_array());
}

#[test]
fn annotate_refuses_what_it_cannot_do() {
    let trace = fixtures_dir().join("scenarios/item_every_step.json");
    let run = tracelens([
        "annotate".into(),
        trace.as_os_str().to_owned(),
        "-o".into(),
        trace.as_os_str().to_owned(),
    ]);
    assert_eq!(run.code, 2);
    assert!(run
        .stderr
        .contains("refusing to write the output over the input"));
    let run = tracelens(["annotate", "-"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("not stdin"), "{}", run.stderr);
}
