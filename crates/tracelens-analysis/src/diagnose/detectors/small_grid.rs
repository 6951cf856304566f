//! Kernels launched with fewer blocks than the device has multiprocessors: most of the GPU
//! sits empty while they run, whatever the utilization figure says (a kernel of one block, or
//! of one thread, keeps the GPU "busy"). Told from the launch configuration the trace
//! records and the device's multiprocessor count; without either there is no finding.

use super::{Context, Detector, Input};
use crate::diagnose::finding::{Confidence, EvidenceValue, Finding, WinKind, SUB_WARP_MARK};
use crate::finding_kind::FindingKind;
use crate::measure::environment::Dialect;
use rustc_hash::FxHashMap;
use tracelens_model::{format_ms, Interval, LaneKey, NameId, SpanId, SpanKind, TimeNs, Trace};

/// A kernel whose grid has fewer blocks than this share of the multiprocessors leaves most of
/// the GPU empty.
pub const SMALL_GRID_SM_SHARE: f64 = 0.5;

/// Small-grid kernels below this share of the step are details.
pub const SMALL_GRID_FINDING_PERCENT: f64 = 5.0;

/// Kernels whose grids leave most multiprocessors empty.
pub struct SmallGrid;

/// One kernel name's launches on the focus device inside the window.
#[derive(Clone, Copy, Default)]
struct KernelTime {
    count: u64,
    total_ns: TimeNs,
    /// The largest grid it was launched with, in blocks, and that launch's threads per block.
    blocks: u64,
    threads_per_block: u64,
    /// Its time during which kernels with grids that are not small run on the device's
    /// other streams (summed per stream, capped at each launch's length): a small grid beside
    /// such work leaves no GPU empty.
    beside_others_ns: TimeNs,
}

/// A kernel whose time is this share or more beside other streams' kernels runs small by
/// design (a communication kernel given a few multiprocessors while compute takes the rest).
pub const CONCURRENT_SHARE: f64 = 0.5;

