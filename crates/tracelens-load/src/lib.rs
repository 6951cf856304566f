//! Opening a trace of any supported format, shared by `analyze`, `annotate`, `check`, `diff`
//! and `--rules nsys`: the input is read exactly once (files, pipes, FIFOs and stdin alike),
//! compression undone ([`decode`]: gzip, zstd) before any importer looks, the format sniffed
//! from the first decoded bytes by the registry of importers ([`IMPORTERS`]), and the stream
//! handed to the first that takes it; an input none takes gets one "not a trace" line
//! ([`not_a_trace`]). Also the opening of result documents. Errors are one line without the
//! path ([`LoadError`]); the caller names the file.
#![deny(missing_docs)]

mod capture;
pub mod decode;
pub mod not_a_trace;
mod pipe;
pub mod remote;

pub use capture::{attach_captures, CAPTURE_FOLDER, MAX_CAPTURE_FILES};
pub use decode::InflateBound;

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::Path;
use tracelens_model::{Compression, ImportFailure, Importer, Input, Trace, HEAD_BYTES};

/// Which file a path names, following links: two paths with the same identity are the same
/// file (a symlink, a hard link, `./x` and `x`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileIdentity {
    device: u64,
    inode: u64,
}

/// The identity of the file at `path`, when it exists (always `None` off Unix).
#[must_use]
pub fn identity(path: &Path) -> Option<FileIdentity> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        Some(FileIdentity {
            device: m.dev(),
            inode: m.ino(),
        })
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Whether `path` means standard input.
#[must_use]
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Told the bytes read from the file so far (about every megabyte), for a progress bar.
pub type Progress = std::sync::Arc<dyn Fn(u64) + Send + Sync>;

/// A reader that reports how far it got.
struct Counted<R> {
    inner: R,
    read: u64,
    reported: u64,
    progress: Progress,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        if self.read - self.reported >= 1 << 20 || n == 0 {
            self.reported = self.read;
            (self.progress)(self.read);
        }
        Ok(n)
    }
}

/// Every input format, most specific first: the first whose `sniff` takes the input's first
/// decoded bytes imports it; an input none takes is "not a trace" ([`not_a_trace::unclaimed`]).
/// A new format is one crate implementing [`Importer`] and one line here.
pub const IMPORTERS: &[&dyn Importer] = &[
    &tracelens_nsys::NsysImporter,
    &tracelens_kineto::KinetoImporter,
    &tracelens_snapshot::SnapshotImporter,
];

/// Whether a file name looks like a trace of some format (a folder of ranks is scanned for
/// these); tracelens' own reports and annotated copies beside the traces are not.
#[must_use]
pub fn is_trace_file_name(path: &Path) -> bool {
    let name = path.to_string_lossy().to_lowercase();
    !name.ends_with(".tracelens.html")
        && !name.ends_with(".annotated.json.gz")
        && IMPORTERS
            .iter()
            .flat_map(|i| i.extensions())
            .any(|x| name.ends_with(x))
}

/// Why a trace could not be opened: one line, without the path (the caller names the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// Reading failed: no such file, permission denied, a directory, a read error.
    Read(String),
    /// The file holds no byte.
    Empty,
    /// An input this use cannot take, with what to do instead.
    Unsupported(String),
    /// No importer reads it: what it most likely is and what to pass instead.
    NotATrace(String),
    /// The compressed data is corrupt before its first decoded byte.
    CorruptCompression {
        /// The compression.
        compression: Compression,
        /// The decoder's words.
        detail: String,
    },
    /// A compressed input inflates past the caller's [`InflateBound`].
    InflatesTooFar {
        /// The compression.
        compression: Compression,
        /// The decoded bytes read when the import stopped.
        decoded_bytes: u64,
        /// The compressed file's size.
        file_bytes: u64,
    },
    /// A format's importer refused it (not that format, or broken).
    Format {
        /// The importer's format id.
        format: &'static str,
        /// Its one line.
        problem: String,
    },
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Read(why) => f.write_str(why),
            LoadError::Empty => f.write_str("file is empty"),
            LoadError::Unsupported(why) | LoadError::NotATrace(why) => f.write_str(why),
            LoadError::CorruptCompression {
                compression,
                detail,
            } => write!(f, "corrupt {} data: {detail}", compression.label()),
            LoadError::InflatesTooFar {
                compression,
                decoded_bytes,
                file_bytes,
            } => write!(
                f,
                "decompresses more than {}× (past {:.1} MB from {:.3} MB): refusing a likely {} bomb",
                decoded_bytes / (*file_bytes).max(1),
                *decoded_bytes as f64 / 1e6,
                *file_bytes as f64 / 1e6,
                compression.label()
            ),
            LoadError::Format { problem, .. } => f.write_str(problem),
        }
    }
}

