//! Streaming importer of PyTorch Profiler (Kineto) Chrome traces into the tracelens model.
//!
//! Reads every generation of the format — the 2020 bare array, 2021 capitalised categories,
//! integer-µs Kineto, and float-µs traces relative to `baseTimeNanoseconds` — plain or
//! gzip-compressed (detected by magic bytes). The file is read in chunks: each element of
//! `traceEvents` is located by a byte scanner and decoded on its own, so memory follows the
//! events kept, not the file size, and one broken event is skipped and counted rather than
//! fatal. A file cut short keeps every complete event and says where it was cut.
//!
//! ```no_run
//! let trace = tracelens_kineto::import_file(std::path::Path::new("trace.json.gz"))?;
//! println!("{} spans on {} lanes", trace.spans.len(), trace.lanes.len());
//! # Ok::<(), tracelens_kineto::ImportError>(())
//! ```
#![deny(missing_docs)]

mod annotate;
mod document;
mod error;
mod event;
mod input;
mod json;
mod parallel;
mod pipe;
mod scan;
mod split;

pub use annotate::{copy_with_events, CopyStats};
pub use error::{ImportError, Problem};
pub use event::kind_of_category;

use document::{read_document, Container, Start};
use event::EventReader;
use input::Input;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use tracelens_model::{
    Detail, FrameworkRange, ImportFailure, Importer, Input as OpenedInput, SourceInfo, Trace,
    Version, WarningKind,
};

/// The format id in [`SourceInfo::format`].
pub const FORMAT: &str = "kineto_json";

/// The Kineto JSON importer (plain or gzip). It is the registry's fallback: it takes any input
/// that no other importer claims and says precisely why one that is not JSON is not a trace.
pub struct KinetoImporter;

impl Importer for KinetoImporter {
    fn format(&self) -> &'static str {
        FORMAT
    }

    fn extensions(&self) -> &'static [&'static str] {
        &[".json", ".json.gz", ".trace.gz"]
    }

    fn sniff(&self, _head: &[u8]) -> bool {
        true
    }

    fn import(&self, input: OpenedInput) -> Result<Trace, ImportFailure> {
        let (path, bytes, bound) = (input.path.clone(), input.file_bytes, input.inflate_bound);
        import_bounded(input.into_stream(), &path, bytes, bound).map_err(|e| match e.problem {
            Problem::Io(io) => ImportFailure::Io(io),
            other => ImportFailure::Format(other.to_string()),
        })
    }
}

/// The gzip magic bytes.
pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Imports the trace at `path` (plain or gzip-compressed JSON).
pub fn import_file(path: &Path) -> Result<Trace, ImportError> {
    let file = File::open(path).map_err(|e| ImportError::new(path, Problem::Io(e)))?;
    let file_bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    import_stream(file, path, file_bytes)
}

/// Imports a trace from a stream read exactly once (a file, a pipe, stdin): gzip is
/// recognised from the first bytes, which are kept and fed back, never re-read. `path` and
/// `file_bytes` only label the result and its messages.
pub fn import_stream<R: Read + Send + 'static>(
    src: R,
    path: &Path,
    file_bytes: u64,
) -> Result<Trace, ImportError> {
    import_bounded(src, path, file_bytes, None)
}

