//! `tracelens-bench [--sizes 100,1000] [--tracelens PATH] [--dir DIR] [--gzip] [--replicate TRACE] [--nsys EXPORT] [--suite] [--baseline PATH] [--peers] [--hta PYTHON]`
//!
//! For each size, generates (once) a trace under DIR — synthetic, with `--replicate` a real
//! corpus trace copied to the size, or with `--nsys` an Nsight Systems export inflated to the
//! size (`tracelens-inflate-nsys`) — then in the same run times `cat FILE > /dev/null` and
//! `tracelens analyze FILE --format json` (output discarded), and prints throughput in MB/s
//! of trace text and events/s, the ratio to `cat`, CPU use, peak RSS and peak RSS per kept
//! event (row, for an export).
//!
//! With `--suite`: the four inputs of one comparison in one run — a real Kineto trace
//! replicated to the largest size, plain and gzip-compressed, and a real Nsight Systems
//! export inflated to each size (`--sizes`, default 500,1000); the sources are `--replicate`
//! and `--nsys`, or the corpus's (`TRACELENS_CORPUS`, default `../shared/traces`).
//!
//! With `--baseline PATH` (a `tracelens` built from an earlier release or commit: `just
//! bench-baseline REV` builds one), also times that binary on the same files in the same run,
//! alternating with the current one, and prints the ratios: a regression shows as a ratio
//! above 1.
//!
//! With `--peers`: installs the peer tools at pinned versions into venvs under `DIR/peers`
//! (HTA for Kineto traces, nsys-ai for exports; see `tracelens_bench::peers`) and runs each on
//! the same files, between the two runs of tracelens, printing same-run ratios. `--hta
//! PYTHON` (or `TRACELENS_HTA_PYTHON`) uses a Python that imports `hta` instead of installing
//! one. A peer that cannot be installed is left out with a line saying so.

use std::path::{Path, PathBuf};
use std::process::Command;
use tracelens_bench::measure::Measure;
use tracelens_bench::peers::{self, Peers};

/// A successful run, measured.
fn measure(cmd: &mut Command) -> Measure {
    let m = tracelens_bench::measure::measure(cmd);
    assert_eq!(m.exit_code, Some(0), "{cmd:?} failed");
    m
}

/// The faster of two runs: these machines are noisy.
fn best(a: Measure, b: Measure) -> Measure {
    if a.seconds <= b.seconds {
        a
    } else {
        b
    }
}

/// What an input is, for the generator and the peer that reads it.
#[derive(Clone, Copy, PartialEq)]
enum Format {
    Kineto,
    KinetoGzip,
    Nsight,
}

/// One file the run measures.
struct Input {
    name: String,
    path: PathBuf,
    format: Format,
    /// Trace text in MB (for gzip, the text inside).
    text_mb: f64,
}

/// The tools next to this binary that make inputs.
struct Makers {
    gen: PathBuf,
    replicator: PathBuf,
    inflater: PathBuf,
}

impl Makers {
    fn beside_this_binary() -> Makers {
        let me = PathBuf::from(std::env::args().next().unwrap());
        Makers {
            gen: me.with_file_name("tracelens-gen"),
            replicator: me.with_file_name("tracelens-replicate"),
            inflater: me.with_file_name("tracelens-inflate-nsys"),
        }
    }

    /// The input of `size` MB in `format`, made under `dir` unless already there: from `src`
    /// (a Kineto trace replicated, an export inflated) or synthetic without one.
    fn make(&self, dir: &Path, format: Format, size: u64, src: Option<&str>) -> Input {
        let name = match (format, src) {
            (Format::Nsight, _) => format!("nsys_{size}mb.sqlite"),
            (Format::Kineto, Some(_)) => format!("replicated_{size}mb.json"),
            (Format::KinetoGzip, Some(_)) => format!("replicated_{size}mb.json.gz"),
            (Format::Kineto, None) => format!("synthetic_{size}mb.json"),
            (Format::KinetoGzip, None) => format!("synthetic_{size}mb.json.gz"),
        };
        let path = dir.join(&name);
        if !path.exists() {
            let run = |cmd: &mut Command| {
                let ok = cmd.status().map(|s| s.success()).unwrap_or(false);
                assert!(ok, "making {} failed: {cmd:?}", path.display());
            };
            match (format, src) {
                (Format::Nsight, Some(src)) => run(Command::new(&self.inflater)
                    .arg(src)
                    .arg(&path)
                    .arg(size.to_string())),
                (Format::Nsight, None) => panic!("an Nsight input needs --nsys EXPORT"),
                (Format::Kineto, Some(src)) => run(Command::new(&self.replicator)
                    .arg(src)
                    .arg(&path)
                    .arg(size.to_string())),
                (Format::KinetoGzip, Some(_)) => {
                    let plain = self.make(dir, Format::Kineto, size, src);
                    gzip(&plain.path, &path);
                }
                (Format::Kineto | Format::KinetoGzip, None) => {
                    let mut cmd = Command::new(&self.gen);
                    cmd.arg(size.to_string()).arg(&path);
                    if format == Format::KinetoGzip {
                        cmd.arg("--gzip");
                    }
                    run(&mut cmd);
                }
            }
        }
        let file_mb = std::fs::metadata(&path).unwrap().len() as f64 / 1e6;
        let text_mb = match (format, src) {
            (Format::KinetoGzip, None) => size as f64,
            (Format::KinetoGzip, Some(_)) => {
                let plain = dir.join(format!("replicated_{size}mb.json"));
                std::fs::metadata(plain).map_or(size as f64, |m| m.len() as f64 / 1e6)
            }
            _ => file_mb,
        };
        Input {
            name,
            path,
            format,
            text_mb,
        }
    }
}

