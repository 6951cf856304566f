//! Unified-memory migrations: managed pages the driver moves on a fault, when the host or a
//! kernel touches memory that lives on the other side. They show as copies no API call
//! launched, and the GPU idle that ends in one has no launch to blame
//! ([`UnattributedReason::UnifiedMemory`]); this finding names them, by direction, and says
//! whether the program already prefetches.

use super::{plural, Context, Detector, Input};
use crate::attribute::idle::UnattributedReason;
use crate::diagnose::finding::{Confidence, EvidenceValue, Finding, WinKind};
use crate::finding_kind::FindingKind;
use crate::measure::environment::{Dialect, PythonLibrary};
use tracelens_model::{format_ms, CopyDirection, LaneKey, MigrationCause, SpanKind, TimeNs};

/// Fewer migrations than this are a detail.
pub const MIN_MIGRATIONS: u64 = 10;

/// Managed memory migrating on faults.
pub struct UnifiedMemory;

/// The migrations of one direction.
#[derive(Clone, Copy, Default)]
struct Moved {
    count: u64,
    bytes: u64,
    gpu_ns: TimeNs,
}

impl Detector for UnifiedMemory {
    fn name(&self) -> &'static str {
        "unified_memory"
    }

    fn kind(&self) -> FindingKind {
        FindingKind::UnifiedMemory
    }

    fn reads(&self) -> &'static [Input] {
        &[Input::Idle, Input::Framework]
    }

    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let Some(idle) = cx.idle() else {
            return Vec::new();
        };
        let trace = cx.trace;
        // Migrations the program asked for (its prefetches) are not faults: counted apart.
        let (mut to_device, mut to_host, mut prefetched) =
            (Moved::default(), Moved::default(), Moved::default());
        for lane in trace.gpu_lanes() {
            if !matches!(trace.lane(lane).key, LaneKey::Gpu { device, .. } if device == idle.device)
            {
                continue;
            }
            for id in trace.lane_span_ids(lane) {
                let s = trace.span(id);
                if s.kind != SpanKind::Memcpy || !trace.is_migration(id) {
                    continue;
                }
                let Some(iv) = s.interval().clip(cx.window.interval) else {
                    continue;
                };
                let info = trace.copy_info(id);
                let requested = info
                    .and_then(|c| c.migration)
                    .is_some_and(MigrationCause::requested);
                let moved = match info.map(|c| c.direction) {
                    _ if requested => &mut prefetched,
                    Some(CopyDirection::DtoH) => &mut to_host,
                    _ => &mut to_device,
                };
                moved.count += 1;
                moved.bytes += info.and_then(|c| c.bytes).unwrap_or(0);
                moved.gpu_ns += iv.dur_ns();
            }
        }
        let count = to_device.count + to_host.count;
        let waiting_ns = idle
            .unattributed_by_reason
            .get(&UnattributedReason::UnifiedMemory)
            .copied()
            .unwrap_or(0);
        let win = cx.win(waiting_ns);
        if count < MIN_MIGRATIONS || win.percent < super::MIN_FINDING_PERCENT {
            return Vec::new();
        }
        let prefetches = trace
            .spans
            .iter()
            .filter(|s| s.kind.is_api_call())
            .filter(|s| crate::vocabulary::api::is_prefetch(trace.names.get(s.name)))
            .count() as u64;
        let mut f = cx.finding(FindingKind::UnifiedMemory, WinKind::GpuIdle, &win);
        let mb = |b: u64| b as f64 / 1e6;
        f.title = format!(
            "Managed memory moves on page faults: {} ({:.1} MB to the GPU, {:.1} MB back to the host); the GPU idles {} {} ({:.1} %) in gaps that end in a migration",
            plural(count, "unified-memory migration"),
            mb(to_device.bytes),
            mb(to_host.bytes),
            format_ms(win.per_step_ns),
            cx.per(),
            win.percent
        );
        f.win_basis = "GPU idle in gaps that end in a unified-memory migration (no launch behind it: the host or a kernel touched pages that live on the other side), at most what prefetching or explicit copies recover (upper bound)".into();
        f.evidence.add_occurrences("migrations", count);
        f.evidence
            .add("to the GPU", EvidenceValue::Count(to_device.count));
        f.evidence
            .add("bytes to the GPU", EvidenceValue::Bytes(to_device.bytes));
        f.evidence
            .add("back to the host", EvidenceValue::Count(to_host.count));
        f.evidence.add(
            "bytes back to the host",
            EvidenceValue::Bytes(to_host.bytes),
        );
        f.evidence.add(
            "GPU time migrating",
            EvidenceValue::DurationNs(to_device.gpu_ns + to_host.gpu_ns),
        );
        f.evidence
            .add("prefetch calls", EvidenceValue::Count(prefetches));
        f.evidence.add(
            "prefetched migrations (requested, not faults)",
            EvidenceValue::Count(prefetched.count),
        );
        f.evidence
            .add("bytes prefetched", EvidenceValue::Bytes(prefetched.bytes));
        (f.fix, f.snippet) = migration_fix(
            cx.framework().dialect(),
            prefetches,
            Faults {
                to_device: to_device.count > 0,
                to_host: to_host.count > 0,
            },
        );
        f.advice = "Managed memory lives where it was last touched: a kernel that touches pages on the host, or host code that reads pages on the GPU, stalls on a fault while the driver moves them a few kilobytes at a time, far below the link's bandwidth.".into();
        f.confidence = Confidence::Medium;
        vec![f]
    }
}

