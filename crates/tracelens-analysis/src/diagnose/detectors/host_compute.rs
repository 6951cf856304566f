//! The GPU waits while the launching thread runs CPU work before its next launch, outside
//! launch-bound stretches: one finding per [`HostWork`] sub-cause (optimizer, dispatch, warm-up,
//! logging, …), each with its own fix.

use super::launch_bound::launch_overhead_fix;
use super::{Context, Detector, Input};
use crate::attribute::host_work::HostWork;
use crate::attribute::idle::{DeviceIdle, HostPart, RegionShare};
use crate::diagnose::finding::{Confidence, EvidenceValue, Finding, WinKind};
use crate::finding_kind::FindingKind;
use crate::measure::environment::{
    Framework, Program, TorchVersion, FUSED_SGD, OPTIMIZER_FOREACH, TORCH_COMPILE,
};
use tracelens_model::{format_ms, TimeNs};

/// `torch.profiler.schedule` (wait/warmup/active).
const PROFILER_SCHEDULE: TorchVersion = TorchVersion::new(1, 8);
/// Inductor's FX graph cache (`TORCHINDUCTOR_FX_GRAPH_CACHE`).
const FX_GRAPH_CACHE: TorchVersion = TorchVersion::new(2, 1);

/// A user region whose CPU work keeps the GPU waiting in this many of its ranges or more
/// recurs: its work is a phase of every iteration to overlap, not one place to look into.
const RECURRING_RANGES: usize = 3;

/// Host compute is always some of the idle; below this share of step time it is a detail.
pub const HOST_COMPUTE_FINDING_PERCENT: f64 = 2.0;

/// The GPU waits while the CPU does other work.
pub struct HostCompute;

impl Detector for HostCompute {
    fn name(&self) -> &'static str {
        "host_compute"
    }

    fn kind(&self) -> FindingKind {
        FindingKind::HostCompute
    }
    fn reads(&self) -> &'static [Input] {
        &[
            Input::Credit,
            Input::Framework,
            Input::Idle,
            Input::Kernels,
            Input::Hardware,
        ]
    }

    /// One finding per sub-cause worth [`HOST_COMPUTE_FINDING_PERCENT`] of step time (the
    /// largest alone when none is but all together are); the parts split the credited time, so
    /// their wins never overlap.
    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let total = cx.win(cx.credit().host_compute_ns);
        if total.total_ns == 0 || total.percent < HOST_COMPUTE_FINDING_PERCENT {
            return Vec::new();
        }
        let parts = &cx.credit().host_compute_parts;
        let mut chosen: Vec<&HostPart> = parts
            .iter()
            .filter(|p| cx.win(p.ns).percent >= HOST_COMPUTE_FINDING_PERCENT)
            .collect();
        if chosen.is_empty() {
            chosen.extend(parts.first());
        }
        chosen
            .into_iter()
            .enumerate()
            .map(|(i, part)| part_finding(cx, part, i == 0))
            .collect()
    }
}

