//! Writing results: to stdout, or atomically to a file (temp file + rename).

use std::io::Write;
use std::path::{Path, PathBuf};
use tracelens_load as input;

/// A stream a CI runner may read (stderr): every write is made [workflow-command
/// safe](tracelens_report::escape::workflow_command_safe), each write taken as the start of a
/// line.
pub struct CommandSafe<'a> {
    inner: &'a mut dyn Write,
}

impl<'a> CommandSafe<'a> {
    /// Guards `inner`.
    pub fn new(inner: &'a mut dyn Write) -> Self {
        CommandSafe { inner }
    }
}

impl Write for CommandSafe<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let safe = |inner: &mut dyn Write, text: &str| {
            inner.write_all(tracelens_report::escape::workflow_command_safe(text).as_bytes())
        };
        match std::str::from_utf8(buf) {
            Ok(text) => {
                safe(self.inner, text)?;
                Ok(buf.len())
            }
            // A character split across writes: the whole characters first, then the bytes
            // that are not one as they are.
            Err(e) if e.valid_up_to() > 0 => {
                let valid = e.valid_up_to();
                safe(
                    self.inner,
                    std::str::from_utf8(&buf[..valid]).unwrap_or_default(),
                )?;
                Ok(valid)
            }
            Err(e) => {
                let n = e.error_len().unwrap_or(buf.len());
                self.inner.write_all(&buf[..n])?;
                Ok(n)
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Writes `text` to `path` so that readers see either nothing or the whole file.
/// Special files (`/dev/null`, pipes) are written in place: they cannot be replaced.
pub fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    write_atomically_with(path, |w| w.write_all(text.as_bytes()))
}

/// [`write_atomically`] for output produced by `fill` in pieces.
pub fn write_atomically_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    if let Ok(meta) = std::fs::metadata(path) {
        if !meta.is_file() {
            if meta.is_dir() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::IsADirectory,
                    "is a directory",
                ));
            }
            let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
            return fill(&mut f);
        }
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".into());
    let (tmp, file) = create_temp(&dir, &file_name)?;
    let _cleanup = signal_cleanup::Registered::new(&tmp);
    let result = (|| {
        let mut f = std::io::BufWriter::new(file);
        fill(&mut f)?;
        let f = f.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A new temporary file beside the output: a name no other process can guess
/// (`.NAME.<random>.tracelens-tmp`), created exclusively (`O_EXCL`: an existing file or a
/// planted symlink is never opened), so concurrent writers each get a file of their own.
fn create_temp(dir: &Path, file_name: &str) -> std::io::Result<(PathBuf, std::fs::File)> {
    let mut last = None;
    for _ in 0..16 {
        let tmp = dir.join(format!(".{file_name}.{:016x}.tracelens-tmp", random_u64()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temporary name")))
}

/// 64 unpredictable bits: SipHash keyed from the OS's randomness (`RandomState`) over the
/// time and the process id.
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    h.write_u128(now);
    h.write_u32(std::process::id());
    h.finish()
}

/// Removes the temporary file being written when SIGINT or SIGTERM ends the run, then lets
/// the signal take its default course.
#[cfg(unix)]
pub(crate) mod signal_cleanup {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;
    use std::sync::atomic::{AtomicPtr, Ordering};

    /// The temporary file being written, if any (a `CString` leaked while registered).
    static TEMP: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());

    extern "C" fn on_signal(signal: libc::c_int) {
        let path = TEMP.swap(std::ptr::null_mut(), Ordering::SeqCst);
        // SAFETY: unlink, signal and raise are async-signal-safe; `path` is a NUL-terminated
        // string no one else frees once swapped out.
        unsafe {
            if !path.is_null() {
                libc::unlink(path);
            }
            libc::signal(signal, libc::SIG_DFL);
            libc::raise(signal);
        }
    }

    fn install() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            // SAFETY: installs a handler that only calls async-signal-safe functions.
            unsafe {
                libc::signal(libc::SIGINT, handler);
                libc::signal(libc::SIGTERM, handler);
            }
        });
    }

    /// The registration of one temporary file; dropping it unregisters the file.
    pub(super) struct Registered;

    impl Registered {
        pub(super) fn new(path: &Path) -> Self {
            install();
            if let Ok(c) = CString::new(path.as_os_str().as_bytes()) {
                let old = TEMP.swap(c.into_raw(), Ordering::SeqCst);
                if !old.is_null() {
                    // SAFETY: `old` came from `CString::into_raw` above.
                    drop(unsafe { CString::from_raw(old) });
                }
            }
            Registered
        }
    }

    /// Removes the temporary file being written, if any, without a lock or the heap: for a
    /// run that ends at once (over its memory budget).
    pub(crate) fn remove_now() {
        let path = TEMP.swap(std::ptr::null_mut(), Ordering::SeqCst);
        if !path.is_null() {
            // SAFETY: `path` is a NUL-terminated string no one else frees once swapped out;
            // it is leaked, as the process is about to end.
            unsafe {
                libc::unlink(path);
            }
        }
    }

    impl Drop for Registered {
        fn drop(&mut self) {
            let p = TEMP.swap(std::ptr::null_mut(), Ordering::SeqCst);
            if !p.is_null() {
                // SAFETY: `p` came from `CString::into_raw` in `new`.
                drop(unsafe { CString::from_raw(p) });
            }
        }
    }
}

#[cfg(not(unix))]
pub(crate) mod signal_cleanup {
    /// No cleanup of the temporary file off Unix.
    pub(crate) fn remove_now() {}

    /// No signal cleanup off Unix.
    pub(super) struct Registered;
    impl Registered {
        pub(super) fn new(_: &std::path::Path) -> Self {
            Registered
        }
    }
}

