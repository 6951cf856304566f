//! Time in integer nanoseconds and half-open intervals of it.

use serde::Serialize;

/// A timestamp or duration in nanoseconds. Importers convert every foreign unit into this.
pub type TimeNs = i64;

/// Nanoseconds in one microsecond.
pub const NS_PER_US: i64 = 1_000;
/// Nanoseconds in one millisecond.
pub const NS_PER_MS: i64 = 1_000_000;
/// Nanoseconds in one second.
pub const NS_PER_S: i64 = 1_000_000_000;

/// A half-open interval `[start_ns, end_ns)`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
pub struct Interval {
    /// First nanosecond inside the interval.
    pub start_ns: TimeNs,
    /// First nanosecond after the interval.
    pub end_ns: TimeNs,
}

impl Interval {
    /// The interval from `start_ns` to `end_ns`; an end before the start is raised to the start.
    #[must_use]
    pub fn new(start_ns: TimeNs, end_ns: TimeNs) -> Self {
        Self {
            start_ns,
            end_ns: end_ns.max(start_ns),
        }
    }

    /// Length in nanoseconds.
    #[must_use]
    pub fn dur_ns(&self) -> TimeNs {
        self.end_ns - self.start_ns
    }

    /// The part of `self` inside `window`, if any time remains.
    #[must_use]
    pub fn clip(&self, window: Interval) -> Option<Interval> {
        let start_ns = self.start_ns.max(window.start_ns);
        let end_ns = self.end_ns.min(window.end_ns);
        (end_ns > start_ns).then_some(Interval { start_ns, end_ns })
    }

    /// The smallest interval holding both.
    #[must_use]
    pub fn hull(&self, other: Interval) -> Interval {
        Interval {
            start_ns: self.start_ns.min(other.start_ns),
            end_ns: self.end_ns.max(other.end_ns),
        }
    }
}

/// Formats nanoseconds as milliseconds with three decimals (`12.345 ms`).
#[must_use]
pub fn format_ms(ns: TimeNs) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let abs = ns.unsigned_abs();
    let whole = abs / 1_000_000;
    let frac = (abs % 1_000_000 + 500) / 1_000;
    // Rounding can carry into the whole part.
    let (whole, frac) = if frac == 1000 {
        (whole + 1, 0)
    } else {
        (whole, frac)
    };
    format!("{sign}{whole}.{frac:03} ms")
}

/// A signed change with `decimals` places and one minus sign everywhere: `+1.5`, `−18.7`
/// (U+2212, as the diff's `−30.612 ms`), `±0.0` for no change.
#[must_use]
pub fn format_signed(v: f64, decimals: usize) -> String {
    let shown = format!("{:.decimals$}", v.abs());
    let zero = shown.chars().all(|c| c == '0' || c == '.');
    let sign = if zero {
        "±"
    } else if v < 0.0 {
        "−"
    } else {
        "+"
    };
    format!("{sign}{shown}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_and_hull() {
        let a = Interval::new(10, 20);
        assert_eq!(a.clip(Interval::new(15, 30)), Some(Interval::new(15, 20)));
        assert_eq!(a.clip(Interval::new(20, 30)), None);
        assert_eq!(a.hull(Interval::new(25, 30)), Interval::new(10, 30));
        assert_eq!(Interval::new(5, 3).dur_ns(), 0);
    }

    #[test]
    fn formats_milliseconds() {
        assert_eq!(format_ms(34_892_419), "34.892 ms");
        assert_eq!(format_ms(999_999_999), "1000.000 ms");
        assert_eq!(format_ms(-1_500_000), "-1.500 ms");
        assert_eq!(format_ms(0), "0.000 ms");
    }

    #[test]
    fn signed_changes_share_one_minus_sign() {
        assert_eq!(format_signed(-18.74, 1), "−18.7");
        assert_eq!(format_signed(2.0, 1), "+2.0");
        assert_eq!(format_signed(-0.01, 1), "±0.0");
    }
}
