//! The contract of an input format: an [`Importer`] recognises its format by the first bytes
//! and turns an [`Input`] (opened once: its first bytes and the rest of the stream) into a
//! [`Trace`]. `tracelens-load` holds the registry; a new format is one crate implementing
//! this trait plus one line there.

use crate::trace::Trace;
use std::io::Read;
use std::path::PathBuf;

/// An input opened once: its first bytes, already read, and the rest of the stream.
pub struct Input {
    /// The path as given (`-` for stdin): labels the trace and its messages.
    pub path: PathBuf,
    /// The first bytes (up to 64), already read from the stream.
    pub head: Vec<u8>,
    /// The rest of the stream.
    pub rest: Box<dyn Read + Send>,
    /// Whether `path` is a regular file that can be opened again (SQLite needs one); pipes,
    /// FIFOs and stdin are not.
    pub regular_file: bool,
    /// Its size on disk (0 for a stream).
    pub file_bytes: u64,
    /// How far a compressed input may inflate before the importer stops with an error
    /// (`None`: no bound; `analyze` salvages what it can instead).
    pub inflate_bound: Option<InflateBound>,
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
    /// Whether the first bytes of an input are this format's.
    fn sniff(&self, head: &[u8]) -> bool;
    /// Reads the input into a trace.
    fn import(&self, input: Input) -> Result<Trace, ImportFailure>;
}
