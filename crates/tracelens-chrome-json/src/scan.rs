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

/// Bytes classified at once by [`Masks::of`].
pub(crate) const BLOCK: usize = 64;
/// [`BLOCK`] as a bit count.
pub(crate) const BLOCK_BITS: u32 = 64;

/// Where the bytes that matter to the scan are in one block: bit `i` is byte `i`.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Masks {
    pub quote: u64,
    pub backslash: u64,
    /// `{` and `[`.
    pub open: u64,
    /// `}` and `]`.
    pub close: u64,
    /// Whitespace and commas, found only when asked for (`SEPARATORS`).
    pub separators: u64,
}

impl Masks {
    /// The brackets that are not inside a string, for a block that starts inside one or
    /// not (`in_string`) and holds no backslash: bytes from an opening quote to its closing
    /// quote are the running XOR of the quotes.
    pub fn brackets_outside_strings(&self, in_string: bool) -> u64 {
        let carried = if in_string { u64::MAX } else { 0 };
        let inside_strings = prefix_xor(self.quote) ^ carried;
        (self.open | self.close) & !inside_strings
    }
    /// Classifies 64 bytes, 16 at a time with SSE2 (part of every x86-64 CPU).
    #[cfg(target_arch = "x86_64")]
    #[expect(
        clippy::cast_possible_wrap,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "ASCII bytes are the same bits as i8 for the SSE2 compares, and movemask \
                  sets only the low 16 bits of its i32"
    )]
    pub fn of<const SEPARATORS: bool>(block: &[u8; BLOCK]) -> Masks {
        use std::arch::x86_64::*;
        let mut m = Masks::default();
        // SAFETY: SSE2 is in the x86-64 baseline, and each unaligned 16-byte load reads
        // inside `block` (offsets 0, 16, 32, 48 of 64 bytes).
        unsafe {
            let quote = _mm_set1_epi8(b'"' as i8);
            let backslash = _mm_set1_epi8(b'\\' as i8);
            // `{`|0x20 and `[`|0x20 are both `{`; `}` and `]` both give `}`.
            let case = _mm_set1_epi8(0x20);
            let open = _mm_set1_epi8(b'{' as i8);
            let close = _mm_set1_epi8(b'}' as i8);
            for k in 0..BLOCK / 16 {
                let v = _mm_loadu_si128(block.as_ptr().add(16 * k).cast::<__m128i>());
                let folded = _mm_or_si128(v, case);
                let bits = |eq: __m128i| u64::from(_mm_movemask_epi8(eq) as u16) << (16 * k);
                m.quote |= bits(_mm_cmpeq_epi8(v, quote));
                m.backslash |= bits(_mm_cmpeq_epi8(v, backslash));
                m.open |= bits(_mm_cmpeq_epi8(folded, open));
                m.close |= bits(_mm_cmpeq_epi8(folded, close));
                if SEPARATORS {
                    let any = [b' ', b'\n', b'\r', b'\t', b',']
                        .map(|c| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8)))
                        .into_iter()
                        .reduce(|a, b| _mm_or_si128(a, b))
                        .expect("five separators");
                    m.separators |= bits(any);
                }
            }
        }
        m
    }

    /// Classifies 64 bytes one by one (CPUs other than x86-64).
    #[cfg(not(target_arch = "x86_64"))]
    pub fn of<const SEPARATORS: bool>(block: &[u8; BLOCK]) -> Masks {
        let mut m = Masks::one_by_one(block);
        if !SEPARATORS {
            m.separators = 0;
        }
        m
    }

    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    pub fn one_by_one(block: &[u8; BLOCK]) -> Masks {
        let mut m = Masks::default();
        for (i, &b) in block.iter().enumerate() {
            let bit = 1u64 << i;
            match b {
                b'"' => m.quote |= bit,
                b'\\' => m.backslash |= bit,
                b'{' | b'[' => m.open |= bit,
                b'}' | b']' => m.close |= bit,
                b' ' | b'\n' | b'\r' | b'\t' | b',' => m.separators |= bit,
                _ => {}
            }
        }
        m
    }
}

/// Bit `i` of the result is the XOR of bits `0..=i`: between an opening quote (included)
/// and its closing quote (excluded), the bits are set.
pub(crate) fn prefix_xor(mut x: u64) -> u64 {
    for shift in [1, 2, 4, 8, 16, 32] {
        x ^= x << shift;
    }
    x
}