impl Detector for SmallGrid {
    fn name(&self) -> &'static str {
        "small_grid"
    }

    fn kind(&self) -> FindingKind {
        FindingKind::SmallGrid
    }

    fn reads(&self) -> &'static [Input] {
        &[Input::Idle, Input::Framework]
    }

    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let Some(device) = cx.idle().map(|d| d.device) else {
            return Vec::new();
        };
        let Some(sms) = multiprocessors(cx.trace, device) else {
            return Vec::new();
        };
        // Collectives run on a few blocks by design (each block drives a link, not math).
        let times = kernel_times(cx, device);
        let mut small: Vec<(NameId, KernelTime)> = times
            .iter()
            .map(|(&n, &k)| (n, k))
            .filter(|(_, k)| (k.blocks as f64) < sms as f64 * SMALL_GRID_SM_SHARE)
            .filter(|(_, k)| (k.beside_others_ns as f64) < k.total_ns as f64 * CONCURRENT_SHARE)
            .filter(|(n, _)| {
                !crate::vocabulary::kernels::is_communication_kernel(cx.trace.names.get(*n))
            })
            .collect();
        small.sort_by(|a, b| b.1.total_ns.cmp(&a.1.total_ns).then(a.0.cmp(&b.0)));
        let total_ns: TimeNs = small.iter().map(|(_, k)| k.total_ns).sum();
        // What full grids could save at most: each kernel's empty share of the GPU.
        let win_ns: TimeNs = small
            .iter()
            .map(|(_, k)| {
                let empty = 1.0 - (k.blocks as f64 / sms as f64).min(1.0);
                crate::num::float_ns(k.total_ns as f64 * empty)
            })
            .sum();
        let share = cx.win(total_ns);
        if small.is_empty() || share.percent < SMALL_GRID_FINDING_PERCENT {
            return sub_warp_blocks(cx, &times, sms).into_iter().collect();
        }
        let win = cx.win(win_ns);
        let (top_name, top) = small[0];
        let name = tracelens_model::kernel_display_name(cx.trace.names.get(top_name));
        let mut f = cx.finding(FindingKind::SmallGrid, WinKind::KernelTime, &win);
        let shape = if top.blocks * top.threads_per_block == 1 {
            "a single thread".to_string()
        } else {
            format!(
                "{} of {} threads",
                plural_blocks(top.blocks),
                top.threads_per_block
            )
        };
        let others = match small.len() {
            1 => String::new(),
            n => format!(" ({} more small-grid kernels)", n - 1),
        };
        f.title = format!(
            "Kernel {name} runs on {shape} on a GPU of {sms} multiprocessors{others}: small grids take {} {} ({:.1} % of the {}) while most of the GPU is empty",
            format_ms(share.per_step_ns),
            cx.per(),
            share.percent,
            cx.step_time()
        );
        f.win_basis = "the kernels' time on the multiprocessors their grids leave empty, which a grid covering every multiprocessor could save if the work splits evenly (busy time, not idle; upper bound)".into();
        f.evidence
            .add_occurrences("small-grid kernels", small.len() as u64);
        f.evidence.add("multiprocessors", EvidenceValue::Count(sms));
        add_launch_evidence(&mut f, cx.trace, &small);
        (f.fix, f.snippet) = small_grid_fix(cx.framework().dialect(), cx.framework().pytorch());
        // Several full blocks already: the grid likely gives each element its thread, and the
        // input, not the launch, is what is too small for the GPU.
        let full_blocks = small
            .first()
            .filter(|(_, k)| k.blocks >= 2 && k.threads_per_block >= FULL_BLOCK_THREADS);
        // A Python library sizes its own grids: its fix (bigger arrays per call) stands.
        let sizes_own_grid = !matches!(
            cx.framework().dialect(),
            Dialect::PyTorch | Dialect::Python(_)
        );
        if let (Some((name, k)), true) = (full_blocks, sizes_own_grid) {
            f.fix = format!(
                "{} already launches {} of {} threads, likely one thread per element: the input is too small to fill the GPU's {sms} multiprocessors. Give each launch more work (a realistic problem size, or several items per launch), or, where the input is fixed, split each item's work over several blocks, before tuning the kernel; only if the grid does not yet cover the data, size it from the data.",
                tracelens_model::kernel_display_name(cx.trace.names.get(*name)),
                plural_blocks(k.blocks),
                k.threads_per_block
            );
        }
        // Pages that fault in while the kernel runs: part of its time is the driver's.
        let faults = crate::attribute::copies::fault_migrations_inside_kernels(
            cx.trace,
            device,
            cx.window.interval,
            Some(top_name),
        );
        if faults > 0 {
            let prefetch = if cx.framework().dialect() == Dialect::CudaRuntime {
                "prefetch its managed inputs to the GPU (cudaMemPrefetchAsync) before the launch"
            } else {
                "move its managed inputs to the GPU before the launch (a prefetch or an explicit copy)"
            };
            f.fix.push_str(&format!(
                " Its pages fault in while it runs ({} to the GPU start inside it), so part of its time is page-fault service, not computation: {prefetch}, then time it.",
                super::plural(faults, "unified-memory migration")
            ));
            f.evidence.add(
                "unified-memory migrations to the GPU inside the kernel",
                EvidenceValue::Count(faults),
            );
        }
        f.advice = "A block runs on one multiprocessor, so a grid of fewer blocks than the GPU has multiprocessors leaves the rest idle however long the kernel runs; the utilization figure counts the GPU busy all the same.".into();
        f.confidence = Confidence::High;
        let mut out = vec![f];
        out.extend(sub_warp_blocks(cx, &times, sms));
        out
    }
}

/// The first five kernels' launch configurations and times, as the finding's evidence.
fn add_launch_evidence(f: &mut Finding, trace: &Trace, kernels: &[(NameId, KernelTime)]) {
    for (n, k) in kernels.iter().take(5) {
        f.evidence.add(
            format!(
                "{} ({} blocks × {} threads, {} launches)",
                trace.names.get(*n),
                k.blocks,
                k.threads_per_block,
                k.count
            ),
            EvidenceValue::DurationNs(k.total_ns),
        );
    }
}