/// The finding of one sub-cause; the largest carries the OS-wait evidence of the whole.
fn part_finding(cx: &Context, part: &HostPart, largest: bool) -> Finding {
    let win = cx.win(part.ns);
    let mut f = cx.finding(FindingKind::HostCompute, WinKind::GpuIdle, &win);
    f.sub_cause = Some(part.work);
    // A user region's part is named by its regions: its ops are only "(Python between ops)".
    let region_labels: Vec<(String, TimeNs)> =
        part.regions.iter().map(|r| (r.label(), r.ns)).collect();
    let named = if part.work == HostWork::UserRegion && !part.regions.is_empty() {
        &region_labels
    } else {
        &part.ops
    };
    let top: Vec<String> = named
        .iter()
        .take(3)
        .map(|(n, t)| {
            format!(
                "{} ({})",
                host_label(part.work, n),
                format_ms(cx.window.per_step(*t))
            )
        })
        .collect();
    let inside = match part.regions.first() {
        Some(region) if part.work != HostWork::UserRegion && region.ns * 2 >= part.ns => {
            format!(", inside {}", region.name)
        }
        _ => String::new(),
    };
    // Work the trace does not record, or time under no op, has no names to list: the
    // description says it all ("runs Python between ops", not "…: (Python between ops)").
    let only_placeholders = named.iter().all(|(n, _)| n.starts_with('('));
    let named = if part.work == HostWork::NotRecorded || (only_placeholders && !named.is_empty()) {
        String::new()
    } else if top.is_empty() {
        ": unnamed CPU work".to_string()
    } else {
        format!(": {}", top.join(", "))
    };
    f.title = format!(
        "GPU idle {} {} ({:.1} %) while the launching thread {}{}{}{}",
        format_ms(win.per_step_ns),
        cx.per(),
        win.percent,
        part.work.describe(),
        named,
        inside,
        match (largest && part.work != HostWork::OsWait, cx.idle()) {
            (true, Some(d)) => os_wait_note(d, cx.credit().host_compute_ns),
            _ => String::new(),
        }
    );
    for (n, t) in &part.ops {
        f.evidence
            .add(host_label(part.work, n), EvidenceValue::DurationNs(*t));
    }
    for r in &part.regions {
        f.evidence.add(
            format!("region: {}", r.label()),
            EvidenceValue::DurationNs(r.ns),
        );
    }
    if let (true, Some(d)) = (largest, cx.idle()) {
        for (n, t) in d.os_waits.iter().take(4) {
            f.evidence
                .add(format!("OS wait: {n}"), EvidenceValue::DurationNs(*t));
        }
    }
    let region = part.regions.first();
    let frame = part
        .ops
        .iter()
        .find(|(n, _)| tracelens_model::PyFrame::parse(n).is_some())
        .map(|(n, _)| n.as_str());
    (f.fix, f.snippet) = work_fix(cx.framework(), part, region, frame);
    f.advice = work_advice(part.work).into();
    // A recurring region's work, sampled: what the samples show, beside its lever.
    let recurring = part.work == HostWork::UserRegion
        && part
            .regions
            .first()
            .is_some_and(|r| r.ranges >= RECURRING_RANGES);
    if let Some(sampled) = (recurring && part.ns * 2 >= cx.credit().host_compute_ns)
        .then(|| sampled_in_host_gaps(cx))
        .flatten()
    {
        f.title.push_str(&format!(" ({})", sampled.describe()));
        f.evidence
            .add_occurrences("CPU samples in these gaps", sampled.samples);
    }
    // Work the trace records no call for, but the capture sampled: what the samples show.
    if let Some(sampled) = (part.work == HostWork::NotRecorded)
        .then(|| sampled_in_host_gaps(cx))
        .flatten()
    {
        (f.fix, f.snippet) = crate::diagnose::advice::sampled_cpu_work(
            &sampled,
            cx.hardware(),
            cx.framework().dialect(),
        );
        f.title.push_str(&format!(" ({})", sampled.describe()));
        f.evidence
            .add_occurrences("CPU samples in these gaps", sampled.samples);
        f.confidence = Confidence::Medium;
    }
    // The frame runs the whole step: its own time between ops, a few microseconds per launch,
    // is the Python of each op call in a step of many small ops, which no line can move out
    // of the step; longer stretches of it are work no finer frame recorded.
    let step_frame = frame.filter(|n| part.work == HostWork::Python && frame_spans_a_step(cx, n));
    let loop_frame = step_frame.filter(|_| per_launch_ns(cx, part.ns) <= PER_OP_PYTHON_NS);
    if let (Some(name), None) = (step_frame, loop_frame) {
        // Stretches of its own time, longer than op calls take: what it runs there is not
        // recorded at a finer frame.
        f.fix = format!("{name} runs the whole step, and this time is in it with no finer frame recorded: sample the launching thread during the step (py-spy record --native, or nsys profile --python-sampling=true) to see what it runs between launches, then move that work out of the step or overlap it with GPU work.");
        f.snippet = "py-spy record --native -o profile.svg -- python train.py".into();
        f.snippet_language = "shell".into();
    }
    if let Some(name) = loop_frame {
        let (fix, snippet) = launch_overhead_fix(cx.framework());
        f.fix = format!("One call of {name} spans a whole step, so this is the Python of each op call in a step of many small ops, not code to move out of the step: {}", crate::num::lower_first(&fix));
        f.snippet = snippet;
        f.evidence.add(
            format!("{name} spans a whole step"),
            EvidenceValue::Count(1),
        );
    }
    let launch_calls = part
        .ops
        .first()
        .is_some_and(|(n, _)| crate::vocabulary::api::is_kernel_launch(n));
    f.lever = match part.work {
        HostWork::FrameworkDispatch | HostWork::CompiledRegion => {
            Some(crate::diagnose::lever::Lever::FewerLaunches)
        }
        HostWork::Python if loop_frame.is_some() => {
            Some(crate::diagnose::lever::Lever::FewerLaunches)
        }
        HostWork::ApiCalls if launch_calls => Some(crate::diagnose::lever::Lever::FewerLaunches),
        HostWork::WarmUp => Some(crate::diagnose::lever::Lever::CaptureAfterWarmUp),
        _ => None,
    };
    if part.work == HostWork::WarmUp {
        f.one_time = Some("first launches, module loads, compilation".into());
    }
    f.confidence = match part.work {
        HostWork::NotRecorded | HostWork::UserRegion => Confidence::Low,
        _ => Confidence::Medium,
    };
    f.win_basis = "GPU idle while the launching thread ran this CPU work before its next launch, outside launch-bound stretches (upper bound)".into();
    f
}

/// Python time per kernel launch up to which a loop's own Python between ops is the cost of
/// each op call (tens of microseconds in eager PyTorch), not a stretch of other work.
pub const PER_OP_PYTHON_NS: tracelens_model::TimeNs = 50_000;

/// `ns` of the window per kernel launch in it (all of `ns` without launches).
fn per_launch_ns(cx: &Context, ns: tracelens_model::TimeNs) -> tracelens_model::TimeNs {
    let launches: u64 = cx.kernels().iter().map(|k| k.count).sum();
    i64::try_from(launches)
        .ok()
        .filter(|&n| n > 0)
        .map_or(ns, |n| ns / n)
}

/// Whether some call of Python frame `frame` spans 90 % or more of a step (of the window,
/// without steps): the frame is the loop that issues the step's ops, not code inside it.
fn frame_spans_a_step(cx: &Context, frame: &str) -> bool {
    let Some(name) = cx.trace.names.lookup(frame) else {
        return false;
    };
    let step_ns = cx.window.step_ns();
    step_ns > 0
        && cx.trace.spans.iter().any(|s| {
            s.kind == tracelens_model::SpanKind::PythonFunction
                && s.name == name
                && s.dur_ns.saturating_mul(10) >= step_ns.saturating_mul(9)
        })
}