/// `plain` gzip-compressed into `out` (Python's and Kineto's own format), via a temporary name.
fn gzip(plain: &Path, out: &Path) {
    let part = out.with_extension("gz.part");
    let mut from = std::fs::File::open(plain).expect("the plain input");
    let to = std::io::BufWriter::new(std::fs::File::create(&part).expect("the gzip input"));
    let mut enc = flate2::write::GzEncoder::new(to, flate2::Compression::default());
    std::io::copy(&mut from, &mut enc).expect("compressing");
    enc.finish().expect("compressing");
    std::fs::rename(&part, out).expect("the gzip input");
}

/// The machine, for the record: cores and load average.
fn machine_line() -> String {
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    format!("{cores} cores, load average {}", load.join(" "))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opt = |name: &str| tracelens_bench::option(&args, name);
    let flag = |name: &str| args.iter().any(|a| a == name);
    let suite = flag("--suite");
    let sizes: Vec<u64> = opt("--sizes")
        .unwrap_or_else(|| if suite { "500,1000" } else { "100,1000" }.into())
        .split(',')
        .map(|s| s.trim().parse().expect("--sizes takes MB numbers"))
        .collect();
    let dir = PathBuf::from(opt("--dir").unwrap_or_else(|| "bench-traces".into()));
    let tracelens = opt("--tracelens").unwrap_or_else(|| "target/release/tracelens".into());
    let baseline = opt("--baseline");
    std::fs::create_dir_all(&dir).expect("bench dir");
    let corpus = PathBuf::from(
        std::env::var("TRACELENS_CORPUS").unwrap_or_else(|_| "../shared/traces".into()),
    );
    let corpus_file = |rel: &str| corpus.join(rel).to_string_lossy().into_owned();
    let mut replicate = opt("--replicate");
    let mut nsys = opt("--nsys");
    if suite {
        replicate.get_or_insert_with(|| {
            corpus_file("kineto/tb_plugin/samples/resnet50_num_workers_4/worker0.pt.trace.json.gz")
        });
        nsys.get_or_insert_with(|| {
            corpus_file("nsys/converted/Raphael-Hao__Abacus__report1.qdrep.nsys2023.4.4.sqlite")
        });
    }
    let makers = Makers::beside_this_binary();
    let inputs: Vec<Input> = if suite {
        let largest = sizes.iter().copied().max().unwrap_or(1000);
        let kineto = replicate.as_deref();
        [Format::Kineto, Format::KinetoGzip]
            .into_iter()
            .map(|f| makers.make(&dir, f, largest, kineto))
            .chain(
                sizes
                    .iter()
                    .map(|&s| makers.make(&dir, Format::Nsight, s, nsys.as_deref())),
            )
            .collect()
    } else {
        let format = match (&nsys, flag("--gzip")) {
            (Some(_), true) => panic!("--nsys writes uncompressed exports"),
            (Some(_), false) => Format::Nsight,
            (None, true) => Format::KinetoGzip,
            (None, false) => Format::Kineto,
        };
        let src = nsys.as_deref().or(replicate.as_deref());
        sizes
            .iter()
            .map(|&s| makers.make(&dir, format, s, src))
            .collect()
    };
    let mut peers = if flag("--peers") {
        peers::install(&dir.join("peers"))
    } else {
        Peers::default()
    };
    if let Some(python) = opt("--hta").or_else(|| std::env::var("TRACELENS_HTA_PYTHON").ok()) {
        peers.hta_python = Some(PathBuf::from(python));
    }
    println!("Machine at the start: {}", machine_line());
    println!();
    println!(
        "| trace | file MB | text MB | cat s | tracelens s | tracelens MB/s | events/s | cat MB/s | time vs cat | CPU use | peak RSS MB | RSS per kept event |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut baseline_rows = Vec::new();
    let mut peer_rows = Vec::new();
    for input in &inputs {
        let (name, path) = (&input.name, &input.path);
        let file_mb = std::fs::metadata(path).unwrap().len() as f64 / 1e6;
        // Warm the page cache once so every command reads from memory.
        measure(Command::new("cat").arg(path));
        let cat = measure(Command::new("cat").arg(path));
        let analyze = |bin: &str| {
            tracelens_bench::measure::measure(
                Command::new(bin)
                    .args(["analyze", "--format", "json", "-o", "-", "-q"])
                    .arg(path),
            )
        };
        let run = |bin: &str| {
            let m = analyze(bin);
            assert_eq!(
                m.exit_code,
                Some(0),
                "{bin} analyze {} failed",
                path.display()
            );
            m
        };
        // tracelens, the baseline, the peers, tracelens again, the baseline again.
        let first = run(&tracelens);
        let old_first = baseline.as_deref().map(analyze);
        let peer_runs = run_peers(&peers, input, &dir);
        let tl = best(first, run(&tracelens));
        if let (Some(base), Some(old)) = (&baseline, old_first) {
            // An older binary may not finish a size (its memory budget): the row says so.
            baseline_rows.push(if old.exit_code == Some(0) {
                let old = best(old, analyze(base));
                format!(
                    "| {name} | {:.3} | {:.3} | {:.2} | {:.0} | {:.0} | {:.2} |",
                    tl.seconds,
                    old.seconds,
                    tl.seconds / old.seconds,
                    tl.peak_rss_kb as f64 / 1024.0,
                    old.peak_rss_kb as f64 / 1024.0,
                    tl.peak_rss_kb as f64 / old.peak_rss_kb.max(1) as f64
                )
            } else {
                format!(
                    "| {name} | {:.3} | failed (exit {:?}, signal {:?}, peak RSS {:.0} MB) | | {:.0} | | |",
                    tl.seconds,
                    old.exit_code,
                    old.signal,
                    old.peak_rss_kb as f64 / 1024.0,
                    tl.peak_rss_kb as f64 / 1024.0
                )
            });
        }
        peer_rows.extend(
            peer_runs
                .into_iter()
                .map(|(peer, m)| peer_row(name, &peer, m, &tl)),
        );
        // Events read and kept, from one more run's JSON.
        let doc = Command::new(&tracelens)
            .args(["analyze", "--format", "json"])
            .arg(path)
            .output()
            .expect("tracelens runs");
        let doc: serde_json::Value = serde_json::from_slice(&doc.stdout).unwrap_or_default();
        let read = doc["input"]["records_read"].as_f64().unwrap_or(0.0);
        let kept = doc["input"]["records_kept"]
            .as_f64()
            .unwrap_or(0.0)
            .max(1.0);
        let text_mb = input.text_mb;
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
    if !peer_rows.is_empty() {
        println!();
        println!("The peers on the same files, each run once between tracelens's two runs (tracelens: the faster of those):");
        println!();
        println!("| trace | peer | peer s | peer peak RSS MB | tracelens s | tracelens peak RSS MB | peer time / tracelens | peer memory / tracelens |");
        println!("|---|---|---:|---:|---:|---:|---:|---:|");
        for row in peer_rows {
            println!("{row}");
        }
    }
    println!();
    println!("Machine at the end: {}", machine_line());
}

/// Each peer that reads `input`, run once and measured: `(what ran, its measure)`, or its
/// failure.
fn run_peers(peers: &Peers, input: &Input, dir: &Path) -> Vec<(String, Result<Measure, String>)> {
    let work = dir.join("peer-work");
    let mut out = Vec::new();
    match input.format {
        Format::Kineto | Format::KinetoGzip => {
            if let Some(python) = &peers.hta_python {
                let m = peers::hta_idle_breakdown(python, &input.path, &work);
                let m = if m.exit_code == Some(0) {
                    Ok(m)
                } else {
                    Err(format!("exit {:?}, signal {:?}", m.exit_code, m.signal))
                };
                out.push(("HTA idle-time breakdown".to_string(), m));
            }
        }
        Format::Nsight => {
            if let Some(nsys_ai) = &peers.nsys_ai {
                match peers::nsys_ai_summary(nsys_ai, &input.path, &work) {
                    Ok((warm, summary)) => {
                        let first = Measure {
                            seconds: warm.seconds + summary.seconds,
                            cpu_seconds: warm.cpu_seconds + summary.cpu_seconds,
                            peak_rss_kb: warm.peak_rss_kb.max(summary.peak_rss_kb),
                            ..summary
                        };
                        out.push(("nsys-ai warm (builds its cache)".to_string(), Ok(warm)));
                        out.push(("nsys-ai summary (from the cache)".to_string(), Ok(summary)));
                        out.push(("nsys-ai warm + summary".to_string(), Ok(first)));
                    }
                    Err(e) => out.push(("nsys-ai warm + summary".to_string(), Err(e))),
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    out
}

/// One row of the peers' table.
fn peer_row(name: &str, peer: &str, m: Result<Measure, String>, tl: &Measure) -> String {
    match m {
        Ok(m) => format!(
            "| {name} | {peer} | {:.2} | {:.0} | {:.2} | {:.0} | {:.1}x | {:.1}x |",
            m.seconds,
            m.peak_rss_kb as f64 / 1024.0,
            tl.seconds,
            tl.peak_rss_kb as f64 / 1024.0,
            m.seconds / tl.seconds,
            m.peak_rss_kb as f64 / tl.peak_rss_kb.max(1) as f64
        ),
        Err(e) => format!(
            "| {name} | {peer} | failed ({e}) | | {:.2} | | | |",
            tl.seconds
        ),
    }
}
