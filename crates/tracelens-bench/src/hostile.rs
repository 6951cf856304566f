//! Crafted inputs that once crashed tracelens or made it run away (issue 9), written on
//! demand so the repository holds generators, not multi-GB files. `tracelens-hostile` runs
//! the binary on each and reports exit code, time and peak memory.

use flate2::write::GzEncoder;
use flate2::Compression;
use std::io::{self, Write};

/// One crafted input: its file name, what it attacks, and how to write it.
pub struct Hostile {
    /// File name (the extension says whether it is gzip).
    pub name: &'static str,
    /// What it attacks.
    pub attack: &'static str,
    /// Writes the decoded text (gzip is applied by [`write_hostile`] from the name).
    pub write: fn(&mut dyn Write) -> io::Result<()>,
}

/// One kernel and its launch: enough for a valid trace with GPU activity.
const ONE_KERNEL: &str = r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 100, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 1}}, {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 98, "dur": 1, "args": {"correlation": 1}}"#;

fn repeat(out: &mut dyn Write, piece: &[u8], total_bytes: u64) -> io::Result<()> {
    let block = piece.repeat((1 << 20) / piece.len().max(1) + 1);
    let mut left = total_bytes;
    while left > 0 {
        let n = usize::try_from(left).map_or(block.len(), |l| l.min(block.len()));
        out.write_all(&block[..n])?;
        left -= n as u64;
    }
    Ok(())
}

/// Every crafted input, in the order the report lists them.
#[must_use]
pub fn all() -> Vec<Hostile> {
    vec![
        Hostile {
            name: "deep_array_metadata.json",
            attack: "metadata nested 25,000 levels deep (50 kB): stack overflow",
            write: |o| {
                write!(o, "{{\"traceEvents\": [{ONE_KERNEL}], \"meta\": ")?;
                repeat(o, b"[", 25_000)?;
                repeat(o, b"]", 25_000)?;
                write!(o, "}}")
            },
        },
        Hostile {
            name: "deep_object_metadata.json",
            attack:
                "metadata objects nested 8,000 levels (40 kB): time and memory square in the depth",
            write: |o| {
                write!(o, "{{\"traceEvents\": [{ONE_KERNEL}], \"meta\": ")?;
                repeat(o, b"{\"a\":", 8_000 * 5)?;
                write!(o, "1")?;
                repeat(o, b"}", 8_000)?;
                write!(o, "}}")
            },
        },
        Hostile {
            name: "top_level_keys_1gb.json.gz",
            attack: "1 GB of top-level keys in a ~1 MB gzip: every key kept",
            write: |o| {
                write!(o, "{{\"traceEvents\": [{ONE_KERNEL}], ")?;
                repeat(o, b"\"k\": 1, ", 1 << 30)?;
                write!(o, "\"end\": 1}}")
            },
        },
        Hostile {
            name: "unclosed_array_1gb.json.gz",
            attack: "1 GB of '[' that never closes, gzip: rescanned at every chunk",
            write: |o| repeat(o, b"[", 1 << 30),
        },
        Hostile {
            name: "cpu_threads_400k.json",
            attack: "400,000 CPU threads each launching one kernel: lists searched per lane",
            write: |o| threads(o, 400_000),
        },
        Hostile {
            name: "deep_python_frames.json",
            attack:
                "100,000 nested Python frames around 4,000 syncs: each sync walks the whole stack",
            write: |o| deep_frames(o, 100_000, 4_000),
        },
        Hostile {
            name: "nested_ranges_around_launches.json",
            attack: "11,000 nested user ranges around 160,000 launches (63 MB): each idle gap walked the enclosing ranges (issue 40)",
            write: |o| enclosed_launches(o, 11_000, 160_000, Nest::UserRanges),
        },
        Hostile {
            name: "overlapping_steps.json",
            attack: "100,000 overlapping ProfilerSteps (50 MB): each step scanned every launch (issue 40)",
            write: |o| enclosed_launches(o, 100_000, 100_000, Nest::Steps),
        },
        Hostile {
            name: "nested_compiled_regions.json",
            attack: "50,000 nested Torch-Compiled Regions around 50,000 launches, each after a compilation (issue 41): each compilation searched every region, each launch walked the nesting",
            write: |o| enclosed_launches(o, 50_000, 50_000, Nest::CompiledRegions),
        },
        Hostile {
            name: "nested_serving_iterations.json",
            attack: "50,000 nested engine iteration ranges around 50,000 launches (issue 41): each iteration scanned the launches of all inside it",
            write: |o| enclosed_launches(o, 50_000, 50_000, Nest::ServingIterations),
        },
    ]
}