/// (fix, snippet) for framework ops that compute on CPU tensors: a factory makes its tensor on
/// the GPU; other ops get their inputs there first.
fn cpu_tensor_fix(part: &HostPart) -> (String, String) {
    let op = part.ops.first().map_or("these ops", |(n, _)| n.as_str());
    if crate::vocabulary::ops::is_tensor_factory(op) {
        (
            format!("{op} builds its tensor on the CPU while the GPU waits (and the result is then copied up): create it on the GPU directly with device=\"cuda\"."),
            "x = torch.randn(n, n, device=\"cuda\")   # not torch.randn(n, n).cuda()".into(),
        )
    } else {
        (
            format!("{op} computes on CPU tensors while the GPU waits: move its inputs to the GPU before it (or create them there), so it runs as GPU kernels; work that must stay on the CPU belongs in DataLoader workers or overlapped with GPU work."),
            "x = x.to(\"cuda\", non_blocking=True)   # before the op, so it runs on the GPU".into(),
        )
    }
}

/// An op name as a host-compute title shows it.
fn host_label(work: HostWork, name: &str) -> String {
    if work == HostWork::FrameworkDispatch && !name.starts_with('(') {
        format!("framework dispatch of {name}")
    } else {
        name.to_string()
    }
}

/// Why a sub-cause keeps the GPU waiting, in a sentence or two.
fn work_advice(work: HostWork) -> &'static str {
    match work {
        HostWork::WarmUp => "One-time work (compilation, graph capture, autotuning, module load) runs while the GPU has nothing queued. It does not repeat in steady state: measure steps after it, and cache what can be cached.",
        HostWork::Optimizer => "The optimizer step launches small kernels per parameter from Python; the GPU runs out of work while the CPU walks the parameter list.",
        HostWork::Logging => "Logging and metrics run on the launching thread between steps; while they run, nothing new is queued.",
        HostWork::HostDataWork => "Data preparation runs on the launching thread instead of in loader workers; the GPU waits for it every step.",
        HostWork::GarbageCollection => "Python's garbage collector pauses the launching thread; with many tensors alive a full collection takes milliseconds.",
        HostWork::CompiledRegion => "Entering a compiled region checks its guards and dispatches its graph on the CPU; short regions pay that for little GPU work.",
        HostWork::CpuTensorOps => "Framework ops on CPU tensors compute on the CPU: each runs for milliseconds and launches nothing, so the GPU waits for the work itself, not for its dispatch.",
        HostWork::FrameworkDispatch => "The framework spends more CPU time dispatching each op than the GPU spends running it: many small ops starve the GPU.",
        HostWork::Python => "Python code between framework ops runs while the GPU has nothing queued.",
        HostWork::UserRegion => "The time falls inside an annotated region with no op or Python frame recorded inside it, so the trace names the region but not the work.",
        HostWork::Allocation => "Each allocation or free goes to the driver while the GPU has nothing queued, and a free also waits for the device: buffers made per iteration pay this every time.",
        HostWork::ApiCalls => "The launching thread spends this time inside runtime calls while the GPU has nothing queued: set-up calls (queries, streams, events, handles) made in the loop, or the host side of copies.",
        HostWork::OsWait => "The launching thread is blocked in the operating system (waiting for I/O, another process or a lock) while the GPU has nothing queued: it is not computing, so faster code does not help; what it waits for does.",
        HostWork::BetweenApiCalls => "The program's own CPU work between API calls runs while the GPU has nothing queued.",
        HostWork::NotRecorded => "The GPU runs out of queued work while the launching thread is between API calls, but the trace holds no record of what that thread did: record its CPU work to find the cause.",
    }
}

