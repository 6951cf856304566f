//! Compression undone before any importer looks: the magic numbers of gzip and Zstandard, the
//! decoders (multi-member gzip, multi-frame zstd), decoding on a second thread, and the bound
//! on how far a stream may inflate.

use crate::pipe;
use std::io::{self, BufRead, BufReader, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tracelens_model::Compression;

/// The gzip magic bytes.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// The Zstandard frame magic number, little-endian.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// The compression whose magic number starts `head`, if any.
#[must_use]
pub fn compression_of(head: &[u8]) -> Option<Compression> {
    if head.starts_with(&GZIP_MAGIC) {
        Some(Compression::Gzip)
    } else if head.starts_with(&ZSTD_MAGIC) {
        Some(Compression::Zstd)
    } else {
        None
    }
}

/// A bound on decompression, for uses that must not spend minutes on a compression bomb
/// (`annotate` copies every decoded byte): the decoded stream may grow to `ratio` times the
/// file's size, and always to `floor_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InflateBound {
    /// Decoded bytes per file byte allowed.
    pub ratio: u64,
    /// Decoded bytes always allowed, whatever the ratio.
    pub floor_bytes: u64,
}

impl InflateBound {
    /// The decoded bytes allowed for a file of `file_bytes`.
    #[must_use]
    pub fn max_decoded_bytes(&self, file_bytes: u64) -> u64 {
        file_bytes.saturating_mul(self.ratio).max(self.floor_bytes)
    }
}

/// Whether a bounded stream was cut at its bound (set once the decoder had more to give).
pub type Reached = Arc<AtomicBool>;

/// The decoded stream of `src` (whose first bytes carry `compression`'s magic number).
#[must_use]
pub fn decoder<R: Read + Send + 'static>(compression: Compression, src: R) -> Box<dyn Read + Send> {
    let src = BufReader::with_capacity(1 << 16, src);
    match compression {
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(src)),
        Compression::Zstd => Box::new(ZstdFrames::new(src)),
    }
}

/// [`decoder`] run on its own thread (the importer parses earlier chunks meanwhile), cut at
/// `bound` when one is given; the returned flag says whether the cut happened.
#[must_use]
pub fn spawn_decoder<R: Read + Send + 'static>(
    compression: Compression,
    src: R,
    bound: Option<(InflateBound, u64)>,
) -> (Box<dyn Read + Send>, Reached) {
    let reached = Reached::default();
    let decoded = decoder(compression, src);
    let stream: Box<dyn Read + Send> = match bound {
        Some((bound, file_bytes)) => Box::new(pipe::spawn(pipe::Bounded::new(
            decoded,
            bound.max_decoded_bytes(file_bytes),
            reached.clone(),
        ))),
        None => Box::new(pipe::spawn(decoded)),
    };
    (stream, reached)
}

/// Whether the flag of a bounded stream is set.
#[must_use]
pub fn was_cut(reached: &Reached) -> bool {
    reached.load(Ordering::Acquire)
}

/// Largest zstd window read: 2^27 bytes, the limit `zstd -d` itself applies unless told
/// `--long`/`--memory`. The decoder keeps up to a window of decoded bytes, so a tiny file
/// declaring a huge window would otherwise hold everything it decodes.
const MAX_ZSTD_WINDOW_BYTES: u64 = 1 << 27;

/// Every frame of a Zstandard stream, one after another (`zstd` writes one frame; `pzstd`
/// and concatenated files write several), skippable frames skipped.
///
/// Each frame gets a fresh decoder: a reused one reserves the whole declared window up front
/// and refuses windows over 100 MB (`zstd --long` writes 128 MiB ones); the window is
/// checked against [`MAX_ZSTD_WINDOW_BYTES`] from the frame header instead.
struct ZstdFrames<R: BufRead> {
    src: R,
    frame: ruzstd::decoding::FrameDecoder,
    in_frame: bool,
}

impl<R: BufRead> ZstdFrames<R> {
    fn new(src: R) -> Self {
        ZstdFrames {
            src,
            frame: ruzstd::decoding::FrameDecoder::new(),
            in_frame: false,
        }
    }