/// Threads a multiprocessor schedules together: a block of fewer leaves the rest of its warp
/// idle.
const WARP_THREADS: u64 = 32;

/// Kernels launched with blocks of fewer threads than a warp, on grids that are not small:
/// each warp runs `threads_per_block` of its 32 lanes, and the per-multiprocessor block limit
/// caps the resident threads far below what hides memory latency. Their finding, when they
/// take [`SMALL_GRID_FINDING_PERCENT`] of the time or more.
fn sub_warp_blocks(
    cx: &Context,
    times: &FxHashMap<NameId, KernelTime>,
    sms: u64,
) -> Option<Finding> {
    let mut tiny: Vec<(NameId, KernelTime)> = times
        .iter()
        .map(|(&n, &k)| (n, k))
        .filter(|(_, k)| k.threads_per_block < WARP_THREADS && k.threads_per_block > 0)
        .filter(|(_, k)| (k.blocks as f64) >= sms as f64 * SMALL_GRID_SM_SHARE)
        .filter(|(n, _)| {
            !crate::vocabulary::kernels::is_communication_kernel(cx.trace.names.get(*n))
        })
        .collect();
    tiny.sort_by(|a, b| b.1.total_ns.cmp(&a.1.total_ns).then(a.0.cmp(&b.0)));
    let total_ns: TimeNs = tiny.iter().map(|(_, k)| k.total_ns).sum();
    let share = cx.win(total_ns);
    let (top_name, top) = *tiny.first()?;
    if share.percent < SMALL_GRID_FINDING_PERCENT {
        return None;
    }
    // What full warps could save at most: each kernel's idle lanes.
    let win_ns: TimeNs = tiny
        .iter()
        .map(|(_, k)| {
            let idle_lanes = 1.0 - k.threads_per_block as f64 / WARP_THREADS as f64;
            crate::num::float_ns(k.total_ns as f64 * idle_lanes)
        })
        .sum();
    let win = cx.win(win_ns);
    let mut f = cx.finding(FindingKind::SmallGrid, WinKind::KernelTime, &win);
    let name = tracelens_model::kernel_display_name(cx.trace.names.get(top_name));
    let others = match tiny.len() {
        1 => String::new(),
        n => format!(" ({} more such kernels)", n - 1),
    };
    f.title = format!(
        "Kernel {name} runs blocks of {} threads, fewer than a warp's {WARP_THREADS}{others}: {SUB_WARP_MARK} {} {} ({:.1} % of the {}) with {} of every {WARP_THREADS} lanes idle",
        top.threads_per_block,
        format_ms(share.per_step_ns),
        cx.per(),
        share.percent,
        cx.step_time(),
        WARP_THREADS - top.threads_per_block,
    );
    f.win_basis = "the kernels' time on the warp lanes their blocks leave idle, which blocks of whole warps could save if the work splits across threads (busy time, not idle; upper bound)".into();
    f.evidence
        .add_occurrences("sub-warp-block kernels", tiny.len() as u64);
    add_launch_evidence(&mut f, cx.trace, &tiny);
    f.fix = match cx.framework().dialect() {
        Dialect::OpenAcc | Dialect::OpenMp => format!(
            "{name} runs {} threads per block: give its loops a vector length of at least 32 (vector_length(128) / thread_limit(128)) so each block fills whole warps.",
            top.threads_per_block
        ),
        _ => format!(
            "Launch {name} with 128–256 threads per block and a grid of (n + threads − 1) / threads blocks: with {} threads per block, {} of every warp's {WARP_THREADS} lanes sit idle and each multiprocessor holds too few threads to hide memory latency.",
            top.threads_per_block,
            WARP_THREADS - top.threads_per_block
        ),
    };
    f.snippet = if cx.framework().dialect() == Dialect::CudaRuntime {
        "int threads = 256;                      // whole warps, not 4 threads\nint blocks = (n + threads - 1) / threads;\nkernel<<<blocks, threads>>>(n, ...);".into()
    } else {
        String::new()
    };
    f.advice = "A multiprocessor runs threads in warps of 32: a block of fewer threads still takes a whole warp, leaving its other lanes idle, and the cap on resident blocks per multiprocessor then leaves too few threads to hide memory latency.".into();
    f.confidence = Confidence::High;
    Some(f)
}

