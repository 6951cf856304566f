//! NVTX ranges that carry a Python dict instead of a name (apex pyprof and DLProf markers):
//! reduced to what a person needs, the first user frame of the call trace or the op.

/// Longest label kept from a marker's `strRepr`.
const MAX_LABEL_CHARS: usize = 80;

/// The readable label of a pyprof/DLProf marker (`{'traceMarker': [...]}`,
/// `{'mod': ..., 'op': ...}`, `{'mod': ..., 'strRepr': ...}`), or `None` for any other text.
pub(super) fn readable(text: &str) -> Option<String> {
    let text = text.trim();
    if !text.starts_with("{'") || !text.ends_with('}') {
        return None;
    }
    if let Some(list) = after(text, "'traceMarker': [") {
        // Outermost call first: the innermost frame outside libraries is the user's line.
        let frames = quoted(list.split(']').next().unwrap_or(""));
        let user = frames
            .iter()
            .rev()
            .find(|f| !is_library(f))
            .or(frames.last())?;
        return Some((*user).to_string());
    }
    let module = after(text, "'mod': ").and_then(|s| quoted(s).first().copied());
    if let Some(op) = after(text, "'op': ").and_then(|s| quoted(s).first().copied()) {
        return Some(match module {
            Some(m) => format!("{m}.{op}"),
            None => op.to_string(),
        });
    }
    let module = module?;
    let repr = after(text, "'strRepr': ").and_then(|s| quoted(s).first().copied());
    Some(match repr {
        Some(r) if !r.is_empty() => {
            let r: String = r.chars().take(MAX_LABEL_CHARS).collect();
            format!("{module}({r})")
        }
        _ => module.to_string(),
    })
}

/// The text after the first `key`.
fn after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.find(key).map(|i| &text[i + key.len()..])
}

/// The single- or double-quoted strings at the start of `text`'s list or value, in order
/// (escapes are not expanded: labels only).
fn quoted(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        let trimmed = rest.trim_start_matches([' ', ',']);
        let Some(q) = trimmed.chars().next().filter(|c| *c == '\'' || *c == '"') else {
            return out;
        };
        let body = &trimmed[1..];
        let Some(end) = body.find(q) else {
            return out;
        };
        out.push(&body[..end]);
        rest = &body[end + 1..];
    }
}

fn is_library(frame: &str) -> bool {
    let f = frame.replace('\\', "/");
    f.contains("site-packages/")
        || f.contains("dist-packages/")
        || f.contains("/torch/")
        || f.contains("/apex/")
        || f.starts_with('<')
        || f.contains("/lib/python")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pyprof_markers_read_as_their_user_frame_or_op() {
        let trace = "{'traceMarker': ['/opt/conda/lib/python3.8/runpy.py:194', '/work/dummy_network.py:41', '/opt/conda/lib/python3.8/site-packages/torch/nn/modules/module.py:889']}";
        assert_eq!(
            readable(trace).as_deref(),
            Some("/work/dummy_network.py:41")
        );
        let op = "{'mod': 'torch.nn.functional', 'op': 'conv2d', 'args': [{'name': '', 'type': 'tensor', 'shape': (32, 3, 224, 224), 'dtype': 'float32'}]}";
        assert_eq!(readable(op).as_deref(), Some("torch.nn.functional.conv2d"));
        let module = "{'mod': 'Conv2d', 'strRepr': '3, 64, kernel_size=(7, 7), stride=(2, 2)'}";
        assert_eq!(
            readable(module).as_deref(),
            Some("Conv2d(3, 64, kernel_size=(7, 7), stride=(2, 2))")
        );
        assert_eq!(readable("forward"), None);
        assert_eq!(readable("{'unrelated': 1}"), None);
        assert_eq!(readable("{'traceMarker': []}"), None);
    }
}
