//! Opening a trace of any supported format, shared by `analyze`, `annotate`, `check` and
//! `diff`: the input is read exactly once (files, pipes, FIFOs and stdin alike), its format
//! sniffed from the buffered first bytes, and the stream handed to an importer. Errors are one
//! line without the path ([`LoadError`]); the caller names the file.
#![deny(missing_docs)]

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};
use tracelens_model::Trace;

use tracelens_nsys::SQLITE_MAGIC;
/// First bytes of an Nsight Systems `.nsys-rep` / `.qdrep` report.
const NSYS_REP_MAGIC: &[u8] = b"NVIDIA Tegra Pro";

/// Which file a path names, following links: two paths with the same identity are the same
/// file (a symlink, a hard link, `./x` and `x`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileIdentity {
    device: u64,
    inode: u64,
}

/// The identity of the file at `path`, when it exists (always `None` off Unix).
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
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// An opened input: its first bytes (already read) and the rest of the stream.
struct Opened {
    head: Vec<u8>,
    rest: Box<dyn Read + Send>,
    /// A regular file, which SQLite may open by path; pipes and stdin are not.
    regular_file: bool,
    file_bytes: u64,
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

impl Opened {
    fn open(path: &Path) -> Result<Opened, String> {
        Opened::open_with(path, None)
    }

    fn open_with(path: &Path, progress: Option<Progress>) -> Result<Opened, String> {
        let (mut rest, regular_file, file_bytes): (Box<dyn Read + Send>, bool, u64) =
            if is_stdin(path) {
                (Box::new(std::io::stdin()), false, 0)
            } else {
                let f = File::open(path).map_err(|e| read_problem(&e))?;
                let meta = f.metadata().map_err(|e| read_problem(&e))?;
                if meta.is_dir() {
                    return Err("is a directory, not a trace file".into());
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
        let head = tracelens_kineto::read_head(&mut rest, 64).map_err(|e| read_problem(&e))?;
        if head.is_empty() {
            return Err("file is empty".into());
        }
        if head.starts_with(NSYS_REP_MAGIC) {
            return Err(
                "an Nsight Systems report (.nsys-rep/.qdrep), a proprietary container: export it with `nsys export --type sqlite` and pass the .sqlite file"
                    .into(),
            );
        }
        Ok(Opened {
            head,
            rest,
            regular_file,
            file_bytes,
        })
    }

    /// The whole stream again, first bytes included.
    fn into_stream(self) -> impl Read + Send {
        std::io::Cursor::new(self.head).chain(self.rest)
    }
}

/// A private copy of a piped SQLite export (SQLite needs a file it can seek in); removed
/// when dropped.
struct Spooled(PathBuf);

impl Spooled {
    fn new(opened: Opened) -> Result<Spooled, String> {
        let path = std::env::temp_dir().join(format!(
            "tracelens-stdin-{}-{}.sqlite",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        let spooled = Spooled(path);
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&spooled.0)
            .map_err(|e| format!("cannot copy the piped export: {}", write_problem(&e)))?;
        std::io::copy(&mut opened.into_stream(), &mut out)
            .map_err(|e| format!("cannot copy the piped export: {e}"))?;
        Ok(spooled)
    }
}

impl Drop for Spooled {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// An export open for the nsys-compatible rules (with the private copy it may live on).
pub struct NsysInput {
    /// The open database.
    pub db: tracelens_nsys::Db,
    _spooled: Option<Spooled>,
}

/// Opens an Nsight Systems export for the nsys-compatible rules.
pub fn open_nsys(path: &Path) -> Result<NsysInput, String> {
    let opened = Opened::open(path)?;
    if !opened.head.starts_with(SQLITE_MAGIC) {
        return Err(
            "--rules nsys needs an Nsight Systems SQLite export (nsys export --type sqlite)".into(),
        );
    }
    if opened.regular_file {
        return Ok(NsysInput {
            db: tracelens_nsys::open(path)?,
            _spooled: None,
        });
    }
    let spooled = Spooled::new(opened)?;
    Ok(NsysInput {
        db: tracelens_nsys::open(&spooled.0)?,
        _spooled: Some(spooled),
    })
}

/// Why a trace could not be opened: one line, without the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError(pub String);

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LoadError {}

/// Reads the trace at `path` (`-` for stdin).
pub fn open(path: &Path) -> Result<Trace, LoadError> {
    load(path, None).map_err(LoadError)
}

/// [`open`], telling `progress` how many bytes of a Kineto file were read so far (an
/// Nsight export is read by SQLite, which reports nothing).
pub fn open_with_progress(path: &Path, progress: Progress) -> Result<Trace, LoadError> {
    load(path, Some(progress)).map_err(LoadError)
}

/// The first bytes of a file, to tell a result document (JSON with `"schema_version"` and
/// `"results"`) from a trace without reading it all.
pub fn head_of(path: &Path, n: usize) -> std::io::Result<Vec<u8>> {
    let mut f = File::open(path)?;
    tracelens_kineto::read_head(&mut f, n)
}

fn load(path: &Path, progress: Option<Progress>) -> Result<Trace, String> {
    let opened = Opened::open_with(path, progress)?;
    if opened.head.starts_with(SQLITE_MAGIC) {
        if opened.regular_file {
            return tracelens_nsys::import_file(path);
        }
        let bytes = opened.file_bytes;
        let spooled = Spooled::new(opened)?;
        let mut trace = tracelens_nsys::import_file(&spooled.0)?;
        trace.source.path = path.display().to_string();
        trace.source.file_bytes = bytes.max(trace.source.file_bytes);
        return Ok(trace);
    }
    let bytes = opened.file_bytes;
    tracelens_kineto::import_stream(opened.into_stream(), path, bytes).map_err(|e| {
        match e.problem {
            tracelens_kineto::Problem::Io(io) => read_problem(&io),
            other => other.to_string(),
        }
    })
}

/// The text of a result document (plain or gzip), at most `max_bytes` once decoded.
pub fn read_result_text(path: &Path, max_bytes: u64) -> Result<String, String> {
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err("is a directory, not a result document".into());
    }
    let src = tracelens_kineto::open_decoded(path).map_err(|e| read_problem(&e))?;
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
pub fn read_problem(e: &std::io::Error) -> String {
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
