//! Inputs named by an object-storage URL (`s3://`, `gs://`, `az://`): the one place the
//! loader and the CLI ask whether a path is one, what it names, and how to read it
//! (`tracelens-objects`, behind the `objects` feature).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Whether `path` is an object-storage URL rather than a local path.
#[must_use]
pub fn is_url(path: &Path) -> bool {
    path.to_str().is_some_and(is_url_text)
}

#[cfg(feature = "objects")]
fn is_url_text(text: &str) -> bool {
    tracelens_objects::is_object_url(text)
}

/// Without object storage built in, any `scheme://` is taken as a URL, so it gets a clear
/// refusal instead of "no such file".
#[cfg(not(feature = "objects"))]
fn is_url_text(text: &str) -> bool {
    text.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty() && scheme.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// An object-storage failure in the service's words, kept whole by
/// [`read_problem`](crate::read_problem) (which gives the operating system's errors plain ones).
#[derive(Debug)]
pub struct Said(String);

impl std::fmt::Display for Said {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Said {}

/// `e`, marked as object storage's own words.
fn said(e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), Said(e.to_string()))
}

/// The stream and size of the object `path` names; `None` when `path` is not a URL.
pub(crate) fn open(path: &Path) -> Option<std::io::Result<(Box<dyn Read + Send>, u64)>> {
    let text = path.to_str().filter(|t| is_url_text(t))?;
    #[cfg(feature = "objects")]
    return Some(tracelens_objects::open(text).map_err(said));
    #[cfg(not(feature = "objects"))]
    Some(Err(said(unsupported(text))))
}

/// One object of a listed prefix: its URL (as a path) and when it was written.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The object's URL.
    pub path: PathBuf,
    /// Its last-modified time.
    pub modified: SystemTime,
}

/// What a URL names: `Ok(Some(objects))` for a prefix (a folder of traces), `Ok(None)` for one
/// object. `None` when `path` is not a URL.
///
/// # Errors
/// Refused credentials, no such object or prefix, … (one line, without the URL).
#[must_use]
pub fn folder(path: &Path) -> Option<std::io::Result<Option<Vec<Entry>>>> {
    let text = path.to_str().filter(|t| is_url_text(t))?;
    #[cfg(feature = "objects")]
    return Some(tracelens_objects::folder(text).map_err(said).map(|listed| {
        listed.map(|objects| {
            objects
                .into_iter()
                .map(|o| Entry {
                    path: PathBuf::from(o.url),
                    modified: o.modified,
                })
                .collect()
        })
    }));
    #[cfg(not(feature = "objects"))]
    Some(Err(said(unsupported(text))))
}

#[cfg(not(feature = "objects"))]
fn unsupported(text: &str) -> std::io::Error {
    let scheme = text.split_once("://").map_or("", |(s, _)| s);
    std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        format!("a {scheme}:// URL: this tracelens was built without object storage (the CLI's `object-store` feature)"),
    )
}