/// [`import_stream`], stopping with [`Problem::InflatesTooFar`] as soon as a gzip stream
/// inflates past `bound` (the parse never sees more than the bound's bytes).
pub fn import_bounded<R: Read + Send + 'static>(
    mut src: R,
    path: &Path,
    file_bytes: u64,
    bound: Option<tracelens_model::InflateBound>,
) -> Result<Trace, ImportError> {
    let head = read_head(&mut src, 64).map_err(|e| ImportError::new(path, Problem::Io(e)))?;
    if head.is_empty() {
        return Err(ImportError::new(path, Problem::Empty));
    }
    if is_utf16(&head) {
        return Err(ImportError::new(path, Problem::Utf16));
    }
    let gzip = head.starts_with(&GZIP_MAGIC);
    let reader = BufReader::with_capacity(1 << 20, std::io::Cursor::new(head).chain(src));
    if gzip {
        // Inflate on a second thread while this one parses.
        let decoder = flate2::bufread::MultiGzDecoder::new(reader);
        let Some(bound) = bound else {
            return import_reader(pipe::spawn(decoder), path, file_bytes, true);
        };
        let max_bytes = bound.max_decoded_bytes(file_bytes);
        let reached = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let bounded = pipe::Bounded::new(decoder, max_bytes, reached.clone());
        let imported = import_reader(pipe::spawn(bounded), path, file_bytes, true);
        if reached.load(std::sync::atomic::Ordering::Acquire) {
            let problem = Problem::InflatesTooFar {
                decoded_bytes: max_bytes,
                file_bytes,
            };
            return Err(ImportError::new(path, problem));
        }
        imported
    } else {
        import_reader(reader, path, file_bytes, false)
    }
}

/// The decoded text of the trace at `path` (gzip undone), for copying it.
pub fn open_decoded(path: &Path) -> std::io::Result<Box<dyn Read + Send>> {
    let mut file = File::open(path)?;
    let head = read_head(&mut file, 2)?;
    let rest = std::io::Cursor::new(head.clone()).chain(file);
    Ok(if head.starts_with(&GZIP_MAGIC) {
        Box::new(flate2::read::MultiGzDecoder::new(rest))
    } else {
        Box::new(rest)
    })
}