/// (fix, snippet) for one sub-cause, naming only what exists for the program and its version.
fn work_fix(
    fw: &Framework,
    part: &HostPart,
    region: Option<&RegionShare>,
    frame: Option<&str>,
) -> (String, String) {
    let python = fw.pytorch() || matches!(fw.program, Program::Python);
    match part.work {
        HostWork::NotRecorded => record_fix(fw),
        HostWork::WarmUp => warm_up_fix(fw),
        HostWork::Allocation => allocation_fix(fw, part),
        HostWork::ApiCalls => api_calls_fix(fw, part),
        HostWork::OsWait => os_wait_fix(fw, part),
        HostWork::Optimizer
            if part
                .ops
                .first()
                .is_some_and(|(n, _)| crate::vocabulary::ops::is_zero_grad(n)) =>
        {
            zero_grad_fix(fw)
        }
        HostWork::Optimizer if fw.pytorch() => {
            // The optimizer whose step this time is in, when its region names it.
            let named = part
                .regions
                .iter()
                .map(|r| r.name.as_str())
                .chain(part.ops.iter().map(|(n, _)| n.as_str()))
                .find_map(crate::vocabulary::ops::optimizer_class);
            match named {
                Some(class) => optimizer_fix(&Framework {
                    optimizer: Some(class.to_string()),
                    ..fw.clone()
                }),
                None => optimizer_fix(fw),
            }
        }
        HostWork::FrameworkDispatch | HostWork::CompiledRegion => launch_overhead_fix(fw),
        HostWork::CpuTensorOps => cpu_tensor_fix(part),
        HostWork::Logging if python => (
            "Log every N steps, not every step: keep the metrics as GPU tensors, read them once at log time, and let a background thread write them out.".into(),
            "if step % log_every == 0:\n    logger.log({\"loss\": loss.detach().item()})   # one read per N steps".into(),
        ),
        HostWork::HostDataWork if fw.pytorch() && fw.optimizer.is_none() => (
            "Prepare the inputs in worker processes (a DataLoader with num_workers > 0 over a Dataset that decodes and transforms in __getitem__), or run the transforms on the GPU, so the next input is ready when the GPU finishes the current one and the launching thread only launches.".into(),
            "loader = DataLoader(ds, batch_size=B, num_workers=4, pin_memory=True,\n                    persistent_workers=True)\nfor batch in loader:\n    out = model(batch.to(device, non_blocking=True))".into(),
        ),
        HostWork::HostDataWork if fw.pytorch() => (
            "Move this data work into DataLoader worker processes (num_workers > 0, in the Dataset's __getitem__ or collate_fn), or do it on the GPU, so the training thread only launches.".into(),
            "loader = DataLoader(ds, batch_size=B, num_workers=4, collate_fn=collate,\n                    pin_memory=True, persistent_workers=True)".into(),
        ),
        HostWork::GarbageCollection if python => (
            "Freeze the objects built at setup (gc.freeze()) and collect on your schedule: gc.disable() in the loop and gc.collect() every N steps.".into(),
            "import gc\ngc.freeze()          # after model and data setup\ngc.disable()\nfor step, batch in enumerate(loader):\n    train_step(batch)\n    if step % 1000 == 0:\n        gc.collect()".into(),
        ),
        HostWork::UserRegion if region.is_some_and(|r| r.ranges >= RECURRING_RANGES) => {
            let r = region.expect("checked");
            let (fix, snippet) = crate::diagnose::advice::overlap_host_work(fw.dialect());
            (
                format!("The GPU has nothing queued while the range {} runs ({} times): {}", r.name, r.ranges, crate::num::lower_first(&fix)),
                snippet,
            )
        }
        HostWork::UserRegion if fw.pytorch() => (
            format!("The time is inside {} with nothing finer recorded: profile again with with_stack=True to see its Python lines, then move that work out of the step or overlap it with GPU work.", region.map_or("an annotated region".to_string(), |r| format!("the region {}", r.label()))),
            "with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],\n                            with_stack=True, record_shapes=True) as prof:\n    train_step()".into(),
        ),
        HostWork::UserRegion => crate::diagnose::advice::inside_range(
            region.map(RegionShare::label).as_deref(),
            fw.dialect(),
        ),
        HostWork::Python if python => (
            match (frame, fw.pytorch()) {
                (Some(frame), _) => format!("Python at {frame} runs between launches every step: move it out of the step, run it every N steps, or launch the next GPU work before it."),
                (None, true) if fw.nsight() => "Python code between ops runs every step while the GPU waits: find the lines with a Python sampler (py-spy record, or nsys profile --python-sampling=true) or torch.profiler with with_stack=True, then move that work out of the step or run it every N steps.".into(),
                (None, true) => "Python code between ops runs every step while the GPU waits: profile with with_stack=True to see the lines, then move that work out of the step or run it every N steps.".into(),
                (None, false) => "Python code between launches keeps the GPU waiting: find the lines with a Python sampler (py-spy record) or NVTX ranges around the host phases, then move that work out of the loop or launch the next GPU work before it.".into(),
            },
            "if step % 100 == 0:\n    host_side_work()   # not every step".into(),
        ),
        _ if fw.pytorch() => (
            "Launch the next GPU work before the CPU work that follows it, or move that CPU work to another thread, so the queue never drains.".into(),
            "# queue the next GPU work first, then do the host work\nout = model(next_batch)   # launches return at once\nhost_side_work()          # overlaps the queued kernels".into(),
        ),
        _ => crate::diagnose::advice::overlap_host_work(fw.dialect()),
    }
}

