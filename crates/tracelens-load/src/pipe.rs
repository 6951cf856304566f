//! Decoding on its own thread: a compressed stream is inflated into chunks while the importer
//! works on earlier ones, so the two costs overlap instead of adding up.

use std::io::{self, Read};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender};

/// Size of the chunks handed from the inflating thread to the parser.
const CHUNK_BYTES: usize = 1 << 20;
/// Chunks in flight (bounds the memory the pipe holds).
const CHUNKS_IN_FLIGHT: usize = 4;

/// The reading end: a plain `Read` over the chunks, ending with the source's error, if any.
pub struct Pipe {
    rx: Receiver<io::Result<Vec<u8>>>,
    /// Read chunks go back to the inflating thread to be filled again: the chunks are
    /// allocated once for the whole stream, not once per megabyte.
    emptied: Sender<Vec<u8>>,
    chunk: Vec<u8>,
    pos: usize,
    done: bool,
}

/// Starts reading `src` on a background thread.
pub fn spawn<R: Read + Send + 'static>(mut src: R) -> Pipe {
    let (tx, rx) = sync_channel(CHUNKS_IN_FLIGHT);
    let (emptied, recycled) = channel::<Vec<u8>>();
    std::thread::spawn(move || loop {
        let mut buf = recycled.try_recv().unwrap_or_default();
        buf.resize(CHUNK_BYTES, 0);
        let mut filled = 0;
        let mut error = None;
        while filled < buf.len() {
            match src.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        buf.truncate(filled);
        let last = filled < CHUNK_BYTES;
        // Data before an error is delivered first, then the error.
        if filled > 0 && tx.send(Ok(buf)).is_err() {
            return;
        }
        if let Some(e) = error {
            let _ = tx.send(Err(e));
            return;
        }
        if last {
            return;
        }
    });
    Pipe {
        rx,
        emptied,
        chunk: Vec::new(),
        pos: 0,
        done: false,
    }
}

impl Read for Pipe {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.pos < self.chunk.len() {
                let n = out.len().min(self.chunk.len() - self.pos);
                out[..n].copy_from_slice(&self.chunk[self.pos..self.pos + n]);
                self.pos += n;
                return Ok(n);
            }
            if self.done {
                return Ok(0);
            }
            match self.rx.recv() {
                Ok(Ok(chunk)) => {
                    let read = std::mem::replace(&mut self.chunk, chunk);
                    // The thread may have ended; the chunk is then dropped.
                    let _ = self.emptied.send(read);
                    self.pos = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => {
                    self.done = true;
                    return Ok(0);
                }
            }
        }
    }
}

/// A reader that ends after `max_bytes` and then raises `reached` if its source had more:
/// the import of a stream inflating past its bound stops there and says so.
pub struct Bounded<R> {
    inner: R,
    left: u64,
    reached: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl<R: Read> Bounded<R> {
    /// Reads at most `max_bytes` of `inner`.
    pub fn new(
        inner: R,
        max_bytes: u64,
        reached: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> Self {
        Bounded {
            inner,
            left: max_bytes,
            reached,
        }
    }
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            // One more byte tells a stream that ends exactly at the bound from a longer one.
            let mut probe = [0u8; 1];
            if self.inner.read(&mut probe)? > 0 {
                self.reached
                    .store(true, std::sync::atomic::Ordering::Release);
            }
            return Ok(0);
        }
        let want = out
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut out[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Yields `data`, then fails.
    struct Failing(Vec<u8>, bool);
    impl Read for Failing {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.1 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "cut"));
            }
            self.1 = true;
            let n = out.len().min(self.0.len());
            out[..n].copy_from_slice(&self.0[..n]);
            Ok(n)
        }
    }

    #[test]
    fn passes_data_through_then_the_error() {
        let data: Vec<u8> = (0..3 * CHUNK_BYTES + 17)
            .map(|i| u8::try_from(i % 256).unwrap())
            .collect();
        let mut out = Vec::new();
        spawn(io::Cursor::new(data.clone()))
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, data);
        let mut pipe = spawn(Failing(b"abc".to_vec(), false));
        let mut got = Vec::new();
        let err = pipe.read_to_end(&mut got).unwrap_err();
        assert_eq!(got, b"abc");
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn bounded_stops_at_the_bound_and_tells_a_longer_stream() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        for (len, longer) in [(10usize, false), (11, true), (3, false)] {
            let reached = Arc::new(AtomicBool::new(false));
            let mut b = Bounded::new(std::io::Cursor::new(vec![7u8; len]), 10, reached.clone());
            let mut got = Vec::new();
            b.read_to_end(&mut got).unwrap();
            assert_eq!(got.len(), len.min(10));
            assert_eq!(reached.load(Ordering::Acquire), longer, "{len}");
        }
    }
}
