//! One distributed job from one trace per rank: which rank the others wait for, whether the
//! link is slow or communication is exposed, and why.
//!
//! Each rank is reduced to a [`RankSummary`] (its results, its collectives with their group,
//! sequence number and sizes, its step times) as soon as it is analysed, so the traces
//! themselves never live together. [`matching`] finds the same call on every rank, aligns the
//! clocks and measures who waited; this module checks the traces form one job, fills the rank
//! table and names the bottleneck.

mod document;
pub mod matching;
mod rank;

pub use document::{GateRank, JobDocument};

use matching::{align_clocks, match_calls, waits, ClockAlignment, GroupMatch, MatchMethod};
pub use rank::RankSummary;
use serde::{Deserialize, Serialize};
pub use tracelens_analysis::attribute::collectives::{Collective, CollectiveOp};
use tracelens_analysis::num::percent;
use tracelens_model::{format_ms, TimeNs};

/// One rank's step, split for the job page's stacked bar (per step; the parts sum to the step).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RankBreakdown {
    /// GPU busy with anything but exposed communication (compute, copies, and the
    /// communication hidden under them).
    pub compute_ns: TimeNs,
    /// Communication hidden under compute (part of `compute_ns`, shown for the overlap).
    pub comm_hidden_ns: TimeNs,
    /// Communication with no compute beside it.
    pub comm_exposed_ns: TimeNs,
    /// GPU idle waiting for the DataLoader.
    pub idle_data_loader_ns: TimeNs,
    /// GPU idle for every other cause, largest first.
    pub idle_other: Vec<(String, TimeNs)>,
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
    /// Time in collective kernels per step (their union on the focus device).
    pub collective_ns: TimeNs,
    /// That as a share of the step, percent.
    pub collective_percent: f64,
    /// Collective time per step with no compute beside it.
    #[serde(default)]
    pub exposed_ns: TimeNs,
    /// Share of collective time under compute, percent.
    #[serde(default)]
    pub overlap_percent: f64,
    /// This rank's time per step inside collectives waiting for the last member to arrive
    /// (never more than its step).
    pub wait_ns: TimeNs,
    /// Collectives at which this rank arrived last.
    pub last_arrivals: usize,
    /// Its clock minus the lowest rank's, when estimated.
    #[serde(default)]
    pub clock_offset_ns: Option<TimeNs>,
    /// Its largest idle cause per step, if any.
    pub top_cause: Option<(String, TimeNs)>,
    /// Its top finding's title.
    pub top_finding: Option<String>,
    /// Its step split for the stacked bar.
    #[serde(default)]
    pub breakdown: RankBreakdown,
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
    /// The other ranks' mean wait for it, per step of each (a per-rank figure, not a sum).
    pub others_wait_ns: TimeNs,
    /// What it was doing, in words.
    pub explanation: String,
}

/// One collective operation across the job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OperationRow {
    /// The operation.
    pub op: CollectiveOp,
    /// Matched calls.
    pub calls: usize,
    /// Mean transfer time per call: from the last member's arrival to the end.
    pub transfer_ns: TimeNs,
    /// Bus bandwidth over the transfer time of the sized calls, GB/s.
    pub busbw_gb_per_s: Option<f64>,
    /// That as a percent of the interconnect's peak, when the device is known.
    pub busbw_percent_of_peak: Option<f64>,
    /// NCCL algorithms seen on the first rank.
    pub algorithms: Vec<String>,
}

/// What bounds the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bottleneck {
    /// One rank arrives late and the others wait for it.
    Straggler,
    /// Everyone arrives together, and the transfer itself runs far below the link's peak.
    SlowTransfer,
    /// Communication runs alone, not hidden under compute.
    ExposedCommunication,
    /// Each rank's own problem (its top finding) dominates.
    RankProblem,
    /// Nothing stands out.
    Balanced,
}

