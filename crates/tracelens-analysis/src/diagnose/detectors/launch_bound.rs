//! Launch-bound stretches: runs of kernels shorter than their launch calls, where the GPU
//! starves between launches. Also the fix against per-launch overhead that fits the PyTorch
//! version and what the step already uses.

use super::{plural, Context, Detector, Input, MIN_FINDING_PERCENT};
use crate::diagnose::finding::{Confidence, EvidenceValue, Finding, WinKind};
use crate::finding_kind::FindingKind;
use crate::measure::environment::{Dialect, Framework, CUDA_GRAPHS, TORCH_COMPILE};
use crate::predict::what_if::WhatIf;
use tracelens_model::format_ms;

/// Kernels shorter than their launches.
pub struct LaunchBound;

impl Detector for LaunchBound {
    fn name(&self) -> &'static str {
        "launch_bound"
    }

    fn kind(&self) -> FindingKind {
        FindingKind::LaunchBound
    }
    fn reads(&self) -> &'static [Input] {
        &[Input::Credit, Input::Framework, Input::Idle, Input::Launch]
    }

    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let l = cx.launch();
        let win = cx.win(cx.credit().launch_bound_ns);
        if l.stretch_count == 0 || win.total_ns == 0 || win.percent < MIN_FINDING_PERCENT {
            return Vec::new();
        }
        let depth = l.stretches.first().map_or(0.0, |s| s.mean_queue_depth);
        let mut f = cx.finding(FindingKind::LaunchBound, WinKind::GpuIdle, &win);
        f.title = format!(
            "Launch-bound: {} kernels in {} run shorter than their launch calls; the GPU starves {} {} ({:.1} %)",
            l.stretch_kernels,
            plural(l.stretch_count, "stretch"),
            format_ms(win.per_step_ns),
            cx.per(),
            win.percent
        );
        f.win_basis = "GPU idle inside runs of short kernels, from launch overhead and the CPU work between launches (upper bound)".into();
        f.evidence.add_occurrences("short kernels", l.short_kernels);
        f.evidence.add(
            "kernels with a launch",
            EvidenceValue::Count(l.kernels_with_launch),
        );
        f.evidence.add(
            "mean queue depth of the largest stretch (ops launched, not started)",
            EvidenceValue::Number(depth),
        );
        f.evidence.time_ranges = l.stretches.iter().map(|s| s.interval).collect();
        if let Some(idle) = cx.idle() {
            let stretches = l
                .stretch_intervals
                .iter()
                .find(|(d, _)| *d == idle.device)
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            f.what_if = Some(WhatIf::GraphLaunches(stretches));
        }
        (f.fix, f.snippet) = launch_overhead_fix(cx.framework());
        f.lever = Some(crate::diagnose::lever::Lever::FewerLaunches);
        f.advice = launch_bound_advice(cx.framework().dialect()).into();
        f.confidence = if cx.reliable() {
            Confidence::Medium
        } else {
            Confidence::Low
        };
        vec![f]
    }
}

/// Why short kernels leave the GPU idle, in the program's words.
fn launch_bound_advice(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::PyTorch | Dialect::CudaRuntime => "The CPU cannot issue kernels as fast as the GPU runs them: each kernel is shorter than its launch call, so the GPU idles between them. Fewer, larger launches (CUDA graphs, fusion, bigger batches) remove the gaps.",
        Dialect::OpenAcc | Dialect::OpenMp | Dialect::Neutral | Dialect::Python(_) => "The CPU cannot issue kernels as fast as the GPU runs them: each kernel is shorter than its launch call, so the GPU idles between them. Fewer, larger launches (more work per kernel, fused loops) remove the gaps.",
    }
}

/// (fix, snippet) against per-launch CPU overhead, fitted to the PyTorch version and to what
/// the trace already uses.
pub(super) fn launch_overhead_fix(fw: &Framework) -> (String, String) {
    if !fw.pytorch() {
        return crate::diagnose::advice::launch_overhead(fw.dialect());
    }
    if fw.graphs {
        return (
            "The step already replays CUDA graphs: capture more of it in each graph (the work launched between replays, or several iterations whose shapes stay fixed), fuse more ops, or put more samples through each launch.".into(),
            "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    for _ in range(n_steps):          # several iterations per replay\n        static_x = model(static_x)\ng.replay()".into(),
        );
    }
    if fw.compiled {
        return (
            "The model is already compiled: add CUDA graphs with torch.compile(model, mode=\"reduce-overhead\").".into(),
            "model = torch.compile(model, mode=\"reduce-overhead\")   # CUDA graphs on top of fusion".into(),
        );
    }
    match fw.at_least(TORCH_COMPILE) {
        Some(true) => (
            "Compile the step with torch.compile(model, mode=\"reduce-overhead\") (fusion and CUDA graphs), or raise the batch size.".into(),
            "model = torch.compile(model, mode=\"reduce-overhead\")   # CUDA graphs + fusion".into(),
        ),
        None => (
            "On PyTorch 2.0+ compile the step with torch.compile(model, mode=\"reduce-overhead\"); on 1.10-1.13 capture it with torch.cuda.graph; or raise the batch size.".into(),
            "model = torch.compile(model, mode=\"reduce-overhead\")   # PyTorch 2.0+\n# 1.10-1.13: g = torch.cuda.CUDAGraph(); with torch.cuda.graph(g): out = model(static_x)".into(),
        ),
        Some(false) => match fw.at_least(CUDA_GRAPHS) {
            Some(true) => (
                "Raise the batch size so each kernel does more work, or capture the step with torch.cuda.graph.".into(),
                "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    static_out = model(static_x)\ng.replay()".into(),
            ),
            None => (
                "Raise the batch size so each kernel does more work; on PyTorch 1.10+ capture the step with torch.cuda.graph.".into(),
                "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):           # PyTorch 1.10+\n    static_out = model(static_x)\ng.replay()".into(),
            ),
            Some(false) => (
                "Raise the batch size so each kernel does more work, or fuse small ops by hand: this PyTorch predates CUDA graph capture (1.10) and compilation (2.0), which an upgrade adds.".into(),
                "# more samples per launch amortize each launch\nout = model(torch.cat([x1, x2]))   # two batches in one forward".into(),
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{findings_of, scenario};
    use super::*;

    #[test]
    fn tiny_kernels_are_launch_bound_and_fused_ones_are_not() {
        let f = findings_of(&LaunchBound, &scenario("launch_bound_tiny_kernels"));
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(f[0].title.starts_with("Launch-bound"), "{}", f[0].title);

        let twin = findings_of(&LaunchBound, &scenario("fused_kernels"));
        assert!(twin.is_empty(), "{twin:#?}");
    }

    #[test]
    fn the_fix_names_only_what_the_recorded_pytorch_has() {
        let graphs = Framework {
            graphs: true,
            program: crate::measure::environment::Program::PyTorch,
            ..Framework::default()
        };
        let (fix, snippet) = launch_overhead_fix(&graphs);
        assert!(fix.contains("already replays CUDA graphs"), "{fix}");
        // Inference has no DataLoader to resize: the snippet names none.
        assert!(!snippet.contains("DataLoader"), "{snippet}");
        let compiled = Framework {
            compiled: true,
            program: crate::measure::environment::Program::PyTorch,
            ..Framework::default()
        };
        assert!(launch_overhead_fix(&compiled)
            .0
            .contains("already compiled"));
        // A program the trace does not identify is told no PyTorch API.
        let unknown = launch_overhead_fix(&Framework::default()).0;
        assert!(!unknown.contains("torch"), "{unknown}");
    }
}
