//! Capture traces for a replay: the profile of a CUDA/HIP graph's capture, named on the
//! command line or found in a `capture_traces/` folder beside the replay, matched into it
//! ([`tracelens_model::graph`]).

use crate::{is_stdin, is_trace_file_name, open, LoadError};
use std::path::Path;
use tracelens_model::Trace;

/// The folder beside a replay trace where capture traces are looked for on their own
/// (the layout AMD TraceLens's inference examples use).
pub const CAPTURE_FOLDER: &str = "capture_traces";

/// Most capture traces tried from [`CAPTURE_FOLDER`]; the best match is kept.
pub const MAX_CAPTURE_FILES: usize = 8;

/// Gives the GPU ops that `trace`'s CUDA/HIP graph launches replayed the op and scope each
/// had at capture ([`tracelens_model::graph`]): from `explicit` (`--capture FILE`), else from
/// the traces in a [`CAPTURE_FOLDER`] beside `path`, keeping the one that matches most.
/// Nothing is read when the trace replays no graph or its own annotations already say where
/// the work came from. An explicit capture that cannot be read is an error; one found on its
/// own that cannot is skipped (it was never asked for).
pub fn attach_captures(
    trace: &mut Trace,
    path: &Path,
    explicit: Option<&Path>,
) -> Result<Option<tracelens_model::GraphAttribution>, (std::path::PathBuf, LoadError)> {
    if trace.links.graph_launches == 0 {
        return Ok(None);
    }
    if trace.graph_attribution.is_some() {
        return Ok(trace.graph_attribution.clone());
    }
    let label = |p: &Path| {
        p.file_name()
            .unwrap_or(p.as_os_str())
            .to_string_lossy()
            .into_owned()
    };
    if let Some(capture) = explicit {
        let c = open(capture).map_err(|e| (capture.to_path_buf(), e))?;
        return Ok(Some(tracelens_model::attach_capture(
            trace,
            &c,
            &label(capture),
        )));
    }
    if is_stdin(path) {
        return Ok(None);
    }
    let Some(folder) = path.parent().map(|d| d.join(CAPTURE_FOLDER)) else {
        return Ok(None);
    };
    let Ok(entries) = std::fs::read_dir(&folder) else {
        return Ok(None);
    };
    let mut files: Vec<std::path::PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && is_trace_file_name(p))
        .collect();
    files.sort();
    files.truncate(MAX_CAPTURE_FILES);
    let captures: Vec<(std::path::PathBuf, Trace)> = files
        .into_iter()
        .filter_map(|f| open(&f).ok().map(|c| (f, c)))
        .collect();
    // With several, each is tried on a copy of the replay's origins and the best kept.
    let mut best: Option<(u64, usize)> = None;
    if captures.len() > 1 {
        for (i, (file, capture)) in captures.iter().enumerate() {
            let mut candidate = trace.clone();
            let a = tracelens_model::attach_capture(&mut candidate, capture, &label(file));
            if best.is_none_or(|(n, _)| a.attributed_ops > n) {
                best = Some((a.attributed_ops, i));
            }
        }
    }
    let Some((file, capture)) = captures.get(best.map_or(0, |(_, i)| i)) else {
        return Ok(None);
    };
    let a = tracelens_model::attach_capture(trace, capture, &label(file));
    if a.attributed_ops == 0 {
        // A capture that matched nothing says nothing: the replay stays one unit.
        trace.graph_attribution = None;
        tracelens_model::graph::refresh_warning(trace);
        return Ok(None);
    }
    Ok(Some(a))
}
