//! The top level of a trace file: an object with `traceEvents` and metadata, or a bare array.

use crate::event::EventReader;
use crate::input::{Input, Stop};
use crate::json::{decode_str, Value};
use std::io::Read;
use tracelens_model::{shorten, DeviceProperties, DistributedInfo, Metadata};

/// How the document is shaped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Container {
    /// `{"traceEvents": [...], ...}` (PyTorch 1.8 and later).
    Object,
    /// `[ {...}, ... ]` (PyTorch 1.7 and older, early Kineto samples).
    Array,
}

/// What the walk over the top level found.
#[derive(Debug)]
pub struct Document {
    /// Shape of the document.
    pub container: Container,
    /// Whether an object document had a `traceEvents` array.
    pub has_trace_events: bool,
    /// Top-level keys of an object document, in file order.
    pub top_keys: Vec<String>,
    /// Decoded byte offset where the text stopped being complete, if it did.
    pub truncated_at: Option<u64>,
    /// Top-level keys past [`MAX_TOP_KEYS`], counted and skipped.
    pub top_keys_dropped: u64,
    /// Values past their size limit, skipped: (what, bytes).
    pub oversized: Vec<(String, u64)>,
    /// Trace events past [`crate::input::MAX_VALUE_BYTES`], skipped.
    pub oversized_events: u64,
}

/// Top-level keys read; a real trace has about 20. Further keys are skipped unread.
pub const MAX_TOP_KEYS: usize = 256;
/// Largest top-level metadata value read (`deviceProperties` of a big node is ~100 kB).
pub const MAX_METADATA_VALUE_BYTES: usize = 4 << 20;
/// Longest top-level key kept, in characters.
const MAX_KEY_CHARS: usize = 200;
/// Most `deviceProperties` entries kept.
const MAX_DEVICES: usize = 1024;

/// Why the walk could not start.
#[derive(Debug)]
pub enum Start {
    /// No bytes at all.
    Empty,
    /// The first meaningful byte is this, at this offset.
    Unexpected(u8, u64),
}

/// Walks the document, streaming `traceEvents` elements into `events` one by one.
pub fn read_document<R: Read>(
    input: &mut Input<R>,
    events: &mut EventReader,
    threads: usize,
) -> Result<Document, Start> {
    let first = match input.peek() {
        None => return Err(Start::Empty),
        Some(b) => b,
    };
    let mut doc = Document {
        container: Container::Object,
        has_trace_events: false,
        top_keys: Vec::new(),
        truncated_at: None,
        top_keys_dropped: 0,
        oversized: Vec::new(),
        oversized_events: 0,
    };
    match first {
        b'[' => {
            doc.container = Container::Array;
            doc.truncated_at = stream_events(input, events, &mut doc.oversized_events, threads);
        }
        b'{' => {
            input.bump();
            doc.truncated_at = read_object(input, events, &mut doc, threads);
        }
        other => return Err(Start::Unexpected(other, input.offset())),
    }
    Ok(doc)
}

/// Bytes of events cut at once for the decoding threads.
const RUN_BYTES: usize = crate::parallel::BATCH_BYTES;
/// Bytes scanned for a run before one long event is taken on its own.
const RUN_WINDOW: usize = 4 * RUN_BYTES;

/// Streams the array at the cursor. Returns the offset where it was cut, if it was.
/// Elements over the size limit are skipped and counted in `oversized`.
fn stream_events<R: Read>(
    input: &mut Input<R>,
    events: &mut EventReader,
    oversized: &mut u64,
    threads: usize,
) -> Option<u64> {
    input.bump(); // '['
    let mut decoders = (threads > 1).then(|| crate::parallel::Decoders::start(threads));
    let cut = loop {
        match input.peek() {
            None => break Some(input.offset()),
            Some(b']') => {
                input.bump();
                break None;
            }
            Some(b',') => input.bump(),
            Some(first) => {
                let at = input.offset();
                if let (b'{', Some(d)) = (first, decoders.as_mut()) {
                    if let Some(run) = input.take_run(RUN_BYTES, RUN_WINDOW) {
                        d.push(input.bytes(run), at, events);
                        continue;
                    }
                }
                match input.take_value() {
                    Ok(range) => match decoders.as_mut() {
                        Some(d) => d.push(input.bytes(range), at, events),
                        None => events.read(input.bytes(range), at),
                    },
                    Err(Stop::TooLarge(_)) => *oversized += 1,
                    Err(Stop::End) => break Some(at),
                }
            }
        }
    };
    if let Some(d) = decoders {
        d.finish(events);
    }
    cut
}

