//! `tracelens-hostile [--tracelens PATH] [--dir DIR] [--timeout S]`
//!
//! Writes the crafted inputs of [`tracelens_bench::hostile`] under DIR (once), runs
//! `tracelens analyze FILE --format json` on each under `timeout`, and prints a table of exit
//! code, seconds and peak RSS: the before/after record of issue 9.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opt = |name: &str| tracelens_bench::option(&args, name);
    let dir = PathBuf::from(opt("--dir").unwrap_or_else(|| "bench-traces/hostile".into()));
    let tracelens = opt("--tracelens").unwrap_or_else(|| "target/release/tracelens".into());
    let timeout = opt("--timeout").unwrap_or_else(|| "180".into());
    std::fs::create_dir_all(&dir).expect("hostile dir");
    println!("| input | attack | file MB | exit | seconds | peak RSS MB |");
    println!("|---|---|---:|---:|---:|---:|");
    for h in tracelens_bench::hostile::all() {
        let path = dir.join(h.name);
        if !path.exists() {
            tracelens_bench::hostile::write_hostile(&h, &path)
                .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        }
        let file_mb = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
        let m = tracelens_bench::measure::measure(
            Command::new("timeout")
                .arg(&timeout)
                .arg(&tracelens)
                .args(["analyze", "--format", "json"])
                .arg(&path),
        );
        let exit = match (m.exit_code, m.signal) {
            (Some(124), _) => format!("timed out ({timeout} s)"),
            (Some(c), _) => c.to_string(),
            (None, Some(s)) => format!("signal {s}"),
            (None, None) => "?".into(),
        };
        println!(
            "| {} | {} | {file_mb:.2} | {exit} | {:.2} | {:.0} |",
            h.name,
            h.attack,
            m.seconds,
            m.peak_rss_kb as f64 / 1024.0
        );
    }
}
