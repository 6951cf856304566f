//! Searches in sorted lists that start from the place of the previous answer: questions
//! asked in time order (gap after gap) cost a few steps each instead of a whole search.

/// `items.partition_point(pred)`, found from `hint` (usually the previous answer): a
/// galloping search forward when the answer lies at or after `hint`, a binary search before
/// it otherwise; right for any hint.
pub fn partition_point_from<T>(items: &[T], hint: usize, pred: impl Fn(&T) -> bool) -> usize {
    let hint = hint.min(items.len());
    if hint > 0 && !pred(&items[hint - 1]) {
        return items[..hint].partition_point(pred);
    }
    let rest = &items[hint..];
    let mut bound = 1;
    while bound < rest.len() && pred(&rest[bound]) {
        bound = bound.saturating_mul(2);
    }
    let bound = bound.min(rest.len());
    hint + rest[..bound].partition_point(pred)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every hint, before, at or after the answer, gives the answer of a whole search.
    #[test]
    fn any_hint_gives_the_whole_search_answer() {
        let starts = [3, 3, 5, 9, 9, 9, 20, 21, 22, 40, 41, 100];
        for t in [0, 3, 4, 9, 10, 22, 23, 100, 101] {
            let want = starts.partition_point(|&s| s < t);
            for hint in 0..=starts.len() + 2 {
                assert_eq!(
                    partition_point_from(&starts, hint, |&s| s < t),
                    want,
                    "t {t} hint {hint}"
                );
            }
        }
        assert_eq!(partition_point_from::<i64>(&[], 3, |&s| s < 1), 0);
    }
}
