//! "Not a trace": what an input that no importer claims most likely is, in one line with what
//! to do instead. Checked on the decoded first bytes, after compression was undone.

use crate::decode::compression_of;
use tracelens_model::{first_meaningful_byte, Compression, Importer};

/// First bytes of an Nsight Systems `.nsys-rep` / `.qdrep` report.
const NSYS_REP_MAGIC: &[u8] = b"NVIDIA Tegra Pro";
/// First bytes of a ZIP archive (a zipped trace, a TensorBoard download).
const ZIP_MAGIC: &[u8] = b"PK\x03\x04";

/// Why the decoded head of an input is not one any importer reads, when it says so before
/// any importer is asked: a container or an encoding that no format uses.
#[must_use]
pub fn refused_before_sniffing(head: &[u8], compression: Option<Compression>) -> Option<String> {
    if head.starts_with(NSYS_REP_MAGIC) {
        return Some(
            "an Nsight Systems report (.nsys-rep/.qdrep), a proprietary container: export it with `nsys export --type sqlite` and pass the .sqlite file".into(),
        );
    }
    if let (Some(outer), Some(inner)) = (compression, compression_of(head)) {
        let undo = match outer {
            Compression::Gzip => "gunzip -c FILE",
            Compression::Zstd => "zstd -dc FILE",
        };
        return Some(format!(
            "{} inside {}: the decompressed data is itself compressed; decompress it once (`{undo} > trace.{}`) and pass the result",
            inner.label(),
            outer.label(),
            match inner {
                Compression::Gzip => "json.gz",
                Compression::Zstd => "json.zst",
            }
        ));
    }
    if is_execution_trace(head) {
        return Some(
            "a PyTorch execution trace (ExecutionTraceObserver 'nodes' graph), not a profiler trace: it has no timings; pass the Kineto trace recorded alongside it".into(),
        );
    }
    if is_result_document(head) {
        return Some(
            "a tracelens result document, not a trace: render it with `tracelens report FILE`, or analyse the trace it came from".into(),
        );
    }
    if is_utf16(head) {
        return Some(
            "UTF-16 text: traces are UTF-8 JSON; convert it with `iconv -f UTF-16 -t UTF-8`".into(),
        );
    }
    None
}

/// The line for an input that no importer claimed: what its first meaningful byte is, and
/// what each format starts with.
#[must_use]
pub fn unclaimed(head: &[u8], importers: &[&dyn Importer]) -> String {
    if head.starts_with(ZIP_MAGIC) {
        return "a ZIP archive, not a trace: unzip it and pass the trace inside".into();
    }
    if is_pickle(head) {
        return "a Python pickle, not a timeline trace (a torch.cuda.memory snapshot?): pass the profiler's Chrome trace (export_chrome_trace, tensorboard_trace_handler) or an Nsight Systems export".into();
    }
    if is_markup(head) && contains(head, b"<meta name=\"tracelens-source\"") {
        return "a tracelens HTML report, not a trace: open it in a browser (`tracelens report RESULT.json` renders a stored result again; analyze the trace it came from)".into();
    }
    if is_markup(head) {
        return "an HTML or XML document, not a trace (a download that returned a web page, or a tracelens HTML report?): pass the trace file itself".into();
    }
    let expected: Vec<&str> = importers.iter().map(|i| i.expects()).collect();
    let (offset, found) = match first_meaningful_byte(head) {
        Some((offset, byte)) => (offset, describe_byte(byte)),
        None => (head.len(), "the end of the first bytes".into()),
    };
    format!(
        "not a trace: expected {} but found {found} at byte {offset}",
        expected.join(" or ")
    )
}

/// Whether the bytes open a pickle of protocol 2 or later (`\x80` then the protocol number):
/// what `torch.cuda.memory._dump_snapshot` and `torch.save` write.
fn is_pickle(head: &[u8]) -> bool {
    matches!(head, [0x80, 2..=5, ..])
}

/// Whether the first meaningful text is a markup tag (`<!DOCTYPE`, `<html`, `<?xml`).
fn is_markup(head: &[u8]) -> bool {
    let Some((at, b'<')) = first_meaningful_byte(head) else {
        return false;
    };
    let tag = head[at + 1..].iter().take(8).map(u8::to_ascii_lowercase);
    let tag: Vec<u8> = tag.collect();
    tag.starts_with(b"!doctype") || tag.starts_with(b"html") || tag.starts_with(b"?xml")
}

/// The first key of the JSON object that opens `head` (its bytes with the quotes), if the
/// head opens one.
fn first_key(head: &[u8]) -> Option<&[u8]> {
    let (at, b'{') = first_meaningful_byte(head)? else {
        return None;
    };
    let rest = &head[at + 1..];
    let (key, b'"') = first_meaningful_byte(rest)? else {
        return None;
    };
    let len = rest[key + 1..].iter().position(|&b| b == b'"')?;
    Some(&rest[key..key + len + 2])
}

