//! The top level of a trace file: an object with `traceEvents` and other top-level keys, or a
//! bare array; events go to the sink one by one, the other keys with their parsed values.

use crate::input::{Input, Stop};
use crate::json::{decode_str, Value};
use crate::EventSink;
use std::io::Read;

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

/// Why the walk could not start.
#[derive(Debug)]
pub enum Start {
    /// No bytes at all.
    Empty,
    /// The first meaningful byte is this, at this offset.
    Unexpected(u8, u64),
}

/// Walks the document, streaming `traceEvents` elements into `events` one by one.
pub fn read_document<R: Read, S: EventSink>(
    input: &mut Input<R>,
    events: &mut S,
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
fn stream_events<R: Read, S: EventSink>(
    input: &mut Input<R>,
    events: &mut S,
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
                        None => events.event(input.bytes(range), at),
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

fn read_object<R: Read, S: EventSink>(
    input: &mut Input<R>,
    events: &mut S,
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
                .map(|k| shorten_chars(&k, MAX_KEY_CHARS))
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
                events.top_level(&key, &value);
            }
            Ok(_) => {}
            Err(Stop::TooLarge(bytes)) => doc.oversized.push((format!("\"{key}\""), bytes)),
            Err(Stop::End) => return Some(value_at),
        }
    }
}

/// `text` cut after `max` characters, with `…` where it was cut.
fn shorten_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}
