//! What the trace shows of the software that produced it: the PyTorch version range, the
//! optimizer, whether the step is compiled or replayed as CUDA/HIP graphs. Advice reads it to
//! suggest only APIs that exist in that version and that the code does not already use.

use serde::Serialize;
use tracelens_model::{NameId, Trace};

/// A PyTorch `major.minor` version.
pub type TorchVersion = tracelens_model::Version;

/// `torch.compile` and fused Adam/AdamW.
pub const TORCH_COMPILE: TorchVersion = TorchVersion::new(2, 0);
/// The `foreach=` optimizer argument.
pub const OPTIMIZER_FOREACH: TorchVersion = TorchVersion::new(1, 12);
/// `fused=True` for SGD.
pub const FUSED_SGD: TorchVersion = TorchVersion::new(2, 4);

/// The software facts advice depends on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Framework {
    /// Oldest PyTorch the trace can come from (format generation, compiled regions).
    pub torch_min: Option<TorchVersion>,
    /// Newest PyTorch the trace can come from (format generation).
    pub torch_max: Option<TorchVersion>,
    /// Optimizer class from `Optimizer.step#NAME.step` (`SGD`, `AdamW`, `FusedAdam`).
    pub optimizer: Option<String>,
    /// A fused optimizer is already in use.
    pub fused_optimizer: bool,
    /// `_foreach_*` ops are already in use.
    pub foreach_optimizer: bool,
    /// `torch.compile` regions run (`CompiledFunction`, `Torch-Compiled Region`).
    pub compiled: bool,
    /// CUDA/HIP graphs are replayed.
    pub graphs: bool,
}

impl Framework {
    /// Whether the trace's PyTorch is at least `v`: `Some(true)` or `Some(false)` when the
    /// range says so, `None` when it straddles `v`.
    #[must_use]
    pub fn at_least(&self, v: TorchVersion) -> Option<bool> {
        if self.torch_min.is_some_and(|m| m >= v) {
            Some(true)
        } else if self.torch_max.is_some_and(|m| m < v) {
            Some(false)
        } else {
            None
        }
    }

    /// The PyTorch range in words (`PyTorch 1.8-1.10`, `PyTorch 2.4+`), when known.
    #[must_use]
    pub fn describe_torch(&self) -> Option<String> {
        match (self.torch_min, self.torch_max) {
            (Some(a), Some(b)) if a == b => Some(format!("PyTorch {a}")),
            (Some(a), Some(b)) => Some(format!("PyTorch {a}-{b}")),
            (Some(a), None) => Some(format!("PyTorch {a}+")),
            (None, Some(b)) => Some(format!("PyTorch ≤ {b}")),
            (None, None) => None,
        }
    }
}

/// Reads the framework facts of a trace.
#[must_use]
pub fn framework(trace: &Trace) -> Framework {
    // The importer says which PyTorch versions write its format generation.
    let range = trace.source.framework;
    let (mut torch_min, torch_max) = (range.min, range.max);
    let mut fw = Framework {
        graphs: trace.links.graph_launches > 0,
        ..Framework::default()
    };
    for i in 0..trace.names.len() {
        let name = trace.names.get(NameId::at(i));
        if let Some(rest) = name.strip_prefix("Optimizer.step#") {
            let class = rest.split('.').next().unwrap_or(rest);
            if fw.optimizer.as_deref().is_none_or(|o| o > class) {
                fw.optimizer = Some(class.to_string());
            }
            if class.contains("Fused") {
                fw.fused_optimizer = true;
            }
        }
        if name.starts_with("aten::_fused_adam") || name.starts_with("aten::_fused_sgd") {
            fw.fused_optimizer = true;
        }
        if name.starts_with("aten::_foreach_") {
            fw.foreach_optimizer = true;
        }
        if name.starts_with("CompiledFunction") || name.starts_with("Torch-Compiled Region") {
            fw.compiled = true;
        }
        if name.contains("GraphLaunch") {
            fw.graphs = true;
        }
    }
    if fw.compiled && torch_min.is_none_or(|m| m < TORCH_COMPILE) {
        torch_min = Some(TORCH_COMPILE);
    }
    fw.torch_min = torch_min;
    fw.torch_max = torch_max.filter(|&m| torch_min.is_none_or(|n| n <= m));
    fw
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_ranges_answer_only_what_they_know() {
        let fw = Framework {
            torch_min: Some(TorchVersion::new(1, 11)),
            torch_max: Some(TorchVersion::new(2, 3)),
            ..Framework::default()
        };
        assert_eq!(fw.at_least(TorchVersion::new(1, 8)), Some(true));
        assert_eq!(fw.at_least(TORCH_COMPILE), None);
        assert_eq!(fw.at_least(FUSED_SGD), Some(false));
        assert_eq!(fw.describe_torch().unwrap(), "PyTorch 1.11-2.3");
    }
}
