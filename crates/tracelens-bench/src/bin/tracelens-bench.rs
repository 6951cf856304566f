//! `tracelens-bench [--sizes 100,1000] [--tracelens PATH] [--dir DIR] [--gzip] [--replicate TRACE] [--nsys EXPORT] [--baseline PATH] [--hta PYTHON]`
//!
//! For each size, generates (once) a trace under DIR — synthetic, with `--replicate` a real
//! corpus trace copied to the size, or with `--nsys` an Nsight Systems export inflated to the
//! size (`tracelens-inflate-nsys`) — then in the same run times `cat FILE > /dev/null` and
//! `tracelens analyze FILE --format json` (output discarded), and prints throughput in MB/s
//! of trace text and events/s, the ratio to `cat`, CPU use, peak RSS and peak RSS per kept
//! event (row, for an export).
//!
//! With `--baseline PATH` (a `tracelens` built from an earlier release or commit: `just
//! bench-baseline REV` builds one), also times that binary on the same files in the same run,
//! alternating with the current one, and prints the ratios: a regression shows as a ratio
//! above 1.
//!
//! With `--hta PYTHON` (or `TRACELENS_HTA_PYTHON`): a Python that imports `hta`
//! (HolisticTraceAnalysis), also times HTA's idle-time breakdown on the same file and prints
//! how many times faster and leaner tracelens is. Never required; skipped when absent.

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
    let nsys = opt("--nsys");
    let baseline = opt("--baseline");
    let mut baseline_rows = Vec::new();
    let hta = opt("--hta").or_else(|| std::env::var("TRACELENS_HTA_PYTHON").ok());
    let mut hta_rows = Vec::new();
    let replicator =
        Path::new(&std::env::args().next().unwrap()).with_file_name("tracelens-replicate");
    let inflater =
        Path::new(&std::env::args().next().unwrap()).with_file_name("tracelens-inflate-nsys");
    std::fs::create_dir_all(&dir).expect("bench dir");
    println!(
        "| trace | file MB | text MB | cat s | tracelens s | tracelens MB/s | events/s | cat MB/s | time vs cat | CPU use | peak RSS MB | RSS per kept event |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for size in sizes {
        let name = match (&nsys, &replicate) {
            (Some(_), _) => format!("nsys_{size}mb.sqlite"),
            (None, Some(_)) => format!("replicated_{size}mb.json"),
            (None, None) => format!("synthetic_{size}mb.json{}", if gzip { ".gz" } else { "" }),
        };
        let path = dir.join(&name);
        // A real trace grown to the size: an export inflated, or a Kineto trace replicated.
        let grow = match (&nsys, &replicate) {
            (Some(src), _) => Some((src, &inflater)),
            (None, Some(src)) => Some((src, &replicator)),
            (None, None) => None,
        };
        if let (Some((src, tool)), false) = (grow, path.exists()) {
            assert!(!gzip, "--nsys and --replicate write uncompressed files");
            let ok = Command::new(tool)
                .arg(src)
                .arg(&path)
                .arg(size.to_string())
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            assert!(ok, "growing {src} to {size} MB failed");
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
        let run = |bin: &str| {
            measure(
                Command::new(bin)
                    .args(["analyze", "--format", "json", "-o", "-", "-q"])
                    .arg(&path),
            )
        };
        let tl = run(&tracelens);
        if let Some(base) = &baseline {
            // Alternate, and keep the faster of two runs of each: these machines are noisy.
            let run_base = || {
                tracelens_bench::measure::measure(
                    Command::new(base)
                        .args(["analyze", "--format", "json", "-o", "-", "-q"])
                        .arg(&path),
                )
            };
            let old = run_base();
            let again = run(&tracelens);
            let best = |a: tracelens_bench::measure::Measure,
                        b: tracelens_bench::measure::Measure| {
                if a.seconds <= b.seconds {
                    a
                } else {
                    b
                }
            };
            let new = best(tl, again);
            // An older binary may not finish a size (its memory budget): the row says so.
            baseline_rows.push(if old.exit_code == Some(0) {
                let old = best(old, run_base());
                format!(
                    "| {name} | {:.3} | {:.3} | {:.2} | {:.0} | {:.0} | {:.2} |",
                    new.seconds,
                    old.seconds,
                    new.seconds / old.seconds,
                    new.peak_rss_kb as f64 / 1024.0,
                    old.peak_rss_kb as f64 / 1024.0,
                    new.peak_rss_kb as f64 / old.peak_rss_kb.max(1) as f64
                )
            } else {
                format!(
                    "| {name} | {:.3} | failed (exit {:?}, signal {:?}, peak RSS {:.0} MB) | | {:.0} | | |",
                    new.seconds,
                    old.exit_code,
                    old.signal,
                    old.peak_rss_kb as f64 / 1024.0,
                    new.peak_rss_kb as f64 / 1024.0
                )
            });
        }
        // Events read and kept, from one more run's JSON.
        let doc = Command::new(&tracelens)
            .args(["analyze", "--format", "json"])
            .arg(&path)
            .output()
            .expect("tracelens runs");
        let doc: serde_json::Value = serde_json::from_slice(&doc.stdout).unwrap_or_default();
        let read = doc["input"]["records_read"].as_f64().unwrap_or(0.0);
        let kept = doc["input"]["records_kept"]
            .as_f64()
            .unwrap_or(0.0)
            .max(1.0);
        if let Some(python) = &hta {
            hta_rows.push(compare_with_hta(python, &path, &name, &tl, &dir));
        }
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
    if let Some(base) = &baseline {
        println!();
        println!("Against {base} (the faster of two alternating runs each; new/old above 1 is a regression):");
        println!();
        println!("| trace | tracelens s | baseline s | time new/old | peak RSS MB | baseline peak RSS MB | RSS new/old |");
        println!("|---|---:|---:|---:|---:|---:|---:|");
        for row in baseline_rows {
            println!("{row}");
        }
    }
    if !hta_rows.is_empty() {
        println!();
        println!("| trace | HTA s | HTA peak RSS MB | tracelens faster | tracelens less memory |");
        println!("|---|---:|---:|---:|---:|");
        for row in hta_rows {
            println!("{row}");
        }
    }
}

/// HTA's idle-time breakdown on `path` (in a folder of its own: HTA reads every file of a
/// trace folder as a rank), measured, as a table row against tracelens's run `tl`.
fn compare_with_hta(
    python: &str,
    path: &Path,
    name: &str,
    tl: &tracelens_bench::measure::Measure,
    dir: &Path,
) -> String {
    let folder = dir.join(format!("hta_{name}"));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).expect("HTA folder");
    let link = folder.join("rank0.json");
    let target = std::fs::canonicalize(path).expect("trace path");
    std::os::unix::fs::symlink(&target, &link).expect("link for HTA");
    let script = "import sys\nfrom hta.trace_analysis import TraceAnalysis\n\
                  a = TraceAnalysis(trace_dir=sys.argv[1])\n\
                  a.get_idle_time_breakdown(visualize=False)\n";
    let m =
        tracelens_bench::measure::measure(Command::new(python).args(["-c", script]).arg(&folder));
    let _ = std::fs::remove_dir_all(&folder);
    if m.exit_code != Some(0) {
        return format!("| {name} | HTA failed (exit {:?}) | | | |", m.exit_code);
    }
    format!(
        "| {name} | {:.2} | {:.0} | {:.0}x | {:.0}x |",
        m.seconds,
        m.peak_rss_kb as f64 / 1024.0,
        m.seconds / tl.seconds,
        m.peak_rss_kb as f64 / tl.peak_rss_kb.max(1) as f64
    )
}