/// The whole job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// Ranks, by rank.
    pub ranks: Vec<RankRow>,
    /// How ranks were numbered (`distributedInfo.rank`, or file order).
    pub rank_source: String,
    /// Collectives matched across all ranks (all groups).
    pub collectives_matched: usize,
    /// Some group's members made different numbers of calls: only the common ones compared.
    pub collective_counts_differ: bool,
    /// How each process group was matched.
    #[serde(default)]
    pub groups: Vec<GroupMatch>,
    /// The ranks' clocks, estimated from the matched calls.
    #[serde(default)]
    pub clock: Option<ClockAlignment>,
    /// Per operation: transfer time and bus bandwidth once every member arrived.
    #[serde(default)]
    pub operations: Vec<OperationRow>,
    /// The peer interconnect the bandwidths are compared with (the first rank's device).
    #[serde(default)]
    pub link: Option<String>,
    /// The rank the others wait for, when the job has collectives.
    pub straggler: Option<Straggler>,
    /// What bounds the job.
    #[serde(default = "balanced")]
    pub bottleneck: Bottleneck,
    /// Step-time spread across ranks: (slowest − fastest) / fastest mean step, percent.
    pub step_time_spread_percent: f64,
    /// Whether `--as-job` made traces one job that do not show it themselves.
    #[serde(default)]
    pub forced: bool,
    /// The job's size as the traces claim it (`distributedInfo.world_size`), when they do.
    #[serde(default)]
    pub world_size: Option<i64>,
    /// Ranks of that world not among the traces given (0 when all are, or unknown).
    #[serde(default)]
    pub missing_ranks: i64,
    /// The job in one line.
    pub verdict: String,
}

