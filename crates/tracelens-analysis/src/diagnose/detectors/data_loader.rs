//! The GPU waits for the DataLoader: `enumerate(DataLoader)#…__next__` on the launching thread
//! during GPU idle.

use super::{Context, Detector, Input};
use crate::attribute::dataloader::IteratorKind;
use crate::attribute::idle::IdleCause;
use crate::diagnose::finding::{Confidence, EvidenceValue, Finding, WinKind};
use crate::finding_kind::FindingKind;
use crate::measure::environment::Dialect;
use tracelens_model::format_ms;

/// Share of step time in the DataLoader, or of GPU idle it causes, above which it is a finding
/// (tb_plugin's threshold for its DataLoader recommendation).
pub const DATA_LOADER_SHARE_PERCENT: f64 = 5.0;

/// The GPU waits for `enumerate(DataLoader)`.
pub struct DataLoaderStall;

impl Detector for DataLoaderStall {
    fn name(&self) -> &'static str {
        "data_loader"
    }

    fn kind(&self) -> FindingKind {
        FindingKind::DataLoaderStall
    }
    fn reads(&self) -> &'static [Input] {
        &[
            Input::Credit,
            Input::DataLoader,
            Input::Framework,
            Input::Idle,
        ]
    }

    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let dl = cx.dataloader();
        let win = cx.win(cx.credit().data_loader_ns);
        if win.total_ns == 0
            || (dl.share_percent < DATA_LOADER_SHARE_PERCENT
                && win.percent < DATA_LOADER_SHARE_PERCENT)
        {
            return Vec::new();
        }
        let single = dl.iterator == Some(IteratorKind::SingleProcess);
        let mut f = cx.finding(FindingKind::DataLoaderStall, WinKind::GpuIdle, &win);
        f.title = format!(
            "{:.0} % of {} the GPU waits for the DataLoader ({} {}){}",
            win.percent,
            cx.step_time(),
            format_ms(win.per_step_ns),
            cx.per(),
            if single {
                " on a single-process iterator (num_workers=0)"
            } else {
                ""
            }
        );
        let pytorch = cx.framework().dialect() == Dialect::PyTorch;
        (f.fix, f.advice) = if !pytorch {
            // The fetch ranges are PyTorch's own, so this is a PyTorch program unless a
            // model says otherwise; then the fix is said in no library's words.
            (
                "Prepare input batches ahead of the step in parallel workers (processes or threads), so the loop only picks up ready batches; start with 2-4 workers, at most the free physical cores.".into(),
                "Every batch is loaded and transformed on the thread that launches GPU work, while the GPU waits.".into(),
            )
        } else if single {
            (
                "Load batches in worker processes: DataLoader(..., num_workers=4, pin_memory=True, persistent_workers=True), with num_workers at most the free physical cores.".into(),
                "With num_workers=0 every batch is loaded and transformed on the training thread while the GPU waits. Worker processes prepare the next batches in parallel: start at 2-4 workers and measure (more workers than physical cores slows everything), use pin_memory=True together with .to(device, non_blocking=True), persistent_workers=True and prefetch_factor. Keep OMP_NUM_THREADS=1 / MKL_NUM_THREADS=1 in workers (cv2/Albumentations threads multiply per worker).".into(),
            )
        } else {
            (
                "The loader already uses worker processes and they do not keep up: raise num_workers only while physical cores are free (each worker needs one), and otherwise make each sample cheaper (decode once and cache, lighter transforms, transforms on the GPU); a dataset that fits in GPU memory can be loaded onto the GPU once and batched there, with no loader in the loop.".into(),
                "The worker processes do not keep up with the GPU: raise num_workers (not beyond the physical cores), raise prefetch_factor, use persistent_workers=True, make per-sample transforms cheaper or move them to the GPU, and set OMP_NUM_THREADS=1 in workers.".into(),
            )
        };
        f.snippet = if pytorch && !single {
            "# a dataset that fits in GPU memory: load it once, batch it on the GPU\nX, Y = X.to(\"cuda\"), Y.to(\"cuda\")\nfor idx in torch.randperm(len(X), device=\"cuda\").split(B):\n    x, y = X[idx], Y[idx]".into()
        } else if pytorch {
            "loader = DataLoader(ds, batch_size=B, num_workers=4, pin_memory=True,\n                    persistent_workers=True, prefetch_factor=4)\nfor x, y in loader:\n    x = x.to(device, non_blocking=True)\n    y = y.to(device, non_blocking=True)".into()
        } else {
            String::new()
        };
        f.win_basis = "GPU idle while the launching thread waited in DataLoader __next__ (upper bound of the recoverable time)".into();
        f.evidence.add_occurrences("__next__ calls", dl.calls);
        f.evidence
            .add("time in __next__", EvidenceValue::DurationNs(dl.next_ns));
        f.evidence.add(
            "__next__ share of step time",
            EvidenceValue::Percent(dl.share_percent),
        );
        if let Some(d) = cx.idle() {
            let mut segs: Vec<_> = d
                .segments()
                .filter(|s| s.cause == IdleCause::DataLoading)
                .collect();
            segs.sort_by_key(|s| std::cmp::Reverse(s.interval.dur_ns()));
            f.evidence.time_ranges = segs.iter().take(5).map(|s| s.interval).collect();
        }
        f.confidence = Confidence::High;
        f.what_if = Some(crate::predict::what_if::WhatIf::NoDataLoaderWait {
            workers_added: single,
        });
        vec![f]
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{findings_of, scenario};
    use super::*;

    #[test]
    fn num_workers_0_stalls_the_gpu_and_fast_workers_do_not() {
        let f = findings_of(&DataLoaderStall, &scenario("dataloader_single_process"));
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(f[0].title.contains("(num_workers=0)"), "{}", f[0].title);
        assert!(f[0].fix.contains("num_workers=4"), "{}", f[0].fix);
        assert!(f[0].estimated_win_percent > DATA_LOADER_SHARE_PERCENT);

        let twin = findings_of(&DataLoaderStall, &scenario("dataloader_multi_process_fast"));
        assert!(twin.is_empty(), "{twin:#?}");
    }

    /// The same slow loader on worker processes: not told to add workers it has, but that
    /// they do not keep up, with cheaper samples and a GPU-resident dataset as the ways out.
    #[test]
    fn slow_worker_processes_are_told_they_do_not_keep_up() {
        let text = super::super::testing::scenario_text("dataloader_single_process").replace(
            "_SingleProcessDataLoaderIter",
            "_MultiProcessingDataLoaderIter",
        );
        let trace = tracelens_kineto::import_reader(
            text.as_bytes(),
            std::path::Path::new("dataloader_multi_process_slow.json"),
            text.len() as u64,
            None,
        )
        .unwrap();
        let f = findings_of(&DataLoaderStall, &trace);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(!f[0].title.contains("num_workers=0"), "{}", f[0].title);
        assert!(
            f[0].fix.contains("already uses worker processes")
                && f[0].fix.contains("loaded onto the GPU once"),
            "{}",
            f[0].fix
        );
        assert!(f[0].snippet.contains("torch.randperm"), "{}", f[0].snippet);
    }
}
