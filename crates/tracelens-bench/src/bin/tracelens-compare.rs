//! Runs two `tracelens` binaries on every trace under a folder and reports where their JSON
//! reports differ: the check that a speed or memory change leaves every answer as it was.
//!
//! `tracelens-compare --old OLD_BIN --new NEW_BIN [--corpus DIR]` (default `TRACELENS_CORPUS`,
//! else `../shared/traces`). Exit 0 when every report is identical, 1 when some differ, 2 on
//! a usage error. Each differing trace is listed with up to five differing JSON paths.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use tracelens_bench::option;

/// Paths listed per differing trace.
const PATHS_SHOWN: usize = 5;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(old), Some(new)) = (option(&args, "--old"), option(&args, "--new")) else {
        eprintln!("usage: tracelens-compare --old OLD_BIN --new NEW_BIN [--corpus DIR]");
        return ExitCode::from(2);
    };
    let corpus = option(&args, "--corpus")
        .or_else(|| std::env::var("TRACELENS_CORPUS").ok())
        .unwrap_or_else(|| "../shared/traces".into());
    let mut traces = Vec::new();
    collect_traces(Path::new(&corpus), &mut traces);
    traces.sort();
    if traces.is_empty() {
        eprintln!("{corpus}: no traces found");
        return ExitCode::from(2);
    }
    let (mut same, mut differ) = (0usize, 0usize);
    for t in &traces {
        let ((a, a_exit), (b, b_exit)) = (report(&old, t), report(&new, t));
        if (&a, a_exit) == (&b, b_exit) {
            same += 1;
            continue;
        }
        differ += 1;
        println!("differs: {}", t.display().to_string().escape_debug());
        if a_exit != b_exit {
            println!("  exit status {a_exit:?} -> {b_exit:?}");
        }
        let parsed = (
            serde_json::from_slice::<serde_json::Value>(&a),
            serde_json::from_slice::<serde_json::Value>(&b),
        );
        match parsed {
            (Ok(x), Ok(y)) => {
                let mut paths = Vec::new();
                diff(&x, &y, String::new(), &mut paths);
                for p in paths.iter().take(PATHS_SHOWN) {
                    println!("  {p}");
                }
                if paths.len() > PATHS_SHOWN {
                    println!("  … {} more", paths.len() - PATHS_SHOWN);
                }
            }
            _ => println!("  (not both JSON: {} vs {} bytes)", a.len(), b.len()),
        }
    }
    println!("{} traces: {same} identical, {differ} differ", traces.len());
    if differ == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Trace files under `dir`: Kineto JSON (plain or gzip) and Nsight Systems SQLite exports.
fn collect_traces(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect_traces(&p, out);
            continue;
        }
        let name = p.file_name().map(|n| n.to_string_lossy().to_lowercase());
        if name.is_some_and(|n| {
            n.ends_with(".json") || n.ends_with(".json.gz") || n.ends_with(".sqlite")
        }) {
            out.push(p);
        }
    }
}

/// The JSON report (stdout) of one binary on one trace and its exit status.
fn report(bin: &str, trace: &Path) -> (Vec<u8>, Option<i32>) {
    match Command::new(bin)
        .args(["analyze", "--format", "json", "-o", "-", "-q"])
        .arg(trace)
        .output()
    {
        Ok(o) => (o.stdout, o.status.code()),
        Err(e) => (format!("cannot run {bin}: {e}").into_bytes(), None),
    }
}

/// JSON paths where `a` and `b` differ, in document order.
fn diff(a: &serde_json::Value, b: &serde_json::Value, path: String, out: &mut Vec<String>) {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                // Keys can be trace strings: escaped for the terminal (values print as JSON).
                let key = k.escape_debug();
                match y.get(k) {
                    Some(w) => diff(v, w, format!("{path}/{key}"), out),
                    None => out.push(format!("{path}/{key}: only in old")),
                }
            }
            for k in y.keys().filter(|k| !x.contains_key(*k)) {
                out.push(format!("{path}/{}: only in new", k.escape_debug()));
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                out.push(format!("{path}: {} items, now {}", x.len(), y.len()));
            }
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                diff(v, w, format!("{path}/{i}"), out);
            }
        }
        _ if a != b => out.push(format!("{path}: {a} -> {b}")),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::diff;
    use serde_json::json;

    #[test]
    fn every_difference_is_listed_by_its_path() {
        let old = json!({"a": 1, "b": [1, 2], "gone": true, "k\u{1b}": 0});
        let new = json!({"a": 2, "b": [1], "new": null, "k\u{1b}": 0});
        let mut paths = Vec::new();
        diff(&old, &new, String::new(), &mut paths);
        assert_eq!(
            paths,
            [
                "/a: 1 -> 2",
                "/b: 2 items, now 1",
                "/gone: only in old",
                "/new: only in new"
            ]
        );
        let mut none = Vec::new();
        diff(&old, &old, String::new(), &mut none);
        assert!(none.is_empty());
    }
}
