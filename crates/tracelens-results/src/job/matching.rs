//! The same collective call found on every rank that made it, the ranks' clocks aligned on
//! those calls, and who waited for whom.
//!
//! **Matching.** Collectives are grouped by process group (`Process Group Name`; one unnamed
//! group when the trace records none). Within a group, when every member's calls carry a
//! sequence number (`Seq`), calls are matched by it; otherwise the k-th call of every member is
//! the same call. Order across groups is never used: a tensor-parallel and a data-parallel
//! group interleave differently on different ranks.
//!
//! **Clocks.** All members leave a collective together, so the difference of two ranks' end
//! times at the same call is the difference of their clocks. Each rank's offset is the median
//! of those differences against the lowest rank (through another rank when the two share no
//! group); the skew is the spread of the offsets. Arrivals are compared on the aligned clock.
//!
//! **Waits.** A rank's wait at a call is its time inside it before the last member arrived
//! (never more than its own kernel time); the call's transfer time is the members' median time
//! from the last arrival to their end: what the link took once everyone was there.

use super::rank::RankSummary;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tracelens_analysis::attribute::collectives::{Collective, CollectiveOp};
use tracelens_model::TimeNs;

/// How one group's calls were matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchMethod {
    /// By the recorded sequence number.
    Sequence,
    /// By order within the group.
    Order,
}

/// The matching of one process group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupMatch {
    /// The group's name, or none for collectives that record no group.
    pub group: Option<String>,
    /// Ranks with calls in it.
    pub ranks: Vec<i64>,
    /// How its calls were matched.
    pub method: MatchMethod,
    /// Calls matched on every member.
    pub matched: usize,
    /// Whether members made different numbers of calls (only the common ones compared).
    pub counts_differ: bool,
}

/// One matched call.
#[derive(Clone, Debug)]
pub(crate) struct MatchedCall {
    /// The call on each member: (index into the job's ranks, index into its collectives).
    pub members: Vec<(usize, usize)>,
}

/// Every group's matched calls.
pub(crate) struct Matching {
    pub groups: Vec<GroupMatch>,
    pub calls: Vec<MatchedCall>,
}

/// Matches the ranks' collectives by group, then sequence number or order.
pub(crate) fn match_calls(ranks: &[&RankSummary], numbers: &[i64]) -> Matching {
    // Per group: per rank, its calls' indices in start order.
    let mut by_group: BTreeMap<Option<&str>, BTreeMap<usize, Vec<usize>>> = BTreeMap::new();
    for (r, rank) in ranks.iter().enumerate() {
        for (i, c) in rank.collectives.iter().enumerate() {
            by_group
                .entry(c.group.as_deref())
                .or_default()
                .entry(r)
                .or_default()
                .push(i);
        }
    }
    let mut groups = Vec::new();
    let mut calls = Vec::new();
    for (group, members) in by_group {
        if members.len() < 2 {
            // A group of one rank among the given traces matches nothing.
            continue;
        }
        let by_seq = members
            .iter()
            .all(|(&r, list)| list.iter().all(|&i| ranks[r].collectives[i].seq.is_some()));
        let counts: Vec<usize> = members.values().map(Vec::len).collect();
        let counts_differ = counts.iter().any(|&n| n != counts[0]);
        let before = calls.len();
        if by_seq {
            let mut seqs: BTreeMap<i64, Vec<(usize, usize)>> = BTreeMap::new();
            for (&r, list) in &members {
                for &i in list {
                    let seq = ranks[r].collectives[i].seq.unwrap_or(0);
                    let entry = seqs.entry(seq).or_default();
                    // A sequence number seen twice on one rank: its first call.
                    if !entry.iter().any(|&(rr, _)| rr == r) {
                        entry.push((r, i));
                    }
                }
            }
            calls.extend(
                seqs.into_values()
                    .filter(|m| m.len() == members.len())
                    .map(|members| MatchedCall { members }),
            );
        } else {
            let n = counts.iter().copied().min().unwrap_or(0);
            for k in 0..n {
                calls.push(MatchedCall {
                    members: members.iter().map(|(&r, list)| (r, list[k])).collect(),
                });
            }
        }
        groups.push(GroupMatch {
            group: group.map(str::to_string),
            ranks: members.keys().map(|&r| numbers[r]).collect(),
            method: if by_seq {
                MatchMethod::Sequence
            } else {
                MatchMethod::Order
            },
            matched: calls.len() - before,
            counts_differ,
        });
    }
    Matching { groups, calls }
}

/// The ranks' clocks against the lowest rank's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClockAlignment {
    /// Each rank's clock minus the reference rank's, by rank (0 for the reference; none for a
    /// rank that shares no matched call with the others).
    pub offsets_ns: Vec<(i64, Option<TimeNs>)>,
    /// The spread of the offsets: largest minus smallest.
    pub skew_ns: TimeNs,
    /// The matched calls the estimate used.
    pub calls_used: usize,
}

