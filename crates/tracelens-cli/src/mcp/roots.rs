//! Which files the MCP server may read: only regular files and folders under the roots given
//! on its command line, after every symlink is resolved (no `..` or link out), never a FIFO,
//! a device or a socket.

use std::path::{Path, PathBuf};

/// The folders a server may read under, resolved once at start.
pub struct Roots {
    roots: Vec<PathBuf>,
}

impl Roots {
    /// Resolves each root (it must exist and be a folder); one line saying which does not.
    pub fn new(given: &[PathBuf]) -> Result<Roots, String> {
        if given.is_empty() {
            return Err(
                "give at least one --root DIR: the server reads only under its roots".into(),
            );
        }
        let mut roots = Vec::with_capacity(given.len());
        for r in given {
            let resolved =
                std::fs::canonicalize(r).map_err(|e| format!("--root {}: {e}", r.display()))?;
            if !resolved.is_dir() {
                return Err(format!("--root {}: not a folder", r.display()));
            }
            roots.push(resolved);
        }
        Ok(Roots { roots })
    }

    /// The roots, for the server's instructions.
    pub fn list(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The resolved path of `asked` (absolute, or relative to the first root) when it is a
    /// regular file or folder under a root; else one line saying why not (never naming what
    /// lies outside the roots).
    pub fn resolve(&self, asked: &str) -> Result<PathBuf, String> {
        if asked.is_empty() || asked.len() > 4096 || asked.contains('\0') {
            return Err("the path must be 1 to 4096 characters without NUL".into());
        }
        let given = Path::new(asked);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.roots[0].join(given)
        };
        let resolved = std::fs::canonicalize(&joined)
            .map_err(|_| format!("{asked}: no such file or folder under the roots"))?;
        if !self.roots.iter().any(|r| resolved.starts_with(r)) {
            return Err(format!(
                "{asked}: outside the roots this server may read (symlinks resolved)"
            ));
        }
        let kind = std::fs::metadata(&resolved)
            .map_err(|e| format!("{asked}: {e}"))?
            .file_type();
        if !(kind.is_file() || kind.is_dir()) {
            return Err(format!(
                "{asked}: not a regular file or folder (a FIFO, device or socket is never read)"
            ));
        }
        Ok(resolved)
    }
}
