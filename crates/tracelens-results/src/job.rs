//! One distributed job from one trace per rank: which rank the others wait for, and why.
//!
//! Each rank is reduced to a [`RankSummary`] (its results, its collectives in order, its step
//! times) as soon as it is analysed, so the traces themselves never live together. Collectives
//! are matched across ranks by their order on the rank's communication streams (the k-th
//! collective of every rank is the same call); a rank's *wait* at a collective is its time
//! inside it before the last rank arrived, and the rank that arrives last is the one the
//! others wait for.

use crate::report::Report;
use crate::results::Results;
use serde::{Deserialize, Serialize};
pub use tracelens_analysis::collectives::Collective;
use tracelens_model::{format_ms, TimeNs};

/// What the job analysis keeps of one rank.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankSummary {
    /// The file it came from.
    pub file: String,
    /// `distributedInfo.rank` (Kineto), when the trace says.
    pub rank_in_trace: Option<i64>,
    /// `distributedInfo.world_size`, when the trace says.
    pub world_size: Option<i64>,
    /// Its results.
    pub results: Results,
    /// Its collective kernels on the focus device, by start.
    pub collectives: Vec<Collective>,
    /// Step number and length of each profiled step.
    pub steps: Vec<(i64, TimeNs)>,
}

impl RankSummary {
    /// Summarises one analysed rank: its report and its collectives on the focus device
    /// ([`tracelens_analysis::collectives::collectives_on`]).
    #[must_use]
    pub fn of(report: &Report, collectives: Vec<Collective>) -> RankSummary {
        let d = &report.diagnosis;
        let distributed = report.metadata.distributed.as_ref();
        RankSummary {
            file: report.input.path.clone(),
            rank_in_trace: distributed.and_then(|x| x.rank),
            world_size: distributed.and_then(|x| x.world_size),
            results: report.results.clone(),
            collectives,
            steps: d
                .window
                .as_ref()
                .map(|w| {
                    w.steps
                        .iter()
                        .map(|s| (s.number, s.interval.dur_ns()))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// One rank's row of the job table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankRow {
    /// The rank.
    pub rank: i64,
    /// Its file.
    pub file: String,
    /// Mean step (or window).
    pub step_ns: TimeNs,
    /// GPU busy, percent.
    pub gpu_busy_percent: f64,
    /// Time in collective kernels per step.
    pub collective_ns: TimeNs,
    /// That as a share of the step, percent.
    pub collective_percent: f64,
    /// Time per step spent inside collectives waiting for the last rank.
    pub wait_ns: TimeNs,
    /// Collectives at which this rank arrived last.
    pub last_arrivals: usize,
    /// Its largest idle cause per step, if any.
    pub top_cause: Option<(String, TimeNs)>,
    /// Its top finding's title.
    pub top_finding: Option<String>,
    /// Step lengths, by step number.
    pub steps: Vec<(i64, TimeNs)>,
}

/// The rank the others wait for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Straggler {
    /// The rank.
    pub rank: i64,
    /// Collectives it reached last.
    pub last_at: usize,
    /// Collectives matched.
    pub of: usize,
    /// The others' wait for it, per step, summed over ranks.
    pub others_wait_ns: TimeNs,
    /// What it was doing, in words.
    pub explanation: String,
}

/// The whole job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// Ranks, by rank.
    pub ranks: Vec<RankRow>,
    /// How ranks were numbered (`distributedInfo.rank`, or file order).
    pub rank_source: String,
    /// Collectives matched across all ranks.
    pub collectives_matched: usize,
    /// Collectives per rank differ: only the first `collectives_matched` were compared.
    pub collective_counts_differ: bool,
    /// The rank the others wait for, when the job has collectives.
    pub straggler: Option<Straggler>,
    /// Step-time spread across ranks: (slowest − fastest) / fastest mean step, percent.
    pub step_time_spread_percent: f64,
    /// The job in one line.
    pub verdict: String,
}

/// The digits of a file name that look like a rank (`rank-3`, `worker3_…`, `…_rank3.json`).
fn rank_from_name(file: &str) -> Option<i64> {
    let name = std::path::Path::new(file)
        .file_name()?
        .to_string_lossy()
        .to_lowercase();
    for key in ["rank", "worker"] {
        if let Some(at) = name.find(key) {
            let digits: String = name[at + key.len()..]
                .trim_start_matches(['-', '_'])
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if let Ok(n) = digits.parse() {
                return Some(n);
            }
        }
    }
    None
}

/// Numbers the ranks, checks they form one job, and finds who waits for whom.
pub fn analyze_job(ranks: &[RankSummary]) -> Result<Job, String> {
    if ranks.is_empty() {
        return Err("no traces".into());
    }
    // Rank numbers: from the traces, else from the file names, else file order.
    let (numbers, source): (Vec<i64>, &str) = if ranks.iter().all(|r| r.rank_in_trace.is_some()) {
        (
            ranks.iter().map(|r| r.rank_in_trace.unwrap_or(0)).collect(),
            "distributedInfo.rank of each trace",
        )
    } else if ranks.iter().all(|r| rank_from_name(&r.file).is_some()) {
        (
            ranks
                .iter()
                .map(|r| rank_from_name(&r.file).unwrap_or(0))
                .collect(),
            "the file names (the traces do not say their rank)",
        )
    } else {
        (
            (0..ranks.len())
                .map(|i| i64::try_from(i).unwrap_or(i64::MAX))
                .collect(),
            "file order (neither the traces nor their names give a rank)",
        )
    };
    let mut seen = std::collections::BTreeMap::new();
    for (r, n) in ranks.iter().zip(&numbers) {
        if let Some(other) = seen.insert(*n, r.file.clone()) {
            return Err(format!(
                "{} and {} are both rank {n}: not one job",
                other, r.file
            ));
        }
    }
    let worlds: std::collections::BTreeSet<i64> =
        ranks.iter().filter_map(|r| r.world_size).collect();
    if worlds.len() > 1 {
        return Err(format!(
            "the traces come from jobs of different sizes (world_size {}): analyse one job at a time",
            worlds.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
        ));
    }
    let mut order: Vec<usize> = (0..ranks.len()).collect();
    order.sort_by_key(|&i| numbers[i]);
    let numbers: Vec<i64> = order.iter().map(|&i| numbers[i]).collect();
    let ranks: Vec<&RankSummary> = order.iter().map(|&i| &ranks[i]).collect();
    // Collectives matched by order.
    let matched = ranks.iter().map(|r| r.collectives.len()).min().unwrap_or(0);
    let differ = ranks.iter().any(|r| r.collectives.len() != matched);
    let n = ranks.len();
    let mut wait = vec![0i64; n];
    let mut last = vec![0usize; n];
    let mut others_wait_for = vec![0i64; n];
    for k in 0..matched {
        let arrivals: Vec<TimeNs> = ranks.iter().map(|r| r.collectives[k].start_ns).collect();
        let (late, &last_arrival) = arrivals
            .iter()
            .enumerate()
            .max_by_key(|&(i, &a)| (a, std::cmp::Reverse(i)))
            .expect("at least one rank");
        last[late] += 1;
        for (i, r) in ranks.iter().enumerate() {
            let w = (last_arrival - arrivals[i]).clamp(0, r.collectives[k].dur_ns);
            wait[i] += w;
            others_wait_for[late] += w;
        }
    }
    let per_step = |r: &RankSummary, ns: TimeNs| {
        ns / i64::try_from(r.results.step_count.max(1)).unwrap_or(i64::MAX)
    };
    let rows: Vec<RankRow> = ranks
        .iter()
        .zip(&numbers)
        .enumerate()
        .map(|(i, (r, &rank))| {
            let coll: TimeNs = r.collectives.iter().map(|c| c.dur_ns).sum();
            let coll = per_step(r, coll);
            RankRow {
                rank,
                file: r.file.clone(),
                step_ns: r.results.step_ns,
                gpu_busy_percent: r.results.gpu_busy_percent,
                collective_ns: coll,
                collective_percent: if r.results.step_ns > 0 {
                    (coll as f64 * 100.0 / r.results.step_ns as f64).min(100.0)
                } else {
                    0.0
                },
                wait_ns: per_step(r, wait[i]),
                last_arrivals: last[i],
                top_cause: r
                    .results
                    .idle_by_cause
                    .first()
                    .map(|c| (c.cause.label().replace('_', " "), c.per_step_ns)),
                top_finding: r.results.findings.first().map(|f| f.title.clone()),
                steps: r.steps.clone(),
            }
        })
        .collect();
    let straggler = (matched > 0).then(|| {
        let i = (0..n)
            .max_by_key(|&i| (last[i], std::cmp::Reverse(wait[i]), std::cmp::Reverse(i)))
            .expect("ranks");
        let row = &rows[i];
        let doing = match (&row.top_finding, &row.top_cause) {
            (Some(f), _) => format!("its top finding: {f}"),
            (None, Some((cause, ns))) => format!("its GPU idled {} per step ({cause})", format_ms(*ns)),
            (None, None) => "no idle cause stands out on it".to_string(),
        };
        Straggler {
            rank: row.rank,
            last_at: last[i],
            of: matched,
            others_wait_ns: per_step(ranks[i], others_wait_for[i]),
            explanation: format!(
                "rank {} arrives last at {} of {} collectives and the other ranks wait {} per step for it inside them; {doing}",
                row.rank,
                last[i],
                matched,
                format_ms(per_step(ranks[i], others_wait_for[i]))
            ),
        }
    });
    let fastest = rows
        .iter()
        .map(|r| r.step_ns)
        .filter(|&s| s > 0)
        .min()
        .unwrap_or(0);
    let slowest = rows.iter().map(|r| r.step_ns).max().unwrap_or(0);
    let spread = if fastest > 0 {
        (slowest - fastest) as f64 * 100.0 / fastest as f64
    } else {
        0.0
    };
    let verdict = match &straggler {
        Some(s) => format!("{} ranks; {}", rows.len(), s.explanation),
        None => format!(
            "{} ranks, no collectives in the traces; step time spread {spread:.1} % across ranks",
            rows.len()
        ),
    };
    Ok(Job {
        ranks: rows,
        rank_source: source.to_string(),
        collectives_matched: matched,
        collective_counts_differ: differ,
        straggler,
        step_time_spread_percent: spread,
        verdict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_from_file_names() {
        assert_eq!(rank_from_name("dir/sampled_rank-1.json.gz"), Some(1));
        assert_eq!(rank_from_name("worker7_step_12.169.pt.trace.json"), Some(7));
        assert_eq!(rank_from_name("trace.json"), None);
    }
}