/// (fix, snippet) for runtime allocations and frees outside any op: allocate once.
fn allocation_fix(fw: &Framework, part: &HostPart) -> (String, String) {
    if fw.pytorch() && fw.cpu_ops_recorded {
        return (
            "These runtime allocations and frees run outside any PyTorch op (a library or extension managing its own buffers): allocate those buffers once and reuse them across steps, or let the library allocate from PyTorch's caching allocator.".into(),
            "buf = torch.empty(n, device=\"cuda\")   # once, before the loop; reuse it every step".into(),
        );
    }
    if fw.pytorch() {
        return (
            "PyTorch's caching allocator calls cudaMalloc when its pool must grow, which the first iterations do once; if these calls recur in later steps, keep tensor shapes fixed across steps (pad variable lengths to a few sizes) and take torch.cuda.empty_cache() out of the loop so the pool is reused.".into(),
            "x = torch.nn.functional.pad(x, (0, max_len - x.shape[-1]))   # a few fixed shapes: the pool's blocks are reused".into(),
        );
    }
    let pinned = part
        .ops
        .first()
        .is_some_and(|(n, _)| crate::vocabulary::api::is_pinned_host_allocation(n));
    if pinned && fw.dialect() == crate::measure::environment::Dialect::CudaRuntime {
        // Named by the program's own pinning call.
        let alloc = part
            .ops
            .iter()
            .map(|(n, _)| crate::vocabulary::api::normalize_api(n))
            .find(|n| crate::vocabulary::api::pins_host_memory(n))
            .unwrap_or("cudaMallocHost");
        let first = match alloc {
            "cudaHostAlloc" => "cudaHostAlloc(&host_buf, bytes, cudaHostAllocDefault);",
            "cudaHostRegister" => "cudaHostRegister(host_buf, bytes, cudaHostRegisterDefault);",
            _ => "cudaMallocHost(&host_buf, bytes);",
        };
        return (
            format!("Allocate the pinned host buffers once, at start-up, and reuse them: {alloc} pins memory, which is slow, and freeing pinned memory waits for the whole device."),
            format!("{first}   // once, before the loop\nfor (int i = 0; i < n_iter; ++i) {{ /* copies through host_buf */ }}\n// free it once, at the end"),
        );
    }
    let fix =
        crate::diagnose::advice::host_wait(crate::diagnose::advice::HostWait::Free, fw.dialect());
    (fix.fix, fix.snippet)
}

/// (fix, snippet) for time inside other runtime calls outside any op, by the call that takes
/// most of it: a launch's own cost, a copy's host side, or set-up calls made in the loop.
fn api_calls_fix(fw: &Framework, part: &HostPart) -> (String, String) {
    use crate::diagnose::advice::{host_wait, HostWait};
    use crate::vocabulary::api::{self, BlockingKind};
    let top = part.ops.first().map_or("", |(n, _)| n.as_str());
    if api::is_kernel_launch(top) {
        return launch_overhead_fix(fw);
    }
    let wait = match api::blocking_kind(top) {
        Some(BlockingKind::StreamSync | BlockingKind::EventSync) => Some(HostWait::StreamOrEvent),
        Some(BlockingKind::AllocatorFree) => Some(HostWait::Free),
        Some(_) => Some(HostWait::DeviceOrCopy),
        None if api::is_async_copy(top) => Some(HostWait::DeviceOrCopy),
        None => None,
    };
    match wait {
        Some(HostWait::DeviceOrCopy) if fw.pytorch() => (
            format!("The host side of {} runs while the GPU has nothing queued: copy from pinned memory with non_blocking=True (DataLoader pin_memory=True), so the copy is queued and the next launches follow at once.", api::normalize_api(top)),
            "loader = DataLoader(ds, batch_size=B, pin_memory=True, num_workers=4)\nx = x.to(\"cuda\", non_blocking=True)".into(),
        ),
        Some(_) if fw.pytorch() => (
            format!("The launching thread waits in {} while the GPU has nothing queued: synchronize only where the host needs a result (no torch.cuda.synchronize() or .item() in the step), and queue the next work before it.", api::normalize_api(top)),
            "loss_sum += loss.detach()   # stays on the GPU\nif step % 100 == 0:\n    print(loss_sum.item())   # one read per 100 steps".into(),
        ),
        Some(wait) => {
            let fix = host_wait(wait, fw.dialect());
            (fix.fix, fix.snippet)
        }
        None => {
            let names: Vec<&str> = part
                .ops
                .iter()
                .take(3)
                .map(|(n, _)| api::normalize_api(n))
                .collect();
            (
                format!(
                    "Make these calls once, at start-up, not between launches: {} queue no GPU work, so the GPU waits while they run (query device properties, create streams, events and library handles once and reuse them).",
                    if names.is_empty() { "they".to_string() } else { names.join(", ") }
                ),
                String::new(),
            )
        }
    }
}

/// (fix, snippet) for the launching thread blocked in OS waits: find what it waits for.
fn os_wait_fix(fw: &Framework, part: &HostPart) -> (String, String) {
    let names: Vec<&str> = part.ops.iter().take(3).map(|(n, _)| n.as_str()).collect();
    // The thread reaps a child process in these waits: it waited for a program it started.
    let reaps = |n: &str| crate::vocabulary::api::is_child_process_wait(n);
    // The longest wait that is not the reaping itself: what the thread waited in meanwhile.
    if let (Some(reap), Some((longest, ns))) = (
        part.ops.iter().find(|(n, _)| reaps(n)),
        part.ops.iter().find(|(n, _)| !reaps(n)),
    ) {
        return (
            format!(
                "The launching thread waits for a child process it started ({longest} for {}, then {} reaps it) while the GPU has nothing queued: a compiler or tool the program runs (a JIT compiler, a code generator). Run it once before the GPU work, or cache its output, so the GPU's work does not wait for it; a run that does this once pays it once, not per iteration.",
                format_ms(*ns),
                reap.0
            ),
            String::new(),
        );
    }
    let input = if fw.pytorch() {
        "input read on the launching thread → DataLoader workers (num_workers > 0) read ahead"
    } else {
        "input read on the launching thread → read ahead on a background thread"
    };
    (
        format!(
            "The launching thread waits in {} while the GPU has nothing queued: find what it waits on and take it off the GPU's path — {input}; a child process it starts (a JIT compiler, a tool) → run it once before the GPU work or cache its output; a lock → shorten what holds it.",
            if names.is_empty() { "OS calls".to_string() } else { names.join(", ") }
        ),
        String::new(),
    )
}

