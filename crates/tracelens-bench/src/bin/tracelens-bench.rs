//! `tracelens-bench [--sizes 100,1000] [--tracelens PATH] [--dir DIR] [--gzip] [--replicate TRACE]`
//!
//! For each size, generates (once) a trace under DIR — synthetic, or with `--replicate` a real
//! corpus trace copied to the size — then in the same run times `cat FILE > /dev/null` and
//! `tracelens analyze FILE --format json` (output discarded), and prints throughput in MB/s
//! of trace text and events/s, the ratio to `cat`, CPU use, peak RSS and peak RSS per kept
//! event.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A successful run, measured.
fn measure(cmd: &mut Command) -> tracelens_bench::measure::Measure {
    let m = tracelens_bench::measure::measure(cmd);
    assert_eq!(m.exit_code, Some(0), "{cmd:?} failed");
    m
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opt = |name: &str| tracelens_bench::option(&args, name);
    let sizes: Vec<u64> = opt("--sizes")
        .unwrap_or_else(|| "100,1000".into())
        .split(',')
        .map(|s| s.trim().parse().expect("--sizes takes MB numbers"))
        .collect();
    let dir = PathBuf::from(opt("--dir").unwrap_or_else(|| "bench-traces".into()));
    let tracelens = opt("--tracelens").unwrap_or_else(|| "target/release/tracelens".into());
    let gzip = args.iter().any(|a| a == "--gzip");
    let gen = Path::new(&std::env::args().next().unwrap()).with_file_name("tracelens-gen");
    let replicate = opt("--replicate");
    let replicator =
        Path::new(&std::env::args().next().unwrap()).with_file_name("tracelens-replicate");
    std::fs::create_dir_all(&dir).expect("bench dir");
    println!(
        "| trace | file MB | text MB | cat s | tracelens s | tracelens MB/s | events/s | cat MB/s | time vs cat | CPU use | peak RSS MB | RSS per kept event |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for size in sizes {
        let kind = if replicate.is_some() {
            "replicated"
        } else {
            "synthetic"
        };
        let name = format!("{kind}_{size}mb.json{}", if gzip { ".gz" } else { "" });
        let path = dir.join(&name);
        if let (Some(src), false) = (&replicate, path.exists()) {
            assert!(!gzip, "--replicate writes plain JSON");
            let ok = Command::new(&replicator)
                .arg(src)
                .arg(&path)
                .arg(size.to_string())
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            assert!(ok, "replicating {src} failed");
        }
        if !path.exists() {
            let mut cmd = Command::new(&gen);
            cmd.arg(size.to_string()).arg(&path);
            if gzip {
                cmd.arg("--gzip");
            }
            let ok = cmd.status().map(|s| s.success()).unwrap_or(false);
            assert!(ok, "generating {} failed", path.display());
        }
        let file_mb = std::fs::metadata(&path).unwrap().len() as f64 / 1e6;
        let text_mb = if gzip { size as f64 } else { file_mb };
        // Warm the page cache once so both commands read from memory.
        measure(Command::new("cat").arg(&path));
        let cat = measure(Command::new("cat").arg(&path));
        let tl = measure(
            Command::new(&tracelens)
                .args(["analyze", "--format", "json"])
                .arg(&path),
        );
        // Events read and kept, from one more run's JSON.
        let doc = Command::new(&tracelens)
            .args(["analyze", "--format", "json"])
            .arg(&path)
            .output()
            .expect("tracelens runs");
        let doc: serde_json::Value = serde_json::from_slice(&doc.stdout).unwrap_or_default();
        let read = doc["input"]["events_read"].as_f64().unwrap_or(0.0);
        let kept = doc["input"]["events_kept"].as_f64().unwrap_or(0.0).max(1.0);
        println!(
            "| {name} | {file_mb:.0} | {text_mb:.0} | {:.3} | {:.3} | {:.0} | {:.1} M | {:.0} | {:.1}x | {:.0} % | {:.0} | {:.0} B |",
            cat.seconds,
            tl.seconds,
            text_mb / tl.seconds,
            read / tl.seconds / 1e6,
            file_mb / cat.seconds,
            tl.seconds / cat.seconds,
            tl.cpu_seconds * 100.0 / tl.seconds,
            tl.peak_rss_kb as f64 / 1024.0,
            tl.peak_rss_kb as f64 * 1024.0 / kept
        );
    }
}
