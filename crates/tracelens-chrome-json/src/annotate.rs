//! Copying a trace with events of our own added: `tracelens annotate` writes the original
//! document back verbatim (every top-level entry and every event, byte for byte) with extra
//! events at the front of `traceEvents`, so Perfetto UI and chrome://tracing show both.

use crate::input::{Input, Stop};
use crate::scan::{value_extent, Extent};
use std::io::{self, Read, Write};

/// What the copy held.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CopyStats {
    /// Original events copied.
    pub events: u64,
    /// Events dropped: larger than the value limit, or cut off by a truncated file.
    pub dropped: u64,
    /// Whether the original ended early (the copy is closed properly anyway).
    pub truncated: bool,
}

/// Copies the decoded trace `src` to `out`, with `extra` (JSON objects, one per string)
/// first in `traceEvents`. A bare-array trace stays a bare array.
pub fn copy_with_events<R: Read, W: Write + ?Sized>(
    src: R,
    out: &mut W,
    extra: &[String],
) -> io::Result<CopyStats> {
    let mut input = Input::new(src);
    let mut stats = CopyStats::default();
    match input.peek() {
        Some(b'[') => {
            input.bump();
            out.write_all(b"[")?;
            copy_events(&mut input, out, extra, &mut stats)?;
            out.write_all(b"]\n")?;
        }
        Some(b'{') => {
            input.bump();
            out.write_all(b"{")?;
            copy_object(&mut input, out, extra, &mut stats)?;
            out.write_all(b"}\n")?;
        }
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not a JSON trace",
            ))
        }
    }
    if let Some(e) = input.error.take() {
        return Err(e);
    }
    Ok(stats)
}

fn copy_object<R: Read, W: Write + ?Sized>(
    input: &mut Input<R>,
    out: &mut W,
    extra: &[String],
    stats: &mut CopyStats,
) -> io::Result<()> {
    let mut first = true;
    let mut had_events = false;
    loop {
        match input.peek() {
            None => {
                stats.truncated = true;
                break;
            }
            Some(b'}') => {
                input.bump();
                break;
            }
            Some(b',') => {
                input.bump();
                continue;
            }
            Some(_) => {}
        }
        let Ok(key) = input.take_value() else {
            stats.truncated = true;
            break;
        };
        let key = input.bytes(key).to_vec();
        if input.peek() != Some(b':') {
            stats.truncated = true;
            break;
        }
        input.bump();
        if !first {
            out.write_all(b",\n")?;
        }
        first = false;
        out.write_all(&key)?;
        out.write_all(b": ")?;
        if key == b"\"traceEvents\"" && input.peek() == Some(b'[') {
            had_events = true;
            input.bump();
            out.write_all(b"[")?;
            copy_events(input, out, extra, stats)?;
            out.write_all(b"]")?;
            continue;
        }
        match input.take_value() {
            Ok(range) => out.write_all(input.bytes(range))?,
            // A value that cannot be copied whole becomes null: the copy stays valid JSON.
            Err(Stop::TooLarge(_)) => out.write_all(b"null")?,
            Err(Stop::End) => {
                out.write_all(b"null")?;
                stats.truncated = true;
                break;
            }
        }
    }
    if !had_events {
        if !first {
            out.write_all(b",\n")?;
        }
        out.write_all(b"\"traceEvents\": [")?;
        copy_events_none(out, extra)?;
        out.write_all(b"]")?;
    }
    Ok(())
}

fn copy_events_none<W: Write + ?Sized>(out: &mut W, extra: &[String]) -> io::Result<()> {
    for (i, e) in extra.iter().enumerate() {
        if i > 0 {
            out.write_all(b",\n")?;
        }
        out.write_all(e.as_bytes())?;
    }
    Ok(())
}

/// Copies the elements of the array at the cursor (after its `[`) up to its `]`.
fn copy_events<R: Read, W: Write + ?Sized>(
    input: &mut Input<R>,
    out: &mut W,
    extra: &[String],
    stats: &mut CopyStats,
) -> io::Result<()> {
    copy_events_none(out, extra)?;
    let mut any = !extra.is_empty();
    loop {
        match input.peek() {
            None => {
                stats.truncated = true;
                return Ok(());
            }
            Some(b']') => {
                input.bump();
                return Ok(());
            }
            Some(b',') => input.bump(),
            Some(_) => match input.take_value() {
                Ok(range) => {
                    let bytes = input.bytes(range);
                    // Only whole values are copied, so the output parses.
                    if value_extent(bytes, true) != Extent::Complete(bytes.len()) {
                        stats.dropped += 1;
                        continue;
                    }
                    if any {
                        out.write_all(b",\n")?;
                    }
                    any = true;
                    out.write_all(bytes)?;
                    stats.events += 1;
                }
                Err(Stop::TooLarge(_)) => stats.dropped += 1,
                Err(Stop::End) => {
                    stats.truncated = true;
                    stats.dropped += 1;
                    return Ok(());
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(text: &str, extra: &[&str]) -> String {
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let mut out = Vec::new();
        copy_with_events(text.as_bytes(), &mut out, &extra).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn events_go_first_and_everything_else_is_kept() {
        let t = r#"{"schemaVersion": 1, "traceEvents": [{"ph": "X", "ts": 1}, {"ph": "i"}], "deviceProperties": [{"id": 0}]}"#;
        let c = copy(t, &[r#"{"ph": "X", "cat": "tracelens"}"#]);
        assert_eq!(
            c,
            "{\"schemaVersion\": 1,\n\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"tracelens\"},\n{\"ph\": \"X\", \"ts\": 1},\n{\"ph\": \"i\"}],\n\"deviceProperties\": [{\"id\": 0}]}\n"
        );
        assert_eq!(copy(r#"[{"a": 1}]"#, &["{}"]), "[{},\n{\"a\": 1}]\n");
        // A truncated trace is closed: the copy parses.
        let c = copy(r#"{"traceEvents": [{"a": 1}, {"b": "#, &["{}"]);
        assert_eq!(c, "{\"traceEvents\": [{},\n{\"a\": 1}]}\n");
    }
}