/// What the CPU samples show the launching threads doing in the focus device's idle that
/// host compute explains.
fn sampled_in_host_gaps(cx: &Context) -> Option<crate::attribute::cpu_samples::SampledHostWork> {
    let idle = cx.idle()?;
    let trace = cx.trace;
    let stretches = idle.gaps.iter().flat_map(|g| {
        let key = g.lane().map(|l| trace.lane(l).key);
        idle.segments_of(g)
            .filter(|s| s.cause == crate::attribute::idle::IdleCause::HostCompute)
            .filter_map(move |s| key.map(|k| (k, s.interval)))
    });
    crate::attribute::cpu_samples::sampled_in(trace, stretches)
}

/// (fix, snippet) when the trace records no CPU work: how to record it.
fn record_fix(fw: &Framework) -> (String, String) {
    if fw.nsight() {
        if let Some(fix) = crate::diagnose::advice::see_cpu_work_in_capture(
            fw.dialect(),
            fw.cpu_sampled,
            fw.os_runtime_traced,
        ) {
            return fix;
        }
    }
    if fw.pytorch() {
        (
            "The trace records no CPU ops, so what the launching thread did is not in it: profile again with CPU activity (torch.profiler's ProfilerActivity.CPU, with_stack=True for Python lines) to see the cause.".into(),
            "with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],\n                            with_stack=True) as prof:\n    train_step()".into(),
        )
    } else {
        crate::diagnose::advice::record_cpu_work(fw.dialect(), fw.nsight())
    }
}

/// (fix, snippet) for one-time warm-up: measure after it, cache what can be cached.
pub(crate) fn warm_up_fix(fw: &Framework) -> (String, String) {
    if !fw.pytorch() {
        return crate::diagnose::advice::warm_up(fw.dialect(), fw.nsight());
    }
    if fw.nsight() {
        return (
            format!(
                "This is one-time warm-up, not a per-step cost: {}, and judge steady-state steps.",
                crate::diagnose::advice::steady_state_capture(fw.dialect(), fw.capture)
            ),
            "for i, batch in enumerate(loader):\n    if i == warmup_steps:\n        torch.cuda.profiler.start()   # nsys profile --capture-range=cudaProfilerApi\n    train_step(batch)\ntorch.cuda.profiler.stop()".into(),
        );
    }
    let cache = if fw.compiled && fw.at_least(FX_GRAPH_CACHE) != Some(false) {
        " Across runs, keep compiled artifacts in Inductor's cache (PyTorch 2.1+: TORCHINDUCTOR_FX_GRAPH_CACHE=1)."
    } else {
        ""
    };
    let schedule = if fw.at_least(PROFILER_SCHEDULE) == Some(false) {
        "start profiling after the first steps"
    } else {
        "keep it out of the measured steps with the profiler schedule (wait and warmup steps before the active ones)"
    };
    (
        format!("This is one-time warm-up, not a per-step cost: {schedule}, and judge steady-state steps.{cache}"),
        "prof = torch.profiler.profile(\n    schedule=torch.profiler.schedule(wait=1, warmup=2, active=3),\n    on_trace_ready=torch.profiler.tensorboard_trace_handler(\"./log\"))\nwith prof:\n    for batch in loader:\n        train_step(batch); prof.step()".into(),
    )
}

/// (fix, snippet) for a slow `zero_grad`.
fn zero_grad_fix(fw: &Framework) -> (String, String) {
    if fw.pytorch() {
        (
            "Let zero_grad() drop the gradients instead of filling them with zeros: optimizer.zero_grad(set_to_none=True).".into(),
            "optimizer.zero_grad(set_to_none=True)   # default from PyTorch 2.0".into(),
        )
    } else {
        (
            "Clear gradients by dropping or re-pointing them instead of a fill kernel per buffer."
                .into(),
            "// one memset over a contiguous gradient buffer instead of one per parameter".into(),
        )
    }
}

