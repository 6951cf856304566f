//! Decompression on its own thread: a gzip stream is inflated into chunks while the parser
//! works on earlier ones, so the two costs overlap instead of adding up.

use std::io::{self, Read};
use std::sync::mpsc::{sync_channel, Receiver};

/// Size of the chunks handed from the inflating thread to the parser.
const CHUNK_BYTES: usize = 1 << 20;
/// Chunks in flight (bounds the memory the pipe holds).
const CHUNKS_IN_FLIGHT: usize = 4;

/// The reading end: a plain `Read` over the chunks, ending with the source's error, if any.
pub struct Pipe {
    rx: Receiver<io::Result<Vec<u8>>>,
    chunk: Vec<u8>,
    pos: usize,
    done: bool,
}

/// Starts reading `src` on a background thread.
pub fn spawn<R: Read + Send + 'static>(mut src: R) -> Pipe {
    let (tx, rx) = sync_channel(CHUNKS_IN_FLIGHT);
    std::thread::spawn(move || loop {
        let mut buf = vec![0u8; CHUNK_BYTES];
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
                    self.chunk = chunk;
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
}
