//! Finding where one JSON value ends, tolerantly, without building it.
//!
//! The scanner only tracks strings, escapes and nesting, so raw control characters, invalid
//! escapes, bare `N/A`/`inf` tokens and trailing commas inside a value never stop it.

use memchr::memchr2;

/// Outcome of scanning for the end of a value.
#[derive(Debug, PartialEq, Eq)]
pub enum Extent {
    /// The value occupies this many bytes.
    Complete(usize),
    /// The input ends before the value does.
    Incomplete,
}

/// Whether `b` ends a bare scalar (`123`, `true`, `N/A`).
fn ends_scalar(b: u8) -> bool {
    matches!(b, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
}

/// Length of the string starting at `bytes[0] == b'"'`, quotes included.
pub fn string_extent(bytes: &[u8]) -> Extent {
    let mut i = 1;
    while let Some(off) = memchr2(b'"', b'\\', &bytes[i..]) {
        i += off;
        if bytes[i] == b'\\' {
            i += 2;
            if i > bytes.len() {
                return Extent::Incomplete;
            }
            continue;
        }
        return Extent::Complete(i + 1);
    }
    Extent::Incomplete
}

/// Length of the value starting at `bytes[0]` (which must not be whitespace).
/// `at_eof` says that no more bytes follow, so a scalar may end at the end of `bytes`.
pub fn value_extent(bytes: &[u8], at_eof: bool) -> Extent {
    let Some(&first) = bytes.first() else {
        return Extent::Incomplete;
    };
    match first {
        b'"' => string_extent(bytes),
        b'{' | b'[' => container_extent(bytes),
        _ => match bytes.iter().position(|&b| ends_scalar(b)) {
            Some(0) => Extent::Complete(1),
            Some(n) => Extent::Complete(n),
            None if at_eof => Extent::Complete(bytes.len()),
            None => Extent::Incomplete,
        },
    }
}

fn container_extent(bytes: &[u8]) -> Extent {
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        // Jump to the next byte that matters.
        let Some(off) = bytes[i..]
            .iter()
            .position(|&b| matches!(b, b'"' | b'{' | b'}' | b'[' | b']'))
        else {
            return Extent::Incomplete;
        };
        i += off;
        match bytes[i] {
            b'"' => match string_extent(&bytes[i..]) {
                Extent::Complete(n) => {
                    i += n;
                    continue;
                }
                Extent::Incomplete => return Extent::Incomplete,
            },
            b'{' | b'[' => depth += 1,
            _ => {
                depth -= 1;
                if depth == 0 {
                    return Extent::Complete(i + 1);
                }
            }
        }
        i += 1;
    }
    Extent::Incomplete
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_with_escapes_and_raw_controls() {
        assert_eq!(string_extent(br#""a\"b" x"#), Extent::Complete(6));
        assert_eq!(string_extent(b"\"a\nb\" x"), Extent::Complete(5));
        assert_eq!(string_extent(br#""abc"#), Extent::Incomplete);
        assert_eq!(string_extent(br#""ab\"#), Extent::Incomplete);
    }

    #[test]
    fn containers_and_scalars() {
        assert_eq!(
            value_extent(br#"{"a": [1, {"b": "}"}]}, 1"#, false),
            Extent::Complete(22)
        );
        assert_eq!(value_extent(br#"{"a": 1"#, true), Extent::Incomplete);
        assert_eq!(value_extent(b"123,", false), Extent::Complete(3));
        assert_eq!(value_extent(b"123", false), Extent::Incomplete);
        assert_eq!(value_extent(b"123", true), Extent::Complete(3));
        assert_eq!(value_extent(b"N/A}", false), Extent::Complete(3));
    }
}