/// The file name of `path` (the path itself when it has none): how outputs shared beyond
/// this machine name an input.
pub(crate) fn file_name_of(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned())
}

/// Short names for two inputs: their file names, with as many parent folders as it takes to
/// tell them apart (`a/trace.json` and `b/trace.json`), never an absolute path's root.
pub(crate) fn distinct_names(a: &Path, b: &Path) -> (String, String) {
    let parts = |p: &Path| -> Vec<String> {
        p.components()
            .filter_map(|c| match c {
                std::path::Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect()
    };
    let (pa, pb) = (parts(a), parts(b));
    let tail = |p: &[String], n: usize| p[p.len().saturating_sub(n)..].join("/");
    let longest = pa.len().max(pb.len()).max(1);
    let n = (1..=longest)
        .find(|&n| tail(&pa, n) != tail(&pb, n))
        .unwrap_or(1);
    (tail(&pa, n), tail(&pb, n))
}

/// Where the default report goes, and a note when it is not the plain default: a report of
/// another trace already has that name (two traces with the same file name in different
/// folders), so this one gets a short id of its path appended.
pub(crate) fn report_path_for(trace: &Path) -> (PathBuf, Option<String>) {
    let plain = default_report_path(trace);
    let id = tracelens_report::source_id(&trace.display().to_string());
    let existing = std::fs::File::open(&plain).ok().map(|f| {
        let mut head = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::Read::take(f, 4096), &mut head);
        tracelens_report::source_id_in(&String::from_utf8_lossy(&head))
    });
    match existing {
        None => (plain, None),
        Some(Some(other)) if other == id => (plain, None),
        Some(_) => {
            let stem = plain
                .to_string_lossy()
                .trim_end_matches(".tracelens.html")
                .to_string();
            let own = PathBuf::from(format!("{stem}-{}.tracelens.html", &id[..8]));
            let note = format!(
                "{} exists and is not this trace's report: this one is named after the trace's path",
                plain.display()
            );
            (own, Some(note))
        }
    }
}

/// The default report path: `./<trace stem>.tracelens.html` (the stem without compression,
/// format and `.pt.trace` suffixes, alike for every input kind; `stdin` for `-`).
#[must_use]
pub fn default_report_path(trace: &Path) -> PathBuf {
    if input::is_stdin(trace) {
        return PathBuf::from("stdin.tracelens.html");
    }
    let mut stem = trace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".into());
    // Compression, then the format, then PyTorch's `.pt.trace`: every input kind gives its
    // plain stem (`worker0.pt.trace.json.gz` → `worker0`, `run.sqlite` → `run`).
    for suffixes in [
        &[".gz", ".zst", ".zstd"][..],
        &[".json", ".sqlite", ".pickle", ".pkl"][..],
        &[".pt.trace"][..],
    ] {
        if let Some(s) = suffixes.iter().find_map(|x| stem.strip_suffix(x)) {
            if !s.is_empty() {
                stem = s.to_string();
            }
        }
    }
    PathBuf::from(format!("{stem}.tracelens.html"))
}

/// Columns of the terminal summary: `COLUMNS` when set, else the terminal's width, else 80
/// (piped output).
pub(crate) fn terminal_width(tty: bool) -> usize {
    if let Some(c) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse().ok())
    {
        return usize::clamp(c, 40, 400);
    }
    #[cfg(unix)]
    if tty {
        // SAFETY: TIOCGWINSZ fills a winsize we own; a failure leaves it zeroed.
        let mut size: libc::winsize = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
        if ok && size.ws_col >= 40 {
            return size.ws_col as usize;
        }
    }
    let _ = tty;
    80
}

/// The text options of a summary.
pub(crate) fn text_options(
    color: bool,
    width: usize,
    verbose: bool,
) -> tracelens_report::TextOptions {
    tracelens_report::TextOptions {
        color,
        width,
        verbose,
    }
}

/// A report in one of the text formats (Parquet is written as tables, never rendered).
pub(crate) fn render_report(
    report: &tracelens_results::Report,
    format: crate::args::Format,
    text: &tracelens_report::TextOptions,
) -> String {
    match format {
        crate::args::Format::Text => tracelens_report::render_text_with(report, text),
        crate::args::Format::Json => tracelens_report::render_json(report),
        crate::args::Format::Md => tracelens_report::render_markdown(report),
        crate::args::Format::Html => tracelens_report::render_html(report),
        crate::args::Format::Parquet => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_named_without_their_folders_unless_it_takes_them_to_tell_apart() {
        let names = |a: &str, b: &str| distinct_names(Path::new(a), Path::new(b));
        assert_eq!(
            names("/home/me/run1/trace.json", "/home/me/run2/trace.json"),
            ("run1/trace.json".into(), "run2/trace.json".into())
        );
        assert_eq!(
            names("/abs/before.json", "after.json"),
            ("before.json".into(), "after.json".into())
        );
        assert_eq!(
            names("/x/t.json", "/x/t.json"),
            ("t.json".into(), "t.json".into())
        );
        assert_eq!(file_name_of("/home/me/t.json.gz"), "t.json.gz");
    }

    #[test]
    fn writes_whole_files_and_leaves_special_files_in_place() {
        let dir = std::env::temp_dir().join(format!("tracelens-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("out.txt");
        write_atomically(&target, "first").unwrap();
        write_atomically(&target, "second").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "second");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        assert!(write_atomically(&dir, "x").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
        write_atomically(Path::new("/dev/null"), "discarded").unwrap();
        assert!(
            !std::fs::metadata("/dev/null").unwrap().is_file(),
            "/dev/null must survive"
        );
    }
}
