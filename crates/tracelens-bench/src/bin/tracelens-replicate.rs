//! `tracelens-replicate SRC OUT SIZE_MB`: a realistic benchmark input made from a real trace.
//!
//! Copies the events of SRC (a Kineto trace small enough to load) again and again until OUT
//! holds about SIZE_MB of JSON, each copy shifted after the previous one in time, with its
//! correlation ids, `External id`s, Python ids and `ProfilerStep#N` numbers offset so the
//! copies never collide: the result reads like one long profile of the same job.

use serde_json::Value;
use std::io::{BufWriter, Read, Write};

fn load(path: &str) -> Value {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .expect("gzip");
        bytes = out;
    }
    serde_json::from_slice(&bytes).expect("a JSON trace")
}

fn num(v: &Value) -> Option<f64> {
    v.as_f64()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [src, out, size] = args.as_slice() else {
        eprintln!("usage: tracelens-replicate SRC OUT SIZE_MB");
        std::process::exit(2);
    };
    let target: u64 = size.parse::<u64>().expect("SIZE_MB") * 1_000_000;
    let mut doc = load(src);
    let events = doc
        .as_object_mut()
        .and_then(|o| o.remove("traceEvents"))
        .and_then(|e| e.as_array().cloned())
        .expect("a {\"traceEvents\": [...]} trace");
    let ts: Vec<f64> = events.iter().filter_map(|e| num(&e["ts"])).collect();
    let (lo, hi) = ts
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &t| (a.min(t), b.max(t)));
    let span = (hi - lo).max(1.0) + 1000.0;
    let max_of = |key: &str| {
        events
            .iter()
            .filter_map(|e| e["args"][key].as_i64())
            .max()
            .unwrap_or(0)
            + 1
    };
    let (corr, ext, py) = (
        max_of("correlation"),
        max_of("External id"),
        max_of("Python id"),
    );
    let steps = events
        .iter()
        .filter_map(|e| {
            e["name"]
                .as_str()?
                .strip_prefix("ProfilerStep#")?
                .parse::<i64>()
                .ok()
        })
        .max()
        .unwrap_or(0)
        + 1;
    let file = std::fs::File::create(out).unwrap_or_else(|e| panic!("{out}: {e}"));
    let mut w = BufWriter::with_capacity(1 << 20, file);
    write!(w, "{{\"traceEvents\": [").unwrap();
    let mut written: u64 = 0;
    let mut first = true;
    let mut copy: i64 = 0;
    while written < target {
        for e in &events {
            let mut e = e.clone();
            if copy > 0 {
                if let Some(t) = num(&e["ts"]) {
                    e["ts"] = Value::from(t + span * copy as f64);
                }
                for (key, step) in [
                    ("correlation", corr),
                    ("External id", ext),
                    ("Python id", py),
                ] {
                    if let Some(v) = e["args"][key].as_i64() {
                        e["args"][key] = Value::from(v + step * copy);
                    }
                }
                if e["ph"] == "s" || e["ph"] == "f" {
                    if let Some(v) = e["id"].as_i64() {
                        e["id"] = Value::from(v + corr * copy);
                    }
                }
                let renamed = e["name"]
                    .as_str()
                    .and_then(|n| n.strip_prefix("ProfilerStep#"))
                    .and_then(|n| n.parse::<i64>().ok())
                    .map(|n| format!("ProfilerStep#{}", n + steps * copy));
                if let Some(name) = renamed {
                    e["name"] = Value::from(name);
                }
            }
            // Metadata events once, with the first copy.
            if copy > 0 && e["ph"] == "M" {
                continue;
            }
            let text = e.to_string();
            if !first {
                w.write_all(b",\n").unwrap();
            }
            first = false;
            w.write_all(text.as_bytes()).unwrap();
            written += text.len() as u64 + 2;
        }
        copy += 1;
    }
    // The other top-level entries, as they were.
    let rest = serde_json::to_string(&doc).unwrap();
    let rest = &rest[1..rest.len() - 1];
    if rest.trim().is_empty() {
        write!(w, "]}}").unwrap();
    } else {
        write!(w, "], {rest}}}").unwrap();
    }
    w.flush().unwrap();
    eprintln!(
        "wrote {out}: {copy} copies of {src}, {} MB",
        written / 1_000_000
    );
}