    /// Starts the next frame; `false` at the end of the stream.
    fn next_frame(&mut self) -> io::Result<bool> {
        use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
        loop {
            if self.src.fill_buf()?.is_empty() {
                return Ok(false);
            }
            self.frame = ruzstd::decoding::FrameDecoder::new();
            let mut header = Recording {
                inner: &mut self.src,
                bytes: Vec::new(),
            };
            match self.frame.init(&mut header) {
                Ok(()) => {
                    let window = window_bytes(&header.bytes).unwrap_or(0);
                    if window > MAX_ZSTD_WINDOW_BYTES {
                        return Err(io::Error::new(
                            io::ErrorKind::Unsupported,
                            format!(
                                "the zstd stream needs a {} MiB window, more than the {} MiB that `zstd -d` and tracelens decode by default: decompress it first (`zstd -d --memory={}MB FILE`)",
                                window >> 20,
                                MAX_ZSTD_WINDOW_BYTES >> 20,
                                window.div_ceil(1 << 20)
                            ),
                        ));
                    }
                    return Ok(true);
                }
                Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                    length,
                    ..
                })) => {
                    let skipped = io::copy(
                        &mut (&mut self.src).take(u64::from(length)),
                        &mut io::sink(),
                    )?;
                    if skipped < u64::from(length) {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "the zstd stream ends inside a skippable frame",
                        ));
                    }
                }
                Err(e) => return Err(io::Error::other(format!("zstd: {e}"))),
            }
        }
    }
}

/// A reader that keeps the first bytes read through it: a frame header (at most 18 bytes).
struct Recording<'a, R> {
    inner: &'a mut R,
    bytes: Vec<u8>,
}

impl<R: Read> Read for Recording<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(out)?;
        if self.bytes.len() < 18 {
            self.bytes.extend_from_slice(&out[..n]);
        }
        Ok(n)
    }
}

/// The window a zstd frame header declares (RFC 8878 §3.1.1.1): the frame content size for a
/// single-segment frame, else from the window descriptor.
fn window_bytes(header: &[u8]) -> Option<u64> {
    let descriptor = *header.get(4)?;
    if descriptor & 0x20 == 0 {
        let w = *header.get(5)?;
        let base = 1u64 << (10 + u32::from(w >> 3));
        return Some(base + base / 8 * u64::from(w & 7));
    }
    let dict_bytes = [0, 1, 2, 4][usize::from(descriptor & 3)];
    let size_bytes = [1, 2, 4, 8][usize::from(descriptor >> 6)];
    let at = 5 + dict_bytes;
    let field = header.get(at..at + size_bytes)?;
    let mut le = [0u8; 8];
    le[..size_bytes].copy_from_slice(field);
    let size = u64::from_le_bytes(le);
    Some(if size_bytes == 2 { size + 256 } else { size })
}

