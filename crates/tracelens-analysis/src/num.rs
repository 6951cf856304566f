//! Number conversions the analyses share, each saying what it does at the edges.

use tracelens_model::TimeNs;

/// A count as a divisor or multiplier of nanoseconds (saturating; counts of spans never come
/// near `i64::MAX`).
#[must_use]
pub fn count_i64(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

/// A float number of nanoseconds (a standard deviation, a scaled time) as whole nanoseconds:
/// truncated toward zero, saturating at the `i64` range, NaN as 0.
#[must_use]
#[expect(
    clippy::cast_possible_truncation,
    reason = "Rust's float-to-int cast saturates, which is the intent"
)]
pub fn float_ns(ns: f64) -> TimeNs {
    ns as TimeNs
}

/// `ns * numerator / denominator` without overflow (through `i128`), truncated toward zero and
/// saturating; 0 when `denominator` is 0.
#[must_use]
pub fn scale_ns(ns: TimeNs, numerator: TimeNs, denominator: TimeNs) -> TimeNs {
    if denominator == 0 {
        return 0;
    }
    let scaled = i128::from(ns) * i128::from(numerator) / i128::from(denominator);
    TimeNs::try_from(scaled).unwrap_or(if scaled < 0 { TimeNs::MIN } else { TimeNs::MAX })
}

/// An index into a table of the model (which holds fewer than 2^32 rows, as the model's own
/// ids do) as a `u32`.
#[must_use]
pub fn count_u32(i: usize) -> u32 {
    tracelens_model::table_index(i)
}

/// `part / whole` in percent, 0 for an empty whole, never outside 0-100: a share shown to a
/// user is a share even when a crafted trace makes the part outgrow the whole (the ns
/// figures behind it stay as they are, and the corpus invariants check those).
#[must_use]
pub fn percent(part: TimeNs, whole: TimeNs) -> f64 {
    if whole > 0 {
        (part as f64 * 100.0 / whole as f64).clamp(0.0, 100.0)
    } else {
        0.0
    }
}

/// `text` with its first letter in lower case (a sentence made into a clause).
#[must_use]
pub fn lower_first(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_lowercase().chain(chars).collect())
        .unwrap_or_default()
}

/// `text` with its first letter in capitals (a phrase made into a sentence).
#[must_use]
pub fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}