impl std::error::Error for LoadError {}

/// An input opened and decoded, with the flag of its decompression bound.
struct Opened {
    input: Input,
    /// For a bounded decompression: the flag set when it was cut, and the bound in bytes.
    cut: Option<(decode::Reached, u64)>,
}

/// Opens `path` once (file, pipe, FIFO or stdin), undoes its compression (on a second thread,
/// cut at `bound` if given) and reads its first decoded bytes.
fn open_input(
    path: &Path,
    progress: Option<Progress>,
    bound: Option<InflateBound>,
) -> Result<Opened, LoadError> {
    let read = |e: std::io::Error| LoadError::Read(read_problem(&e));
    let (raw, regular_file, file_bytes): (Box<dyn Read + Send>, bool, u64) = if is_stdin(path) {
        (Box::new(std::io::stdin()), false, 0)
    } else if let Some(object) = remote::open(path) {
        let (reader, size) = object.map_err(read)?;
        let reader: Box<dyn Read + Send> = match progress {
            Some(progress) => Box::new(Counted {
                inner: reader,
                read: 0,
                reported: 0,
                progress,
            }),
            None => reader,
        };
        (reader, false, size)
    } else {
        let f = File::open(path).map_err(read)?;
        let meta = f.metadata().map_err(read)?;
        if meta.is_dir() {
            return Err(LoadError::Read("is a directory, not a trace file".into()));
        }
        let f: Box<dyn Read + Send> = match progress {
            Some(progress) => Box::new(Counted {
                inner: f,
                read: 0,
                reported: 0,
                progress,
            }),
            None => Box::new(f),
        };
        (f, meta.is_file(), meta.len())
    };
    decode_input(path, raw, regular_file, file_bytes, bound)
}

/// The raw stream of `path` decoded, cut at `bound` if given, with its first decoded bytes
/// read and checked for what no format is.
fn decode_input(
    path: &Path,
    mut raw: Box<dyn Read + Send>,
    regular_file: bool,
    file_bytes: u64,
    bound: Option<InflateBound>,
) -> Result<Opened, LoadError> {
    let read = |e: std::io::Error| LoadError::Read(read_problem(&e));
    let (raw_head, error) = read_head_keeping_error(&mut raw, HEAD_BYTES);
    if raw_head.is_empty() {
        return Err(error.map_or(LoadError::Empty, read));
    }
    let compression = decode::compression_of(&raw_head);
    let raw = ReplayHead::new(raw_head, error, raw);
    let bound = bound.map(|b| (b, file_bytes));
    let (head, error, rest, cut) = match compression {
        None => {
            let (head, error, rest) = raw.into_parts();
            (head, error, rest, None)
        }
        Some(compression) => {
            let (mut decoded, reached) = decode::spawn_decoder(compression, raw, bound);
            let cut = bound.map(|(b, bytes)| (reached, b.max_decoded_bytes(bytes)));
            let (head, error) = read_head_keeping_error(&mut decoded, HEAD_BYTES);
            if head.is_empty() {
                return Err(match error {
                    Some(e) if e.kind() == ErrorKind::Unsupported => {
                        LoadError::Unsupported(e.to_string())
                    }
                    Some(e) => LoadError::CorruptCompression {
                        compression,
                        detail: e.to_string(),
                    },
                    None => LoadError::NotATrace(format!(
                        "the {} data decompresses to nothing",
                        compression.label()
                    )),
                });
            }
            (head, error, decoded, cut)
        }
    };
    if let Some(why) = not_a_trace::refused_before_sniffing(&head, compression) {
        return Err(LoadError::NotATrace(why));
    }
    let rest: Box<dyn Read + Send> = match error {
        Some(e) => Box::new(ReplayHead::new(Vec::new(), Some(e), rest)),
        None => rest,
    };
    Ok(Opened {
        input: Input {
            path: path.to_path_buf(),
            head,
            rest,
            regular_file,
            file_bytes,
            compression,
        },
        cut,
    })
}

