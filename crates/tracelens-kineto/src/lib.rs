//! Streaming importer of PyTorch Profiler (Kineto) Chrome traces into the tracelens model.
//!
//! Reads every generation of the format — the 2020 bare array, 2021 capitalised categories,
//! integer-µs Kineto, and float-µs traces relative to `baseTimeNanoseconds`. It reads decoded
//! bytes: `tracelens-load` undoes compression before this importer sees the stream. The
//! stream is read in chunks: each element of `traceEvents` is located by a byte scanner and
//! decoded on its own, so memory follows the events kept, not the file size, and one broken
//! event is skipped and counted rather than fatal. A file cut short keeps every complete event
//! and says where it was cut.
//!
//! ```no_run
//! let file = std::fs::File::open("trace.json")?;
//! let path = std::path::Path::new("trace.json");
//! let trace = tracelens_kineto::import_reader(file, path, 0, None)?;
//! println!("{} spans on {} lanes", trace.spans.len(), trace.lanes.len());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod error;
mod event;
mod metadata;

pub use error::{ImportError, Problem};
pub use event::kind_of_category;

use event::EventReader;
use std::io::Read;
use std::path::Path;
use tracelens_chrome_json::document::{MAX_METADATA_VALUE_BYTES, MAX_TOP_KEYS};
use tracelens_chrome_json::input::MAX_VALUE_BYTES;
use tracelens_chrome_json::{read_document, Container, Document, Input, Start};
use tracelens_model::{
    first_meaningful_byte, Compression, Detail, FrameworkRange, ImportFailure, Importer,
    Input as OpenedInput, SourceInfo, Trace, Version, WarningKind,
};

/// The format id in [`SourceInfo::format`].
pub const FORMAT: &str = "kineto_json";

/// The Kineto JSON importer: Chrome-trace JSON, an object with `traceEvents` or a bare array.
pub struct KinetoImporter;

impl Importer for KinetoImporter {
    fn format(&self) -> &'static str {
        FORMAT
    }

    fn extensions(&self) -> &'static [&'static str] {
        &[".json", ".json.gz", ".trace.gz", ".json.zst", ".trace.zst"]
    }

    fn expects(&self) -> &'static str {
        "Chrome-trace JSON ('{' or '[')"
    }

    /// JSON that opens an object or an array; also a head of whitespace alone, so that a
    /// blank file is told as such.
    fn sniff(&self, head: &[u8]) -> bool {
        match first_meaningful_byte(head) {
            Some((_, byte)) => byte == b'{' || byte == b'[',
            None => true,
        }
    }

    fn import(&self, input: OpenedInput) -> Result<Trace, ImportFailure> {
        let (path, bytes, compression) = (input.path.clone(), input.file_bytes, input.compression);
        let reader = std::io::BufReader::with_capacity(1 << 20, input.into_stream());
        import_reader(reader, &path, bytes, compression).map_err(|e| match e.problem {
            Problem::Io(io) => ImportFailure::Io(io),
            other => ImportFailure::Format(other.to_string()),
        })
    }
}

/// Imports a trace from a reader of decoded bytes; `compression` says what was undone to
/// produce them (its read errors are then words about corrupt compressed data). `path` and
/// `file_bytes` only label the result and its messages.
pub fn import_reader<R: Read>(
    reader: R,
    path: &Path,
    file_bytes: u64,
    compression: Option<Compression>,
) -> Result<Trace, ImportError> {
    import_reader_with_threads(
        reader,
        path,
        file_bytes,
        compression,
        tracelens_chrome_json::parallel::threads(),
    )
}

/// [`import_reader`] decoding events on `threads` threads (1: serial). The model is the same
/// for every thread count.
pub fn import_reader_with_threads<R: Read>(
    reader: R,
    path: &Path,
    file_bytes: u64,
    compression: Option<Compression>,
    threads: usize,
) -> Result<Trace, ImportError> {
    let fail = |problem| ImportError::new(path, problem);
    let mut input = Input::new(reader);
    let mut events = EventReader::default();
    let doc = match read_document(&mut input, &mut events, threads.max(1)) {
        Ok(doc) => doc,
        Err(Start::Empty) => {
            return Err(fail(match (input.error.take(), compression) {
                (Some(e), Some(c)) => Problem::CorruptStream(c, e.to_string()),
                (Some(e), None) => Problem::Io(e),
                (None, _) if input.bytes_read() > 0 => Problem::Blank {
                    bytes: input.bytes_read(),
                    compressed: compression.is_some(),
                },
                (None, _) => Problem::Empty,
            }))
        }
        Err(Start::Unexpected(byte, offset)) => {
            return Err(fail(Problem::NotJson {
                offset,
                found: describe_byte(byte),
            }))
        }
    };
    if compression.is_some() && doc.truncated_at.is_none() {
        // The document ended: read the stream's trailer so its checksum and length are checked.
        input.drain();
    }
    let stats = &events.stats;
    let salvaged = stats.kept > 0 || stats.with_phase > 0;
    if let Some(e) = input.error.take() {
        if !salvaged {
            return Err(fail(match compression {
                Some(c) => Problem::CorruptStream(c, e.to_string()),
                None => Problem::Io(e),
            }));
        }
        let what = match compression {
            Some(c) => format!("{} stream", c.label()),
            None => "file".to_string(),
        };
        let message = if compression.is_some()
            && doc.truncated_at.is_none()
            && e.to_string().contains("checksum")
        {
            let check = match compression {
                Some(Compression::Gzip) => "CRC-32/length check",
                _ => "checksum",
            };
            format!(
                "the {what} fails its {check}: the decompressed data is corrupt, so figures from its {} events may be wrong",
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
        compression: compression.map(|c| c.label().to_string()),
        version: generation.into(),
        version_note: if has_metadata_events || stats.with_phase == 0 || truncated {
            note.into()
        } else {
            format!("{note}; re-serialized (no metadata events)")
        },
        framework: torch_range(generation),
        records_op_inputs: true,
        records_thread_states: false,
        cpu_samples: 0,
        capture_tool: tracelens_model::CaptureTool::TorchProfiler,
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
fn warn_limits(doc: &Document, events: &mut EventReader) {
    let b = &mut events.builder;
    if doc.oversized_events > 0 {
        let message = format!(
            "{} trace events larger than {} MB were skipped",
            doc.oversized_events,
            MAX_VALUE_BYTES >> 20
        );
        b.warn(WarningKind::LimitReached, message, doc.oversized_events);
    }
    for (what, bytes) in &doc.oversized {
        let message = format!(
            "metadata value {what} of {} MB is over the {} MB limit; skipped",
            bytes >> 20,
            MAX_METADATA_VALUE_BYTES >> 20
        );
        b.warn(WarningKind::LimitReached, message, 1);
    }
    if doc.top_keys_dropped > 0 {
        let message = format!(
            "{} top-level keys past the first {} were skipped",
            doc.top_keys_dropped, MAX_TOP_KEYS
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
fn check_is_trace(doc: &Document, events: &EventReader) -> Result<(), Problem> {
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
fn generation(doc: &Document, events: &EventReader) -> (&'static str, &'static str) {
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
