//! Writing results: to stdout, or atomically to a file (temp file + rename).

use std::io::Write;
use std::path::{Path, PathBuf};

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
    let tmp = dir.join(format!(".{file_name}.tracelens-tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
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

#[cfg(test)]
mod tests {
    use super::*;

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
