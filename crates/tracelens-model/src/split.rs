//! One capture of several processes (an Nsight Systems export of `torchrun` on one node) split
//! into one trace per process: the ranks of a job.
//!
//! A process is a rank when it alone launches work on its GPUs: every device with GPU work is
//! launched on by exactly one process, and at least two processes own a device. Each rank's
//! trace holds that process's threads and its devices' streams, rebuilt through the
//! [`TraceBuilder`] so steps, links and side tables are its own.

use crate::builder::{SpanInput, TraceBuilder};
use crate::collective::CollectiveKey;
use crate::lane::{Ident, LaneId, LaneKey};
use crate::span::{SpanKind, NO_DETAIL};
use crate::trace::Trace;

/// A process that is a rank, and the devices it alone launches on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankProcess {
    /// Its process id.
    pub pid: i64,
    /// Its devices.
    pub devices: Vec<i64>,
}

impl Trace {
    /// The processes that are ranks, by process id, when the trace holds at least two; empty
    /// for a one-process trace or when processes share a device (one job's threads, not ranks).
    #[must_use]
    pub fn rank_processes(&self) -> Vec<RankProcess> {
        let mut ranks: Vec<RankProcess> = Vec::new();
        for d in &self.devices {
            match d.processes.as_slice() {
                [] => {}
                [pid] => match ranks.iter_mut().find(|r| r.pid == *pid) {
                    Some(r) => r.devices.push(d.index),
                    None => ranks.push(RankProcess {
                        pid: *pid,
                        devices: vec![d.index],
                    }),
                },
                _ => return Vec::new(),
            }
        }
        if ranks.len() < 2 {
            return Vec::new();
        }
        ranks.sort_by_key(|r| r.pid);
        ranks
    }

    /// The trace of one rank process: its threads, its devices' streams, their side tables,
    /// memory samples and the capture's metadata; `source.path` gains `#process PID`.
    #[must_use]
    pub fn only_process(&self, rank: &RankProcess) -> Trace {
        let mut b = TraceBuilder::new();
        b.metadata = self.metadata.clone();
        let mut lane_map: Vec<Option<LaneId>> = vec![None; self.lanes.len()];
        for (i, lane) in self.lanes.iter().enumerate() {
            let keep = match lane.key {
                LaneKey::Cpu { pid, .. } => pid == Ident::Num(rank.pid),
                LaneKey::Gpu { device, .. } => rank.devices.contains(&device),
            };
            if !keep {
                continue;
            }
            let ident = |b: &mut TraceBuilder, id: Ident| match id {
                Ident::Text(n) => Ident::Text(b.intern(self.names.get(n))),
                num => num,
            };
            let key = match lane.key {
                LaneKey::Cpu { pid, tid } => {
                    let (pid, tid) = (ident(&mut b, pid), ident(&mut b, tid));
                    if let Some(n) = lane.name {
                        b.name_thread(pid, tid, self.names.get(n));
                    }
                    if let Some(n) = lane.process_name {
                        b.name_process(pid, self.names.get(n));
                    }
                    LaneKey::Cpu { pid, tid }
                }
                LaneKey::Gpu { device, stream } => {
                    if let Some(n) = lane.name {
                        b.name_stream(device, stream, self.names.get(n));
                    }
                    lane.key
                }
            };
            let new_lane = b.lane(key);
            lane_map[i] = Some(new_lane);
            for id in self.lane_span_ids(LaneId(crate::names::table_index(i))) {
                let s = self.span(id);
                let name = b.intern(self.names.get(s.name));
                if let Some(step) = self.step_of_name(s.name) {
                    b.mark_step(name, step);
                }
                let detail = match s.kind {
                    _ if s.detail == NO_DETAIL => NO_DETAIL,
                    SpanKind::Memcpy | SpanKind::Memset | SpanKind::Runtime | SpanKind::Driver => {
                        self.copy_info(id).map_or(NO_DETAIL, |c| b.add_copy(*c))
                    }
                    SpanKind::CpuOp | SpanKind::UserAnnotation => {
                        self.op_detail(id).map_or(NO_DETAIL, |d| {
                            let text = |n: Option<crate::NameId>| n.map(|n| self.names.get(n));
                            b.add_op_detail(
                                text(d.call_stack),
                                text(d.input_dims),
                                text(d.input_types),
                                text(d.concrete_inputs),
                            )
                        })
                    }
                    SpanKind::Kernel => self
                        .kernel_launch(id)
                        .map_or(NO_DETAIL, |k| b.add_kernel_launch(*k)),
                    _ => NO_DETAIL,
                };
                let ids = self
                    .span_ids
                    .get(id.0 as usize)
                    .copied()
                    .unwrap_or_default();
                if let (Some(args), Some(c)) = (self.collective_args(id), ids.correlation()) {
                    b.add_collective_args(CollectiveKey::Kernel(c), args.clone());
                }
                b.add_span(SpanInput {
                    kind: s.kind,
                    lane: new_lane,
                    start_ns: s.start_ns,
                    dur_ns: s.dur_ns,
                    name,
                    correlation: ids.correlation(),
                    external_id: ids.external_id(),
                    detail,
                });
            }
        }
        for m in &self.memory {
            if let Some(lane) = lane_map[m.lane.0 as usize] {
                let call_stack = m.call_stack.map(|n| b.intern(self.names.get(n)));
                b.add_memory(crate::memory::MemorySample {
                    lane,
                    call_stack,
                    ..*m
                });
            }
        }
        for w in &self.warnings {
            b.warn(w.kind, w.message.clone(), w.count);
        }
        let mut source = self.source.clone();
        source.path = format!("{}#process {}", source.path, rank.pid);
        b.finish(source)
    }
}

