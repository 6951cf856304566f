//! Opening a trace: file checks, format sniffing by content, and dispatch to an importer.

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::Path;
use tracelens_model::Trace;

use tracelens_nsys::SQLITE_MAGIC;
/// First bytes of an Nsight Systems `.nsys-rep` / `.qdrep` report.
const NSYS_REP_MAGIC: &[u8] = b"NVIDIA Tegra Pro";

/// Checks that `path` is a readable file and returns its first bytes.
fn sniff(path: &Path) -> Result<Vec<u8>, String> {
    let meta = std::fs::metadata(path).map_err(|e| io_problem(&e))?;
    if meta.is_dir() {
        return Err("is a directory, not a trace file".into());
    }
    let mut head = [0u8; 16];
    let mut f = File::open(path).map_err(|e| io_problem(&e))?;
    let n = read_up_to(&mut f, &mut head).map_err(|e| io_problem(&e))?;
    if n == 0 {
        return Err("file is empty".into());
    }
    Ok(head[..n].to_vec())
}

/// Opens an Nsight Systems export for the nsys-compatible rules.
pub fn open_nsys(path: &Path) -> Result<tracelens_nsys::Db, String> {
    let head = sniff(path)?;
    if !head.starts_with(SQLITE_MAGIC) {
        return Err(
            "--rules nsys needs an Nsight Systems SQLite export (nsys export --type sqlite)".into(),
        );
    }
    tracelens_nsys::open(path)
}

/// Reads the trace at `path`, or says in one line (without the path) what is wrong.
pub fn load(path: &Path) -> Result<Trace, String> {
    let meta = std::fs::metadata(path).map_err(|e| io_problem(&e))?;
    if meta.is_dir() {
        return Err("is a directory, not a trace file".into());
    }
    let mut head = [0u8; 16];
    let n = {
        let mut f = File::open(path).map_err(|e| io_problem(&e))?;
        read_up_to(&mut f, &mut head).map_err(|e| io_problem(&e))?
    };
    let head = &head[..n];
    if n == 0 {
        return Err("file is empty".into());
    }
    if head.starts_with(NSYS_REP_MAGIC) {
        return Err(
            "an Nsight Systems report (.nsys-rep/.qdrep), a proprietary container: export it with `nsys export --type sqlite` and pass the .sqlite file"
                .into(),
        );
    }
    if head.starts_with(SQLITE_MAGIC) {
        return tracelens_nsys::import_file(path);
    }
    tracelens_kineto::import_file(path).map_err(|e| match e.problem {
        tracelens_kineto::Problem::Io(io) => io_problem(&io),
        other => other.to_string(),
    })
}

fn read_up_to(f: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// A file-system error in plain words.
pub fn io_problem(e: &std::io::Error) -> String {
    match e.kind() {
        ErrorKind::NotFound => "no such file".into(),
        ErrorKind::PermissionDenied => "permission denied".into(),
        ErrorKind::IsADirectory => "is a directory, not a trace file".into(),
        _ => format!("read error: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_read_plainly() {
        let e = |k| std::io::Error::new(k, "x");
        assert_eq!(io_problem(&e(ErrorKind::NotFound)), "no such file");
        assert_eq!(
            io_problem(&e(ErrorKind::PermissionDenied)),
            "permission denied"
        );
        assert_eq!(
            io_problem(&e(ErrorKind::IsADirectory)),
            "is a directory, not a trace file"
        );
        assert_eq!(io_problem(&e(ErrorKind::Other)), "read error: x");
    }
}
