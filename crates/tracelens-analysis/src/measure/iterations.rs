//! The iterations of a trace without step marks, found by structure: a top-level range of one
//! thread (an NVTX range, a `record_function` or other user annotation) entered again and
//! again, one occurrence after another. Where such a loop has several phases (a reader, a
//! forward, a post-processing range, each entered N times), an iteration starts at its first
//! phase. Nothing repeating, nothing found: the window stays one span and nothing is said per
//! step.

use rustc_hash::FxHashMap;
use tracelens_model::{Interval, LaneId, NameId, SpanKind, Trace};

/// A range entered fewer times than this is no loop.
pub const MIN_ITERATIONS: usize = 3;

/// The found iterations must span at least this share of the trace's work (its GPU extent,
/// else its CPU extent): a repeated range in a corner of the capture is not its loop.
pub const MIN_COVER_PERCENT: f64 = 50.0;

/// Iterations found by structure.
#[derive(Clone, Debug, PartialEq)]
pub struct FoundIterations {
    /// The range that marks each iteration's start.
    pub marker: String,
    /// Each iteration's host interval, in time order: from one start of the marker to the
    /// next (the last to the end of its loop's last phase), or the marker's own ranges when
    /// they cover the iterations.
    pub host: Vec<Interval>,
}

impl FoundIterations {
    /// How they were found, in words ("304 iterations from the repeated range `reader`").
    #[must_use]
    pub fn describe(&self) -> String {
        format!(
            "{} iterations from the repeated top-level range `{}`",
            self.host.len(),
            self.marker
        )
    }
}

/// The occurrences of one top-level range name on one thread, in time order.
struct Repeats {
    lane: LaneId,
    name: NameId,
    ranges: Vec<Interval>,
}

impl Repeats {
    fn total_ns(&self) -> i64 {
        self.ranges.iter().map(Interval::dur_ns).sum()
    }

    /// Whether each occurrence of `self` falls in the same iteration as the same occurrence
    /// of `other`, before it: after `other`'s previous occurrence ends, no later than it starts.
    fn leads(&self, other: &Repeats) -> bool {
        self.ranges.len() == other.ranges.len()
            && self.ranges.iter().enumerate().all(|(k, r)| {
                r.start_ns <= other.ranges[k].start_ns
                    && (k == 0 || r.start_ns >= other.ranges[k - 1].end_ns)
            })
    }
}

/// The user ranges (not profiler steps) at the top level: under no other range or op
/// (Python frames around one are its loop's).
fn top_level_ranges(trace: &Trace) -> impl Iterator<Item = &tracelens_model::Span> {
    trace.spans.iter().enumerate().filter_map(|(i, s)| {
        let top = s.kind == SpanKind::UserAnnotation
            && trace.step_of_name(s.name).is_none()
            && !trace
                .ancestors(tracelens_model::SpanId::at(i))
                .any(|a| trace.span(a).kind != SpanKind::PythonFunction);
        top.then_some(s)
    })
}

