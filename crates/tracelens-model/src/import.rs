//! The contract of an input format: an [`Importer`] recognises its format by the first decoded
//! bytes and turns an [`Input`] (opened once, compression already undone: its first bytes and
//! the rest of the stream) into a [`Trace`]. `tracelens-load` holds the registry, undoes
//! compression and words "not a trace"; a new format is one crate implementing this trait
//! plus one line there.

use crate::trace::Trace;
use std::io::Read;
use std::path::PathBuf;

/// How many decoded bytes an importer's [`Importer::sniff`] sees (fewer only when the input
/// is shorter): enough for a format's magic number and a JSON document's first keys.
pub const HEAD_BYTES: usize = 4096;

/// A compression the loader undid before the importer saw the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// gzip (RFC 1952), one or more members.
    Gzip,
    /// Zstandard (RFC 8878), one or more frames.
    Zstd,
}

impl Compression {
    /// Its usual name, as `SourceInfo::compression` records it.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }
}

/// An input opened once, compression undone: its first decoded bytes, already read, and the
/// rest of the decoded stream.
pub struct Input {
    /// The path as given (`-` for stdin): labels the trace and its messages.
    pub path: PathBuf,
    /// The first decoded bytes (up to [`HEAD_BYTES`]), already read from the stream.
    pub head: Vec<u8>,
    /// The rest of the decoded stream; a decoding error arrives as a read error, after every
    /// byte decoded before it.
    pub rest: Box<dyn Read + Send>,
    /// Whether `path` is a regular file that can be opened again (SQLite needs one); pipes,
    /// FIFOs and stdin are not. With `compression`, the file holds the compressed bytes.
    pub regular_file: bool,
    /// Its size on disk (0 for a stream).
    pub file_bytes: u64,
    /// The compression undone to produce the stream, if any.
    pub compression: Option<Compression>,
}

/// The offset and value of the first byte of `head` that is not JSON whitespace or a UTF-8
/// byte-order mark: what tells one text format from another.
#[must_use]
pub fn first_meaningful_byte(head: &[u8]) -> Option<(usize, u8)> {
    let start = if head.starts_with(&[0xEF, 0xBB, 0xBF]) {
        3
    } else {
        0
    };
    head.iter()
        .enumerate()
        .skip(start)
        .find(|(_, b)| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .map(|(i, &b)| (i, b))
}

impl Input {
    /// The whole stream again, first bytes included.
    #[must_use]
    pub fn into_stream(self) -> impl Read + Send {
        std::io::Cursor::new(self.head).chain(self.rest)
    }
}

/// Why an importer could not read its input.
#[derive(Debug)]
pub enum ImportFailure {
    /// Reading the input failed (the loader words it: no such file, permission denied, …).
    Io(std::io::Error),
    /// The input is not this format, or is broken in a way this format can say (one line,
    /// without the path).
    Format(String),
}

/// One input format.
pub trait Importer: Sync {
    /// The format id the importer writes into `SourceInfo::format` (`kineto_json`).
    fn format(&self) -> &'static str;
    /// The file-name endings of this format, lowercase (`.json.gz`): what a folder of traces
    /// is scanned for. Reading never goes by name: [`Importer::sniff`] decides.
    fn extensions(&self) -> &'static [&'static str];
    /// What this format's inputs start with, for the loader's "not a trace" line
    /// (`Chrome-trace JSON ('{' or '[')`).
    fn expects(&self) -> &'static str;
    /// Whether the first decoded bytes of an input ([`Input::head`]) are this format's.
    fn sniff(&self, head: &[u8]) -> bool;
    /// Reads the input into a trace.
    fn import(&self, input: Input) -> Result<Trace, ImportFailure>;
}
