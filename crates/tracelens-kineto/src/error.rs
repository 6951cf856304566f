//! Import errors: one line naming the file and what is wrong with it.

use std::fmt;
use std::path::{Path, PathBuf};

/// Why a file could not be imported.
#[derive(Debug)]
pub enum Problem {
    /// Reading failed.
    Io(std::io::Error),
    /// The file has no bytes.
    Empty,
    /// The file (or its decompressed text) holds only whitespace.
    Blank {
        /// How many bytes of whitespace.
        bytes: u64,
        /// Whether they came out of a compressed stream.
        compressed: bool,
    },
    /// The first meaningful byte is not `{` or `[`.
    NotJson {
        /// Byte offset of the offending byte.
        offset: u64,
        /// What was found there.
        found: String,
    },
    /// Valid JSON, but not a Chrome/Kineto trace.
    NotATrace(String),
    /// A PyTorch execution trace (`nodes` graph), which has no timings.
    ExecutionTrace,
    /// The compressed stream is corrupt before any event could be read.
    CorruptStream(tracelens_model::Compression, String),
    /// The file ends before the first complete event.
    TruncatedBeforeEvents {
        /// Decoded byte offset where it ends.
        offset: u64,
    },
}

/// An import failure for one file.
#[derive(Debug)]
pub struct ImportError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong.
    pub problem: Problem,
}

impl ImportError {
    /// An error for `path`.
    #[must_use]
    pub fn new(path: &Path, problem: Problem) -> Self {
        ImportError {
            path: path.to_path_buf(),
            problem,
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Io(e) => write!(f, "read error: {e}"),
            Problem::Empty => write!(f, "file is empty"),
            Problem::Blank { bytes, compressed } => write!(
                f,
                "no JSON: the {} holds only {bytes} bytes of whitespace",
                if *compressed {
                    "decompressed text"
                } else {
                    "file"
                }
            ),
            Problem::NotJson { offset, found } => write!(
                f,
                "not a JSON trace: expected '{{' or '[' but found {found} at byte {offset}"
            ),
            Problem::NotATrace(detail) => write!(f, "not a Chrome/Kineto trace: {detail}"),
            Problem::ExecutionTrace => write!(
                f,
                "a PyTorch execution trace (ExecutionTraceObserver 'nodes' graph), not a profiler trace: it has no timings; pass the Kineto trace recorded alongside it"
            ),
            Problem::CorruptStream(compression, detail) => {
                write!(f, "corrupt {} data: {detail}", compression.label())
            }
            Problem::TruncatedBeforeEvents { offset } => write!(
                f,
                "truncated: the file ends at byte {offset}, before the first complete trace event"
            ),
        }
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.problem)
    }
}

impl std::error::Error for ImportError {}