/// (fix, snippet) for a slow optimizer step, naming the optimizer the trace shows and only
/// options its PyTorch has.
fn optimizer_fix(fw: &Framework) -> (String, String) {
    let name = fw
        .optimizer
        .clone()
        .unwrap_or_else(|| "the optimizer".into());
    if fw.fused_optimizer {
        return (
            format!("{name} is already fused: step it less often (gradient accumulation) or overlap it with the next step's data loading."),
            "if (step + 1) % accum_steps == 0:\n    optimizer.step(); optimizer.zero_grad(set_to_none=True)".into(),
        );
    }
    let known = fw
        .optimizer
        .as_deref()
        .is_none_or(crate::vocabulary::ops::is_torch_optimizer);
    if !known {
        return (
            if fw.foreach_optimizer {
                format!("{name} is not a torch.optim class and already runs multi-tensor (_foreach) kernels, so what remains is its Python per step: step it less often (gradient accumulation) or fuse its update into fewer kernels.")
            } else {
                format!("{name} is not a torch.optim class: make it step all parameters at once (multi-tensor _foreach or fused kernels, as torch.optim's foreach/fused implementations do), or step it less often with gradient accumulation.")
            },
            "if (step + 1) % accum_steps == 0:\n    optimizer.step(); optimizer.zero_grad(set_to_none=True)".into(),
        );
    }
    let adam = crate::vocabulary::ops::is_adam_family(&name);
    let fusable = adam || crate::vocabulary::ops::is_sgd(&name) || fw.optimizer.is_none();
    let fused_from = if adam { TORCH_COMPILE } else { FUSED_SGD };
    let class = if fw.optimizer.is_some() {
        format!("torch.optim.{name}")
    } else {
        "torch.optim.AdamW".into()
    };
    if fusable && fw.at_least(fused_from) == Some(true) {
        return (
            format!("Use the fused implementation: {class}(..., fused=True)."),
            format!("optimizer = {class}(model.parameters(), lr=lr, fused=True)"),
        );
    }
    if fw.foreach_optimizer {
        return (
            if fusable {
                format!("{name} already runs multi-tensor (foreach) kernels: fused=True needs PyTorch {fused_from}+; until then step less often (gradient accumulation).")
            } else {
                format!("{name} already runs multi-tensor (foreach) kernels: step it less often (gradient accumulation) or switch to an optimizer with a fused implementation (Adam/AdamW).")
            },
            "if (step + 1) % accum_steps == 0:\n    optimizer.step(); optimizer.zero_grad(set_to_none=True)".into(),
        );
    }
    match fw.at_least(OPTIMIZER_FOREACH) {
        Some(true) | None if fusable && fw.at_least(fused_from).is_none() => (
            format!("Use {class}(..., foreach=True) (PyTorch 1.12+), or fused=True on PyTorch {fused_from}+."),
            format!("optimizer = {class}(model.parameters(), lr=lr, foreach=True)"),
        ),
        Some(true) | None => (
            format!("Use {class}(..., foreach=True) (PyTorch 1.12+): one multi-tensor kernel for all parameters."),
            format!("optimizer = {class}(model.parameters(), lr=lr, foreach=True)"),
        ),
        Some(false) => {
            let apex = if adam { "Adam" } else { "SGD" };
            (
                format!("{name} runs one small kernel per parameter on this PyTorch: use a multi-tensor optimizer (apex.optimizers.Fused{apex}), or upgrade PyTorch for its multi-tensor optimizers."),
                format!("from apex.optimizers import Fused{apex}\noptimizer = Fused{apex}(model.parameters(), lr=lr)"),
            )
        }
    }
}