/// What the nested ranges of [`enclosed_launches`] are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nest {
    /// User ranges (`region_N`).
    UserRanges,
    /// Overlapping `ProfilerStep#N` ranges.
    Steps,
    /// `Torch-Compiled Region: N/1` ops, a compilation before each launch.
    CompiledRegions,
    /// Labelled serving iterations (`execute_N_context_0(…)_generation_1(…)`).
    ServingIterations,
}

/// `ranges` ranges of kind `nest` nested around `launches` CPU ops on one thread, each
/// launching one kernel with idle time before it.
pub fn enclosed_launches(
    o: &mut dyn Write,
    ranges: u64,
    launches: u64,
    nest: Nest,
) -> io::Result<()> {
    let span_us = launches * 100 + ranges * 2 + 1_000;
    write!(o, "{{\"traceEvents\": [")?;
    for i in 0..ranges {
        let (cat, name) = match nest {
            Nest::UserRanges => ("user_annotation", format!("region_{i}")),
            Nest::Steps => ("user_annotation", format!("ProfilerStep#{i}")),
            Nest::CompiledRegions => ("cpu_op", format!("Torch-Compiled Region: {i}/1")),
            Nest::ServingIterations => (
                "user_annotation",
                format!("execute_{i}_context_0(sq0sk0sqsq0sqsk0)_generation_1(sq1sk9sqsq1sqsk9)"),
            ),
        };
        write!(
            o,
            r#"{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": 1, "tid": 1, "ts": {}, "dur": {}}}, "#,
            10 + i,
            span_us - 2 * i
        )?;
    }
    let base = 20 + ranges;
    for j in 0..launches {
        let t = base + j * 100;
        let c = j + 1;
        if j > 0 {
            write!(o, ", ")?;
        }
        if nest == Nest::CompiledRegions {
            write!(
                o,
                r#"{{"ph": "X", "cat": "cpu_op", "name": "_compile.compile_inner (dynamo_timed)", "pid": 1, "tid": 1, "ts": {}, "dur": 30}}, "#,
                t + 40
            )?;
        }
        launched_op(o, 1, c, (t, 20), (t + 5, 5), (t + 12, 10))?;
    }
    write!(o, "]}}")
}

/// One `aten::add` on thread `tid` whose `cudaLaunchKernel` (correlation `c`) launches kernel
/// `k` on stream 7; each part as (start µs, duration µs).
fn launched_op(
    o: &mut dyn Write,
    tid: u64,
    c: u64,
    (op_ts, op_dur): (u64, u64),
    (call_ts, call_dur): (u64, u64),
    (kernel_ts, kernel_dur): (u64, u64),
) -> io::Result<()> {
    write!(
        o,
        r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": {tid}, "ts": {op_ts}, "dur": {op_dur}}}, {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": {tid}, "ts": {call_ts}, "dur": {call_dur}, "args": {{"correlation": {c}}}}}, {{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": {kernel_ts}, "dur": {kernel_dur}, "args": {{"device": 0, "stream": 7, "correlation": {c}}}}}"#
    )
}

