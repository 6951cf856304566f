//! `tracelens-hostile [--tracelens PATH] [--dir DIR] [--timeout S] [--set issue21]`
//!
//! Writes the crafted inputs of [`tracelens_bench::hostile`] under DIR (once), runs
//! `tracelens analyze FILE --format json` on each under `timeout`, and prints a table of exit
//! code, seconds and peak RSS: the before/after record of issue 9. `--set issue21` runs the
//! inputs of issue 21 instead (rules, Parquet, sizes, threads), each with its own command.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opt = |name: &str| tracelens_bench::option(&args, name);
    let dir = PathBuf::from(opt("--dir").unwrap_or_else(|| "bench-traces/hostile".into()));
    let tracelens = opt("--tracelens").unwrap_or_else(|| "target/release/tracelens".into());
    let timeout = opt("--timeout").unwrap_or_else(|| "180".into());
    std::fs::create_dir_all(&dir).expect("hostile dir");
    if opt("--set").as_deref() == Some("issue21") {
        return issue21(&dir, &tracelens, &timeout);
    }
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
        let exit = exit_text(&m, &timeout);
        println!(
            "| {} | {} | {file_mb:.2} | {exit} | {:.2} | {:.0} |",
            h.name,
            h.attack,
            m.seconds,
            m.peak_rss_kb as f64 / 1024.0
        );
    }
}

/// How a measured run ended, for the table.
fn exit_text(m: &tracelens_bench::measure::Measure, timeout: &str) -> String {
    match (m.exit_code, m.signal) {
        (Some(124), _) => format!("timed out ({timeout} s)"),
        (Some(c), _) => c.to_string(),
        (None, Some(s)) => format!("signal {s}"),
        (None, None) => "?".into(),
    }
}

/// Exit code, seconds and peak RSS of each issue-21 input.
fn issue21(dir: &std::path::Path, tracelens: &str, timeout: &str) {
    println!("| input | attack | exit | seconds | peak RSS MB |");
    println!("|---|---|---:|---:|---:|");
    for b in tracelens_bench::hostile::issue21() {
        let path = dir.join(b.name);
        if !path.exists() {
            (b.prepare)(&path).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        }
        let mut cmd = Command::new("timeout");
        cmd.arg(timeout).arg(tracelens).args((b.args)(&path));
        let m = tracelens_bench::measure::measure(&mut cmd);
        let exit = exit_text(&m, timeout);
        println!(
            "| {} | {} | {exit} | {:.2} | {:.0} |",
            b.name,
            b.attack,
            m.seconds,
            m.peak_rss_kb as f64 / 1024.0
        );
    }
}
