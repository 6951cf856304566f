//! What to do about torch.compile's steady state: recompiles after warm-up, graph breaks, and
//! compiled code that runs eagerly where it replays CUDA/HIP graphs elsewhere — each said with
//! its figures and a fix that exists in the trace's PyTorch version, following the cause the
//! trace shows (new input shapes, another guard, a resume line).

use crate::measure::environment::{Framework, Hardware, TorchVersion};
use crate::views::compiled::{CompiledRun, RecompileCause};
use crate::vocabulary::devices::Vendor;
use serde::Serialize;

/// `TORCH_LOGS` (`recompiles`, `graph_breaks`, `perf_hints`).
const TORCH_LOGS: TorchVersion = TorchVersion::new(2, 1);
/// `torch.library.custom_op`.
const CUSTOM_OP: TorchVersion = TorchVersion::new(2, 4);

/// What kind of steady-state compile problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompileProblem {
    /// Frames compiled again after warm-up.
    Recompiles,
    /// Compiled code split by graph breaks, eager ops between the graphs.
    GraphBreaks,
    /// Compiled-region calls that launched kernels one by one instead of replaying a graph.
    EagerGraphRuns,
}

/// One problem with its fix.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct CompileAdvice {
    /// Which problem.
    pub problem: CompileProblem,
    /// One line, with the numbers.
    pub title: String,
    /// What to change.
    pub fix: String,
    /// A short Python example.
    pub snippet: String,
}

/// torch.compile in the window, and what to do about it.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct CompiledReport {
    /// The figures.
    pub run: CompiledRun,
    /// The problems they show, each with its fix (none in a clean steady state).
    pub advice: Vec<CompileAdvice>,
}

fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The report of `run`, its problems fitted to the PyTorch version and the GPU's vendor.
#[must_use]
pub fn report(run: CompiledRun, fw: &Framework, hw: &Hardware) -> CompiledReport {
    let logs = fw.at_least(TORCH_LOGS);
    let mut advice = Vec::new();
    if run.recompiles > 0 {
        advice.push(recompiles(&run, logs));
    }
    if run.graph_breaks > 0 {
        advice.push(graph_breaks(
            &run,
            logs,
            fw.at_least(CUSTOM_OP) == Some(true),
        ));
    }
    if let Some(g) = run.graph_replays.filter(|g| g.eager_runs > 0) {
        let graph = if hw.vendor == Vendor::Amd {
            "HIP graph"
        } else {
            "CUDA graph"
        };
        let why = match logs {
            Some(true) => "TORCH_LOGS=perf_hints prints why a graph was skipped (CPU tensors, inputs mutated outside the graph, dynamic shapes). ",
            None => "TORCH_LOGS=perf_hints (PyTorch 2.1+) prints why a graph was skipped (CPU tensors, inputs mutated outside the graph, dynamic shapes). ",
            Some(false) => "",
        };
        advice.push(CompileAdvice {
            problem: CompileProblem::EagerGraphRuns,
            title: format!(
                "{} of {} compiled-graph calls launched their kernels one by one instead of replaying a {graph}",
                g.eager_runs,
                g.eager_runs + g.replays
            ),
            fix: format!(
                "{why}A new input shape records a new {graph} after an eager warm-up run, so pad inputs to a few fixed sizes; keep inputs on the GPU and do not mutate them outside the compiled function."
            ),
            snippet: "model = torch.compile(model, mode=\"reduce-overhead\")\n# pad to a few fixed sizes so each records one graph\nx = torch.nn.functional.pad(x, (0, bucket - x.shape[-1]))".into(),
        });
    }
    CompiledReport { run, advice }
}