/// Threads per block from which a launch looks sized to its data (a full block of a
/// data-parallel kernel), not a hand-picked tiny grid.
const FULL_BLOCK_THREADS: u64 = 256;

/// `1 block`, `4 blocks`.
fn plural_blocks(n: u64) -> String {
    if n == 1 {
        "1 block".into()
    } else {
        format!("{n} blocks")
    }
}

/// The multiprocessor count of `device`, when the trace gives it.
fn multiprocessors(trace: &Trace, device: i64) -> Option<u64> {
    trace
        .metadata
        .device_properties
        .iter()
        .find(|p| p.id == device)
        .and_then(|p| p.num_sms)
        .and_then(|n| u64::try_from(n).ok())
        .filter(|&n| n > 1)
}

/// Per kernel name on `device`, clipped to the window: launches, time, the largest grid and
/// the time beside other streams' kernels. Kernels without a recorded launch configuration
/// are left out.
fn kernel_times(cx: &Context, device: i64) -> FxHashMap<NameId, KernelTime> {
    let trace = cx.trace;
    let window = cx.window.interval;
    let lanes: Vec<tracelens_model::LaneId> = trace
        .gpu_lanes()
        .filter(|&l| matches!(trace.lane(l).key, LaneKey::Gpu { device: d, .. } if d == device))
        .collect();
    // Each stream's time in kernels whose grids are not small, merged: what fills the GPU
    // beside a small grid (small grids beside each other leave it empty still).
    let sms = multiprocessors(trace, device).unwrap_or(u64::MAX);
    let fills = |id: SpanId| {
        trace
            .kernel_launch(id)
            .is_some_and(|l| l.blocks() as f64 >= sms as f64 * SMALL_GRID_SM_SHARE)
    };
    let busy: Vec<Vec<Interval>> = lanes
        .iter()
        .map(|&lane| {
            crate::measure::intervals::union(
                trace
                    .lane_span_ids(lane)
                    .filter(|&id| trace.span(id).kind == SpanKind::Kernel && fills(id))
                    .filter_map(|id| trace.span(id).interval().clip(window))
                    .collect(),
            )
        })
        .collect();
    let mut out: FxHashMap<NameId, KernelTime> = FxHashMap::default();
    for (i, &lane) in lanes.iter().enumerate() {
        for id in trace.lane_span_ids(lane) {
            let s = trace.span(id);
            if s.kind != SpanKind::Kernel {
                continue;
            }
            let (Some(launch), Some(iv)) = (trace.kernel_launch(id), s.interval().clip(window))
            else {
                continue;
            };
            let beside: TimeNs = busy
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, other)| crate::measure::intervals::covered_ns(other, iv))
                .sum::<TimeNs>()
                .min(iv.dur_ns());
            let k = out.entry(s.name).or_default();
            k.count += 1;
            k.total_ns += iv.dur_ns();
            k.beside_others_ns += beside;
            if launch.blocks() > k.blocks || k.count == 1 {
                k.blocks = launch.blocks();
                k.threads_per_block = launch.threads() / launch.blocks().max(1);
            }
        }
    }
    out
}

