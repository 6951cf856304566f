//! What torch.compile's profiler names mean: compiled regions with their frame and compile
//! ids, calls of a compiled graph, Dynamo's per-call bookkeeping, compilation, and the resume
//! functions Dynamo makes at a graph break. The formats are PyTorch's own
//! (`docs/source/torch.compiler_profiling_torch_compile.md`, `torch/_dynamo/utils.py`):
//! `Torch-Compiled Region: F/C` since 2.5 (F the frame, C how many times it was compiled
//! before), `CompiledFunction` around an autograd graph, `## Call CompiledFxGraph HASH ##`
//! around an inference graph, `KEY (dynamo_timed)` around each compilation phase.

/// What one torch.compile name is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompiledName {
    /// A compiled region's call; nested inside another, a graph break (or a skipped frame).
    Region {
        /// Dynamo's frame id (PyTorch 2.5+).
        frame: Option<u32>,
        /// How many times that frame was compiled before this code (0: the first).
        compile: Option<u32>,
    },
    /// A call of one compiled graph (forward, backward or inference).
    GraphCall,
    /// Dynamo's per-call work around a graph: its cache lookup, the bytecode before the
    /// graph, AOTAutograd's wrappers.
    Bookkeeping,
    /// Compilation: Dynamo tracing, AOTAutograd, Inductor lowering and code generation.
    Compile,
}

/// What `name` is, when it is one of torch.compile's names.
#[must_use]
pub fn of(name: &str) -> Option<CompiledName> {
    if let Some(rest) = name.strip_prefix("Torch-Compiled Region") {
        let (frame, compile) = region_ids(rest);
        return Some(CompiledName::Region { frame, compile });
    }
    if name.starts_with("CompiledFunction")
        || (name.starts_with("## Call CompiledFxGraph") && name.ends_with("##"))
    {
        return Some(CompiledName::GraphCall);
    }
    if name.starts_with("TorchDynamo")
        || name == "Pregraph bytecode"
        || name == "Postgraph bytecode"
        || name.starts_with("AOTDispatcher Runtime Wrapper")
    {
        return Some(CompiledName::Bookkeeping);
    }
    let compile = name.ends_with("(dynamo_timed)")
        || COMPILE_PHASES.contains(&name)
        || name.contains("torch/_dynamo/convert_frame.py");
    compile.then_some(CompiledName::Compile)
}

/// Compilation phases recorded without the `(dynamo_timed)` suffix (newer PyTorch writes
/// some phases by their key alone).
const COMPILE_PHASES: &[&str] = &[
    "entire_frame_compile",
    "_compile.compile_inner",
    "compile_inner",
    "backend_compile",
    "inductor_compile",
    "compile_fx_inner",
];

/// `": 3/1"` as frame 3, compile 1.
fn region_ids(rest: &str) -> (Option<u32>, Option<u32>) {
    let rest = rest.trim_start_matches(':').trim();
    let Some((frame, compile)) = rest.split_once('/') else {
        return (None, None);
    };
    let number = |s: &str| s.trim().parse::<u32>().ok();
    match (number(frame), number(compile)) {
        (Some(f), Some(c)) => (Some(f), Some(c)),
        _ => (None, None),
    }
}

/// Where a graph break is, from a Python frame of the resume function Dynamo makes for the
/// code after it (`model.py(88): torch_dynamo_resume_in_forward_at_90`): the file, the
/// function the break is in and its line (`model.py: forward line 90`).
#[must_use]
pub fn graph_break_site(frame_name: &str) -> Option<String> {
    const RESUME: &str = "torch_dynamo_resume_in_";
    let at = frame_name.find(RESUME)?;
    let rest = &frame_name[at + RESUME.len()..];
    let (function, line) = rest.rsplit_once("_at_")?;
    let line: u32 = line.trim().parse().ok()?;
    let file = frame_name[..at]
        .split_once('(')
        .map_or("", |(file, _)| file.trim());
    Some(if file.is_empty() {
        format!("{function} line {line}")
    } else {
        format!("{file}: {function} line {line}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_in_pytorch_formats() {
        assert_eq!(
            of("Torch-Compiled Region: 3/1"),
            Some(CompiledName::Region {
                frame: Some(3),
                compile: Some(1)
            })
        );
        assert_eq!(
            of("Torch-Compiled Region"),
            Some(CompiledName::Region {
                frame: None,
                compile: None
            })
        );
        assert_eq!(
            of("CompiledFunctionBackward"),
            Some(CompiledName::GraphCall)
        );
        assert_eq!(
            of("## Call CompiledFxGraph fal4xpiah2v6 ##"),
            Some(CompiledName::GraphCall)
        );
        assert_eq!(
            of("TorchDynamo Cache Lookup"),
            Some(CompiledName::Bookkeeping)
        );
        assert_eq!(
            of("_compile.compile_inner (dynamo_timed)"),
            Some(CompiledName::Compile)
        );
        assert_eq!(of("aten::mm"), None);
        assert_eq!(of("## Call CompiledFxGraph"), None);
    }

    #[test]
    fn a_resume_frame_names_its_break() {
        assert_eq!(
            graph_break_site("model.py(88): torch_dynamo_resume_in_forward_at_90").as_deref(),
            Some("model.py: forward line 90")
        );
        assert_eq!(graph_break_site("model.py(88): forward"), None);
        assert_eq!(
            graph_break_site("x.py(1): torch_dynamo_resume_in_f_at_zz"),
            None
        );
    }
}
