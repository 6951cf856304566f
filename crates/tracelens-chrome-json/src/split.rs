//! Cutting the `traceEvents` array into runs of whole events, 64 bytes at a time, so the
//! decoding threads get large blocks and the reading thread never walks events one by one.
//!
//! A run only ever holds what the one-event-at-a-time reader would read the same way:
//! objects separated by whitespace and commas. Anything else between events (a bare
//! token, a string, a stray bracket, a byte-order mark) stops the run before it, and the
//! reader takes it from there on its own, so the events read are the same either way.

use crate::scan::{Masks, BLOCK, BLOCK_BITS};

/// Where a scan stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum Stop {
    /// Every byte given was scanned; more may follow.
    More,
    /// The `]` that closes the array.
    ArrayEnd,
    /// Something other than whitespace, commas and objects between two events.
    Unusual,
}

/// A resumable scan over the elements of an array, from just after `[` (or just after an
/// element), that remembers where the last complete element ended.
#[derive(Debug, Default)]
pub struct Splitter {
    /// Bytes scanned.
    at: usize,
    /// Brackets open inside the current element (0: between elements).
    depth: u64,
    in_string: bool,
    /// Just after the last complete element.
    last_end: usize,
    /// Bytes before this offset are scanned one at a time (a block there holds a backslash).
    slow_until: usize,
}

impl Splitter {
    /// Bytes scanned so far.
    #[must_use]
    pub fn scanned(&self) -> usize {
        self.at
    }

    /// The length of the run of whole elements found so far (0: none yet).
    #[must_use]
    pub fn run_len(&self) -> usize {
        self.last_end
    }

    /// Continues over `bytes` (the same start as before, possibly longer).
    pub fn advance(&mut self, bytes: &[u8]) -> Stop {
        loop {
            if self.at >= self.slow_until {
                if let Some(block) = bytes.get(self.at..self.at + BLOCK) {
                    match self.block(block.try_into().expect("a 64-byte block")) {
                        Some(stop) => return stop,
                        None => continue,
                    }
                }
            }
            let end = bytes.len().min(self.slow_until.max(self.at + 1));
            if self.at >= bytes.len() {
                return Stop::More;
            }
            if let Some(stop) = self.bytes_one_by_one(bytes, end) {
                return stop;
            }
        }
    }

    /// One block by its masks; `None` when it was scanned whole (or handed to the slow path).
    fn block(&mut self, block: &[u8; BLOCK]) -> Option<Stop> {
        let m = Masks::of::<true>(block);
        if m.backslash != 0 {
            self.slow_until = self.at + BLOCK;
            return None;
        }
        let mut brackets = m.brackets_outside_strings(self.in_string);
        // Start of the stretch between elements being checked, as a bit index.
        let mut between_from = 0u32;
        while brackets != 0 {
            let i = brackets.trailing_zeros();
            if self.depth == 0 {
                if !m.separators & bits_between(between_from, i) != 0 {
                    return Some(Stop::Unusual);
                }
                match block[i as usize] {
                    b'{' => self.depth = 1,
                    b']' => {
                        self.at += i as usize;
                        return Some(Stop::ArrayEnd);
                    }
                    _ => return Some(Stop::Unusual),
                }
            } else if m.open >> i & 1 == 1 {
                self.depth += 1;
            } else {
                self.depth -= 1;
                if self.depth == 0 {
                    self.last_end = self.at + i as usize + 1;
                    between_from = i + 1;
                }
            }
            brackets &= brackets - 1;
        }
        if self.depth == 0 && !m.separators & bits_between(between_from, BLOCK_BITS) != 0 {
            return Some(Stop::Unusual);
        }
        self.in_string ^= m.quote.count_ones() % 2 == 1;
        self.at += BLOCK;
        None
    }

    /// Bytes up to `end`, one at a time (tails, and blocks holding a backslash).
    fn bytes_one_by_one(&mut self, bytes: &[u8], end: usize) -> Option<Stop> {
        while self.at < end {
            let b = bytes[self.at];
            if self.in_string {
                match b {
                    b'\\' if self.at + 1 >= bytes.len() => return Some(Stop::More),
                    b'\\' => self.at += 1,
                    b'"' => self.in_string = false,
                    _ => {}
                }
                self.at += 1;
                continue;
            }
            match (self.depth, b) {
                (0, b' ' | b'\n' | b'\r' | b'\t' | b',') => {}
                (0, b'{') => self.depth = 1,
                (0, b']') => return Some(Stop::ArrayEnd),
                (0, _) => return Some(Stop::Unusual),
                (_, b'"') => self.in_string = true,
                (_, b'{' | b'[') => self.depth += 1,
                (_, b'}' | b']') => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        self.last_end = self.at + 1;
                    }
                }
                _ => {}
            }
            self.at += 1;
        }
        None
    }
}