/// `n` CPU threads, each running one op that launches one kernel.
pub fn threads(o: &mut dyn Write, n: u64) -> io::Result<()> {
    write!(o, "{{\"traceEvents\": [")?;
    for i in 0..n {
        let t = 1_000 + i * 20;
        let tid = i + 10;
        let c = i + 1;
        if i > 0 {
            write!(o, ", ")?;
        }
        launched_op(o, tid, c, (t, 15), (t + 12, 2), (t + 14, 3))?;
    }
    write!(o, "]}}")
}

/// `frames` nested Python frames on one thread, then `syncs` `.item()` syncs inside them.
pub fn deep_frames(o: &mut dyn Write, frames: u64, syncs: u64) -> io::Result<()> {
    write!(o, "{{\"traceEvents\": [")?;
    let span_ns = 10_000_000_000u64;
    for i in 0..frames {
        write!(
            o,
            r#"{{"ph": "X", "cat": "python_function", "name": "lib/site-packages/m.py({i}): f{i}", "pid": 1, "tid": 1, "ts": {}.{:03}, "dur": {}.{:03}}}, "#,
            1_000 + i / 1000,
            i % 1000,
            (span_ns - 2 * i) / 1000,
            (span_ns - 2 * i) % 1000
        )?;
    }
    let base = 1_000 + frames / 1000 + 10;
    for j in 0..syncs {
        let t = base + j * 100;
        if j > 0 {
            write!(o, ", ")?;
        }
        write!(
            o,
            r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::item", "pid": 1, "tid": 1, "ts": {t}, "dur": 50}}, {{"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": {}, "dur": 40, "args": {{"correlation": {}}}}}, {{"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 1, "tid": 1, "ts": {}, "dur": 5}}, {{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "pid": 0, "tid": 7, "ts": {}, "dur": 10, "args": {{"device": 0, "stream": 7, "correlation": {}}}}}"#,
            t + 1,
            2 * j + 1,
            t + 42,
            t + 30,
            2 * j + 1
        )?;
    }
    write!(o, "]}}")
}

/// Writes `h` to `path`, gzip-compressed when the name ends in `.gz`.
pub fn write_hostile(h: &Hostile, path: &std::path::Path) -> io::Result<()> {
    let file = io::BufWriter::new(std::fs::File::create(path)?);
    if h.name.ends_with(".gz") {
        let mut gz = GzEncoder::new(file, Compression::new(6));
        (h.write)(&mut gz)?;
        gz.finish()?.flush()
    } else {
        let mut file = file;
        (h.write)(&mut file)?;
        file.flush()
    }
}

/// One crafted input of issue 21 (rules, Parquet, sizes, threads), with the command that
/// feeds it to tracelens: what a hostile trace author reaches beyond `analyze`.
pub struct Bomb {
    /// File or folder name.
    pub name: &'static str,
    /// What it attacks.
    pub attack: &'static str,
    /// Writes the input at the path (a file or a folder).
    pub prepare: fn(&std::path::Path) -> io::Result<()>,
    /// The tracelens arguments for the input at the path.
    pub args: fn(&std::path::Path) -> Vec<String>,
}

fn path_arg(p: &std::path::Path) -> String {
    p.display().to_string()
}

/// A small valid trace (one kernel) at `path`.
fn small_trace(path: &std::path::Path) -> io::Result<()> {
    std::fs::write(path, format!("{{\"traceEvents\": [{ONE_KERNEL}]}}"))
}

/// A rank folder whose `steps.parquet` holds `steps` identical rows (a small file).
fn steps_rank(dir: &std::path::Path, steps: i64) -> io::Result<()> {
    let summary = tracelens_results::RankSummary {
        file: "rank0.json".into(),
        rank_in_trace: Some(0),
        world_size: Some(1),
        // One repeated row: dictionary encoding keeps the file small.
        steps: (0..steps).map(|_| (0, 1_000)).collect(),
        ..tracelens_results::RankSummary::default()
    };
    tracelens_parquet::write_rank(dir, &summary).map_err(io::Error::other)
}