fn recompiles(run: &CompiledRun, logs: Option<bool>) -> CompileAdvice {
    let first = run.listed.iter().find(|c| c.recompile);
    let what = first
        .and_then(|c| {
            c.function
                .clone()
                .or_else(|| c.frame.map(|f| format!("frame {f}")))
        })
        .unwrap_or_else(|| "a compiled frame".into());
    let step = first
        .and_then(|c| c.step)
        .map_or(String::new(), |s| format!(", first in step {s}"));
    let cause = first
        .and_then(|c| c.cause)
        .unwrap_or(RecompileCause::Unknown);
    let because = match cause {
        RecompileCause::ShapesChanged => ": its ops ran on input shapes the earlier code never saw",
        RecompileCause::OtherGuard => {
            ": with the same input shapes, so a guard on something else failed"
        }
        RecompileCause::Unknown => "",
    };
    let title = format!(
        "torch.compile recompiled {what} {} after warm-up ({} of compilation in the window{step}){because}",
        plural(run.recompiles, "time", "times").replace("1 time", "once"),
        tracelens_model::format_ms(run.recompile_ns)
    );
    let see = match logs {
        Some(true) => "TORCH_LOGS=recompiles prints the guard that failed at each recompile. ",
        None => "TORCH_LOGS=recompiles (PyTorch 2.1+) prints the guard that failed at each recompile. ",
        Some(false) => "Upgrade to PyTorch 2.1+ for TORCH_LOGS=recompiles, which prints the guard that failed. ",
    };
    let (fix, snippet) = match cause {
        RecompileCause::ShapesChanged => (
            format!("{see}Mark the dimension that changes as dynamic before the first call (torch._dynamo.mark_dynamic), or pad inputs to a few fixed sizes, so one compiled graph serves every shape."),
            "torch._dynamo.mark_dynamic(x, 0)   # the batch dimension varies\nout = compiled_model(x)",
        ),
        RecompileCause::OtherGuard => (
            format!("{see}Keep what the guard checks constant between calls: pass changing Python numbers as tensors, do not change module attributes or globals the function reads, keep dtype, device and requires_grad of inputs fixed."),
            "lr = torch.tensor(lr, device=\"cuda\")   # a tensor, not a Python float that changes every step",
        ),
        RecompileCause::Unknown => (
            format!("{see}The usual causes are changing input shapes (mark the dimension with torch._dynamo.mark_dynamic, or pad to fixed sizes) and changing Python values the function reads (pass them as tensors)."),
            "torch._dynamo.mark_dynamic(x, 0)   # if the batch dimension varies",
        ),
    };
    CompileAdvice {
        problem: CompileProblem::Recompiles,
        title,
        fix,
        snippet: snippet.into(),
    }
}

fn graph_breaks(run: &CompiledRun, logs: Option<bool>, custom_op: bool) -> CompileAdvice {
    let at = run
        .break_sites
        .first()
        .map_or(String::new(), |s| format!(", most at {}", s.site));
    let title = format!(
        "{:.1} graph breaks per step split the compiled code{at}; {} per step in eager ops between the compiled graphs",
        run.breaks_per_step(),
        tracelens_model::format_ms(run.eager_between_ns / i64::try_from(run.steps.max(1)).unwrap_or(1))
    );
    let see = match logs {
        Some(true) => "TORCH_LOGS=graph_breaks prints each break and its reason. ",
        None => "TORCH_LOGS=graph_breaks (PyTorch 2.1+; before it, torch._dynamo.explain) prints each break and its reason. ",
        Some(false) => "torch._dynamo.explain lists each break and its reason. ",
    };
    let wrap = if custom_op {
        " or wrap it as a custom op (torch.library.custom_op) the compiler can keep in the graph"
    } else {
        ""
    };
    CompileAdvice {
        problem: CompileProblem::GraphBreaks,
        title,
        fix: format!(
            "{see}Rewrite the code at the break without data-dependent Python (.item(), if tensor:, print, unsupported library calls){wrap}; torch.compile(fullgraph=True) then turns any break left into an error."
        ),
        snippet: "model = torch.compile(model, fullgraph=True)   # fails at a graph break instead of splitting".into(),
    }
}
