//! Python source frames: `file.py(LINE): function` as PyTorch writes them.

use serde::Serialize;

/// One Python frame.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PyFrame {
    /// Source file as recorded.
    pub file: String,
    /// Line number.
    pub line: u32,
    /// Function name.
    pub function: String,
}

impl PyFrame {
    /// Parses `path/to/file.py(87): train_step`; `None` for built-ins and module frames.
    #[must_use]
    pub fn parse(text: &str) -> Option<PyFrame> {
        let (head, function) = text.split_once("): ")?;
        let open = head.rfind('(')?;
        let line = head[open + 1..].parse().ok()?;
        let file = &head[..open];
        if file.is_empty() {
            return None;
        }
        Some(PyFrame {
            file: file.to_string(),
            line,
            function: function.trim().to_string(),
        })
    }

    /// Whether the frame is inside PyTorch or an installed package rather than user code.
    #[must_use]
    pub fn is_library(&self) -> bool {
        let f = self.file.replace('\\', "/");
        f.contains("site-packages/")
            || f.contains("dist-packages/")
            || f.starts_with("torch/")
            || f.contains("/torch/")
            || f.starts_with('<')
            || f.contains("/lib/python")
    }
}

/// Splits a 2021-style `args["Call stack"]` string (`;`-separated, innermost first) into frames.
#[must_use]
pub fn parse_call_stack(text: &str) -> Vec<PyFrame> {
    text.split(';')
        .filter_map(|s| PyFrame::parse(s.trim()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_frames_and_skips_builtins() {
        let f = PyFrame::parse("train.py(87): train_step").unwrap();
        assert_eq!(
            (f.file.as_str(), f.line, f.function.as_str()),
            ("train.py", 87, "train_step")
        );
        assert!(!f.is_library());
        assert!(PyFrame::parse("<built-in method item of Tensor object at 0x7f>").is_none());
        assert!(PyFrame::parse("nn.Module: Linear_0").is_none());
        let t = PyFrame::parse("/x/site-packages/torch/nn/modules/module.py(1501): _call_impl")
            .unwrap();
        assert!(t.is_library());
    }

    #[test]
    fn splits_2021_call_stacks() {
        let s = "/e/lib/python3.7/site-packages/torch/autograd/profiler.py(611): __init__;resnet50_profiler_api.py(54): <module>";
        let frames = parse_call_stack(s);
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[1].line, 54);
        assert!(frames[0].is_library());
    }
}