/// (fix, snippet) in the program's words.
fn small_grid_fix(dialect: Dialect, pytorch: bool) -> (String, String) {
    if pytorch {
        return (
            "Give each launch more parallel work: these kernels run on tiny tensors (or a custom kernel launches a tiny grid), so batch the work into fewer, larger ops (stack the small tensors, raise the batch size), and size a custom kernel's grid from the data.".into(),
            "# one op over a stacked batch instead of one per small tensor\nout = torch.stack(chunks).mul_(scale)".into(),
        );
    }
    match dialect {
        Dialect::OpenAcc => (
            "Let the compiler spread the loops over the GPU: mark the outer loop gang and the inner one vector (or collapse nested loops), so each compute region launches many gangs, not one.".into(),
            "!$acc parallel loop gang vector collapse(2)   ! C/C++: #pragma acc parallel loop gang vector collapse(2)".into(),
        ),
        Dialect::OpenMp => (
            "Spread the target region over the GPU: use teams distribute parallel for (and collapse nested loops), so it launches many teams, not one.".into(),
            "#pragma omp target teams distribute parallel for collapse(2)".into(),
        ),
        Dialect::Python(crate::measure::environment::PythonLibrary::Numba) => (
            "Launch each @cuda.jit kernel over the data: blocks = (n + threads - 1) // threads with 128–256 threads per block, and a grid-stride loop (cuda.grid / cuda.gridsize) inside, so every multiprocessor gets work.".into(),
            "threads = 256\nblocks = (n + threads - 1) // threads\nkernel[blocks, threads](x, y)".into(),
        ),
        Dialect::Python(lib) => (
            format!("Give each {} call more data: these kernels run on small arrays (the library sizes the grid from the array), so stack the small arrays and operate on them at once{}.", lib.name(), if lib == crate::measure::environment::PythonLibrary::Jax { ", or jax.vmap the function over a batch axis" } else { " (one call over a new batch axis)" }),
            String::new(),
        ),
        Dialect::Neutral => (
            "Launch each kernel with a grid that covers the data (many blocks, a few hundred threads each), so every multiprocessor gets work: a grid of fewer blocks than multiprocessors leaves the rest of the GPU empty.".into(),
            String::new(),
        ),
        Dialect::CudaRuntime | Dialect::PyTorch => (
            "Launch a grid that covers the data with 128–256 threads per block, (n + threads − 1) / threads blocks, and a grid-stride loop so the kernel stays correct for any size: a grid of fewer blocks than multiprocessors leaves the rest of the GPU empty. Where each thread loops over a whole row (n counts rows, and there are few), that grid stays small: give each row a block and split its loop over the block's threads.".into(),
            "int threads = 256;\nint blocks = (n + threads - 1) / threads;\nkernel<<<blocks, threads>>>(n, x, y);\n// in the kernel: for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)".into(),
        ),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::testing::{findings_of, launch_call};
    use super::*;
    use tracelens_model::{DeviceProperties, KernelLaunch, SourceInfo, SpanInput};

    /// A loop of one kernel on a 108-SM GPU, launched with `grid` blocks of 256 threads.
    pub(crate) fn one_kernel_loop(grid: u32) -> Trace {
        one_kernel_loop_of_blocks(grid, 256)
    }

    /// A loop of one kernel on a 108-SM GPU, launched with `grid` blocks of `block` threads.
    fn one_kernel_loop_of_blocks(grid: u32, block: u32) -> Trace {
        let (mut b, cpu, gpu) = super::super::testing::thread_and_stream();
        let detail = b.add_kernel_launch(KernelLaunch {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
            ..KernelLaunch::default()
        });
        let name = b.intern("vector_add");
        for i in 0..10u64 {
            let t = i.cast_signed() * 1_000;
            launch_call(&mut b, cpu, t, Some(i + 1));
            b.add_span(SpanInput {
                kind: SpanKind::Kernel,
                lane: gpu,
                start_ns: (t + 10) * 1_000,
                dur_ns: 900_000,
                name,
                correlation: Some(i + 1),
                external_id: None,
                detail,
            });
        }
        b.metadata.device_properties = vec![DeviceProperties {
            id: 0,
            num_sms: Some(108),
            ..DeviceProperties::default()
        }];
        b.finish(SourceInfo::default())
    }

    /// The one-block loop with a kernel of `grid` blocks on a second stream running through
    /// it: a full grid beside the small one leaves no GPU empty (a communication kernel given
    /// a few multiprocessors beside compute), another small grid does.
    fn one_block_beside(grid: u32) -> Trace {
        let (mut b, cpu, _) = super::super::testing::thread_and_stream();
        let small = b.add_kernel_launch(KernelLaunch {
            grid: [1, 1, 1],
            block: [256, 1, 1],
            ..KernelLaunch::default()
        });
        let big = b.add_kernel_launch(KernelLaunch {
            grid: [grid, 1, 1],
            block: [256, 1, 1],
            ..KernelLaunch::default()
        });
        let (one, other) = (b.intern("combine"), b.intern("gemm_big"));
        let lanes =
            [7, 8].map(|stream| b.lane(tracelens_model::LaneKey::Gpu { device: 0, stream }));
        for i in 0..10u64 {
            let t = i.cast_signed() * 1_000;
            for (k, (lane, name, detail)) in
                (0_u64..).zip([(lanes[0], one, small), (lanes[1], other, big)])
            {
                let corr = i * 2 + k + 1;
                launch_call(&mut b, cpu, t + k.cast_signed(), Some(corr));
                b.add_span(SpanInput {
                    kind: SpanKind::Kernel,
                    lane,
                    start_ns: (t + 10) * 1_000,
                    dur_ns: 900_000,
                    name,
                    correlation: Some(corr),
                    external_id: None,
                    detail,
                });
            }
        }
        b.metadata.device_properties = vec![DeviceProperties {
            id: 0,
            num_sms: Some(108),
            ..DeviceProperties::default()
        }];
        b.finish(SourceInfo::default())
    }

    #[test]
    fn a_small_grid_beside_a_full_one_is_not_reported_and_beside_a_small_one_is() {
        let beside_full = findings_of(&SmallGrid, &one_block_beside(432));
        assert!(beside_full.is_empty(), "{beside_full:#?}");
        let beside_small = findings_of(&SmallGrid, &one_block_beside(2));
        assert_eq!(beside_small.len(), 1, "{beside_small:#?}");
    }

    /// Blocks of 4 threads on a grid of a million blocks: a warp's 28 other lanes idle, named
    /// with whole-warp blocks as the fix; the twin of 256-thread blocks has no finding.
    #[test]
    fn blocks_smaller_than_a_warp_are_found_and_whole_warp_blocks_are_not() {
        let tiny = findings_of(&SmallGrid, &one_kernel_loop_of_blocks(1 << 20, 4));
        assert_eq!(tiny.len(), 1, "{tiny:#?}");
        assert!(
            tiny[0]
                .title
                .contains("blocks of 4 threads, fewer than a warp's 32")
                && tiny[0].title.contains("28 of every 32 lanes idle"),
            "{}",
            tiny[0].title
        );
        assert!(
            tiny[0].fix.contains("128–256 threads per block"),
            "{}",
            tiny[0].fix
        );
        // Its upper bound: the idle lanes' share of the kernels' time.
        let kernels_ns: TimeNs = 10 * 900_000;
        assert_eq!(tiny[0].estimated_win_ns, kernels_ns * 28 / 32);
        let whole = findings_of(&SmallGrid, &one_kernel_loop_of_blocks(1 << 20, 256));
        assert!(whole.is_empty(), "{whole:#?}");
    }

    #[test]
    fn full_blocks_that_cannot_fill_the_gpu_blame_the_input_size_and_one_block_the_launch() {
        let four = findings_of(&SmallGrid, &one_kernel_loop(4));
        assert_eq!(four.len(), 1, "{four:#?}");
        assert!(
            four[0].fix.contains("input is too small"),
            "{}",
            four[0].fix
        );
        let one = findings_of(&SmallGrid, &one_kernel_loop(1));
        assert!(!one[0].fix.contains("input is too small"), "{}", one[0].fix);
    }

    #[test]
    fn a_one_block_kernel_is_reported_and_its_full_grid_twin_is_not() {
        let found = findings_of(&SmallGrid, &one_kernel_loop(1));
        assert_eq!(found.len(), 1);
        let f = &found[0];
        assert!(f.title.contains("1 block of 256 threads"), "{}", f.title);
        assert!(f.title.contains("108 multiprocessors"), "{}", f.title);
        assert_eq!(f.win_kind, WinKind::KernelTime);
        assert!(f.estimated_win_percent > 50.0 && f.estimated_win_percent <= 100.0);
        assert!(findings_of(&SmallGrid, &one_kernel_loop(216)).is_empty());
    }
}