/// Bits `from..to` set.
fn bits_between(from: u32, to: u32) -> u64 {
    let below_to = if to >= 64 { u64::MAX } else { (1u64 << to) - 1 };
    let below_from = if from >= 64 {
        u64::MAX
    } else {
        (1u64 << from) - 1
    };
    below_to & !below_from
}

/// Walks the elements of a run found by a [`Splitter`] (whole objects between whitespace
/// and commas), or the one value of a range the byte scanner measured: `read(rest, offset)`
/// gets the bytes from an element's start to the range's end and returns the element's
/// length.
pub fn for_each_element(run: &[u8], mut read: impl FnMut(&[u8], usize) -> usize) {
    let mut i = 0;
    while i < run.len() {
        match run[i] {
            b' ' | b'\n' | b'\r' | b'\t' | b',' => i += 1,
            _ => i += read(&run[i..], i).max(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::{value_extent, Extent};

    /// What the one-event-at-a-time reader makes of the array body `text`: each element's
    /// (offset, bytes), and whether it saw only objects.
    fn one_at_a_time(text: &[u8]) -> Vec<(usize, Vec<u8>)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < text.len() {
            match text[i] {
                b' ' | b'\n' | b'\r' | b'\t' | b',' => i += 1,
                b']' => break,
                _ => match value_extent(&text[i..], true) {
                    Extent::Complete(n) => {
                        out.push((i, text[i..i + n].to_vec()));
                        i += n;
                    }
                    Extent::Incomplete => break,
                },
            }
        }
        out
    }

    /// A run, cut anywhere and resumed, holds exactly the first elements the one-at-a-time
    /// reader finds, on random event soup with strings, escapes and nesting.
    #[test]
    fn runs_hold_what_one_at_a_time_reads() {
        let pieces: [&[u8]; 12] = [
            br#"{"a": 1}"#,
            br#"{"n": "x}]\"{", "b": [1, {"c": "]"}]}"#,
            b", ",
            b",\n",
            b" ",
            br#"{"p": "C:\\dir\\"}"#,
            br#"{"long": "0123456789012345678901234567890123456789012345678901234567890123456789"}"#,
            b"7",
            br#""s""#,
            b"}",
            b"]",
            b"\xEF\xBB\xBF",
        ];
        let mut next = crate::scan::tests::xorshift(0x2545_F491_4F6C_DD1Du64);
        for round in 0..4000 {
            let mut text = Vec::new();
            let usual = round % 2 == 0;
            for _ in 0..(next() % 30) {
                let k = crate::scan::tests::below(next(), pieces.len());
                if usual && k >= 7 {
                    continue;
                }
                text.extend_from_slice(pieces[k]);
            }
            let expected = one_at_a_time(&text);
            let cut = crate::scan::tests::below(next(), text.len() + 1);
            let mut s = Splitter::default();
            let mut stop = s.advance(&text[..cut]);
            if stop == Stop::More {
                stop = s.advance(&text);
            }
            let mut got = Vec::new();
            for_each_element(&text[..s.run_len()], |rest, at| {
                let Extent::Complete(n) = value_extent(rest, true) else {
                    panic!("a run holds whole elements")
                };
                got.push((at, rest[..n].to_vec()));
                n
            });
            assert!(
                expected.starts_with(&got),
                "{}: {got:?}",
                String::from_utf8_lossy(&text)
            );
            if usual && stop != Stop::ArrayEnd {
                assert_eq!(got, expected, "{}", String::from_utf8_lossy(&text));
            }
            if stop == Stop::ArrayEnd {
                assert_eq!(text[s.scanned()], b']');
                assert_eq!(got, expected, "{}", String::from_utf8_lossy(&text));
            }
        }
    }

    #[test]
    fn stops_at_the_closing_bracket_and_at_bare_tokens() {
        let text = br#" {"a": "]"} , {"b": [1]} ] , {"c": 1}"#;
        let mut s = Splitter::default();
        assert_eq!(s.advance(text), Stop::ArrayEnd);
        assert_eq!(&text[..s.run_len()], br#" {"a": "]"} , {"b": [1]}"#);
        assert_eq!(text[s.scanned()], b']');
        let mut s = Splitter::default();
        assert_eq!(s.advance(br#"{"a": 1}, 12, {"b": 2}"#), Stop::Unusual);
        assert_eq!(s.run_len(), 8);
        assert_eq!(bits_between(2, 5), 0b11100);
        assert_eq!(bits_between(0, 64), u64::MAX);
    }
}