/// Up to `n` first bytes of `src` (fewer only at its end or at an error, which is returned
/// beside the bytes read before it); pipes deliver in pieces.
fn read_head_keeping_error<R: Read>(src: &mut R, n: usize) -> (Vec<u8>, Option<std::io::Error>) {
    let mut head = vec![0u8; n];
    let mut got = 0;
    let mut error = None;
    while got < n {
        match src.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    head.truncate(got);
    (head, error)
}

/// Up to `n` first bytes of `src` (fewer only at its end); pipes deliver in pieces.
pub fn read_head<R: Read>(src: &mut R, n: usize) -> std::io::Result<Vec<u8>> {
    match read_head_keeping_error(src, n) {
        (_, Some(e)) => Err(e),
        (head, None) => Ok(head),
    }
}

/// A stream whose first bytes were read ahead: they come first, then the error that stopped
/// the read-ahead (once), then the rest.
struct ReplayHead {
    head: std::io::Cursor<Vec<u8>>,
    error: Option<std::io::Error>,
    rest: Box<dyn Read + Send>,
}

impl ReplayHead {
    fn new(head: Vec<u8>, error: Option<std::io::Error>, rest: Box<dyn Read + Send>) -> Self {
        ReplayHead {
            head: std::io::Cursor::new(head),
            error,
            rest,
        }
    }

    /// The bytes read ahead, the error after them, and the rest.
    fn into_parts(self) -> (Vec<u8>, Option<std::io::Error>, Box<dyn Read + Send>) {
        (self.head.into_inner(), self.error, self.rest)
    }
}

impl Read for ReplayHead {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.head.read(out)?;
        if n > 0 || out.is_empty() {
            return Ok(n);
        }
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.rest.read(out)
    }
}

/// Reads the trace at `path` (`-` for stdin) with the importer its first bytes call for.
pub fn open(path: &Path) -> Result<Trace, LoadError> {
    load(path, None)
}

/// [`open`], telling `progress` how many bytes of the file were read so far (an importer
/// that opens the file by path itself, as SQLite does, reports nothing).
pub fn open_with_progress(path: &Path, progress: Progress) -> Result<Trace, LoadError> {
    load(path, Some(progress))
}

fn load(path: &Path, progress: Option<Progress>) -> Result<Trace, LoadError> {
    import(open_input(path, progress, None)?)
}

/// Reads a trace held in memory (`label` names it in the trace and its messages), exactly as
/// [`open`] reads a file: for fuzzing and tests of the whole input step.
pub fn open_bytes(bytes: Vec<u8>, label: &Path) -> Result<Trace, LoadError> {
    let file_bytes = bytes.len() as u64;
    let raw = Box::new(std::io::Cursor::new(bytes));
    import(decode_input(label, raw, false, file_bytes, None)?)
}

/// The opened input read by the importer its first decoded bytes call for.
fn import(opened: Opened) -> Result<Trace, LoadError> {
    let Opened { input, cut } = opened;
    let (compression, file_bytes) = (input.compression, input.file_bytes);
    let Some(importer) = IMPORTERS.iter().find(|i| i.sniff(&input.head)) else {
        return Err(LoadError::NotATrace(not_a_trace::unclaimed(
            &input.head,
            IMPORTERS,
        )));
    };
    let imported = importer.import(input).map_err(|e| match e {
        ImportFailure::Io(io) => LoadError::Read(read_problem(&io)),
        ImportFailure::Format(problem) => LoadError::Format {
            format: importer.format(),
            problem,
        },
    });
    match (cut, compression) {
        (Some((cut, decoded_bytes)), Some(compression)) if decode::was_cut(&cut) => {
            Err(LoadError::InflatesTooFar {
                compression,
                decoded_bytes,
                file_bytes,
            })
        }
        _ => imported,
    }
}

