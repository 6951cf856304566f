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

/// Length of the value starting at `bytes[0]` (which must not be whitespace).
/// `at_eof` says that no more bytes follow, so a scalar may end at the end of `bytes`.
pub fn value_extent(bytes: &[u8], at_eof: bool) -> Extent {
    Scanner::default().resume(bytes, at_eof)
}

/// A scan for the end of one value that can stop when the bytes run out and resume when
/// more arrive, so a value split over many reads is scanned once in all (linear), not again
/// from its start on every read. It keeps no stack: nesting is a counter, so any depth is
/// scanned in constant memory.
#[derive(Clone, Debug, Default)]
pub struct Scanner {
    /// Bytes of the value already scanned.
    at: usize,
    /// Open `{`/`[` not yet closed.
    depth: u64,
    /// Inside a string.
    in_string: bool,
    /// The first byte has been looked at.
    started: bool,
    /// The value is a bare scalar.
    scalar: bool,
}

impl Scanner {
    /// Bytes of the value scanned so far.
    pub fn scanned(&self) -> usize {
        self.at
    }

    /// Forgets the first `n` bytes of the value (the caller dropped them from its buffer).
    pub fn drop_prefix(&mut self, n: usize) {
        self.at -= n.min(self.at);
    }

    /// Continues the scan over `bytes`, which hold the value from its first byte (or from
    /// the point given to [`Scanner::drop_prefix`]) and extend the bytes seen before.
    pub fn resume(&mut self, bytes: &[u8], at_eof: bool) -> Extent {
        if !self.started {
            let Some(&first) = bytes.first() else {
                return Extent::Incomplete;
            };
            self.started = true;
            self.at = 1;
            match first {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth = 1,
                _ => {
                    self.scalar = true;
                    self.at = 0;
                }
            }
        }
        if self.scalar {
            return match bytes[self.at..].iter().position(|&b| ends_scalar(b)) {
                Some(0) if self.at == 0 => Extent::Complete(1),
                Some(n) => Extent::Complete(self.at + n),
                None if at_eof => Extent::Complete(bytes.len()),
                None => {
                    self.at = bytes.len();
                    Extent::Incomplete
                }
            };
        }
        loop {
            if self.in_string {
                match memchr2(b'"', b'\\', &bytes[self.at..]) {
                    None => {
                        self.at = bytes.len();
                        return Extent::Incomplete;
                    }
                    Some(off) => {
                        let i = self.at + off;
                        if bytes[i] == b'\\' {
                            if i + 1 >= bytes.len() {
                                self.at = i;
                                return Extent::Incomplete;
                            }
                            self.at = i + 2;
                            continue;
                        }
                        self.at = i + 1;
                        self.in_string = false;
                        if self.depth == 0 {
                            return Extent::Complete(self.at);
                        }
                    }
                }
            }
            let Some(off) = bytes[self.at..]
                .iter()
                .position(|&b| matches!(b, b'"' | b'{' | b'}' | b'[' | b']'))
            else {
                self.at = bytes.len();
                return Extent::Incomplete;
            };
            let i = self.at + off;
            self.at = i + 1;
            match bytes[i] {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                _ => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        return Extent::Complete(self.at);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_with_escapes_and_raw_controls() {
        assert_eq!(value_extent(br#""a\"b" x"#, false), Extent::Complete(6));
        assert_eq!(value_extent(b"\"a\nb\" x", false), Extent::Complete(5));
        assert_eq!(value_extent(br#""abc"#, true), Extent::Incomplete);
        assert_eq!(value_extent(br#""ab\"#, true), Extent::Incomplete);
    }

    #[test]
    fn a_scan_resumes_where_it_stopped() {
        let text = br#"{"a": "x\"}", "b": [1, {"c": 2}]} tail"#;
        for cut in 0..text.len() {
            let mut s = Scanner::default();
            let first = s.resume(&text[..cut], false);
            let whole = match first {
                Extent::Complete(n) => n,
                Extent::Incomplete => match s.resume(text, false) {
                    Extent::Complete(n) => n,
                    Extent::Incomplete => panic!("cut {cut}"),
                },
            };
            assert_eq!(whole, 33, "cut at {cut}");
        }
        let mut s = Scanner::default();
        assert_eq!(s.resume(b"12", false), Extent::Incomplete);
        assert_eq!(s.resume(b"123,", false), Extent::Complete(3));
        let deep = [b"[".repeat(100_000), b"]".repeat(100_000)].concat();
        assert_eq!(value_extent(&deep, true), Extent::Complete(200_000));
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