/// Each rank's clock offset, from the end times of the calls it shares with ranks already
/// aligned (starting from the first).
pub(crate) fn align_clocks(
    ranks: &[&RankSummary],
    numbers: &[i64],
    calls: &[MatchedCall],
) -> Option<ClockAlignment> {
    if calls.is_empty() {
        return None;
    }
    let n = ranks.len();
    let end = |r: usize, i: usize| ranks[r].collectives[i].end_ns();
    let mut offset: Vec<Option<TimeNs>> = vec![None; n];
    offset[0] = Some(0);
    // Each pass aligns every rank that shares a call with an aligned one; at most n passes.
    for _ in 0..n {
        let mut progressed = false;
        for r in 1..n {
            if offset[r].is_some() {
                continue;
            }
            let mut diffs: Vec<TimeNs> = calls
                .iter()
                .filter_map(|c| {
                    let mine = c.members.iter().find(|m| m.0 == r)?;
                    let anchor = c.members.iter().find(|m| offset[m.0].is_some())?;
                    Some(
                        end(r, mine.1)
                            .saturating_sub(end(anchor.0, anchor.1))
                            .saturating_add(offset[anchor.0]?),
                    )
                })
                .collect();
            if diffs.is_empty() {
                continue;
            }
            let mid = diffs.len() / 2;
            offset[r] = Some(*diffs.select_nth_unstable(mid).1);
            progressed = true;
        }
        if !progressed {
            break;
        }
    }
    let known: Vec<TimeNs> = offset.iter().flatten().copied().collect();
    let skew_ns = known
        .iter()
        .max()
        .copied()
        .unwrap_or(0)
        .saturating_sub(known.iter().min().copied().unwrap_or(0));
    Some(ClockAlignment {
        offsets_ns: numbers.iter().copied().zip(offset).collect(),
        skew_ns,
        calls_used: calls.len(),
    })
}

/// The least spread of arrivals at a call for its last rank to count as late.
const LATE_NS: TimeNs = 1_000;

/// What the matched calls say about each rank and each operation.
#[derive(Default)]
pub(crate) struct Waits {
    /// Per rank: wait inside calls that started in its window.
    pub wait_ns: Vec<TimeNs>,
    /// Per rank: calls at which it arrived last.
    pub last: Vec<usize>,
    /// Per rank (as the late one): the wait of each other rank it caused, per rank.
    pub caused_ns: Vec<Vec<TimeNs>>,
    /// Per operation: (calls, transfer time, bus bytes over sized calls, their transfer time).
    pub by_op: BTreeMap<CollectiveOp, (usize, TimeNs, f64, TimeNs)>,
}

/// Waits and transfer times of the matched calls, on the aligned clock.
pub(crate) fn waits(
    ranks: &[&RankSummary],
    calls: &[MatchedCall],
    clock: Option<&ClockAlignment>,
) -> Waits {
    let n = ranks.len();
    let offset = |r: usize| {
        clock
            .and_then(|c| c.offsets_ns.get(r))
            .and_then(|o| o.1)
            .unwrap_or(0)
    };
    let in_window = |r: usize, c: &Collective| {
        ranks[r]
            .window
            .is_none_or(|(a, b)| (a..b).contains(&c.start_ns))
    };
    let mut w = Waits {
        wait_ns: vec![0; n],
        last: vec![0; n],
        caused_ns: vec![vec![0; n]; n],
        by_op: BTreeMap::new(),
    };
    for call in calls {
        let at = |m: &(usize, usize)| &ranks[m.0].collectives[m.1];
        let arrivals: Vec<TimeNs> = call
            .members
            .iter()
            .map(|m| at(m).start_ns.saturating_sub(offset(m.0)))
            .collect();
        let Some((late_at, &last_arrival)) = arrivals
            .iter()
            .enumerate()
            .max_by_key(|&(i, &a)| (a, std::cmp::Reverse(call.members[i].0)))
        else {
            continue;
        };
        let late = call.members[late_at].0;
        // Arrivals within a microsecond of each other: nobody was late.
        let earliest = arrivals.iter().copied().min().unwrap_or(last_arrival);
        if last_arrival.saturating_sub(earliest) >= LATE_NS {
            w.last[late] += 1;
        }
        for (m, &arrival) in call.members.iter().zip(&arrivals) {
            let c = at(m);
            if !in_window(m.0, c) {
                continue;
            }
            let wait = last_arrival
                .saturating_sub(arrival)
                .clamp(0, c.dur_ns.max(0));
            w.wait_ns[m.0] = w.wait_ns[m.0].saturating_add(wait);
            w.caused_ns[late][m.0] = w.caused_ns[late][m.0].saturating_add(wait);
        }
        let mut transfer: Vec<TimeNs> = call
            .members
            .iter()
            .map(|m| {
                at(m)
                    .end_ns()
                    .saturating_sub(offset(m.0))
                    .saturating_sub(last_arrival)
                    .max(0)
            })
            .collect();
        let mid = transfer.len() / 2;
        let transfer_ns = *transfer.select_nth_unstable(mid).1;
        let first = at(&call.members[0]);
        let e = w.by_op.entry(first.op).or_insert((0, 0, 0.0, 0));
        e.0 += 1;
        e.1 = e.1.saturating_add(transfer_ns);
        if let Some(bus) = first.bus_bytes().filter(|_| transfer_ns > 0) {
            e.2 += bus;
            e.3 = e.3.saturating_add(transfer_ns);
        }
    }
    w
}
