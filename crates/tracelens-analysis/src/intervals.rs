//! Interval unions: overlapping, nested, zero-length and unsorted input all welcome.

use tracelens_model::{Interval, TimeNs};

/// Merges intervals into sorted, disjoint, non-empty ones. Touching intervals merge.
pub fn union(mut intervals: Vec<Interval>) -> Vec<Interval> {
    intervals.retain(|iv| iv.end_ns > iv.start_ns);
    intervals.sort_unstable();
    let mut out: Vec<Interval> = Vec::with_capacity(intervals.len());
    for iv in intervals {
        match out.last_mut() {
            Some(last) if iv.start_ns <= last.end_ns => last.end_ns = last.end_ns.max(iv.end_ns),
            _ => out.push(iv),
        }
    }
    out
}

/// Merges intervals that arrive sorted by start (as from a start-sorted op list) in one pass.
pub fn union_sorted(intervals: impl IntoIterator<Item = Interval>) -> Vec<Interval> {
    let mut out: Vec<Interval> = Vec::new();
    for iv in intervals {
        if iv.end_ns <= iv.start_ns {
            continue;
        }
        match out.last_mut() {
            Some(last) if iv.start_ns <= last.end_ns => last.end_ns = last.end_ns.max(iv.end_ns),
            _ => out.push(iv),
        }
    }
    out
}

/// Total length of disjoint intervals.
pub fn total_ns(disjoint: &[Interval]) -> TimeNs {
    disjoint.iter().map(Interval::dur_ns).sum()
}

/// The gaps between sorted disjoint intervals, inside `window`.
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
        assert_eq!(union_sorted(v.clone()), union(v));
    }

    #[test]
    fn gaps_inside_a_window() {
        let u = vec![iv(10, 20), iv(30, 40)];
        assert_eq!(gaps(&u, iv(0, 50)), vec![iv(0, 10), iv(20, 30), iv(40, 50)]);
        assert_eq!(gaps(&u, iv(15, 35)), vec![iv(20, 30)]);
    }
}