/// How far a compressed trace may inflate for `annotate`: real traces compress 5–30 times,
/// and `annotate` copies (and recompresses) every decoded byte, so a gzip bomb would run for
/// minutes. The import stops at the bound (`analyze` has none and reads the whole stream).
pub const ANNOTATE_INFLATE_BOUND: InflateBound = InflateBound {
    ratio: 100,
    floor_bytes: 64 << 20,
};

/// Opens a trace for `tracelens annotate`, which writes tracks back into the file: only a
/// format that can take them (Chrome-trace JSON) is accepted.
pub fn open_annotatable(path: &Path) -> Result<Trace, LoadError> {
    let twice = "annotate reads the trace twice: give it a regular file, not";
    if is_stdin(path) {
        return Err(LoadError::Unsupported(format!("{twice} stdin")));
    }
    let opened = open_input(path, None, Some(ANNOTATE_INFLATE_BOUND))?;
    if !opened.input.regular_file {
        // Opening a FIFO again for the copy would wait for a writer forever.
        return Err(LoadError::Unsupported(format!("{twice} a pipe or FIFO")));
    }
    let trace = import(opened)?;
    if !trace.source.annotatable {
        return Err(LoadError::Unsupported(format!(
            "annotate writes tracks back into Chrome-trace JSON (Kineto traces) only, not into the {} format; open it in its own viewer",
            trace.source.format_name
        )));
    }
    Ok(trace)
}

pub use tracelens_chrome_json::CopyStats;
pub use tracelens_nsys::rules::RuleResult;

/// Writes the annotatable trace at `path` to `out` again, byte for byte, with `events` (JSON
/// objects, one per string) first in its event list.
pub fn write_annotated(
    path: &Path,
    out: &mut dyn std::io::Write,
    events: &[String],
) -> std::io::Result<CopyStats> {
    tracelens_chrome_json::copy_with_events(open_decoded(path)?, out, events)
}

/// The decoded bytes of the file at `path` (gzip or zstd undone), for copying it.
pub fn open_decoded(path: &Path) -> std::io::Result<Box<dyn Read + Send>> {
    let mut file = open_raw(path)?;
    let head = read_head(&mut file, 4)?;
    let compression = decode::compression_of(&head);
    let raw = std::io::Cursor::new(head).chain(file);
    Ok(match compression {
        Some(c) => decode::decoder(c, raw),
        None => Box::new(raw),
    })
}

/// The six `nsys analyze` CUDA rules on an open export (the `--rules nsys` mode).
pub fn nsys_rules(export: &tracelens_nsys::OpenExport) -> Result<Vec<RuleResult>, String> {
    tracelens_nsys::rules::run_all(&export.db)
}

/// The rules' tables as `nsys analyze` prints them.
#[must_use]
pub fn nsys_rules_text(results: &[RuleResult], file_name: &str) -> String {
    tracelens_nsys::rules::render_text(results, file_name)
}

/// Opens an Nsight Systems export for the nsys-compatible rules (piped exports through a
/// private copy that lives as long as the returned value).
pub fn open_nsys(path: &Path) -> Result<tracelens_nsys::OpenExport, LoadError> {
    let input = open_input(path, None, None)?.input;
    if !tracelens_nsys::NsysImporter.sniff(&input.head) {
        return Err(LoadError::Unsupported(
            "--rules nsys needs an Nsight Systems SQLite export (nsys export --type sqlite)".into(),
        ));
    }
    tracelens_nsys::open_input(input).map_err(|e| match e {
        ImportFailure::Io(io) => LoadError::Read(read_problem(&io)),
        ImportFailure::Format(problem) => LoadError::Format {
            format: tracelens_nsys::FORMAT,
            problem,
        },
    })
}

/// The first bytes of a file, to tell a result document (JSON naming `"schema_version"` and
/// the tool) from a trace without reading it all.
pub fn head_of(path: &Path, n: usize) -> std::io::Result<Vec<u8>> {
    let mut f = open_raw(path)?;
    read_head(&mut f, n)
}

/// The raw bytes of a local file or of an object in object storage.
fn open_raw(path: &Path) -> std::io::Result<Box<dyn Read + Send>> {
    match remote::open(path) {
        Some(object) => object.map(|(reader, _)| reader),
        None => Ok(Box::new(File::open(path)?)),
    }
}