/// The iterations of a trace without profiler steps, when a top-level range repeats;
/// `gpu_extent` is the trace's first to last GPU op (the window computed it already).
#[must_use]
pub fn find(trace: &Trace, gpu_extent: Option<Interval>) -> Option<FoundIterations> {
    let mut by_range: FxHashMap<(LaneId, NameId), Vec<Interval>> = FxHashMap::default();
    for s in top_level_ranges(trace) {
        by_range
            .entry((s.lane, s.name))
            .or_default()
            .push(s.interval());
    }
    let mut loops: Vec<Repeats> = by_range
        .into_iter()
        .filter(|(_, r)| r.len() >= MIN_ITERATIONS)
        .map(|((lane, name), mut ranges)| {
            ranges.sort_by_key(|r| (r.start_ns, r.end_ns));
            Repeats { lane, name, ranges }
        })
        // One after another: a range entered while the last is still open is no loop.
        .filter(|r| r.ranges.windows(2).all(|w| w[1].start_ns >= w[0].end_ns))
        .collect();
    loops.sort_by(|a, b| {
        b.total_ns()
            .cmp(&a.total_ns())
            .then(a.lane.cmp(&b.lane))
            .then(a.name.cmp(&b.name))
    });
    let main = loops.first()?;
    // The loop's first phase: the earliest-starting range that leads the main one in every
    // iteration (the main one itself when none does).
    let phases: Vec<&Repeats> = loops
        .iter()
        .filter(|r| r.lane == main.lane && r.leads(main) || std::ptr::eq(*r, main))
        .collect();
    let first = phases
        .iter()
        .min_by_key(|r| (r.ranges[0].start_ns, r.name))
        .copied()
        .unwrap_or(main);
    let n = first.ranges.len();
    // The loop's last pass ends with the last of its phases: every range of the thread
    // entered once per iteration, each time between two starts of the first phase.
    let in_pass = |r: &Repeats| {
        r.lane == first.lane
            && r.ranges.len() == n
            && r.ranges.iter().enumerate().all(|(k, x)| {
                x.start_ns >= first.ranges[k].start_ns
                    && first
                        .ranges
                        .get(k + 1)
                        .is_none_or(|next| x.start_ns < next.start_ns)
            })
    };
    let loop_end = loops
        .iter()
        .filter(|r| in_pass(r))
        .map(|r| r.ranges[n - 1].end_ns)
        .max()
        .unwrap_or(first.ranges[n - 1].end_ns);
    let host: Vec<Interval> = (0..n)
        .map(|k| {
            let start = first.ranges[k].start_ns;
            let end = if k + 1 < n {
                first.ranges[k + 1].start_ns
            } else {
                loop_end.max(first.ranges[k].end_ns)
            };
            Interval::new(start, end)
        })
        .collect();
    let extent = gpu_extent.or_else(|| {
        trace
            .spans
            .iter()
            .map(|s| s.interval())
            .reduce(|a, b| a.hull(b))
    })?;
    let covered = Interval::new(host[0].start_ns, host[n - 1].end_ns);
    let overlap = covered.clip(extent).map_or(0, |c| c.dur_ns());
    if crate::num::percent(overlap, extent.dur_ns()) < MIN_COVER_PERCENT {
        return None;
    }
    Some(FoundIterations {
        marker: trace.names.get(first.name).to_string(),
        host,
    })
}

/// The one top-level user range of a capture that records the whole process (an NVTX range
/// the program puts around the work it measures), when there is exactly one: its name and
/// host interval. A capture with several, or none, has no marked region.
#[must_use]
pub fn marked_range(trace: &Trace) -> Option<(String, Interval)> {
    let mut found: Option<(NameId, Interval)> = None;
    for s in top_level_ranges(trace) {
        if found.is_some() {
            return None;
        }
        found = Some((s.name, s.interval()));
    }
    found.map(|(name, iv)| (trace.names.get(name).to_string(), iv))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::detectors::testing::span_us;
    use tracelens_model::{Ident, LaneKey, SourceInfo, TraceBuilder};

    fn cpu(b: &mut TraceBuilder) -> LaneId {
        b.lane(LaneKey::Cpu {
            pid: Ident::Num(1),
            tid: Ident::Num(1),
        })
    }

    fn range(b: &mut TraceBuilder, lane: LaneId, name: &str, at_us: (i64, i64)) {
        span_us(b, SpanKind::UserAnnotation, lane, name, at_us, None);
    }

    /// A loop of three phases entered four times: four iterations, starting at the reader,
    /// the last ending with its post-processing.
    #[test]
    fn a_loop_of_repeated_phases_gives_one_iteration_per_pass_from_its_first_phase() {
        let mut b = TraceBuilder::new();
        let lane = cpu(&mut b);
        range(&mut b, lane, "setup", (0, 50));
        for k in 0..4 {
            let t = 100 + k * 1_000;
            range(&mut b, lane, "reader", (t, 100));
            range(&mut b, lane, "forward", (t + 100, 600));
            range(&mut b, lane, "post", (t + 700, 200));
        }
        let trace = b.finish(SourceInfo::default());
        let found = find(&trace, None).expect("a loop");
        assert_eq!(found.marker, "reader");
        assert_eq!(found.host.len(), 4);
        assert_eq!(found.host[0], Interval::new(100_000, 1_100_000));
        assert_eq!(found.host[3], Interval::new(3_100_000, 4_000_000));
        assert_eq!(
            found.describe(),
            "4 iterations from the repeated top-level range `reader`"
        );
    }

    /// Ranges entered twice, ranges nested in another, and ranges that overlap are no loop.
    #[test]
    fn nothing_repeating_at_the_top_finds_nothing() {
        let mut b = TraceBuilder::new();
        let lane = cpu(&mut b);
        range(&mut b, lane, "main", (0, 10_000));
        for k in 0..5 {
            range(&mut b, lane, "layer", (100 + k * 1_000, 500));
        }
        range(&mut b, lane, "twice", (20_000, 100));
        range(&mut b, lane, "twice", (20_200, 100));
        let trace = b.finish(SourceInfo::default());
        assert_eq!(find(&trace, None), None);
    }
}
