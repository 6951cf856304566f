//! CPU oversubscription: the launching thread was descheduled while runnable (Nsight Systems
//! scheduling data) while the GPU waited.

use super::{Context, Detector, Input, MIN_FINDING_PERCENT};
use crate::diagnose::finding::{EvidenceValue, Finding, WinKind};
use crate::finding_kind::FindingKind;
use tracelens_model::format_ms;

/// The launching thread is descheduled while runnable during exposed CPU time.
pub struct CpuOversubscription;

impl Detector for CpuOversubscription {
    fn name(&self) -> &'static str {
        "cpu_oversubscription"
    }

    fn kind(&self) -> FindingKind {
        FindingKind::CpuOversubscription
    }
    fn reads(&self) -> &'static [Input] {
        &[Input::Credit, Input::Framework]
    }

    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let win = cx.win(cx.credit().oversubscription_ns);
        if win.total_ns == 0 || win.percent < MIN_FINDING_PERCENT {
            return Vec::new();
        }
        let mut f = cx.finding(FindingKind::CpuOversubscription, WinKind::GpuIdle, &win);
        f.title = format!(
            "The launching thread was off the CPU, runnable but not running, {} {} while the GPU waited ({:.1} %): CPU oversubscription",
            format_ms(win.per_step_ns),
            cx.per(),
            win.percent
        );
        f.win_basis = "GPU idle during which the launching thread was descheduled outside any traced OS wait (upper bound)".into();
        f.evidence
            .add("descheduled", EvidenceValue::DurationNs(win.total_ns));
        if !cx.framework().pytorch() {
            (f.fix, f.advice, f.snippet) =
                crate::diagnose::advice::thread_pools(cx.framework().dialect()).parts();
            return vec![f];
        }
        f.fix = "Give the trainer its cores: set OMP_NUM_THREADS / torch.set_num_threads per process and keep num_workers at or below the free physical cores.".into();
        f.advice = "More threads want the cores than there are: keep DataLoader num_workers at or below the physical cores left for the trainer, set OMP_NUM_THREADS / MKL_NUM_THREADS (or torch.set_num_threads) per process, pin processes with taskset or numactl, and check for other jobs on the node.".into();
        f.snippet = "export OMP_NUM_THREADS=4      # per training process
torch.set_num_threads(4)
loader = DataLoader(ds, num_workers=min(4, os.cpu_count() // nproc_per_node - 1))"
            .into();
        vec![f]
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::testing::findings_of;
    use super::*;
    use tracelens_model::{Ident, LaneKey, SourceInfo, SpanInput, SpanKind, Trace, TraceBuilder};

    /// Five launches of a 1 ms kernel every 4 ms; between them the launching thread is off
    /// the CPU for 2 ms, inside a traced OS wait when `waiting` (the fixed twin), else
    /// runnable but not running when the capture records why threads leave the CPU
    /// (`states`).
    pub(in crate::diagnose::detectors) fn descheduled(waiting: bool, states: bool) -> Trace {
        let mut b = TraceBuilder::new();
        let cpu = b.lane(LaneKey::Cpu {
            pid: Ident::Num(5),
            tid: Ident::Num(5),
        });
        let gpu = b.lane(LaneKey::Gpu {
            device: 0,
            stream: 7,
        });
        let span = |b: &mut TraceBuilder, kind, lane, name: &str, (start, end), corr| {
            let name = b.intern(name);
            b.add_span(SpanInput {
                kind,
                lane,
                start_ns: start,
                dur_ns: end - start,
                name,
                correlation: corr,
                external_id: None,
                detail: 0,
            });
        };
        let mut t = 1_000_000;
        for i in 0..5 {
            let corr = Some(i + 1);
            span(
                &mut b,
                SpanKind::Runtime,
                cpu,
                "cudaLaunchKernel",
                (t, t + 5_000),
                corr,
            );
            span(
                &mut b,
                SpanKind::Kernel,
                gpu,
                "k",
                (t + 10_000, t + 1_010_000),
                corr,
            );
            let work = (t + 20_000, t + 3_020_000);
            span(
                &mut b,
                SpanKind::UserAnnotation,
                cpu,
                "python bookkeeping",
                work,
                None,
            );
            span(
                &mut b,
                SpanKind::OffCpu,
                cpu,
                "off CPU",
                (t + 1_500_000, t + 3_500_000),
                None,
            );
            if waiting {
                let wait = (t + 1_490_000, t + 3_510_000);
                span(
                    &mut b,
                    SpanKind::OsRuntime,
                    cpu,
                    "pthread_cond_wait",
                    wait,
                    None,
                );
            }
            t += 4_000_000;
        }
        b.finish(SourceInfo {
            records_thread_states: states,
            ..SourceInfo::default()
        })
    }

    #[test]
    fn a_runnable_launching_thread_off_the_cpu_is_found_and_a_waiting_one_is_not() {
        let f = findings_of(&CpuOversubscription, &descheduled(false, true));
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(
            f[0].title.contains("runnable but not running"),
            "{}",
            f[0].title
        );

        let twin = findings_of(&CpuOversubscription, &descheduled(true, true));
        assert!(twin.is_empty(), "{twin:#?}");
    }

    #[test]
    fn without_thread_states_an_off_cpu_stretch_is_no_oversubscription_claim() {
        // The same switch-outs, from a capture that does not say whether the thread was
        // runnable (every export of the corpus): it may have been waiting, so no claim.
        let f = findings_of(&CpuOversubscription, &descheduled(false, false));
        assert!(f.is_empty(), "{f:#?}");
    }
}