/// Which directions pages moved in on faults.
#[derive(Clone, Copy)]
struct Faults {
    to_device: bool,
    to_host: bool,
}

/// (fix, snippet) for migrations, saying what the program already does.
fn migration_fix(dialect: Dialect, prefetches: u64, faults: Faults) -> (String, String) {
    // Pages reach the GPU by the program's prefetches, and fault only on the way back: the
    // fix is the prefetch back, not another one to the GPU.
    if !faults.to_device
        && faults.to_host
        && !matches!(
            dialect,
            Dialect::OpenAcc | Dialect::OpenMp | Dialect::Python(_)
        )
    {
        return (
            format!(
                "The program's prefetches ({}) bring the pages to the GPU; they fault only on the way back: prefetch them back to the host (cudaMemPrefetchAsync to cudaCpuDeviceId) before the host reads the results, or read the results on the GPU (verify there, copy back only what the host needs).",
                plural(prefetches.max(1), "prefetch call")
            ),
            "cudaMemPrefetchAsync(buf, bytes, cudaCpuDeviceId, stream); // before the host reads\ncudaStreamSynchronize(stream);".into(),
        );
    }
    let back = if faults.to_host {
        " and back to the host (cudaCpuDeviceId) before the host reads the results"
    } else {
        ""
    };
    // What the program already does comes first; the fix's first word is then lower-case.
    let lead = |fix: &str| {
        if prefetches > 0 {
            format!(
                "The program prefetches already ({}), yet pages still move on faults: {fix}",
                plural(prefetches, "prefetch call")
            )
        } else {
            crate::num::capitalized(fix)
        }
    };
    match dialect {
        Dialect::OpenAcc | Dialect::OpenMp => (
            lead("move the arrays explicitly instead of relying on managed memory: a data region (or enter/exit data) that copies them once, and updates only where the host reads them."),
            String::new(),
        ),
        Dialect::Python(PythonLibrary::CuPy) => (
            lead("when the arrays fit in GPU memory, go back to CuPy's default device memory pool instead of managed memory (cupy.cuda.set_allocator(cupy.get_default_memory_pool().malloc)); otherwise prefetch the arrays to the GPU before the kernels use them (cupy.cuda.runtime.memPrefetchAsync)."),
            "cupy.cuda.set_allocator(cupy.get_default_memory_pool().malloc)   # device memory, no page faults".into(),
        ),
        Dialect::Python(PythonLibrary::Numba) => (
            lead("when the arrays fit in GPU memory, allocate them with cuda.device_array / cuda.to_device instead of cuda.managed_array, and copy back explicitly what the host reads."),
            "d_x = cuda.to_device(x)   # instead of cuda.managed_array".into(),
        ),
        Dialect::Python(PythonLibrary::CuDf) => (
            lead("when the data fits in GPU memory, give RMM a device pool instead of managed memory (rmm.reinitialize(pool_allocator=True, managed_memory=False)); keep managed memory only to oversubscribe."),
            "rmm.reinitialize(pool_allocator=True, managed_memory=False)".into(),
        ),
        Dialect::PyTorch | Dialect::Neutral | Dialect::Python(PythonLibrary::Jax) => (
            lead(&format!("prefetch managed memory to the GPU before the kernels that use it{}, or allocate device memory and copy explicitly.", back.replace(" (cudaCpuDeviceId)", ""))),
            String::new(),
        ),
        _ => (
            lead(&format!("prefetch each managed buffer to the GPU before the kernels that use it (cudaMemPrefetchAsync on the kernels' stream){back}; or give hot buffers a preferred location (cudaMemAdvise), or use cudaMalloc with explicit cudaMemcpyAsync.")),
            "cudaMemPrefetchAsync(buf, bytes, device, stream);          // before the kernels\nkernel<<<grid, block, 0, stream>>>(buf);\ncudaMemPrefetchAsync(buf, bytes, cudaCpuDeviceId, stream); // before the host reads\ncudaStreamSynchronize(stream);".into(),
        ),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::testing::{findings_of, span_us};
    use super::*;
    use tracelens_model::{CopyInfo, MemoryKind, SourceInfo, SpanInput, Trace};

    /// Ten kernels, each after a gap of 400 µs that ends in a page migration (a copy of
    /// managed memory with no launch call), or in nothing without `migrations`.
    pub(crate) fn loop_with_migrations(migrations: bool) -> Trace {
        let (mut b, cpu, gpu) = super::super::testing::thread_and_stream();
        let detail = b.add_copy(CopyInfo {
            direction: CopyDirection::HtoD,
            src: MemoryKind::Managed,
            dst: MemoryKind::Managed,
            bytes: Some(65_536),
            migration: Some(tracelens_model::MigrationCause::PageFault),
            peer: None,
        });
        let name = b.intern("Memcpy Unified HtoD (Managed -> Managed)");
        for i in 0..10u64 {
            let t = i.cast_signed() * 1_000;
            if migrations {
                b.add_span(SpanInput {
                    kind: SpanKind::Memcpy,
                    lane: gpu,
                    start_ns: (t + 400) * 1_000,
                    dur_ns: 20_000,
                    name,
                    correlation: None,
                    external_id: None,
                    detail,
                });
            }
            span_us(
                &mut b,
                SpanKind::Runtime,
                cpu,
                "cudaLaunchKernel",
                (t + 410, 5),
                Some(i + 1),
            );
            span_us(
                &mut b,
                SpanKind::Kernel,
                gpu,
                "k",
                (t + 430, 570),
                Some(i + 1),
            );
        }
        b.finish(SourceInfo::default())
    }

    #[test]
    fn migrations_that_end_idle_gaps_are_reported_and_their_twin_without_is_not() {
        let found = findings_of(&UnifiedMemory, &loop_with_migrations(true));
        assert_eq!(found.len(), 1, "{found:?}");
        let f = &found[0];
        assert!(
            f.title.contains(": 10 unified-memory migrations ("),
            "{}",
            f.title
        );
        assert!(f.fix.contains("Prefetch"), "{}", f.fix);
        assert!(f.estimated_win_percent > 0.0 && f.estimated_win_percent <= 100.0);
        assert!(findings_of(&UnifiedMemory, &loop_with_migrations(false)).is_empty());
    }
}
