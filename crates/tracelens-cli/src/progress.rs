//! The progress bar on stderr while a big trace is read: only for a Kineto file over
//! [`MIN_BYTES`], only when stderr is a terminal, never in CI (`CI` set), with `TERM=dumb`,
//! or with `--quiet`.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;
use tracelens_model::Trace;
use tracelens_report::escape::terminal_text;

/// Files smaller than this read in well under a second: no bar.
pub(crate) const MIN_BYTES: u64 = 200_000_000;

/// The file's size, when a bar is wanted for it.
fn wanted(path: &Path, quiet: bool) -> Option<u64> {
    let interactive = std::io::stderr().is_terminal()
        && std::env::var_os("CI").is_none()
        && std::env::var_os("TERM").is_none_or(|t| t != "dumb");
    if tracelens_load::is_stdin(path) {
        return None;
    }
    let bytes = std::fs::metadata(path).ok()?.len();
    shows_bar(bytes, quiet, interactive).then_some(bytes)
}

/// The rule: a big file, on a terminal, not silenced.
fn shows_bar(bytes: u64, quiet: bool, interactive: bool) -> bool {
    bytes >= MIN_BYTES && interactive && !quiet
}

/// Reads the trace at `path`, with a bar when one is wanted.
pub(crate) fn open(path: &Path, quiet: bool) -> Result<Trace, tracelens_load::LoadError> {
    let Some(total) = wanted(path, quiet) else {
        return tracelens_load::open(path);
    };
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    let style =
        ProgressStyle::with_template("reading {msg} {wide_bar} {bytes}/{total_bytes} {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    let name = path
        .file_name()
        .unwrap_or(path.as_os_str())
        .to_string_lossy();
    bar.set_message(terminal_text(&name).into_owned());
    let shown = bar.clone();
    let trace = tracelens_load::open_with_progress(path, Arc::new(move |n| shown.set_position(n)));
    bar.finish_and_clear();
    trace
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_big_files_on_a_terminal_unless_quiet() {
        assert!(shows_bar(MIN_BYTES, false, true));
        assert!(!shows_bar(MIN_BYTES - 1, false, true));
        assert!(!shows_bar(MIN_BYTES, true, true));
        assert!(!shows_bar(MIN_BYTES, false, false));
    }
}