/// Whether `b` ends a bare scalar (`123`, `true`, `N/A`).
fn ends_scalar(b: u8) -> bool {
    matches!(b, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
}

/// Length of the value starting at `bytes[0]` (which must not be whitespace).
/// `at_eof` says that no more bytes follow, so a scalar may end at the end of `bytes`.
#[must_use]
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
    /// Bytes before this offset are scanned one at a time (a block there holds a backslash).
    slow_until: usize,
}

impl Scanner {
    /// Bytes of the value scanned so far.
    #[must_use]
    pub fn scanned(&self) -> usize {
        self.at
    }

    /// Forgets the first `n` bytes of the value (the caller dropped them from its buffer).
    pub fn drop_prefix(&mut self, n: usize) {
        self.at -= n.min(self.at);
        self.slow_until = self.slow_until.saturating_sub(n);
    }

    /// Inside a container, scans whole 64-byte blocks at a time: quotes and brackets are
    /// found for all 64 bytes at once, the bytes inside strings come from a running XOR of
    /// the quotes, and only the brackets outside strings are visited. A block holding a
    /// backslash is left to the byte-at-a-time loop (escapes are rare in traces), so both
    /// paths give the same result on any input. Returns the value's length if it ends in
    /// the blocks scanned.
    fn skip_blocks(&mut self, bytes: &[u8]) -> Option<usize> {
        if self.at < self.slow_until {
            return None;
        }
        while let Some(block) = bytes.get(self.at..self.at + BLOCK) {
            let m = Masks::of::<false>(block.try_into().expect("a 64-byte block"));
            if m.backslash != 0 {
                self.slow_until = self.at + BLOCK;
                return None;
            }
            let mut brackets = m.brackets_outside_strings(self.in_string);
            while brackets != 0 {
                let i = brackets.trailing_zeros();
                if m.open >> i & 1 == 1 {
                    self.depth += 1;
                } else {
                    self.depth -= 1;
                    if self.depth == 0 {
                        self.in_string = false;
                        self.at += i as usize + 1;
                        return Some(self.at);
                    }
                }
                brackets &= brackets - 1;
            }
            self.in_string ^= m.quote.count_ones() % 2 == 1;
            self.at += BLOCK;
        }
        None
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
            if self.depth > 0 {
                if let Some(end) = self.skip_blocks(bytes) {
                    return Extent::Complete(end);
                }
            }
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
pub(crate) mod tests {
    use super::*;

    /// A small deterministic random source for the soup tests.
    pub(crate) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    /// A position below `n` from a random `r`.
    pub(crate) fn below(r: u64, n: usize) -> usize {
        usize::try_from(r % u64::try_from(n.max(1)).unwrap()).unwrap()
    }

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

    /// The block scan and the byte-at-a-time scan agree on random bracket soup, cut at
    /// every kind of place (strings, escapes, nesting across blocks).
    #[test]
    fn blocks_agree_with_bytes() {
        // Balanced, drifting deeper, and string-heavy soups, so values end in every block.
        let alphabets: [&[u8]; 3] = [br#"{}[]"\ ab,:"#, br#"{{[[}]"\ ab,:"#, br#"{}""\abcdefgh"#];
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15u64);
        for _ in 0..3000 {
            let len = 1 + (next() % 400) as usize;
            let mut text = vec![b'{'];
            let backslashes = next() & 3 == 0;
            let alphabet = alphabets[(next() % 3) as usize];
            for _ in 0..len {
                let b = alphabet[below(next(), alphabet.len())];
                text.push(if b == b'\\' && !backslashes { b'a' } else { b });
            }
            let slow = {
                let mut s = Scanner {
                    slow_until: usize::MAX,
                    ..Scanner::default()
                };
                s.resume(&text, true)
            };
            assert_eq!(
                value_extent(&text, true),
                slow,
                "{}",
                String::from_utf8_lossy(&text)
            );
            // Resumed in two pieces.
            let cut = below(next(), text.len());
            let mut s = Scanner::default();
            let split = match s.resume(&text[..cut], false) {
                Extent::Complete(n) => Extent::Complete(n),
                Extent::Incomplete => s.resume(&text, true),
            };
            assert_eq!(split, slow, "cut {cut}: {}", String::from_utf8_lossy(&text));
        }
    }

    #[test]
    fn masks_match_one_by_one() {
        let block: Vec<u8> = (0..64u8)
            .map(|i| br#"{}[]\"x,9 "#[i as usize % 10])
            .collect();
        let block: &[u8; BLOCK] = block[..].try_into().unwrap();
        assert_eq!(Masks::of::<true>(block), Masks::one_by_one(block));
        let without = Masks {
            separators: 0,
            ..Masks::one_by_one(block)
        };
        assert_eq!(Masks::of::<false>(block), without);
        assert_eq!(prefix_xor(0b1001), 0b0111);
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