fn balanced() -> Bottleneck {
    Bottleneck::Balanced
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

/// Numbers the ranks: from the traces, else from the file names, else file order.
fn number_ranks(ranks: &[RankSummary]) -> (Vec<i64>, &'static str) {
    if one_capture(ranks) {
        (
            (0..ranks.len())
                .map(|i| i64::try_from(i).unwrap_or(i64::MAX))
                .collect(),
            "process order within the capture (the export records no rank)",
        )
    } else if ranks.iter().all(|r| r.rank_in_trace.is_some()) {
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
    }
}

/// Whether every rank is a process of the same capture (`FILE#process PID`): recorded
/// together, so one job by construction.
fn one_capture(ranks: &[RankSummary]) -> bool {
    let capture = |r: &RankSummary| r.file.rsplit_once("#process ").map(|(f, _)| f.to_string());
    let first = capture(&ranks[0]);
    first.is_some() && ranks.iter().all(|r| capture(r) == first)
}

/// Why `ranks` are not one job, when the traces show it: two traces of one rank, different
/// world sizes or backends, a rank beyond the world size; and, unless `as_job` or every trace
/// carries distributedInfo, a trace that shares neither most of its top kernels nor its
/// profiled step count with any other.
fn not_one_job(ranks: &[RankSummary], numbers: &[i64], as_job: bool) -> Option<String> {
    let mut seen = std::collections::BTreeMap::new();
    for (r, n) in ranks.iter().zip(numbers) {
        if let Some(other) = seen.insert(*n, r.file.clone()) {
            return Some(format!(
                "{} and {} are both rank {n}: not one job",
                other, r.file
            ));
        }
    }
    let worlds: std::collections::BTreeSet<i64> =
        ranks.iter().filter_map(|r| r.world_size).collect();
    if worlds.len() > 1 {
        return Some(format!(
            "the traces come from jobs of different sizes (world_size {}): analyse one job at a time",
            worlds.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
        ));
    }
    let backends: std::collections::BTreeSet<&str> =
        ranks.iter().filter_map(|r| r.backend.as_deref()).collect();
    if backends.len() > 1 {
        return Some(format!(
            "the traces come from jobs with different backends ({}): analyse one job at a time",
            backends.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    if let Some(&world) = worlds.iter().next() {
        if let Some((r, n)) = ranks
            .iter()
            .find_map(|r| Some((r, r.rank_in_trace?)).filter(|(_, n)| !(0..world).contains(n)))
        {
            return Some(format!(
                "{} is rank {n} of a world of {world}: not one job",
                r.file
            ));
        }
    }
    if as_job || one_capture(ranks) || ranks.iter().all(|r| r.world_size.is_some()) {
        return None;
    }
    // Some trace does not say it is a rank: ask for evidence that they belong together.
    let kernels: Vec<std::collections::BTreeSet<&str>> = ranks
        .iter()
        .map(|r| {
            r.results
                .top_kernels
                .iter()
                .map(|k| k.name.as_str())
                .collect()
        })
        .collect();
    for (i, r) in ranks.iter().enumerate() {
        // Ranks of one job run the same kernels: most of the shorter top-kernel list is
        // shared (a stray elementwise kernel in common is not enough).
        let related = ranks.iter().enumerate().any(|(j, o)| {
            let shared = kernels[i].intersection(&kernels[j]).count();
            let fewer = kernels[i].len().min(kernels[j].len());
            j != i
                && ((r.results.has_steps
                    && o.results.has_steps
                    && r.results.step_count == o.results.step_count)
                    || (fewer > 0 && shared * 2 >= fewer))
        });
        if !related {
            return Some(format!(
                "{} shares neither its kernels nor its step count with the other traces: not one job; analyse them one at a time, or pass --as-job",
                r.file
            ));
        }
    }
    None
}

/// Numbers the ranks, checks they form one job (`as_job` takes traces that do not show it as
/// one), matches their collectives, and finds who waits for whom and what bounds the job.
#[allow(clippy::too_many_lines, clippy::cast_precision_loss)]
pub fn analyze_job(ranks: &[RankSummary], as_job: bool) -> Result<Job, String> {
    if ranks.is_empty() {
        return Err("no traces".into());
    }
    let (numbers, source) = number_ranks(ranks);
    if let Some(why) = not_one_job(ranks, &numbers, as_job) {
        return Err(why);
    }
    let forced = as_job && not_one_job(ranks, &numbers, false).is_some();
    let mut order: Vec<usize> = (0..ranks.len()).collect();
    order.sort_by_key(|&i| numbers[i]);
    let numbers: Vec<i64> = order.iter().map(|&i| numbers[i]).collect();
    let ranks: Vec<&RankSummary> = order.iter().map(|&i| &ranks[i]).collect();
    let matching = match_calls(&ranks, &numbers);
    let clock = align_clocks(&ranks, &numbers, &matching.calls);
    let w = waits(&ranks, &matching.calls, clock.as_ref());
    let matched = matching.calls.len();
    let n = ranks.len();
    // One world size at most (different ones are not one job).
    let world_size = ranks.iter().find_map(|r| r.world_size);
    let missing_ranks = world_size.map_or(0, |w| {
        w.saturating_sub(i64::try_from(n).unwrap_or(i64::MAX))
            .max(0)
    });
    let given = ranks_phrase(n, world_size, missing_ranks);
    let steps_of = |r: &RankSummary| i64::try_from(r.results.step_count.max(1)).unwrap_or(i64::MAX);
    let rows: Vec<RankRow> = ranks
        .iter()
        .zip(&numbers)
        .enumerate()
        .map(|(i, (r, &rank))| {
            let res = &r.results;
            let comm = res.communication.as_ref();
            let coll = comm.map_or(0, |c| c.communication_ns) / steps_of(r);
            let exposed = comm
                .map_or(0, |c| c.exposed_per_step_ns)
                .min(res.step_ns.max(0));
            let idle = res.gpu_idle_per_step_ns.clamp(0, res.step_ns.max(0));
            let data_loader = res
                .idle_by_cause
                .iter()
                .filter(|c| c.cause == tracelens_analysis::attribute::idle::IdleCause::DataLoading)
                .map(|c| c.per_step_ns)
                .fold(0, TimeNs::saturating_add)
                .min(idle);
            let compute_ns = res
                .step_ns
                .saturating_sub(idle)
                .saturating_sub(exposed)
                .max(0);
            RankRow {
                rank,
                file: r.file.clone(),
                step_ns: res.step_ns,
                gpu_busy_percent: res.gpu_busy_percent,
                collective_ns: coll,
                collective_percent: percent(coll, res.step_ns),
                exposed_ns: exposed,
                overlap_percent: comm.map_or(0.0, |c| c.overlap_percent),
                wait_ns: (w.wait_ns[i] / steps_of(r)).min(res.step_ns.max(0)),
                last_arrivals: w.last[i],
                clock_offset_ns: clock
                    .as_ref()
                    .and_then(|c| c.offsets_ns.get(i))
                    .and_then(|o| o.1),
                top_cause: res
                    .idle_by_cause
                    .first()
                    .map(|c| (c.cause.label().replace('_', " "), c.per_step_ns)),
                top_finding: res.findings.first().map(|f| f.title.clone()),
                breakdown: RankBreakdown {
                    compute_ns,
                    comm_hidden_ns: (comm.map_or(0, |c| c.hidden_ns) / steps_of(r)).min(compute_ns),
                    comm_exposed_ns: exposed,
                    idle_data_loader_ns: data_loader,
                    idle_other: {
                        let mut other: Vec<(String, TimeNs)> = res
                            .idle_by_cause
                            .iter()
                            .filter(|c| {
                                c.cause
                                    != tracelens_analysis::attribute::idle::IdleCause::DataLoading
                            })
                            .map(|c| (c.cause.describe().to_string(), c.per_step_ns))
                            .collect();
                        // The causes' shares never outgrow the idle time they split.
                        let mut left = idle.saturating_sub(data_loader);
                        for o in &mut other {
                            o.1 = o.1.clamp(0, left.max(0));
                            left -= o.1;
                        }
                        other.retain(|o| o.1 > 0);
                        other
                    },
                },
                steps: r.steps.clone(),
            }
        })
        .collect();
    let straggler = (matched > 0).then(|| {
        let s = (0..n)
            .max_by_key(|&i| (w.last[i], std::cmp::Reverse(w.wait_ns[i]), std::cmp::Reverse(i)))
            .expect("ranks");
        let others: Vec<TimeNs> = (0..n)
            .filter(|&i| i != s)
            .map(|i| (w.caused_ns[s][i] / steps_of(ranks[i])).min(rows[i].step_ns.max(0)))
            .collect();
        let others_wait_ns = if others.is_empty() {
            0
        } else {
            others.iter().copied().fold(0, TimeNs::saturating_add)
                / i64::try_from(others.len()).unwrap_or(1)
        };
        let row = &rows[s];
        let doing = match (&row.top_finding, &row.top_cause) {
            (Some(f), _) => format!("its top finding: {f}"),
            (None, Some((cause, ns))) => {
                format!("its GPU idled {} per step ({cause})", format_ms(*ns))
            }
            (None, None) => "no idle cause stands out on it".to_string(),
        };
        Straggler {
            rank: row.rank,
            last_at: w.last[s],
            of: matched,
            others_wait_ns,
            explanation: format!(
                "rank {} arrives last at {} of {} collectives and each other rank waits {} per step on average for it inside them; {doing}",
                row.rank,
                w.last[s],
                matched,
                format_ms(others_wait_ns)
            ),
        }
    });
    let first_comm = ranks.iter().find_map(|r| r.results.communication.as_ref());
    let peak = first_comm.and_then(|c| c.link_gb_per_s);
    let operations: Vec<OperationRow> = w
        .by_op
        .iter()
        .map(|(&op, &(calls, transfer, bus, sized_ns))| {
            let busbw = (sized_ns > 0).then(|| bus / sized_ns as f64);
            OperationRow {
                op,
                calls,
                transfer_ns: transfer / i64::try_from(calls.max(1)).unwrap_or(1),
                busbw_gb_per_s: busbw,
                busbw_percent_of_peak: busbw.zip(peak).map(|(b, p)| (b * 100.0 / p).min(100.0)),
                algorithms: first_comm
                    .and_then(|c| c.by_op.iter().find(|o| o.op == op))
                    .map(|o| o.algorithms.clone())
                    .unwrap_or_default(),
            }
        })
        .collect();
    let fastest = rows
        .iter()
        .map(|r| r.step_ns)
        .filter(|&s| s > 0)
        .min()
        .unwrap_or(0);
    let slowest = rows.iter().map(|r| r.step_ns).max().unwrap_or(0);
    let spread = if fastest > 0 {
        slowest.saturating_sub(fastest) as f64 * 100.0 / fastest as f64
    } else {
        0.0
    };
    let mean = |f: &dyn Fn(&RankRow) -> TimeNs| {
        rows.iter().map(f).fold(0, TimeNs::saturating_add) / i64::try_from(n).unwrap_or(1)
    };
    let mean_step = mean(&|r| r.step_ns);
    let mean_exposed = mean(&|r| r.exposed_ns);
    let mean_wait = mean(&|r| r.wait_ns);
    let slowest_op = operations
        .iter()
        .filter(|o| o.busbw_percent_of_peak.is_some())
        .max_by_key(|o| {
            o.transfer_ns
                .saturating_mul(i64::try_from(o.calls).unwrap_or(0))
        });
    let top_rank_finding = ranks
        .iter()
        .flat_map(|r| r.results.findings.first())
        .max_by(|a, b| a.win_percent.total_cmp(&b.win_percent));
    let bottleneck = match &straggler {
        Some(s) if percent(s.others_wait_ns, mean_step) >= 5.0 && s.last_at * 2 >= s.of => {
            Bottleneck::Straggler
        }
        _ if slowest_op.is_some_and(|o| o.busbw_percent_of_peak < Some(25.0))
            && percent(mean_exposed, mean_step) >= 5.0 =>
        {
            Bottleneck::SlowTransfer
        }
        _ if percent(mean_exposed, mean_step) >= 10.0 => Bottleneck::ExposedCommunication,
        _ if top_rank_finding.is_some_and(|f| f.win_percent >= 10.0) => Bottleneck::RankProblem,
        _ => Bottleneck::Balanced,
    };
    let verdict = match (bottleneck, &straggler) {
        (_, None) => format!(
            "{given}, no collectives matched across them; step time spread {spread:.1} % across ranks{}",
            top_rank_finding
                .filter(|f| f.win_percent >= 10.0)
                .map_or_else(String::new, |f| format!("; the largest problem on a rank: {}", f.title))
        ),
        (Bottleneck::Straggler, Some(s)) => format!("{given}; {}", s.explanation),
        (Bottleneck::SlowTransfer, _) => {
            let o = slowest_op.expect("a slow operation");
            format!(
                "{given} arrive together (mean wait {} per step), but {} moves {:.1} GB/s of bus bandwidth once all have arrived, {:.0} % of the {} peak: the transfer is slow, not a rank; {} per step of communication is exposed on average",
                format_ms(mean_wait),
                o.op.label().replace('_', "-"),
                o.busbw_gb_per_s.unwrap_or(0.0),
                o.busbw_percent_of_peak.unwrap_or(0.0),
                first_comm.and_then(|c| c.link.clone()).unwrap_or_default(),
                format_ms(mean_exposed)
            )
        }
        (Bottleneck::ExposedCommunication, _) => format!(
            "{given}; communication runs {} per step ({:.1} %) on average with no compute beside it, and no rank is late for long (mean wait {} per step): overlap it with compute",
            format_ms(mean_exposed),
            percent(mean_exposed, mean_step),
            format_ms(mean_wait)
        ),
        (Bottleneck::RankProblem, _) => format!(
            "{given}; none waits long for another (mean wait {} per step), so each rank's own problem bounds the job: {}",
            format_ms(mean_wait),
            top_rank_finding.map_or("", |f| f.title.as_str())
        ),
        (Bottleneck::Balanced, _) => format!(
            "{given}; neither waiting for a late rank (mean {} per step, {:.1} % of the step) nor communication alone (mean {} per step, {:.1} %) bounds the job; step time spread {spread:.1} % across ranks",
            format_ms(mean_wait),
            percent(mean_wait, mean_step),
            format_ms(mean_exposed),
            percent(mean_exposed, mean_step)
        ),
    };
    Ok(Job {
        ranks: rows,
        rank_source: source.to_string(),
        collectives_matched: matched,
        collective_counts_differ: matching.groups.iter().any(|g| g.counts_differ),
        groups: matching.groups,
        clock,
        operations,
        link: first_comm.and_then(|c| c.link.clone()),
        straggler,
        bottleneck,
        step_time_spread_percent: spread,
        forced,
        world_size,
        missing_ranks,
        verdict,
    })
}

/// The ranks given, in words: `4 ranks`, or `2 of 8 ranks` when the world is larger.
fn ranks_phrase(given: usize, world_size: Option<i64>, missing_ranks: i64) -> String {
    match world_size {
        Some(world) if missing_ranks > 0 => format!("{given} of {world} ranks"),
        _ => format!("{given} ranks"),
    }
}

/// The ranks a job is about, in words (its verdict opens with them).
#[must_use]
pub fn ranks_words(job: &Job) -> String {
    ranks_phrase(job.ranks.len(), job.world_size, job.missing_ranks)
}

/// What the figures leave out when the traces are part of a larger job, in words; `None`
/// when every rank of the world is given (or the traces do not say its size).
#[must_use]
pub fn missing_ranks_words(job: &Job) -> Option<String> {
    (job.missing_ranks > 0).then(|| {
        format!(
            "the traces claim a world of {} ranks and {} are given: the other {} are not analysed, so waits, the straggler and the spread are among the ranks given only",
            job.world_size.unwrap_or(0),
            job.ranks.len(),
            job.missing_ranks
        )
    })
}

/// How a job's groups were matched, in words (`2 groups: "0" by sequence number, …`).
#[must_use]
pub fn matching_words(job: &Job) -> String {
    if job.groups.is_empty() {
        return "no collective is shared by two ranks".into();
    }
    job.groups
        .iter()
        .map(|g| {
            format!(
                "{} collectives of {} matched by {}{}",
                g.matched,
                g.group
                    .as_ref()
                    .map_or_else(|| "the unnamed group".to_string(), |n| format!("group {n}")),
                match g.method {
                    MatchMethod::Sequence => "sequence number",
                    MatchMethod::Order => "order",
                },
                if g.counts_differ {
                    " (ranks made different numbers of calls: the common ones compared)"
                } else {
                    ""
                }
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Results;

    /// Two ranks that reach each of 10 all-reduces of `bytes` together, each taking 10 ms of a
    /// 40 ms step with nothing beside it, on A100s (NVLink 3, 300 GB/s).
    fn together(bytes: u64) -> Vec<RankSummary> {
        (0..2)
            .map(|r| {
                let mut results = Results::empty();
                results.step_ns = 40_000_000;
                results.step_count = 10;
                results.has_steps = true;
                results.gpu_busy_percent = 100.0;
                results.communication = Some(
                    tracelens_analysis::attribute::communication::Communication {
                        communication_ns: 100_000_000,
                        exposed_ns: 100_000_000,
                        exposed_per_step_ns: 10_000_000,
                        exposed_percent: 25.0,
                        link: Some("NVLink 3 (12 links)".into()),
                        link_gb_per_s: Some(300.0),
                        ..Default::default()
                    },
                );
                RankSummary {
                    file: format!("rank{r}.json"),
                    rank_in_trace: Some(r),
                    world_size: Some(2),
                    results,
                    collectives: (0..10)
                        .map(|k| Collective {
                            name: "ncclDevKernel_AllReduce_RING_LL".into(),
                            op: CollectiveOp::AllReduce,
                            bytes: Some(bytes),
                            group_size: Some(2),
                            start_ns: k * 40_000_000,
                            dur_ns: 10_000_000,
                            ..Collective::default()
                        })
                        .collect(),
                    ..RankSummary::default()
                }
            })
            .collect()
    }

    #[test]
    #[allow(clippy::float_cmp)]
    fn a_slow_link_is_told_from_exposed_communication_and_a_late_rank() {
        // 10 MB in 10 ms: 1 GB/s of bus bandwidth, 0.3 % of NVLink: the transfer is slow.
        let job = analyze_job(&together(10_000_000), false).unwrap();
        assert_eq!(job.bottleneck, Bottleneck::SlowTransfer, "{}", job.verdict);
        assert_eq!(job.operations[0].busbw_gb_per_s, Some(1.0));
        assert!(
            job.verdict.contains("the transfer is slow"),
            "{}",
            job.verdict
        );
        assert_eq!(job.ranks[0].wait_ns, 0);
        // 2 GB in 10 ms is 200 GB/s, 67 % of the peak: the communication is merely exposed.
        let job = analyze_job(&together(2_000_000_000), false).unwrap();
        assert_eq!(
            job.bottleneck,
            Bottleneck::ExposedCommunication,
            "{}",
            job.verdict
        );
        // Rank 1 arrives 5 ms late at every call: a straggler, whatever the bandwidth.
        let mut late = together(10_000_000);
        for c in &mut late[1].collectives {
            c.start_ns += 5_000_000;
            c.dur_ns -= 5_000_000;
        }
        let job = analyze_job(&late, false).unwrap();
        assert_eq!(job.bottleneck, Bottleneck::Straggler, "{}", job.verdict);
        assert_eq!(job.straggler.as_ref().unwrap().rank, 1);
        assert_eq!(job.ranks[0].wait_ns, 5_000_000);
        assert_eq!(job.clock.as_ref().unwrap().skew_ns, 0);
    }

    #[test]
    fn ranks_missing_from_a_claimed_world_are_said() {
        // All ranks of a world of 2: the job, nothing to add.
        let job = analyze_job(&together(10_000_000), false).unwrap();
        assert_eq!((job.world_size, job.missing_ranks), (Some(2), 0));
        assert!(job.verdict.starts_with("2 ranks"), "{}", job.verdict);
        assert_eq!(ranks_words(&job), "2 ranks");
        assert_eq!(missing_ranks_words(&job), None);
        // 2 ranks of a claimed world of 2^31-1: part of a job, and every renderer says so.
        let mut part = together(10_000_000);
        for r in &mut part {
            r.world_size = Some(i64::from(i32::MAX));
        }
        let job = analyze_job(&part, false).unwrap();
        assert_eq!(job.missing_ranks, i64::from(i32::MAX) - 2);
        assert!(
            job.verdict.starts_with("2 of 2147483647 ranks"),
            "{}",
            job.verdict
        );
        assert_eq!(ranks_words(&job), "2 of 2147483647 ranks");
        let words = missing_ranks_words(&job).unwrap();
        assert!(
            words.contains("the other 2147483645 are not analysed"),
            "{words}"
        );
    }

    #[test]
    fn hostile_times_from_tables_neither_overflow_nor_panic() {
        // Rank folders read back by `merge` carry whatever a crafted table says.
        let mut ranks = together(10);
        for (r, t) in ranks.iter_mut().zip([i64::MIN, i64::MAX]) {
            r.results.step_ns = t;
            r.results.gpu_idle_per_step_ns = t.saturating_neg();
            for c in &mut r.collectives {
                c.start_ns = t;
                c.dur_ns = t;
            }
        }
        let job = analyze_job(&ranks, true).unwrap();
        assert!(job.ranks.iter().all(|r| r.wait_ns >= 0));
        assert!(job.step_time_spread_percent.is_finite());
    }

    #[test]
    fn ranks_from_file_names() {
        assert_eq!(rank_from_name("dir/sampled_rank-1.json.gz"), Some(1));
        assert_eq!(rank_from_name("worker7_step_12.169.pt.trace.json"), Some(7));
        assert_eq!(rank_from_name("trace.json"), None);
    }
}
