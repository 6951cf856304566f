//! A growing window over a byte stream: refill, skip whitespace, take one complete value.

use crate::scan::{Extent, Scanner};
use crate::split::{Splitter, Stop as SplitStop};
use std::io::Read;
use std::ops::Range;

const READ_CHUNK: usize = 1 << 20;

/// Largest single value kept (one trace event, one metadata entry): anything longer is
/// skipped in constant memory. Real events are under a few kB; the largest real metadata
/// values (`deviceProperties` of a big node) are under 100 kB.
pub const MAX_VALUE_BYTES: usize = 64 << 20;

/// Why a value could not be taken.
#[derive(Debug, PartialEq, Eq)]
pub enum Stop {
    /// The input ended (cleanly, or by a read error kept in [`Input::error`]).
    End,
    /// The value was longer than the limit; it was skipped to its end (its length given).
    TooLarge(u64),
}

/// Buffered input that hands out complete JSON values as byte ranges.
pub struct Input<R> {
    src: R,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    base: u64,
    eof: bool,
    /// The read error that ended the input early, if any.
    pub error: Option<std::io::Error>,
}

impl<R: Read> Input<R> {
    /// Wraps a reader.
    pub fn new(src: R) -> Self {
        Input {
            src,
            buf: vec![0; 4 * READ_CHUNK],
            pos: 0,
            len: 0,
            base: 0,
            eof: false,
            error: None,
        }
    }

    /// Absolute offset of the next unread byte.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Bytes read from the source so far.
    pub fn bytes_read(&self) -> u64 {
        self.base + self.len as u64
    }

