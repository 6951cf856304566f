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
