//! Time split among classes in priority order: each moment of a window goes to the first
//! class covering it, or to none. Intervals arrive in start order; windows that follow one
//! another are swept while the classes' unions grow, so only what lies ahead of the sweep is
//! held, never a list of every interval.

use crate::measure::intervals::merge_into_last;
use std::collections::VecDeque;
use tracelens_model::{Interval, TimeNs};

/// The split of each window among `N` classes (class 0 first), built from intervals added in
/// start order.
pub struct PrioritySplit<const N: usize> {
    windows: Vec<Interval>,
    /// Whether the windows follow one another (sorted, not overlapping): then the sweep runs
    /// while intervals are added and drops what lies behind it.
    sweeping: bool,
    /// Each class's union: the part not yet swept past.
    unions: [VecDeque<Interval>; N],
    /// The window being swept, and how far.
    window_at: usize,
    t: TimeNs,
    /// Per window: each class's time, and the time of none.
    times: Vec<([TimeNs; N], TimeNs)>,
}

impl<const N: usize> PrioritySplit<N> {
    /// A split of `windows` (in the order given).
    #[must_use]
    pub fn new(windows: Vec<Interval>) -> Self {
        let sweeping = windows.windows(2).all(|p| p[0].end_ns <= p[1].start_ns);
        Self::with_sweeping(windows, sweeping)
    }

    fn with_sweeping(windows: Vec<Interval>, sweeping: bool) -> Self {
        PrioritySplit {
            times: vec![([0; N], 0); windows.len()],
            windows,
            sweeping,
            unions: std::array::from_fn(|_| VecDeque::new()),
            window_at: 0,
            t: TimeNs::MIN,
        }
    }

    /// Adds an interval of `class`; intervals come in start order, across all classes.
    pub fn add(&mut self, class: usize, iv: Interval) {
        if self.sweeping {
            // Every interval starting before this one is in.
            self.advance(iv.start_ns);
        }
        let union = &mut self.unions[class];
        if let Some(next) = merge_into_last(union.back_mut(), iv) {
            union.push_back(next);
        }
    }

    /// Each window's time per class and of none, in the windows' order.
    #[must_use]
    pub fn finish(mut self) -> Vec<([TimeNs; N], TimeNs)> {
        if self.sweeping {
            self.advance(TimeNs::MAX);
        } else {
            // Overlapping windows: each measured over the whole unions, from its own places.
            for (w, (classes, none)) in self.windows.iter().zip(&mut self.times) {
                let mut at: [usize; N] = std::array::from_fn(|k| {
                    self.unions[k].partition_point(|iv| iv.end_ns <= w.start_ns)
                });
                let mut t = w.start_ns;
                split_until(&self.unions, &mut at, &mut t, w.end_ns, classes, none);
            }
        }
        self.times
    }

    /// Sweeps up to `upto`, dropping the intervals that end behind the sweep.
    fn advance(&mut self, upto: TimeNs) {
        // Swept that far already (a sweep that reaches a window's end goes on to the next).
        if upto <= self.t {
            return;
        }
        while let Some(&w) = self.windows.get(self.window_at) {
            self.t = self.t.max(w.start_ns);
            let (classes, none) = &mut self.times[self.window_at];
            let mut at = [0; N];
            split_until(
                &self.unions,
                &mut at,
                &mut self.t,
                w.end_ns.min(upto),
                classes,
                none,
            );
            for (union, passed) in self.unions.iter_mut().zip(at) {
                union.drain(..passed);
            }
            if self.t < w.end_ns {
                return;
            }
            self.window_at += 1;
        }
    }
}

/// Splits `[t, stop)` among the classes: `at` holds each union's first interval that may
/// cover `t` (moved forward as the sweep passes intervals), `t` ends at `stop`.
fn split_until<const N: usize>(
    unions: &[VecDeque<Interval>; N],
    at: &mut [usize; N],
    t: &mut TimeNs,
    stop: TimeNs,
    classes: &mut [TimeNs; N],
    none: &mut TimeNs,
) {
    while *t < stop {
        // The first class covering t, and the next moment the answer can change.
        let mut owner = None;
        let mut until = stop;
        for (k, union) in unions.iter().enumerate() {
            while union.get(at[k]).is_some_and(|iv| iv.end_ns <= *t) {
                at[k] += 1;
            }
            let Some(iv) = union.get(at[k]) else { continue };
            if iv.start_ns <= *t {
                owner = Some(k);
                until = until.min(iv.end_ns);
                break;
            }
            until = until.min(iv.start_ns);
        }
        match owner {
            Some(k) => classes[k] += until - *t,
            None => *none += until - *t,
        }
        *t = until;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sweep that runs while intervals are added gives every window what the measure
    /// over the whole unions gives, for windows that touch, leave gaps, or start before any
    /// interval; each window's parts add up to its length.
    #[test]
    fn the_sweep_agrees_with_the_whole_unions() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: i64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            i64::try_from(seed % u64::try_from(n).unwrap()).unwrap()
        };
        for _ in 0..200 {
            let mut spans: Vec<(usize, Interval)> = (0..60)
                .map(|_| {
                    let start = next(1_000);
                    (
                        next(7).try_into().unwrap(),
                        Interval::new(start, start + next(60)),
                    )
                })
                .collect();
            spans.sort_by_key(|&(_, iv)| iv.start_ns);
            let mut edge = next(50) - 20;
            let windows: Vec<Interval> = (0..next(5) + 1)
                .map(|_| {
                    let start = edge + next(3) * next(40);
                    edge = start + next(300);
                    Interval::new(start, edge)
                })
                .collect();
            let mut swept = PrioritySplit::<7>::new(windows.clone());
            assert!(swept.sweeping);
            let mut whole = PrioritySplit::<7>::with_sweeping(windows.clone(), false);
            for &(class, iv) in &spans {
                swept.add(class, iv);
                whole.add(class, iv);
            }
            let (swept, whole) = (swept.finish(), whole.finish());
            assert_eq!(swept, whole, "{windows:?} {spans:?}");
            for ((classes, none), w) in swept.iter().zip(&windows) {
                assert_eq!(classes.iter().sum::<TimeNs>() + none, w.dur_ns());
            }
        }
    }

    /// Class 0 takes what it covers; later classes take only what earlier ones leave;
    /// overlapping windows are each split whole.
    #[test]
    fn earlier_classes_take_first() {
        let mut split =
            PrioritySplit::<2>::new(vec![Interval::new(0, 100), Interval::new(50, 150)]);
        split.add(1, Interval::new(10, 60));
        split.add(0, Interval::new(40, 120));
        assert_eq!(split.finish(), vec![([60, 30], 10), ([70, 0], 30)],);
    }
}