/// Whether the bytes open a tracelens result document: a JSON object whose first key is
/// `"schema_version"` (Chrome traces write `schemaVersion`, and never first).
fn is_result_document(head: &[u8]) -> bool {
    first_key(head) == Some(b"\"schema_version\"")
}

/// Whether the bytes open a PyTorch execution trace (`ExecutionTraceObserver`): an object whose
/// first key is `"schema"` with a `"nodes"` key after it, which no profiler trace has. Told
/// here from the first bytes, the file is not read to its end to find that out.
fn is_execution_trace(head: &[u8]) -> bool {
    first_key(head) == Some(b"\"schema\"") && contains_bytes(head, b"\"nodes\"")
}

/// Whether `needle` occurs in `haystack`.
fn contains_bytes(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Whether the bytes look like UTF-16 text (a byte-order mark, or `{`/`[` next to a NUL).
fn is_utf16(head: &[u8]) -> bool {
    head.starts_with(&[0xFF, 0xFE])
        || head.starts_with(&[0xFE, 0xFF])
        || matches!(head, [b'{' | b'[', 0, ..] | [0, b'{' | b'[', ..])
}

/// A byte as a reader would name it: the character when printable, else its hex value.
fn describe_byte(byte: u8) -> String {
    if byte.is_ascii_graphic() {
        format!("'{}'", char::from(byte))
    } else {
        format!("byte 0x{byte:02x}")
    }
}

/// Whether `needle` occurs in `hay`.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containers_and_encodings_are_named() {
        assert!(refused_before_sniffing(b"NVIDIA Tegra Pro...", None)
            .unwrap()
            .contains("nsys export"));
        let nested = refused_before_sniffing(&[0x1f, 0x8b, 8], Some(Compression::Gzip)).unwrap();
        assert!(nested.starts_with("gzip inside gzip"), "{nested}");
        let nested = refused_before_sniffing(&[0x1f, 0x8b], Some(Compression::Zstd)).unwrap();
        assert!(nested.contains("zstd -dc"), "{nested}");
        assert!(refused_before_sniffing(&[0xFF, 0xFE, b'{', 0], None)
            .unwrap()
            .starts_with("UTF-16"));
        assert!(
            refused_before_sniffing(b"{\n  \"schema_version\": 4,\n  \"tool\"", None)
                .unwrap()
                .contains("tracelens report")
        );
        assert_eq!(
            refused_before_sniffing(b"{\"schemaVersion\": 1, \"traceEvents\": []}", None),
            None
        );
        let et = b"{\n  \"schema\": \"1.0.1\", \"pid\": 5, \"nodes\": [";
        assert!(refused_before_sniffing(et, None)
            .unwrap()
            .starts_with("a PyTorch execution trace"));
        assert_eq!(
            refused_before_sniffing(b"{\"schema\": 1, \"traceEvents\": []}", None),
            None
        );
        // Plain gzip bytes are not refused here: the loader decodes them first.
        assert_eq!(refused_before_sniffing(&[0x1f, 0x8b], None), None);
        assert_eq!(refused_before_sniffing(b"{\"a\":1}", None), None);
    }

    #[test]
    fn an_unclaimed_input_names_its_first_byte_and_every_format() {
        let line = unclaimed(b"  \n<b>bold</b>", crate::IMPORTERS);
        assert_eq!(
            line,
            "not a trace: expected an Nsight Systems SQLite export or Chrome-trace JSON ('{' or '[') or a PyTorch memory snapshot (a pickle, protocol 2 to 5) but found '<' at byte 3"
        );
        assert!(unclaimed(b"\n<!DOCTYPE html><html>", crate::IMPORTERS).starts_with("an HTML"));
        assert!(unclaimed(b"<?xml version", crate::IMPORTERS).starts_with("an HTML or XML"));
        let ours = b"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta name=\"tracelens-source\" content=\"ef82\">";
        assert!(unclaimed(ours, crate::IMPORTERS).starts_with("a tracelens HTML report"));
        assert!(unclaimed(&[0x80, 4, 0x95, 0], crate::IMPORTERS).starts_with("a Python pickle"));
        assert!(!unclaimed(&[0x80, 9], crate::IMPORTERS).starts_with("a Python pickle"));
        assert!(unclaimed(b"PK\x03\x04rest", crate::IMPORTERS).starts_with("a ZIP archive"));
        assert!(
            unclaimed(&[0xEF, 0xBB, 0xBF, 0x00], crate::IMPORTERS).contains("byte 0x00 at byte 3")
        );
    }
}
