//! A growing window over a byte stream: refill, skip whitespace, take one complete value.

use crate::scan::{value_extent, Extent};
use std::io::Read;
use std::ops::Range;

const READ_CHUNK: usize = 1 << 20;

/// Why a value could not be taken.
#[derive(Debug, PartialEq, Eq)]
pub enum Stop {
    /// The input ended (cleanly, or by a read error kept in [`Input::error`]).
    End,
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

    /// Takes the complete value at the cursor; its bytes are `self.bytes(range)`.
    pub fn take_value(&mut self) -> Result<Range<usize>, Stop> {
        if self.peek().is_none() {
            return Err(Stop::End);
        }
        loop {
            match value_extent(&self.buf[self.pos..self.len], self.eof) {
                Extent::Complete(n) => {
                    let r = self.pos..self.pos + n;
                    self.pos += n;
                    return Ok(r);
                }
                Extent::Incomplete => {
                    if !self.fill() {
                        return Err(Stop::End);
                    }
                }
            }
        }
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
}