/// Whether the file at `path` is a tracelens result document rather than a trace: JSON whose
/// first 512 bytes name the schema version and the tool (or a job, as older job documents
/// did).
#[must_use]
pub fn is_result_document(path: &Path) -> bool {
    if is_stdin(path) {
        return false;
    }
    let Ok(head) = head_of(path, 512) else {
        return false;
    };
    let head = String::from_utf8_lossy(&head);
    head.trim_start().starts_with('{')
        && head.contains("\"schema_version\"")
        && (head.contains("\"tracelens\"") || head.contains("\"job\""))
}

/// The text of a result document (plain or gzip), at most `max_bytes` once decoded.
pub fn read_result_text(path: &Path, max_bytes: u64) -> Result<String, String> {
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err("is a directory, not a result document".into());
    }
    let src = open_decoded(path).map_err(|e| read_problem(&e))?;
    let mut bytes = Vec::new();
    src.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| read_problem(&e))?;
    if bytes.len() as u64 > max_bytes {
        return Err(format!(
            "is over {} MB: not a result document",
            max_bytes >> 20
        ));
    }
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text: not a result document".into())
}

/// A failed read in plain words.
#[must_use]
pub fn read_problem(e: &std::io::Error) -> String {
    // Object storage says what happened in its own words ("no such object", refused
    // credentials); the operating system's errors get plain ones.
    if let Some(said) = e.get_ref().and_then(|i| i.downcast_ref::<remote::Said>()) {
        return said.to_string();
    }
    match e.kind() {
        ErrorKind::NotFound => "no such file".into(),
        ErrorKind::PermissionDenied => "permission denied".into(),
        ErrorKind::IsADirectory => "is a directory, not a trace file".into(),
        _ => format!("read error: {e}"),
    }
}

/// The errno of a full device (the same on Linux and macOS).
const ENOSPC: i32 = 28;

/// A failed write in plain words.
#[must_use]
pub fn write_problem(e: &std::io::Error) -> String {
    match e.kind() {
        ErrorKind::NotFound => "no such directory".into(),
        ErrorKind::PermissionDenied => "permission denied".into(),
        ErrorKind::IsADirectory => "is a directory".into(),
        _ if e.raw_os_error() == Some(ENOSPC) => "no space left on device".into(),
        _ => format!("write error: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_file_names_come_from_the_importers() {
        for name in [
            "r0.pt.trace.json",
            "R1.JSON.GZ",
            "w.trace.gz",
            "report.sqlite",
        ] {
            assert!(is_trace_file_name(Path::new(name)), "{name}");
        }
        for name in [
            "r0.tracelens.html",
            "notes.txt",
            "report.nsys-rep",
            "data.parquet",
        ] {
            assert!(!is_trace_file_name(Path::new(name)), "{name}");
        }
    }

    #[test]
    fn io_errors_read_plainly() {
        let e = |k| std::io::Error::new(k, "x");
        assert_eq!(read_problem(&e(ErrorKind::NotFound)), "no such file");
        assert_eq!(
            read_problem(&e(ErrorKind::PermissionDenied)),
            "permission denied"
        );
        assert_eq!(
            read_problem(&e(ErrorKind::IsADirectory)),
            "is a directory, not a trace file"
        );
        assert_eq!(read_problem(&e(ErrorKind::Other)), "read error: x");
        assert_eq!(write_problem(&e(ErrorKind::Other)), "write error: x");
        assert_eq!(
            write_problem(&std::io::Error::from_raw_os_error(ENOSPC)),
            "no space left on device"
        );
    }

    #[cfg(unix)]
    #[test]
    fn links_share_an_identity() {
        let dir = std::env::temp_dir().join(format!("tracelens-id-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = dir.join("a.json");
        std::fs::write(&a, "{}").unwrap();
        let hard = dir.join("hard.json");
        let soft = dir.join("soft.json");
        let other = dir.join("other.json");
        let _ = std::fs::hard_link(&a, &hard);
        let _ = std::os::unix::fs::symlink(&a, &soft);
        std::fs::write(&other, "{}").unwrap();
        assert!(identity(&a).is_some());
        assert_eq!(identity(&a), identity(&hard));
        assert_eq!(identity(&a), identity(&soft));
        assert_ne!(identity(&a), identity(&other));
        assert_eq!(identity(&dir.join("missing")), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