#[cfg(test)]
mod tests {
    use crate::builder::{SpanInput, TraceBuilder};
    use crate::lane::{Ident, LaneKey};
    use crate::source::SourceInfo;
    use crate::span::{SpanId, SpanKind, NO_DETAIL};
    use crate::trace::Trace;

    /// Each process launches one kernel on its own device: `processes` of them.
    fn capture(processes: i64) -> Trace {
        let mut b = TraceBuilder::new();
        for p in 0..processes {
            let cpu = b.lane(LaneKey::Cpu {
                pid: Ident::Num(100 + p),
                tid: Ident::Num(1),
            });
            let gpu = b.lane(LaneKey::Gpu {
                device: p,
                stream: 7,
            });
            let launch = b.intern("cudaLaunchKernel");
            let kernel = b.intern("gemm");
            let correlation = Some(u64::try_from(p).unwrap() + 1);
            for (kind, lane, name, start_ns) in [
                (SpanKind::Runtime, cpu, launch, 1_000),
                (SpanKind::Kernel, gpu, kernel, 5_000),
            ] {
                b.add_span(SpanInput {
                    kind,
                    lane,
                    start_ns,
                    dur_ns: 2_000,
                    name,
                    correlation,
                    external_id: None,
                    detail: NO_DETAIL,
                });
            }
        }
        b.finish(SourceInfo::default())
    }

    fn kernel_is_linked(t: &Trace) -> bool {
        let kernel = (0..t.spans.len())
            .map(SpanId::at)
            .find(|&id| t.span(id).kind == SpanKind::Kernel)
            .unwrap();
        t.launch_of(kernel)
            .is_some_and(|l| t.span(l).kind == SpanKind::Runtime)
    }

    #[test]
    fn each_rank_of_a_capture_keeps_its_launch_links_and_a_single_process_drops_the_ids() {
        let one = capture(1);
        assert!(one.rank_processes().is_empty());
        assert!(one.span_ids.is_empty(), "ids kept without ranks to split");
        assert!(kernel_is_linked(&one));

        let two = capture(2);
        let ranks = two.rank_processes();
        assert_eq!(ranks.len(), 2);
        assert_eq!(two.span_ids.len(), two.spans.len());
        for rank in &ranks {
            let t = two.only_process(rank);
            assert_eq!(t.spans.len(), 2);
            assert!(
                kernel_is_linked(&t),
                "rank {} lost its launch link",
                rank.pid
            );
            assert!(t.span_ids.is_empty());
        }
    }
}
