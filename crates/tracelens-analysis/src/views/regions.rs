//! Time by region: the ranges model authors mark (`record_function`, NVTX ranges, Lightning's
//! and HF's annotations, `nn.Module` ranges with `with_modules=True`), each with its host time
//! and the GPU time of the work launched inside it, nested as the trace nests them.
//!
//! Work replayed from CUDA/HIP graphs counts in the scope it had at capture
//! ([`crate::views::replayed`]): an instance per scope per graph launch, GPU time only.
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

/// Whether a span of this kind and name is a region: a user range that is not a profiler
/// step or one of PyTorch's automatic ranges, or an `nn.Module` frame.
fn is_region_name(kind: SpanKind, name: &str) -> bool {
    match kind {
        SpanKind::UserAnnotation => {
            !name.is_empty() && !crate::vocabulary::ops::is_automatic_range(name)
        }
        // `with_modules=True` writes nn.Module ranges as Python frames.
        SpanKind::PythonFunction => crate::vocabulary::ops::is_module_frame(name),
        _ => false,
    }
}

/// "No span" in the index arrays below.
const NONE: u32 = u32::MAX;

/// A span index as stored in the arrays below.
fn p_index(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(NONE)
}

/// The regions of `window`, most host time first.
#[must_use]
pub fn region_table(trace: &Trace, window: Interval) -> Vec<RegionStat> {
    let n = trace.spans.len();
    let annotation_region: Vec<bool> = (0..trace.names.len())
        .map(|k| is_region_name(SpanKind::UserAnnotation, trace.names.get(NameId::at(k))))
        .collect();
    let module_region: Vec<bool> = (0..trace.names.len())
        .map(|k| is_region_name(SpanKind::PythonFunction, trace.names.get(NameId::at(k))))
        .collect();
    let region: Vec<bool> = (0..n)
        .map(|i| {
            let s = &trace.spans[i];
            let by_name = match s.kind {
                SpanKind::UserAnnotation => annotation_region[s.name.0 as usize],
                SpanKind::PythonFunction => module_region[s.name.0 as usize],
                _ => false,
            };
            by_name && !trace.is_step_span(SpanId::at(i))
        })
        .collect();
    // The nearest enclosing region of every span, and how deep each region sits: a parent
    // sorts before its children, so one pass in index order.
    let mut outer = vec![NONE; n];
    let mut depth: HashMap<u32, u32> = HashMap::new();
    for i in 0..n {
        let Some(p) = trace.parent(SpanId::at(i)) else {
            continue;
        };
        let pi = p.0 as usize;
        if pi >= i {
            continue;
        }
        outer[i] = if region[pi] { p.0 } else { outer[pi] };
        if region[i] && outer[i] != NONE {
            let d = depth.get(&outer[i]).copied().unwrap_or(0) + 1;
            depth.insert(p_index(i), d);
        }
    }
    // GPU time launched directly in each region, then added up into the regions around it.
    let mut gpu: HashMap<u32, TimeNs> = HashMap::new();
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
        let l = launch.0 as usize;
        let r = if region[l] { launch.0 } else { outer[l] };
        if r != NONE {
            *gpu.entry(r).or_default() += s.dur_ns;
        }
    }
    let mut instances: Vec<u32> = (0..n).filter(|&i| region[i]).map(p_index).collect();
    instances.reverse();
    for &i in &instances {
        let o = outer[i as usize];
        if o != NONE && o < i {
            let own = gpu.get(&i).copied().unwrap_or(0);
            *gpu.entry(o).or_default() += own;
        }
    }
    // A region inside one of its own name is counted in the outer one.
    let nested_in_own_name = |i: usize| {
        let mut o = outer[i];
        while o != NONE {
            if trace.spans[o as usize].name == trace.spans[i].name {
                return true;
            }
            o = outer[o as usize];
        }
        false
    };
    let mut by_name: HashMap<NameId, RegionStat> = HashMap::new();
    for (i, s) in trace.spans.iter().enumerate() {
        let in_window = window.start_ns <= s.start_ns && s.start_ns < window.end_ns;
        if !(region[i] && in_window) || nested_in_own_name(i) {
            continue;
        }
        let d = depth.get(&p_index(i)).copied().unwrap_or(0);
        let e = by_name.entry(s.name).or_insert_with(|| RegionStat {
            name: trace.names.get(s.name).to_string(),
            depth: d,
            calls: 0,
            host_ns: 0,
            gpu_ns: 0,
        });
        e.depth = e.depth.min(d);
        e.calls += 1;
        e.host_ns += s.dur_ns;
        e.gpu_ns += gpu.get(&p_index(i)).copied().unwrap_or(0);
    }
    // Scopes of work replayed from CUDA/HIP graphs: GPU time, no host time.
    for (scope, calls, gpu_ns) in crate::views::replayed::replayed_scopes(trace, window) {
        let e = by_name.entry(scope).or_insert_with(|| RegionStat {
            name: trace.names.get(scope).to_string(),
            depth: 0,
            calls: 0,
            host_ns: 0,
            gpu_ns: 0,
        });
        e.calls += calls;
        e.gpu_ns += gpu_ns;
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
    use crate::diagnose::detectors::testing::span_us;
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