/// Up to `n` first bytes of `src` (fewer only at its end); pipes deliver in pieces.
pub fn read_head<R: Read>(src: &mut R, n: usize) -> std::io::Result<Vec<u8>> {
    let mut head = vec![0u8; n];
    let mut got = 0;
    while got < n {
        match src.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    head.truncate(got);
    Ok(head)
}

/// Whether the bytes look like UTF-16 text (a byte-order mark, or `{`/`[` next to a NUL).
#[must_use]
pub fn is_utf16(head: &[u8]) -> bool {
    head.starts_with(&[0xFF, 0xFE])
        || head.starts_with(&[0xFE, 0xFF])
        || matches!(head, [b'{' | b'[', 0, ..] | [0, b'{' | b'[', ..])
}

/// Imports a trace from any reader of decoded (or, with `gzip`, gzip-decoding) bytes.
/// `path` and `file_bytes` only label the result and its messages.
pub fn import_reader<R: Read>(
    reader: R,
    path: &Path,
    file_bytes: u64,
    gzip: bool,
) -> Result<Trace, ImportError> {
    import_reader_with_threads(reader, path, file_bytes, gzip, parallel::threads())
}

/// [`import_reader`] decoding events on `threads` threads (1: serial). The model is the same
/// for every thread count.
pub fn import_reader_with_threads<R: Read>(
    reader: R,
    path: &Path,
    file_bytes: u64,
    gzip: bool,
    threads: usize,
) -> Result<Trace, ImportError> {
    let fail = |problem| ImportError::new(path, problem);
    let mut input = Input::new(reader);
    let mut events = EventReader::default();
    let doc = match read_document(&mut input, &mut events, threads.max(1)) {
        Ok(doc) => doc,
        Err(Start::Empty) => {
            return Err(fail(match input.error.take() {
                Some(e) if gzip => Problem::CorruptGzip(e.to_string()),
                Some(e) => Problem::Io(e),
                None if input.bytes_read() > 0 => Problem::Blank {
                    bytes: input.bytes_read(),
                    gzip,
                },
                None => Problem::Empty,
            }))
        }
        Err(Start::Unexpected(0x1f, 0)) if gzip => return Err(fail(Problem::NestedGzip)),
        Err(Start::Unexpected(byte, offset)) => {
            return Err(fail(Problem::NotJson {
                offset,
                found: describe_byte(byte),
            }))
        }
    };
    if gzip && doc.truncated_at.is_none() {
        // The document ended: read the gzip trailer so its checksum and length are checked.
        input.drain();
    }
    let stats = &events.stats;
    let salvaged = stats.kept > 0 || stats.with_phase > 0;
    if let Some(e) = input.error.take() {
        if !salvaged {
            return Err(fail(if gzip {
                Problem::CorruptGzip(e.to_string())
            } else {
                Problem::Io(e)
            }));
        }
        let what = if gzip { "gzip stream" } else { "file" };
        let message = if gzip && doc.truncated_at.is_none() && e.to_string().contains("checksum") {
            format!(
                "the gzip stream fails its CRC-32/length check: the decompressed data is corrupt, so figures from its {} events may be wrong",
                stats.events
            )
        } else {
            format!(
            "the {what} is corrupt or cut short after decoded byte {} ({e}); kept the {} complete events before it",
            input.bytes_read(),
            stats.events
        )
        };
        events.builder.warn(WarningKind::Truncated, message, 1);
    } else if let Some(at) = doc.truncated_at {
        if !salvaged {
            return Err(fail(Problem::TruncatedBeforeEvents { offset: at }));
        }
        let message = format!(
            "the trace is truncated: it ends mid-document at byte {at} of {} (job killed while writing?); kept the {} complete events before it",
            input.bytes_read(),
            stats.events
        );
        events.builder.warn(WarningKind::Truncated, message, 1);
    }
    check_is_trace(&doc, &events).map_err(fail)?;
    if stats.malformed > 0 {
        let message = format!(
            "{} malformed events were skipped (first at byte {})",
            stats.malformed,
            stats.first_malformed_at.unwrap_or(0)
        );
        let n = stats.malformed;
        events.builder.warn(WarningKind::MalformedEvent, message, n);
    }
    warn_limits(&doc, &mut events);
    let (generation, note) = generation(&doc, &events);
    let truncated = doc.truncated_at.is_some() || events.stats.events == 0;
    let has_metadata_events = events.stats.by_phase.contains_key("M");
    let stats = events.stats;
    let container = match doc.container {
        Container::Object => "object",
        Container::Array => "array",
    };
    let source = SourceInfo {
        path: path.display().to_string(),
        format: FORMAT.into(),
        format_name: "Kineto JSON".into(),
        content: "JSON".into(),
        records: "events".into(),
        annotatable: true,
        compression: gzip.then(|| "gzip".to_string()),
        version: generation.into(),
        version_note: if has_metadata_events || stats.with_phase == 0 || truncated {
            note.into()
        } else {
            format!("{note}; re-serialized (no metadata events)")
        },
        framework: torch_range(generation),
        records_op_inputs: true,
        file_bytes,
        decoded_bytes: input.bytes_read(),
        records_read: stats.events,
        records_kept: stats.kept,
        accelerators_not_analysed: other_accelerators(&stats.ignored_categories),
        ignored: stats.ignored_categories,
        truncated_at_byte: doc.truncated_at,
        details: [
            ("container".to_string(), Detail::Text(container.into())),
            (
                "events_by_phase".to_string(),
                Detail::Counts(stats.by_phase),
            ),
        ]
        .into_iter()
        .collect(),
    };
    Ok(events.builder.finish(source))
}

/// Warnings for the safety limits the document reached.
fn warn_limits(doc: &document::Document, events: &mut EventReader) {
    let b = &mut events.builder;
    if doc.oversized_events > 0 {
        let message = format!(
            "{} trace events larger than {} MB were skipped",
            doc.oversized_events,
            input::MAX_VALUE_BYTES >> 20
        );
        b.warn(WarningKind::LimitReached, message, doc.oversized_events);
    }
    for (what, bytes) in &doc.oversized {
        let message = format!(
            "metadata value {what} of {} MB is over the {} MB limit; skipped",
            bytes >> 20,
            document::MAX_METADATA_VALUE_BYTES >> 20
        );
        b.warn(WarningKind::LimitReached, message, 1);
    }
    if doc.top_keys_dropped > 0 {
        let message = format!(
            "{} top-level keys past the first {} were skipped",
            doc.top_keys_dropped,
            document::MAX_TOP_KEYS
        );
        b.warn(WarningKind::LimitReached, message, doc.top_keys_dropped);
    }
    let labels = events.stats.labels_dropped;
    if labels > 0 {
        let message = format!(
            "{labels} events had a phase or category beyond the first {} distinct ones; counted as \"(other)\"",
            event::MAX_DISTINCT_LABELS
        );
        b.warn(WarningKind::LimitReached, message, labels);
    }
}

fn describe_byte(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("'{}'", b as char)
    } else {
        format!("byte 0x{b:02x}")
    }
}