impl<R: BufRead> Read for ZstdFrames<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        use ruzstd::decoding::BlockDecodingStrategy;
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            if !self.in_frame {
                if !self.next_frame()? {
                    return Ok(0);
                }
                self.in_frame = true;
            }
            while self.frame.can_collect() < out.len() && !self.frame.is_finished() {
                let want = out.len() - self.frame.can_collect();
                self.frame
                    .decode_blocks(&mut self.src, BlockDecodingStrategy::UptoBytes(want))
                    .map_err(|e| io::Error::other(format!("zstd: {e}")))?;
            }
            let n = self.frame.read(out)?;
            if n > 0 {
                return Ok(n);
            }
            if self.frame.is_finished() && self.frame.can_collect() == 0 {
                self.in_frame = false;
                // The decoder reads a frame's content checksum but leaves checking it to us.
                if let (Some(stored), Some(computed)) = (
                    self.frame.get_checksum_from_data(),
                    self.frame.get_calculated_checksum(),
                ) {
                    if stored != computed {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            "zstd: frame content checksum mismatch",
                        ));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(compression: Compression, bytes: Vec<u8>) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        decoder(compression, io::Cursor::new(bytes)).read_to_end(&mut out)?;
        Ok(out)
    }

    /// `printf 'hello ' | zstd -c --no-check` and `printf 'world' | zstd -c --no-check`.
    const TWO_FRAMES: [u8; 29] = [
        0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58, 0x31, 0x00, 0x00, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x20,
        0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58, 0x29, 0x00, 0x00, 0x77, 0x6f, 0x72, 0x6c, 0x64,
    ];

    #[test]
    fn magic_numbers_name_the_compression() {
        assert_eq!(compression_of(&[0x1f, 0x8b, 8]), Some(Compression::Gzip));
        assert_eq!(compression_of(&TWO_FRAMES), Some(Compression::Zstd));
        assert_eq!(compression_of(b"{\"traceEvents\""), None);
        assert_eq!(compression_of(&[0x1f]), None);
    }

    #[test]
    fn every_zstd_frame_is_decoded_and_skippable_frames_skipped() {
        let frames = &TWO_FRAMES[..];
        let mut with_skip = vec![0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 9, 9, 9];
        with_skip.extend_from_slice(frames);
        // The skippable frame comes first, so the stream's magic is its own: decode directly.
        let mut out = Vec::new();
        ZstdFrames::new(BufReader::new(io::Cursor::new(with_skip)))
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, b"hello world");
        assert_eq!(
            decode_all(Compression::Zstd, frames.to_vec()).unwrap(),
            b"hello world"
        );
    }

    #[test]
    fn a_frame_whose_content_fails_its_checksum_is_a_read_error() {
        // `printf 'hello' | zstd -c` (with its content checksum), then one content byte changed.
        let mut frame = vec![
            0x28, 0xb5, 0x2f, 0xfd, 0x04, 0x58, 0x29, 0x00, 0x00, 0x68, 0x65, 0x6c, 0x6c, 0x6f,
            0xa3, 0x6d, 0x9f, 0x88,
        ];
        assert_eq!(
            decode_all(Compression::Zstd, frame.clone()).unwrap(),
            b"hello"
        );
        frame[10] ^= 1;
        let err = decode_all(Compression::Zstd, frame).unwrap_err();
        assert!(err.to_string().contains("checksum"), "{err}");
    }

    #[test]
    fn windows_past_zstds_own_default_limit_are_refused_with_the_way_out() {
        // Window descriptor 0xf8: 2^41 bytes; then one raw, last block of 2 bytes. The decoder
        // would keep everything it decodes: refused before any block.
        let frame = [
            0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xf8, 0x11, 0x00, 0x00, b'{', b'}',
        ];
        let err = decode_all(Compression::Zstd, frame.to_vec()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::Unsupported);
        assert!(err.to_string().contains("--memory=2097152MB"), "{err}");
        // A single-segment frame declares its content size as its window (a 2-byte size
        // field counts from 256).
        assert_eq!(window_bytes(&[0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x05]), Some(5));
        assert_eq!(
            window_bytes(&[0x28, 0xb5, 0x2f, 0xfd, 0x60, 0x00, 0x01]),
            Some(512)
        );
        // A 128 MiB window (`zstd --long=27`), followed by a second frame: both decode.
        let mut two = vec![
            0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x88, 0x11, 0x00, 0x00, b'{', b'}',
        ];
        two.extend_from_slice(&TWO_FRAMES);
        assert_eq!(
            decode_all(Compression::Zstd, two).unwrap(),
            b"{}hello world"
        );
    }

    #[test]
    fn a_cut_or_corrupt_zstd_stream_is_a_read_error() {
        let frames = &TWO_FRAMES[..];
        assert!(decode_all(Compression::Zstd, frames[..20].to_vec()).is_err());
        let mut bad = frames.to_vec();
        bad[4] = 0xff; // a reserved descriptor bit
        assert!(decode_all(Compression::Zstd, bad).is_err());
    }

    #[test]
    fn the_bound_cuts_a_stream_and_says_so() {
        let text = vec![b' '; 300_000];
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        io::Write::write_all(&mut gz, &text).unwrap();
        let gz = gz.finish().unwrap();
        let bound = InflateBound {
            ratio: 2,
            floor_bytes: 1000,
        };
        let (mut stream, reached) = spawn_decoder(
            Compression::Gzip,
            io::Cursor::new(gz.clone()),
            Some((bound, 10)),
        );
        let mut out = Vec::new();
        stream.read_to_end(&mut out).unwrap();
        assert_eq!(out.len(), 1000);
        assert!(was_cut(&reached));
        let (mut stream, reached) = spawn_decoder(Compression::Gzip, io::Cursor::new(gz), None);
        out.clear();
        stream.read_to_end(&mut out).unwrap();
        assert_eq!(out, text);
        assert!(!was_cut(&reached));
    }
}
