//! Which part of a training step an op or range name says it runs in: autograd's backward
//! (`autograd::engine::evaluate_function: MmBackward0`, `torch::autograd::AccumulateGrad`,
//! the `*Backward0` nodes) or the optimizer (`Optimizer.step#…`, `zero_grad`); everything
//! else on the training thread is the forward (or inference).

/// The part of a step a name belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepPhase {
    /// Autograd's backward pass.
    Backward,
    /// The optimizer's step or `zero_grad`.
    Optimizer,
}

/// The phase `name` says its span runs in, when it says.
#[must_use]
pub fn of(name: &str) -> Option<StepPhase> {
    let backward = name.starts_with("autograd::engine::evaluate_function")
        || name.contains("AccumulateGrad")
        || name.contains("## backward ##")
        || name.contains("torch/autograd/__init__.py(")
        || name.contains("torch/autograd/graph.py(")
        || name.contains("torch/_tensor.py(") && name.ends_with(": backward")
        || backward_node(name);
    if backward {
        Some(StepPhase::Backward)
    } else if crate::vocabulary::activity::of(name)
        == Some(crate::vocabulary::activity::Activity::Optimizer)
    {
        Some(StepPhase::Optimizer)
    } else {
        None
    }
}

/// An autograd node's own range: `MmBackward0`, `CudnnConvolutionBackward`, `ConvolutionBackward1`
/// (a class name, not an `aten::` op such as `aten::convolution_backward`).
fn backward_node(name: &str) -> bool {
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit());
    stem.ends_with("Backward") && !name.contains("::") && !name.contains(' ')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_say_their_phase() {
        for b in [
            "autograd::engine::evaluate_function: MmBackward0",
            "MmBackward0",
            "CudnnConvolutionBackward",
            "torch::autograd::AccumulateGrad",
            "## backward ##",
            "torch/_tensor.py(487): backward",
            "/venv/lib/python3.11/site-packages/torch/autograd/graph.py(768): _engine_run_backward",
        ] {
            assert_eq!(of(b), Some(StepPhase::Backward), "{b}");
        }
        for o in [
            "Optimizer.step#Adam.step",
            "Optimizer.zero_grad#SGD.zero_grad",
        ] {
            assert_eq!(of(o), Some(StepPhase::Optimizer), "{o}");
        }
        for f in [
            "aten::convolution_backward",
            "aten::linear",
            "ProfilerStep#3",
            "train.py(4): f",
        ] {
            assert_eq!(of(f), None, "{f}");
        }
    }
}