/// When OS waits of the launching thread make up 30 % or more of the host-compute idle, a
/// clause naming them; else nothing.
fn os_wait_note(dev: &DeviceIdle, idle: TimeNs) -> String {
    let waited: TimeNs = dev.os_waits.iter().map(|(_, t)| t).sum();
    if waited == 0 || waited * 10 < idle * 3 {
        return String::new();
    }
    let calls: Vec<String> = dev
        .os_waits
        .iter()
        .take(2)
        .map(|(n, t)| format!("{n} {}", format_ms(*t)))
        .collect();
    format!(
        "; the launching thread was blocked in OS waits for {} of it ({})",
        format_ms(waited),
        calls.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::super::testing::{findings_of, scenario};
    use super::*;

    #[test]
    fn a_cpu_slower_than_the_gpu_is_host_compute_and_the_default_loop_is_not() {
        let f = findings_of(&HostCompute, &scenario("slow_python_between_kernels"));
        assert!(!f.is_empty(), "{f:#?}");
        // The largest part is the dispatch of the model's ops; the optimizer step and the
        // Python between them are parts of their own, each with its own fix.
        assert_eq!(f[0].sub_cause, Some(HostWork::FrameworkDispatch), "{f:#?}");
        assert!(f[0].title.contains("aten::linear"), "{}", f[0].title);
        assert!(f
            .iter()
            .all(|x| x.estimated_win_percent >= HOST_COMPUTE_FINDING_PERCENT));
        let optimizer = f.iter().find(|x| x.sub_cause == Some(HostWork::Optimizer));
        let optimizer = optimizer.expect("an optimizer part");
        assert!(
            optimizer.title.contains("Optimizer.step#SGD.step"),
            "{}",
            optimizer.title
        );
        assert!(optimizer.fix.contains("SGD"), "{}", optimizer.fix);
        let subs: std::collections::BTreeSet<_> = f.iter().map(|x| x.sub_cause).collect();
        assert_eq!(
            crate::vocabulary::ops::optimizer_class("Optimizer.step#Shampoo.step"),
            Some("Shampoo")
        );
        assert_eq!(
            crate::vocabulary::ops::optimizer_class("Optimizer.zero_grad#SGD.zero_grad"),
            Some("SGD")
        );
        assert_eq!(
            crate::vocabulary::ops::optimizer_class("## optimizer ##"),
            None
        );
        assert_eq!(subs.len(), f.len(), "one finding per sub-cause: {f:#?}");

        let twin = findings_of(&HostCompute, &scenario("no_device_sync"));
        assert!(twin.is_empty(), "{twin:#?}");
    }

    /// Ten steps, each a `factory` op of `factory_us` (with a kernel launch inside it when
    /// `on_gpu`), then a launch of a 1 ms kernel.
    fn factory_loop(factory_us: i64, on_gpu: bool) -> tracelens_model::Trace {
        let mut events = Vec::new();
        let step_us = factory_us + 1_200;
        for i in 0..10i64 {
            let t = i * step_us;
            let c = 2 * i + 1;
            events.push(format!(r#"{{"ph":"X","cat":"cpu_op","name":"aten::randn","pid":1,"tid":1,"ts":{t},"dur":{factory_us}}}"#));
            if on_gpu {
                events.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"correlation":{c}}}}}"#, t + 1));
                events.push(format!(r#"{{"ph":"X","cat":"kernel","name":"normal_kernel","pid":0,"tid":7,"ts":{},"dur":{},"args":{{"correlation":{c},"device":0,"stream":7}}}}"#, t + 10, factory_us - 20));
            }
            let l = t + factory_us + 10;
            events.push(format!(
                r#"{{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":{l},"dur":20}}"#
            ));
            events.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"correlation":{}}}}}"#, l + 5, c + 1));
            events.push(format!(r#"{{"ph":"X","cat":"kernel","name":"sgemm_kernel","pid":0,"tid":7,"ts":{},"dur":1000,"args":{{"correlation":{},"device":0,"stream":7}}}}"#, l + 30, c + 1));
        }
        let text = format!(r#"{{"traceEvents":[{}]}}"#, events.join(","));
        let path = std::path::Path::new("factory_loop.json");
        tracelens_kineto::import_reader(std::io::Cursor::new(text), path, 0, None).unwrap()
    }

    #[test]
    fn a_factory_op_on_cpu_tensors_is_cpu_work_and_its_gpu_twin_is_not() {
        let f = findings_of(&HostCompute, &factory_loop(5_000, false));
        let cpu = f
            .iter()
            .find(|x| x.sub_cause == Some(HostWork::CpuTensorOps))
            .unwrap_or_else(|| panic!("{f:#?}"));
        assert!(cpu.title.contains("aten::randn"), "{}", cpu.title);
        assert!(cpu.fix.contains("device=\"cuda\""), "{}", cpu.fix);
        assert_eq!(cpu.lever, None, "not a launch-overhead fix: {}", cpu.fix);
        // The same op launching its kernel: the GPU is busy with it, and no CPU-tensor part.
        let twin = findings_of(&HostCompute, &factory_loop(5_000, true));
        assert!(
            twin.iter()
                .all(|x| x.sub_cause != Some(HostWork::CpuTensorOps)),
            "{twin:#?}"
        );
    }

    /// Ten iterations of a runtime-only trace (no CPU ops): a 100 µs kernel, then, while the
    /// GPU waits, `calls` (name, µs) back to back and 100 µs of nothing recorded before the
    /// next launch.
    fn api_only_loop(calls: &[(&str, i64)]) -> tracelens_model::Trace {
        let mut events = Vec::new();
        let busy: i64 = calls.iter().map(|c| c.1).sum();
        let step_us = 120 + busy + 100;
        for i in 0..10i64 {
            let t = i * step_us;
            let c = i + 1;
            events.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{t},"dur":5,"args":{{"correlation":{c}}}}}"#));
            events.push(format!(r#"{{"ph":"X","cat":"kernel","name":"step_kernel","pid":0,"tid":7,"ts":{},"dur":100,"args":{{"correlation":{c},"device":0,"stream":7}}}}"#, t + 10));
            let mut at = t + 120;
            for (name, dur) in calls {
                events.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"{name}","pid":1,"tid":1,"ts":{at},"dur":{dur}}}"#));
                at += dur;
            }
        }
        let text = format!(r#"{{"traceEvents":[{}]}}"#, events.join(","));
        let path = std::path::Path::new("api_only_loop.json");
        tracelens_kineto::import_reader(std::io::Cursor::new(text), path, 0, None).unwrap()
    }

    #[test]
    fn idle_inside_recorded_allocations_is_allocation_and_uncovered_idle_is_not_recorded() {
        let f = findings_of(
            &HostCompute,
            &api_only_loop(&[("cudaMalloc", 300), ("cudaFree", 200)]),
        );
        let alloc = f
            .iter()
            .find(|x| x.sub_cause == Some(HostWork::Allocation))
            .unwrap_or_else(|| panic!("{f:#?}"));
        assert_eq!(f[0].sub_cause, Some(HostWork::Allocation), "{f:#?}");
        assert!(alloc.title.contains("cudaMalloc"), "{}", alloc.title);
        assert!(alloc.fix.contains("once"), "{}", alloc.fix);
        // What no call covers stays unrecorded work, and is the smaller part.
        let rest = f
            .iter()
            .find(|x| x.sub_cause == Some(HostWork::NotRecorded))
            .unwrap_or_else(|| panic!("{f:#?}"));
        assert!(rest.estimated_win_ns < alloc.estimated_win_ns, "{f:#?}");
        // Set-up calls in the loop are told to move out of it, not to record CPU work.
        let queries = findings_of(
            &HostCompute,
            &api_only_loop(&[("cudaGetDeviceProperties", 400)]),
        );
        assert_eq!(
            queries[0].sub_cause,
            Some(HostWork::ApiCalls),
            "{queries:#?}"
        );
        assert!(
            queries[0].fix.contains("cudaGetDeviceProperties"),
            "{}",
            queries[0].fix
        );
        // The twin with nothing recorded in the gap: all of it is unrecorded CPU work.
        let twin = findings_of(&HostCompute, &api_only_loop(&[]));
        assert!(
            twin.iter()
                .all(|x| x.sub_cause == Some(HostWork::NotRecorded)),
            "{twin:#?}"
        );
    }
}
