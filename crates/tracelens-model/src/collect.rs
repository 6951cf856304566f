//! What a sorted trace is made of, collected once: its profiler steps (from the names the
//! importer marked) and its GPU devices with their streams, processes and names.

use crate::lane::{Ident, LaneId, LaneKey};
use crate::span::SpanKind;
use crate::time::Interval;
use crate::trace::{Device, Step, Trace};
use rustc_hash::FxHashSet;
use std::collections::BTreeMap;

/// The `N` of a PyTorch `ProfilerStep#N` name: how importers of PyTorch traces recognise the
/// names they [`TraceBuilder::mark_step`].
#[must_use]
pub fn profiler_step_number(name: &str) -> Option<i64> {
    name.strip_prefix("ProfilerStep#")?.trim().parse().ok()
}

pub(crate) fn collect_steps(trace: &Trace) -> Vec<Step> {
    let mut steps: BTreeMap<i64, Step> = BTreeMap::new();
    for s in &trace.spans {
        let side_gpu = match s.kind {
            SpanKind::UserAnnotation | SpanKind::CpuOp => false,
            SpanKind::GpuUserAnnotation => true,
            _ => continue,
        };
        let Some(n) = trace.step_of_name(s.name) else {
            continue;
        };
        let step = steps.entry(n).or_insert(Step {
            number: n,
            cpu: None,
            gpu: None,
        });
        let slot = if side_gpu {
            &mut step.gpu
        } else {
            &mut step.cpu
        };
        let iv: Interval = s.interval();
        *slot = Some(slot.map_or(iv, |prev| prev.hull(iv)));
    }
    steps.into_values().collect()
}

pub(crate) fn collect_devices(trace: &Trace) -> Vec<Device> {
    let mut by_index: BTreeMap<i64, Device> = BTreeMap::new();
    for (i, lane) in trace.lanes.iter().enumerate() {
        if let LaneKey::Gpu { device, stream } = lane.key {
            let d = by_index.entry(device).or_insert(Device {
                index: device,
                name: None,
                lanes: Vec::new(),
                streams: Vec::new(),
                processes: Vec::new(),
            });
            d.lanes.push(LaneId::at(i));
            // Streams and processes come from GPU work: SYNCHRONIZATION rows of one process
            // can carry another device's id (seen in a 2-process Nsight Systems export).
            let has_work = trace.spans[lane.spans.start as usize..lane.spans.end as usize]
                .iter()
                .any(|s| s.kind.is_gpu_work());
            if has_work {
                d.streams.push(stream);
            }
            // Sets, not lists: a crafted trace may launch from 100k threads and processes.
            let mut seen_lanes: FxHashSet<LaneId> = FxHashSet::default();
            let mut processes: std::collections::BTreeSet<i64> =
                d.processes.iter().copied().collect();
            for s in lane.spans.clone() {
                if !trace.spans[s as usize].kind.is_gpu_work() {
                    continue;
                }
                let Some(api) = trace.launch_of(crate::span::SpanId(s)) else {
                    continue;
                };
                let api_lane = trace.span(api).lane;
                if !seen_lanes.insert(api_lane) {
                    continue;
                }
                if let LaneKey::Cpu {
                    pid: Ident::Num(pid),
                    ..
                } = trace.lane(api_lane).key
                {
                    processes.insert(pid);
                }
            }
            d.processes = processes.into_iter().collect();
        }
    }
    for d in by_index.values_mut() {
        d.processes.sort_unstable();
    }
    let props = &trace.metadata.device_properties;
    for d in by_index.values_mut() {
        let matched = props
            .iter()
            .find(|p| p.id == d.index)
            .or_else(|| (props.len() == 1 && by_index_len_is_one(trace)).then(|| &props[0]));
        d.name = matched.map(|p| p.name.clone()).filter(|n| !n.is_empty());
    }
    by_index.into_values().collect()
}

/// ROCm numbers the traced GPU by its system index (2, 9) while `deviceProperties` says id 0:
/// with one device and one property entry, they are the same GPU.
fn by_index_len_is_one(trace: &Trace) -> bool {
    let mut devices = trace.lanes.iter().filter_map(|l| l.key.device());
    match devices.next() {
        Some(first) => devices.all(|d| d == first),
        None => false,
    }
}
