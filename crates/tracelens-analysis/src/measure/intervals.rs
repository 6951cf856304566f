//! Interval unions: overlapping, nested, zero-length and unsorted input all welcome.

use tracelens_model::{Interval, TimeNs};

/// Merges intervals into sorted, disjoint, non-empty ones. Touching intervals merge.
#[must_use]
pub fn union(mut intervals: Vec<Interval>) -> Vec<Interval> {
    intervals.retain(|iv| iv.end_ns > iv.start_ns);
    intervals.sort_unstable();
    // Merged in place: no second buffer the size of the input.
    let mut kept = 0;
    for i in 0..intervals.len() {
        let iv = intervals[i];
        if kept > 0 && iv.start_ns <= intervals[kept - 1].end_ns {
            let last = &mut intervals[kept - 1];
            last.end_ns = last.end_ns.max(iv.end_ns);
        } else {
            intervals[kept] = iv;
            kept += 1;
        }
    }
    intervals.truncate(kept);
    intervals.shrink_to_fit();
    intervals
}

/// Merges intervals that arrive sorted by start (as from a start-sorted op list) in one pass.
pub fn union_sorted(intervals: impl IntoIterator<Item = Interval>) -> Vec<Interval> {
    let mut out: Vec<Interval> = Vec::new();
    for iv in intervals {
        if let Some(iv) = merge_into_last(out.last_mut(), iv) {
            out.push(iv);
        }
    }
    out
}

/// Time covered by intervals arriving sorted by start, counted as they merge (no union kept).
pub fn union_sorted_ns(intervals: impl IntoIterator<Item = Interval>) -> TimeNs {
    let mut total = 0;
    let mut current: Option<Interval> = None;
    for iv in intervals {
        if let Some(next) = merge_into_last(current.as_mut(), iv) {
            total += current.map_or(0, |c| c.dur_ns());
            current = Some(next);
        }
    }
    total + current.map_or(0, |c| c.dur_ns())
}

/// One step of a union built from intervals arriving sorted by start: `iv` extends `last`
/// when it touches it; otherwise it is returned, to follow `last` (an empty one adds nothing).
#[must_use]
pub fn merge_into_last(last: Option<&mut Interval>, iv: Interval) -> Option<Interval> {
    if iv.end_ns <= iv.start_ns {
        return None;
    }
    match last {
        Some(last) if iv.start_ns <= last.end_ns => {
            last.end_ns = last.end_ns.max(iv.end_ns);
            None
        }
        _ => Some(iv),
    }
}

/// Time of `window` covered by sorted disjoint `intervals`, by binary search: O(log n + k).
#[must_use]
pub fn covered_ns(intervals: &[Interval], window: Interval) -> TimeNs {
    let first = intervals.partition_point(|iv| iv.end_ns <= window.start_ns);
    intervals[first..]
        .iter()
        .take_while(|iv| iv.start_ns < window.end_ns)
        .filter_map(|iv| iv.clip(window))
        .map(|c| c.dur_ns())
        .sum()
}

/// Total length of disjoint intervals.
pub fn total_ns(disjoint: &[Interval]) -> TimeNs {
    disjoint.iter().map(Interval::dur_ns).sum()
}

/// The gaps between sorted disjoint intervals, inside `window`.
#[must_use]
pub fn gaps(disjoint: &[Interval], window: Interval) -> Vec<Interval> {
    let mut out = Vec::new();
    let mut cursor = window.start_ns;
    for iv in disjoint {
        if iv.start_ns > cursor {
            if let Some(g) = Interval::new(cursor, iv.start_ns).clip(window) {
                out.push(g);
            }
        }
        cursor = cursor.max(iv.end_ns);
    }
    if cursor < window.end_ns {
        out.push(Interval::new(cursor, window.end_ns));
    }
    out
}

/// The intersection of two sorted disjoint interval lists.
#[must_use]
pub fn intersect(a: &[Interval], b: &[Interval]) -> Vec<Interval> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() && j < b.len() {
        if let Some(c) = a[i].clip(b[j]) {
            out.push(c);
        }
        if a[i].end_ns < b[j].end_ns {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// `a` minus `b`, both sorted and disjoint.
#[must_use]
pub fn subtract(a: &[Interval], b: &[Interval]) -> Vec<Interval> {
    let mut out = Vec::new();
    let mut j = 0;
    for &iv in a {
        let mut cursor = iv.start_ns;
        while j < b.len() && b[j].end_ns <= cursor {
            j += 1;
        }
        let mut k = j;
        while k < b.len() && b[k].start_ns < iv.end_ns {
            if b[k].start_ns > cursor {
                out.push(Interval::new(cursor, b[k].start_ns));
            }
            cursor = cursor.max(b[k].end_ns);
            k += 1;
        }
        if cursor < iv.end_ns {
            out.push(Interval::new(cursor, iv.end_ns));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(a: i64, b: i64) -> Interval {
        Interval::new(a, b)
    }

    #[test]
    fn union_merges_overlaps_nesting_and_touching() {
        let u = union(vec![
            iv(10, 20),
            iv(0, 5),
            iv(12, 15),
            iv(20, 25),
            iv(30, 30),
            iv(4, 6),
        ]);
        assert_eq!(u, vec![iv(0, 6), iv(10, 25)]);
        assert_eq!(total_ns(&u), 21);
    }

    #[test]
    fn sorted_union_matches_the_general_one() {
        let v = vec![
            iv(0, 5),
            iv(4, 6),
            iv(10, 20),
            iv(12, 15),
            iv(20, 25),
            iv(30, 30),
        ];
        assert_eq!(union_sorted(v.clone()), union(v.clone()));
        assert_eq!(union_sorted_ns(v.clone()), total_ns(&union(v)));
        assert_eq!(union_sorted_ns([]), 0);
    }

    #[test]
    fn set_operations() {
        assert_eq!(
            intersect(&[iv(0, 10), iv(20, 30)], &[iv(5, 25)]),
            vec![iv(5, 10), iv(20, 25)]
        );
        assert_eq!(
            subtract(&[iv(0, 10), iv(20, 30)], &[iv(5, 25)]),
            vec![iv(0, 5), iv(25, 30)]
        );
        assert_eq!(
            subtract(&[iv(0, 10)], &[iv(2, 3), iv(5, 6)]),
            vec![iv(0, 2), iv(3, 5), iv(6, 10)]
        );
    }

    #[test]
    fn covered_time_inside_a_window() {
        let u = vec![iv(0, 10), iv(20, 30), iv(40, 50)];
        assert_eq!(covered_ns(&u, iv(5, 45)), 5 + 10 + 5);
        assert_eq!(covered_ns(&u, iv(10, 20)), 0);
    }

    #[test]
    fn gaps_inside_a_window() {
        let u = vec![iv(10, 20), iv(30, 40)];
        assert_eq!(gaps(&u, iv(0, 50)), vec![iv(0, 10), iv(20, 30), iv(40, 50)]);
        assert_eq!(gaps(&u, iv(15, 35)), vec![iv(20, 30)]);
    }
}