fn read_object<R: Read>(
    input: &mut Input<R>,
    events: &mut EventReader,
    doc: &mut Document,
    threads: usize,
) -> Option<u64> {
    loop {
        match input.peek() {
            None => return Some(input.offset()),
            Some(b'}') => {
                input.bump();
                return None;
            }
            Some(b',') => {
                input.bump();
                continue;
            }
            Some(_) => {}
        }
        let key_at = input.offset();
        let key = match input.take_value_limited(MAX_METADATA_VALUE_BYTES) {
            Ok(range) => decode_str(input.bytes(range))
                .map(|k| shorten(&k, MAX_KEY_CHARS))
                .unwrap_or_default(),
            Err(Stop::TooLarge(bytes)) => {
                doc.oversized.push(("a top-level key".into(), bytes));
                String::new()
            }
            Err(Stop::End) => return Some(key_at),
        };
        if input.peek() != Some(b':') {
            return Some(input.offset());
        }
        input.bump();
        if key == "traceEvents" && input.peek() == Some(b'[') {
            doc.top_keys.push(key);
            doc.has_trace_events = true;
            if let Some(cut) = stream_events(input, events, &mut doc.oversized_events, threads) {
                return Some(cut);
            }
            continue;
        }
        let keep = doc.top_keys.len() < MAX_TOP_KEYS;
        if keep {
            doc.top_keys.push(key.clone());
        } else {
            doc.top_keys_dropped += 1;
        }
        let value_at = input.offset();
        match input.take_value_limited(MAX_METADATA_VALUE_BYTES) {
            Ok(range) if keep => {
                let value = Value::parse(input.bytes(range));
                read_top_level(&key, &value, &mut events.builder.metadata);
            }
            Ok(_) => {}
            Err(Stop::TooLarge(bytes)) => doc.oversized.push((format!("\"{key}\""), bytes)),
            Err(Stop::End) => return Some(value_at),
        }
    }
}

const VERSION_KEYS: [&str; 8] = [
    "cupti_version",
    "cuda_runtime_version",
    "cuda_driver_version",
    "roctracer_version",
    "hip_runtime_version",
    "hip_driver_version",
    "pytorch_version",
    "torch_version",
];
const PROFILER_FLAGS: [&str; 6] = [
    "with_stack",
    "record_shapes",
    "profile_memory",
    "with_flops",
    "with_modules",
    "experimental_config",
];

/// Files one top-level entry into the metadata.
fn read_top_level(key: &str, value: &Value, meta: &mut Metadata) {
    match key {
        "schemaVersion" => meta.schema_version = value.as_i64(),
        "baseTimeNanoseconds" => meta.base_time_ns = value.as_i64(),
        "displayTimeUnit" => meta.display_time_unit = value.as_text(),
        "traceName" => meta.trace_name = value.as_text(),
        "deviceProperties" => {
            if let Value::Array(items) = value {
                meta.device_properties = items
                    .iter()
                    .take(MAX_DEVICES)
                    .map(device_properties)
                    .collect();
            }
        }
        "distributedInfo" => {
            meta.distributed = Some(DistributedInfo {
                backend: value.get("backend").and_then(Value::as_text),
                rank: value.get("rank").and_then(Value::as_i64),
                world_size: value.get("world_size").and_then(Value::as_i64),
            });
            flatten(key, value, meta);
        }
        k if VERSION_KEYS.contains(&k) || k.ends_with("_version") => {
            if let Some(v) = value.as_text() {
                meta.versions.insert(k.to_string(), v);
            } else {
                flatten(key, value, meta);
            }
        }
        k if PROFILER_FLAGS.contains(&k) => {
            if let Some(v) = value.as_text() {
                meta.profiler_flags.insert(k.to_string(), v);
            }
        }
        _ => flatten(key, value, meta),
    }
}

fn device_properties(v: &Value) -> DeviceProperties {
    DeviceProperties {
        id: v.get("id").and_then(Value::as_i64).unwrap_or(0),
        name: v.get("name").and_then(Value::as_text).unwrap_or_default(),
        total_global_mem_bytes: v
            .get("totalGlobalMem")
            .and_then(Value::as_i64)
            .and_then(|b| u64::try_from(b).ok()),
        compute_major: v.get("computeMajor").and_then(Value::as_i64),
        compute_minor: v.get("computeMinor").and_then(Value::as_i64),
        num_sms: v.get("numSms").and_then(Value::as_i64),
        warp_size: v.get("warpSize").and_then(Value::as_i64),
    }
}

/// Flattens a value to `a.b.c` entries (arrays as `a[0]`), redacting as it goes.
fn flatten(path: &str, value: &Value, meta: &mut Metadata) {
    match value {
        Value::Object(fields) => {
            for (k, v) in fields {
                flatten(&format!("{path}.{k}"), v, meta);
            }
        }
        Value::Array(items) => {
            if items
                .iter()
                .all(|i| !matches!(i, Value::Object(_) | Value::Array(_)))
            {
                let joined: Vec<String> = items
                    .iter()
                    .map(|i| i.as_text().unwrap_or_else(|| "null".into()))
                    .collect();
                meta.add_extra(path, &format!("[{}]", joined.join(", ")));
            } else {
                for (i, v) in items.iter().enumerate() {
                    flatten(&format!("{path}[{i}]"), v, meta);
                }
            }
        }
        Value::Null => meta.add_extra(path, "null"),
        other => meta.add_extra(path, &other.as_text().unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_filed_and_secrets_redacted() {
        let mut m = Metadata::default();
        let v = Value::parse(br#"{"env": {"HF_TOKEN": "hf_abc", "PATH": "/bin"}, "list": [1, 2]}"#);
        read_top_level("metadata", &v, &mut m);
        read_top_level("cuda_runtime_version", &Value::parse(b"12040"), &mut m);
        read_top_level("with_stack", &Value::parse(b"1"), &mut m);
        assert_eq!(m.extra["metadata.env.HF_TOKEN"], "<redacted>");
        assert_eq!(m.extra["metadata.env.PATH"], "/bin");
        assert_eq!(m.extra["metadata.list"], "[1, 2]");
        assert_eq!(m.versions["cuda_runtime_version"], "12040");
        assert_eq!(m.profiler_flags["with_stack"], "1");
    }
}