    /// Reads more bytes; `false` when the source is exhausted.
    fn fill(&mut self) -> bool {
        if self.eof {
            return false;
        }
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.len, 0);
            self.base += self.pos as u64;
            self.len -= self.pos;
            self.pos = 0;
        }
        if self.buf.len() - self.len < READ_CHUNK {
            let grown = (self.buf.len() * 2).max(self.len + READ_CHUNK);
            self.buf.resize(grown, 0);
        }
        loop {
            match self.src.read(&mut self.buf[self.len..]) {
                Ok(0) => {
                    self.eof = true;
                    return false;
                }
                Ok(n) => {
                    self.len += n;
                    return true;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.error = Some(e);
                    self.eof = true;
                    return false;
                }
            }
        }
    }

    /// Reads the source to its end, discarding what is left, so that a gzip stream's trailer
    /// (CRC-32 and length) is read and checked: an error lands in [`Input::error`].
    pub fn drain(&mut self) {
        self.pos = self.len;
        while self.fill() {
            self.pos = self.len;
        }
    }

    /// The next byte that is not whitespace (or a UTF-8 BOM), without consuming it.
    pub fn peek(&mut self) -> Option<u8> {
        loop {
            while self.pos < self.len {
                match self.buf[self.pos] {
                    b' ' | b'\n' | b'\r' | b'\t' => self.pos += 1,
                    0xEF if self.buf[self.pos..self.len].starts_with(&[0xEF, 0xBB, 0xBF]) => {
                        self.pos += 3
                    }
                    b => return Some(b),
                }
            }
            if !self.fill() {
                return None;
            }
        }
    }

    /// Consumes one byte.
    pub fn bump(&mut self) {
        self.pos += 1;
    }

    /// Takes the complete value at the cursor; its bytes are `self.bytes(range)`. A value
    /// longer than `max_bytes` is skipped to its end without being held in memory.
    pub fn take_value_limited(&mut self, max_bytes: usize) -> Result<Range<usize>, Stop> {
        if self.peek().is_none() {
            return Err(Stop::End);
        }
        let mut scanner = Scanner::default();
        let mut skipped: u64 = 0;
        loop {
            match scanner.resume(&self.buf[self.pos..self.len], self.eof) {
                Extent::Complete(n) => {
                    let r = self.pos..self.pos + n;
                    self.pos += n;
                    if skipped > 0 {
                        return Err(Stop::TooLarge(skipped + n as u64));
                    }
                    return Ok(r);
                }
                Extent::Incomplete => {
                    let held = scanner.scanned();
                    if held > max_bytes {
                        // Drop what was scanned: keep only the state.
                        scanner.drop_prefix(held);
                        self.pos += held;
                        skipped += held as u64;
                    }
                    if !self.fill() {
                        return Err(Stop::End);
                    }
                }
            }
        }
    }

    /// Takes a run of whole array elements at the cursor (objects between whitespace and
    /// commas; see [`crate::split`]) of about `want` bytes, scanning at most `window`
    /// bytes. `None` when no whole element was found: the caller takes one value instead.
    pub fn take_run(&mut self, want: usize, window: usize) -> Option<Range<usize>> {
        let mut splitter = Splitter::default();
        loop {
            let stop = splitter.advance(&self.buf[self.pos..self.len]);
            let scanned = splitter.scanned();
            let enough = scanned >= window || (scanned >= want && splitter.run_len() > 0);
            if stop != SplitStop::More || enough || !self.fill() {
                break;
            }
        }
        let n = splitter.run_len();
        (n > 0).then(|| {
            self.pos += n;
            self.pos - n..self.pos
        })
    }

    /// [`Input::take_value_limited`] with [`MAX_VALUE_BYTES`].
    pub fn take_value(&mut self) -> Result<Range<usize>, Stop> {
        self.take_value_limited(MAX_VALUE_BYTES)
    }

    /// Bytes of a range returned by [`Self::take_value`] (valid until the next call).
    pub fn bytes(&self, range: Range<usize>) -> &[u8] {
        &self.buf[range]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out one byte at a time, to exercise refills.
    struct Trickle<'a>(&'a [u8]);
    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() || out.is_empty() {
                return Ok(0);
            }
            out[0] = self.0[0];
            self.0 = &self.0[1..];
            Ok(1)
        }
    }

    #[test]
    fn values_across_refills() {
        let mut input = Input::new(Trickle(b"  {\"a\": \"x,}\"} , 12 ,\"s\""));
        let r = input.take_value().unwrap();
        assert_eq!(input.bytes(r), b"{\"a\": \"x,}\"}");
        assert_eq!(input.peek(), Some(b','));
        input.bump();
        let r = input.take_value().unwrap();
        assert_eq!(input.bytes(r), b"12");
        assert_eq!(input.peek(), Some(b','));
        input.bump();
        let r = input.take_value().unwrap();
        assert_eq!(input.bytes(r), b"\"s\"");
        assert_eq!(input.peek(), None);
    }

    #[test]
    fn incomplete_value_stops_at_its_start() {
        let mut input = Input::new(Trickle(b"[1, {\"a\": 2"));
        assert_eq!(input.peek(), Some(b'['));
        input.bump();
        let r = input.take_value().unwrap();
        assert_eq!(input.bytes(r), b"1");
        assert_eq!(input.peek(), Some(b','));
        input.bump();
        input.peek();
        let at = input.offset();
        assert_eq!(input.take_value(), Err(Stop::End));
        assert_eq!(at, 4);
    }

    #[test]
    fn oversized_values_are_skipped_in_constant_memory() {
        let mut text = b"[{\"a\": \"".to_vec();
        text.extend(std::iter::repeat_n(b'x', 5 * READ_CHUNK));
        text.extend_from_slice(b"\"}, 7]");
        let mut input = Input::new(&text[..]);
        assert_eq!(input.peek(), Some(b'['));
        input.bump();
        assert_eq!(
            input.take_value_limited(1000),
            Err(Stop::TooLarge(5 * READ_CHUNK as u64 + 9))
        );
        assert!(input.buf.len() <= 8 * READ_CHUNK, "{}", input.buf.len());
        assert_eq!(input.peek(), Some(b','));
        input.bump();
        let r = input.take_value_limited(1000).unwrap();
        assert_eq!(input.bytes(r), b"7");
    }
}