/// Two rank folders of `steps` steps each, in `dir`.
fn two_ranks(dir: &std::path::Path, steps: i64) -> io::Result<()> {
    for r in 0..2 {
        let summary = tracelens_results::RankSummary {
            file: format!("rank{r}.json"),
            rank_in_trace: Some(r),
            world_size: Some(2),
            steps: (0..steps).map(|i| (i, 1_000 + i % 97 + r)).collect(),
            ..tracelens_results::RankSummary::default()
        };
        tracelens_parquet::write_rank(&dir.join(format!("rank{r}")), &summary)
            .map_err(io::Error::other)?;
    }
    Ok(())
}

/// The inputs of issue 21, in the order the report lists them.
#[must_use]
pub fn issue21() -> Vec<Bomb> {
    vec![
        Bomb {
            name: "rule_7000_parens",
            attack: "check --rule with 7,000 nested parentheses: parser stack",
            prepare: small_trace,
            args: |p| {
                let rule = format!(
                    "{}gpu.idle_percent > 5{}",
                    "(".repeat(7000),
                    ")".repeat(7000)
                );
                vec!["check".into(), path_arg(p), "--rule".into(), rule]
            },
        },
        Bomb {
            name: "rule_20000_not",
            attack: "analyze --fail-on with 20,000 'not': parser stack",
            prepare: small_trace,
            args: |p| {
                let rule = format!("{}gpu.idle_percent > 5", "not ".repeat(20_000));
                vec![
                    "analyze".into(),
                    path_arg(p),
                    "--no-report".into(),
                    "--fail-on".into(),
                    rule,
                ]
            },
        },
        Bomb {
            name: "steps_10m_rows",
            attack: "merge of a rank whose steps.parquet holds 10 M rows in a small file",
            prepare: |d| steps_rank(d, 10_000_000),
            args: |d| vec!["merge".into(), path_arg(d)],
        },
        Bomb {
            name: "gpu_name_4mb.json",
            attack: "a 4 MB GPU name in the terminal summary: wrap() quadratic, 4.7 MB printed",
            prepare: |p| {
                let gpu = "G".repeat(4 << 20);
                std::fs::write(
                    p,
                    format!(
                        "{{\"traceEvents\": [{ONE_KERNEL}], \"deviceProperties\": [{{\"id\": 0, \"name\": \"{gpu}\"}}]}}"
                    ),
                )
            },
            args: |p| vec!["analyze".into(), path_arg(p), "--no-report".into()],
        },
        Bomb {
            name: "job_50000_steps",
            attack: "merge of 2 ranks x 50,000 steps to the HTML job page: heat map quadratic in steps",
            prepare: |d| two_ranks(d, 50_000),
            args: |d| {
                vec![
                    "merge".into(),
                    path_arg(&d.join("rank0")),
                    path_arg(&d.join("rank1")),
                    "--format".into(),
                    "html".into(),
                    "-o".into(),
                    path_arg(&d.join("job.html")),
                ]
            },
        },
        Bomb {
            name: "annotate_keys_1gb.json.gz",
            attack: "annotate of 1 GB of top-level keys in a ~1 MB gzip: every byte copied and recompressed",
            prepare: |p| {
                let h = all()
                    .into_iter()
                    .find(|h| h.name == "top_level_keys_1gb.json.gz")
                    .expect("the keys bomb");
                write_hostile(&h, p)
            },
            args: |p| {
                vec![
                    "annotate".into(),
                    path_arg(p),
                    "-o".into(),
                    format!("{}.annotated.json.gz", path_arg(p)),
                ]
            },
        },
        Bomb {
            name: "jobs_100000",
            attack: "analyze of two ranks with --jobs 100000: one thread per job",
            prepare: |d| {
                std::fs::create_dir_all(d)?;
                small_trace(&d.join("rank0.json"))?;
                small_trace(&d.join("rank1.json"))
            },
            args: |d| {
                vec![
                    "analyze".into(),
                    path_arg(d),
                    "--format".into(),
                    "json".into(),
                    "--jobs".into(),
                    "100000".into(),
                ]
            },
        },
    ]
}