/// Refuses JSON that is not a trace, with a precise reason.
fn check_is_trace(doc: &document::Document, events: &EventReader) -> Result<(), Problem> {
    match doc.container {
        Container::Object if !doc.has_trace_events => {
            if doc.top_keys.iter().any(|k| k == "nodes") {
                return Err(Problem::ExecutionTrace);
            }
            let keys: Vec<&str> = doc.top_keys.iter().take(6).map(String::as_str).collect();
            let listed = if keys.is_empty() {
                "it is an empty object".to_string()
            } else {
                format!("top-level keys: {}", keys.join(", "))
            };
            Err(Problem::NotATrace(format!(
                "the JSON object has no \"traceEvents\" array ({listed})"
            )))
        }
        Container::Array if events.stats.events > 0 && events.stats.with_phase == 0 => {
            Err(Problem::NotATrace(format!(
                "a JSON array of {} values, none of them a trace event (no \"ph\" field)",
                events.stats.events
            )))
        }
        _ => Ok(()),
    }
}

/// The accelerators behind categories the model does not keep: Meta's MTIA writes
/// `mtia_*`, NPU, XPU and HPU backends their own prefixes.
fn other_accelerators(
    ignored: &std::collections::BTreeMap<String, u64>,
) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    for (category, &n) in ignored {
        let c = category.to_ascii_lowercase();
        let accelerator = ["mtia", "npu", "xpu", "hpu"]
            .into_iter()
            .find(|p| c.starts_with(p));
        if let Some(a) = accelerator {
            *out.entry(a.to_ascii_uppercase()).or_insert(0) += n;
        }
    }
    out
}

/// The PyTorch versions that write a format generation.
fn torch_range(generation: &str) -> FrameworkRange {
    let v = |major, minor| Some(Version::new(major, minor));
    let (min, max) = match generation {
        "kineto_2020_array" => (v(1, 8), v(1, 8)),
        "legacy_array" => (None, v(1, 8)),
        "kineto_2021" => (v(1, 8), v(1, 10)),
        "kineto_int_us" => (v(1, 11), v(2, 3)),
        "kineto_float_us" | "kineto_base_ns" => (v(2, 4), None),
        _ => (None, None),
    };
    FrameworkRange { min, max }
}

/// Names the format generation from the evidence gathered while reading.
fn generation(doc: &document::Document, events: &EventReader) -> (&'static str, &'static str) {
    let s = &events.stats;
    let old = s.old_categories > s.modern_categories;
    let float_ts = s.ts_with_fraction > 0;
    let base = events.builder.metadata.base_time_ns.is_some();
    match (doc.container, old, float_ts, base) {
        (Container::Array, true, _, _) => (
            "kineto_2020_array",
            "bare JSON array with 2020 category names (Operator/Runtime/Kernel), integer epoch µs",
        ),
        (Container::Array, false, _, _) => (
            "legacy_array",
            "bare JSON array (PyTorch 1.7 and older, or a re-serialized trace)",
        ),
        (_, true, _, _) => (
            "kineto_2021",
            "PyTorch 1.8-1.10: capitalised categories (Operator/Runtime/Kernel), integer epoch µs",
        ),
        (_, false, false, _) => (
            "kineto_int_us",
            "PyTorch 1.11-2.3: integer epoch µs (External id on runtime events unreliable 2022-04…2024-02)",
        ),
        (_, false, true, false) => (
            "kineto_float_us",
            "PyTorch 2.4 era: float µs with ns precision, no baseTimeNanoseconds",
        ),
        (_, false, true, true) => (
            "kineto_base_ns",
            "PyTorch 2.4+: float µs with ns precision relative to baseTimeNanoseconds",
        ),
    }
}
