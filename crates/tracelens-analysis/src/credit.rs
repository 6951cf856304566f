//! Which finding owns each idle nanosecond: the idle segments of one device are credited to at
//! most one finding each, so the GPU-idle wins of all findings add up to at most the idle time.
//!
//! - `data_loading` → the DataLoader finding;
//! - `sync_drain` → the sync that drained the queue (already capped by the attribution at the
//!   time that sync blocked the host);
//! - `host_compute` and `launch_latency` inside a launch-bound stretch → the launch-bound
//!   finding (the CPU cannot issue kernels fast enough there, whatever it runs);
//! - other `host_compute` → CPU oversubscription for the part in which the launching thread
//!   was runnable but off the CPU, the host-compute finding for the rest;
//! - GPU-side waits (`cross_stream_wait`, `collective_wait`, `gpu_wait`) → the finding of that
//!   wait, when it is big enough to report;
//! - launch latency outside stretches, graph replays and unattributed time → no finding (the
//!   verdict reports them).

use crate::environment::Framework;
use crate::idle::{
    credit_host_ops, host_parts, name_host_ops, DeviceIdle, HostPart, HostTime, IdleCause,
};
use crate::threads::ThreadIndex;
use rustc_hash::FxHashMap;
use tracelens_model::{Interval, SpanId, TimeNs, Trace};

/// The idle time of one device, credited to findings.
#[derive(Clone, Debug, Default)]
pub struct IdleCredit {
    /// To the DataLoader finding.
    pub data_loader_ns: TimeNs,
    /// To each draining sync call.
    pub by_sync: FxHashMap<SpanId, TimeNs>,
    /// To the launch-bound finding.
    pub launch_bound_ns: TimeNs,
    /// To the host-compute finding.
    pub host_compute_ns: TimeNs,
    /// The CPU ops that ran in the host-compute finding's time, largest first.
    pub host_compute_ops: Vec<(String, TimeNs)>,
    /// The host-compute finding's time by sub-cause, largest first; sums to
    /// `host_compute_ns`.
    pub host_compute_parts: Vec<HostPart>,
    /// To the CPU-oversubscription finding.
    pub oversubscription_ns: TimeNs,
    /// To the GPU-side wait findings, by cause (cross-stream, collective, unexplained).
    pub gpu_waits: std::collections::BTreeMap<IdleCause, TimeNs>,
}

impl IdleCredit {
    /// Everything credited to some finding.
    #[must_use]
    pub fn total_ns(&self) -> TimeNs {
        self.data_loader_ns
            + self.by_sync.values().sum::<TimeNs>()
            + self.launch_bound_ns
            + self.host_compute_ns
            + self.oversubscription_ns
            + self.gpu_waits.values().sum::<TimeNs>()
    }
}

/// Credits the idle of `idle`; `stretches` are the device's launch-bound stretches, sorted by
/// start and disjoint.
#[must_use]
pub fn credit_idle(
    trace: &Trace,
    idle: &DeviceIdle,
    stretches: &[Interval],
    threads: &ThreadIndex,
    fw: &Framework,
) -> IdleCredit {
    let mut credit = IdleCredit::default();
    let mut host_ops = HostTime::default();
    for gap in &idle.gaps {
        let lane = gap.lane;
        for seg in idle.segments_of(gap) {
            let iv = seg.interval;
            match seg.cause {
                IdleCause::DataLoading => credit.data_loader_ns += iv.dur_ns(),
                IdleCause::SyncDrain => {
                    if let Some(s) = seg.sync {
                        *credit.by_sync.entry(s).or_default() += iv.dur_ns();
                    }
                }
                IdleCause::LaunchLatency => {
                    credit.launch_bound_ns += inside(stretches, iv);
                }
                IdleCause::HostCompute => {
                    credit.launch_bound_ns += inside(stretches, iv);
                    for piece in outside(stretches, iv) {
                        let off_cpu =
                            lane.map_or(0, |l| threads.lane(l).unexplained_off_cpu_within(piece));
                        credit.oversubscription_ns += off_cpu;
                        credit.host_compute_ns += piece.dur_ns() - off_cpu;
                        if let Some(l) = lane {
                            credit_host_ops(trace, l, piece, &mut host_ops);
                        }
                    }
                }
                cause if cause.is_gpu_side_wait() && cause != IdleCause::GraphReplay => {
                    *credit.gpu_waits.entry(cause).or_default() += iv.dur_ns();
                }
                _ => {}
            }
        }
    }
    credit.host_compute_ops = name_host_ops(trace, &host_ops, fw);
    credit.host_compute_parts = host_parts(trace, &host_ops, fw, credit.host_compute_ns);
    credit
}

/// The stretches that may overlap `iv`.
fn near(stretches: &[Interval], iv: Interval) -> &[Interval] {
    let from = stretches.partition_point(|s| s.end_ns <= iv.start_ns);
    let to = stretches.partition_point(|s| s.start_ns < iv.end_ns);
    &stretches[from..to.max(from)]
}

/// Time of `iv` inside the stretches.
fn inside(stretches: &[Interval], iv: Interval) -> TimeNs {
    near(stretches, iv)
        .iter()
        .filter_map(|s| s.clip(iv))
        .map(|c| c.dur_ns())
        .sum()
}

/// The pieces of `iv` outside the stretches, in order.
fn outside(stretches: &[Interval], iv: Interval) -> Vec<Interval> {
    let mut out = Vec::new();
    let mut cursor = iv.start_ns;
    for s in near(stretches, iv) {
        if s.start_ns > cursor {
            out.push(Interval::new(cursor, s.start_ns.min(iv.end_ns)));
        }
        cursor = cursor.max(s.end_ns);
    }
    if cursor < iv.end_ns {
        out.push(Interval::new(cursor, iv.end_ns));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_inside_and_outside_the_stretches_tile_the_interval() {
        let stretches = [Interval::new(10, 20), Interval::new(30, 40)];
        let iv = Interval::new(15, 35);
        assert_eq!(inside(&stretches, iv), 10);
        assert_eq!(outside(&stretches, iv), vec![Interval::new(20, 30)]);
        let all = Interval::new(0, 50);
        let out: TimeNs = outside(&stretches, all).iter().map(|p| p.dur_ns()).sum();
        assert_eq!(inside(&stretches, all) + out, 50);
        assert_eq!(outside(&[], iv), vec![iv]);
    }
}
