//! Time by region: the ranges model authors mark (`record_function`, NVTX ranges, Lightning's
//! and HF's annotations, `nn.Module` ranges with `with_modules=True`), each with its host time
//! and the GPU time of the work launched inside it, nested as the trace nests them.
//!
//! A region counts when it starts inside the analysis window; a region inside one of its own
//! name counts once; profiler steps are the window itself, and the DataLoader and optimizer
//! ranges PyTorch adds by itself are left to the views that explain them.

use serde::Serialize;
use std::collections::HashMap;
use tracelens_model::{Interval, NameId, SpanId, SpanKind, TimeNs, Trace};

/// One region name's totals over the window.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct RegionStat {
    /// The range's name (`## forward ##`, `Optimizer.step#AdamW.step`).
    pub name: String,
    /// How deep it sits among regions (0: outermost), its shallowest instance.
    pub depth: u32,
    /// Instances in the window.
    pub calls: u64,
    /// Host time of those instances.
    pub host_ns: TimeNs,
    /// GPU time (kernels, copies, fills) launched inside them.
    pub gpu_ns: TimeNs,
}

/// Ranges PyTorch writes by itself, which other views already cover: the DataLoader (the
/// breakdown and its finding) and the optimizer hooks (the host-compute sub-causes).
const AUTOMATIC_RANGES: [&str; 5] = [
    "ProfilerStep#",
    "enumerate(DataLoader)#",
    "enumerate(DataPipe)#",
    "Optimizer.step#",
    "Optimizer.zero_grad#",
];

/// Whether a span is a region: a user range that is not a profiler step or one of
/// PyTorch's automatic ranges.
fn is_region(trace: &Trace, id: SpanId) -> bool {
    let s = trace.span(id);
    let named = || {
        let n = trace.name(id);
        !n.is_empty() && !AUTOMATIC_RANGES.iter().any(|a| n.starts_with(a))
    };
    match s.kind {
        SpanKind::UserAnnotation => !trace.is_step_span(id) && named(),
        // `with_modules=True` writes nn.Module ranges as Python frames.
        SpanKind::PythonFunction => trace.name(id).starts_with("nn.Module: "),
        _ => false,
    }
}

/// The regions of `window`, most host time first.
#[must_use]
pub fn region_table(trace: &Trace, window: Interval) -> Vec<RegionStat> {
    let within = |id: SpanId| {
        let t = trace.span(id).start_ns;
        window.start_ns <= t && t < window.end_ns
    };
    let mut by_name: HashMap<NameId, RegionStat> = HashMap::new();
    for (i, s) in trace.spans.iter().enumerate() {
        let id = SpanId::at(i);
        if !is_region(trace, id) || !within(id) {
            continue;
        }
        let outer: Vec<SpanId> = trace
            .ancestors(id)
            .filter(|&a| is_region(trace, a))
            .collect();
        // Inside a region of its own name: already counted there.
        if outer.iter().any(|&a| trace.span(a).name == s.name) {
            continue;
        }
        let depth = u32::try_from(outer.len()).unwrap_or(u32::MAX);
        let e = by_name.entry(s.name).or_insert_with(|| RegionStat {
            name: trace.names.get(s.name).to_string(),
            depth,
            calls: 0,
            host_ns: 0,
            gpu_ns: 0,
        });
        e.depth = e.depth.min(depth);
        e.calls += 1;
        e.host_ns += s.dur_ns;
    }
    // GPU time goes to every region name around the launching call, once per name.
    let mut names_seen: Vec<NameId> = Vec::new();
    for (i, s) in trace.spans.iter().enumerate() {
        if !matches!(
            s.kind,
            SpanKind::Kernel | SpanKind::Memcpy | SpanKind::Memset
        ) {
            continue;
        }
        let Some(launch) = trace.launch_of(SpanId::at(i)) else {
            continue;
        };
        names_seen.clear();
        for a in trace.ancestors(launch) {
            if !is_region(trace, a) || !within(a) {
                continue;
            }
            let name = trace.span(a).name;
            if names_seen.contains(&name) {
                continue;
            }
            names_seen.push(name);
            if let Some(e) = by_name.get_mut(&name) {
                e.gpu_ns += s.dur_ns;
            }
        }
    }
    let mut regions: Vec<RegionStat> = by_name.into_values().collect();
    regions.sort_by(|a, b| {
        b.host_ns
            .cmp(&a.host_ns)
            .then(b.gpu_ns.cmp(&a.gpu_ns))
            .then_with(|| a.name.cmp(&b.name))
    });
    regions
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detectors::testing::span_us;
    use tracelens_model::{LaneKey, TraceBuilder};

    #[test]
    fn regions_nest_count_once_and_get_the_gpu_work_launched_inside() {
        let mut b = TraceBuilder::new();
        let cpu = b.lane(LaneKey::Cpu {
            pid: tracelens_model::Ident::Num(1),
            tid: tracelens_model::Ident::Num(1),
        });
        let gpu = b.lane(LaneKey::Gpu {
            device: 0,
            stream: 7,
        });
        span_us(
            &mut b,
            SpanKind::UserAnnotation,
            cpu,
            "ProfilerStep#1",
            (0, 1000),
            None,
        );
        span_us(
            &mut b,
            SpanKind::UserAnnotation,
            cpu,
            "## forward ##",
            (10, 500),
            None,
        );
        // The same name inside itself: one call.
        span_us(
            &mut b,
            SpanKind::UserAnnotation,
            cpu,
            "## forward ##",
            (20, 100),
            None,
        );
        span_us(
            &mut b,
            SpanKind::UserAnnotation,
            cpu,
            "attention",
            (200, 100),
            None,
        );
        span_us(
            &mut b,
            SpanKind::Runtime,
            cpu,
            "cudaLaunchKernel",
            (210, 5),
            Some(1),
        );
        span_us(&mut b, SpanKind::Kernel, gpu, "k", (220, 40), Some(1));
        span_us(
            &mut b,
            SpanKind::UserAnnotation,
            cpu,
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
            (600, 100),
            None,
        );
        let t = b.finish(tracelens_model::SourceInfo::default());
        let regions = region_table(&t, Interval::new(0, 1_000_000));
        let names: Vec<(&str, u32, u64, TimeNs, TimeNs)> = regions
            .iter()
            .map(|r| (r.name.as_str(), r.depth, r.calls, r.host_ns, r.gpu_ns))
            .collect();
        assert_eq!(
            names,
            vec![
                ("## forward ##", 0, 1, 500_000, 40_000),
                ("attention", 1, 1, 100_000, 40_000),
            ]
        );
    }
}
