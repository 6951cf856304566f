//! A tiny training-loop simulator that writes Kineto traces with known problems.
//!
//! It keeps a CPU clock and a GPU clock: launches are queued behind earlier GPU work, blocking
//! calls wait until the queue drains, and every event is written the way PyTorch 2.4+ writes
//! it (float µs, `ac2g` flows, `python_function` frames, `ProfilerStep#N` on both sides).

use std::fmt::Write;

/// How each step gets its batch.
#[derive(Clone, Copy, Debug)]
pub enum Loader {
    /// No DataLoader range.
    None,
    /// `num_workers=0`: loading takes this many µs on the training thread.
    SingleProcess(f64),
    /// Worker processes: the main thread waits this many µs for a batch.
    MultiProcess(f64),
}

/// How the input reaches the GPU.
#[derive(Clone, Copy, Debug)]
pub enum InputCopy {
    /// No input copy.
    None,
    /// `.to(device)` from pageable memory: the call blocks until the queue drains.
    PageableSync,
    /// `pin_memory=True` + `.to(device, non_blocking=True)`.
    PinnedNonBlocking,
}

/// One simulated training run.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Profiled steps.
    pub steps: usize,
    /// Batch loading.
    pub loader: Loader,
    /// Input copy.
    pub input_copy: InputCopy,
    /// `loss.item()` every this many steps (at the end of the step); `None` for never.
    pub item_every: Option<usize>,
    /// `torch.cuda.synchronize()` at the end of every step, followed by CPU bookkeeping.
    pub device_sync_every_step: bool,
    /// PyTorch's caching allocator off (`PYTORCH_NO_HIP_MEMORY_CACHING=1`) on ROCm: every step
    /// frees its activations with `hipFree`, which waits for the device and then unmaps the
    /// memory (10 ms), inside a backward op.
    pub allocator_free_every_step: bool,
    /// Forward kernels per step.
    pub kernels: usize,
    /// Kernel duration, µs.
    pub kernel_us: f64,
    /// Launch call duration, µs.
    pub launch_us: f64,
    /// CPU time of each op around its launch, µs.
    pub op_cpu_us: f64,
    /// Forward pass replayed as one CUDA graph, of which only every `n`-th kernel is recorded.
    pub graph_replay_recorded_every: Option<usize>,
    /// Forward pass compiled with `torch.compile` (PyTorch 2.5+ names).
    pub compiled: Option<Compiled>,
    /// `profile_memory=True`: the allocator's `[memory]` samples, with a backward pass.
    pub memory: Option<MemoryPlan>,
}

/// What the allocator sees, recorded with `profile_memory=True` (PyTorch 2.x fields: address,
/// bytes, totals allocated and reserved). 2 GB of weights are allocated before the profiler
/// starts; each forward op allocates an 8 MB activation that a backward op
/// (`autograd::engine::evaluate_function: AddmmBackward0`) frees; each backward op allocates
/// and frees a 2 MB temporary; step 0's backward allocates 4 MB gradients kept across steps
/// (`zero_grad(set_to_none=False)`) and step 0's optimizer 16 MB of state.
#[derive(Clone, Copy, Debug)]
pub struct MemoryPlan {
    /// `running_loss += loss` at `train.py:57`: each step's `aten::add` allocates this many
    /// bytes that are never freed. 0 for the fixed twin (`running_loss += loss.item()`: the
    /// same op's result is freed inside it).
    pub kept_per_step: i64,
}

/// The allocator's state in the simulation.
#[derive(Default)]
struct Allocator {
    allocated: i64,
    reserved: i64,
    next_addr: u64,
    ev: u64,
}

/// A `torch.compile`d forward, as PyTorch 2.5+ records it: `TorchDynamo Cache Lookup`, then
/// `Torch-Compiled Region: F/C` around `## Call CompiledFxGraph … ##` and the Inductor
/// kernels' `triton_*` ops, one `aten::mm` with recorded shapes per graph.
#[derive(Clone, Copy, Debug)]
pub struct Compiled {
    /// Graph breaks in the forward: each runs one eager `aten::index` and enters the next
    /// graph through a resume frame nested in the region before it.
    pub graph_breaks: usize,
    /// The step in which the batch dimension changes (32 → 48) and frame 0 is compiled again
    /// (20 ms of `_compile.compile_inner (dynamo_timed)`); every later region is `0/1`.
    pub recompile_at_step: Option<usize>,
    /// `mode="reduce-overhead"`: each graph call replays one CUDA graph, except the first
    /// call after a recompile, which runs its kernels one by one (CUDA graph trees warm a new
    /// graph up before recording it).
    pub cuda_graphs: bool,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            steps: 6,
            loader: Loader::None,
            input_copy: InputCopy::None,
            item_every: None,
            device_sync_every_step: false,
            allocator_free_every_step: false,
            kernels: 40,
            kernel_us: 200.0,
            launch_us: 6.0,
            op_cpu_us: 15.0,
            graph_replay_recorded_every: None,
            compiled: None,
            memory: None,
        }
    }
}

struct Sim {
    out: String,
    first: bool,
    t: i64,
    gpu_free: i64,
    corr: u64,
    alloc: Allocator,
}

const PID: u32 = 4242;

fn us(ns: i64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// A count as a multiplier of nanoseconds.
fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[expect(
    clippy::cast_possible_truncation,
    reason = "scenario times are small and finite; the cast saturates"
)]
fn ns(us: f64) -> i64 {
    (us * 1000.0).round() as i64
}

impl Sim {
    fn ev(&mut self, text: String) {
        if !self.first {
            self.out.push_str(",\n");
        }
        self.first = false;
        self.out.push_str("  ");
        self.out.push_str(&text);
    }

    fn cpu(&mut self, cat: &str, name: &str, start: i64, end: i64) {
        self.ev(format!(
            r#"{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": {PID}, "tid": {PID}, "ts": {}, "dur": {}}}"#,
            us(start),
            us(end - start)
        ));
    }

    /// A runtime call at `start` lasting `dur`, launching `gpu` ops `(name, cat, start, dur, extra args)`.
    fn launch(&mut self, api: &str, start: i64, dur: i64, gpu: &[(&str, &str, i64, i64, &str)]) {
        self.corr += 1;
        let c = self.corr;
        self.ev(format!(
            r#"{{"ph": "X", "cat": "cuda_runtime", "name": "{api}", "pid": {PID}, "tid": {PID}, "ts": {}, "dur": {}, "args": {{"correlation": {c}}}}}"#,
            us(start),
            us(dur)
        ));
        if !gpu.is_empty() {
            self.ev(format!(
                r#"{{"ph": "s", "id": {c}, "pid": {PID}, "tid": {PID}, "ts": {}, "cat": "ac2g", "name": "ac2g"}}"#,
                us(start)
            ));
        }
        for &(name, cat, s, d, extra) in gpu {
            self.ev(format!(
                r#"{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": 0, "tid": 7, "ts": {}, "dur": {}, "args": {{"device": 0, "stream": 7, "correlation": {c}{extra}}}}}"#,
                us(s),
                us(d)
            ));
            self.ev(format!(
                r#"{{"ph": "f", "id": {c}, "pid": 0, "tid": 7, "ts": {}, "cat": "ac2g", "name": "ac2g", "bp": "e"}}"#,
                us(s)
            ));
        }
    }

    /// An op with one kernel launch; returns nothing, advances the clocks.
    fn op_with_kernel(&mut self, op: &str, kernel: &str, sc: &Scenario) {
        let start = self.t;
        let launch_at = start + ns(sc.op_cpu_us / 2.0);
        let launch_dur = ns(sc.launch_us);
        let k_start = (launch_at + launch_dur + 2_000).max(self.gpu_free);
        let k_dur = ns(sc.kernel_us);
        self.launch(
            "cudaLaunchKernel",
            launch_at,
            launch_dur,
            &[(kernel, "kernel", k_start, k_dur, "")],
        );
        self.gpu_free = k_start + k_dur;
        let end = launch_at + launch_dur + ns(sc.op_cpu_us / 2.0);
        self.cpu("cpu_op", op, start, end);
        self.t = end + 2_000;
    }

    /// A CPU span with `args` (a JSON object's members, without braces).
    fn cpu_args(&mut self, cat: &str, name: &str, start: i64, end: i64, args: &str) {
        self.ev(format!(
            r#"{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": {PID}, "tid": {PID}, "ts": {}, "dur": {}, "args": {{{args}}}}}"#,
            us(start),
            us(end - start)
        ));
    }

    /// One compiled graph's call: its kernels launched one by one (`cuLaunchKernel` under
    /// `triton_*` ops, one `aten::mm` with shapes), or replayed as one CUDA graph.
    fn graph_call(&mut self, g: usize, kernels: usize, batch: u32, replay: bool, sc: &Scenario) {
        let start = self.t;
        self.t += 3_000;
        let k_dur = ns(sc.kernel_us);
        if replay {
            let at = self.t;
            let first = (at + 12_000).max(self.gpu_free);
            let names: Vec<String> = (0..kernels)
                .map(|k| format!("triton_poi_fused_{g}_{k}"))
                .collect();
            let ops: Vec<(&str, &str, i64, i64, &str)> = names
                .iter()
                .enumerate()
                .map(|(k, n)| (n.as_str(), "kernel", first + count(k) * k_dur, k_dur, ""))
                .collect();
            self.launch("cudaGraphLaunch", at, 10_000, &ops);
            self.gpu_free = first + count(kernels) * k_dur;
            self.t = at + 12_000;
        } else {
            for k in 0..kernels {
                let op_start = self.t;
                if k == 0 {
                    let at = op_start + 4_000;
                    let s = (at + 8_000).max(self.gpu_free);
                    self.launch(
                        "cudaLaunchKernel",
                        at,
                        ns(sc.launch_us),
                        &[("sm90_xmma_gemm_bf16_kernel", "kernel", s, k_dur, "")],
                    );
                    self.gpu_free = s + k_dur;
                    self.t = at + ns(sc.launch_us) + 4_000;
                    self.cpu_args(
                        "cpu_op",
                        "aten::mm",
                        op_start,
                        self.t,
                        &format!(r#""Input Dims": [[{batch}, 512], [512, 512]], "Input type": ["c10::BFloat16", "c10::BFloat16"]"#),
                    );
                } else {
                    let name = format!("triton_poi_fused_{g}_{k}");
                    let at = op_start + 2_000;
                    let s = (at + 8_000).max(self.gpu_free);
                    self.launch(
                        "cuLaunchKernel",
                        at,
                        ns(sc.launch_us),
                        &[(name.as_str(), "kernel", s, k_dur, "")],
                    );
                    self.gpu_free = s + k_dur;
                    self.t = at + ns(sc.launch_us) + 2_000;
                    self.cpu("cpu_op", &name, op_start, self.t);
                }
                self.t += 1_000;
            }
        }
        let end = self.t;
        self.cpu(
            "user_annotation",
            &format!("## Call CompiledFxGraph f{g}graphhash ##"),
            start,
            end,
        );
        self.t = end + 2_000;
    }

    /// A `torch.compile`d forward of `sc.kernels` kernels in `c.graph_breaks + 1` graphs.
    fn compiled_forward(&mut self, c: Compiled, step: usize, sc: &Scenario) {
        let fwd_start = self.t;
        self.t += 1_000;
        let lookup = self.t;
        self.t += 8_000;
        self.cpu("cpu_op", "TorchDynamo Cache Lookup", lookup, self.t);
        let recompiled = c.recompile_at_step.is_some_and(|r| step >= r);
        let first_after = c.recompile_at_step == Some(step);
        if first_after {
            let start = self.t;
            let end = start + 20_000_000;
            self.cpu(
                "cpu_op",
                "_compile.compile_inner (dynamo_timed)",
                start,
                end,
            );
            self.cpu(
                "cpu_op",
                "compile_fx_inner (dynamo_timed)",
                start + 2_000_000,
                end - 1_000_000,
            );
            self.cpu(
                "python_function",
                "torch/_dynamo/convert_frame.py(1000): __call__",
                start - 500,
                end + 500,
            );
            self.t = end + 2_000;
        }
        let compile_id = u32::from(recompiled);
        let batch = if recompiled { 48 } else { 32 };
        let replay = c.cuda_graphs && !first_after;
        let graphs = c.graph_breaks + 1;
        // Regions nest: each break's resume frame runs inside the region before it.
        let mut open = Vec::new();
        for g in 0..graphs {
            let resume = self.t;
            if g > 0 {
                self.t += 1_000;
            }
            let region = self.t;
            self.t += 2_000;
            let pre = self.t;
            self.t += 5_000;
            self.cpu("cpu_op", "Pregraph bytecode", pre, self.t);
            let kernels = sc.kernels / graphs + usize::from(g < sc.kernels % graphs);
            self.graph_call(g, kernels, batch, replay, sc);
            if g + 1 < graphs {
                // The break: an op Dynamo cannot trace runs eagerly.
                let op = self.t;
                let at = op + 5_000;
                let s = (at + 8_000).max(self.gpu_free);
                self.launch(
                    "cudaLaunchKernel",
                    at,
                    ns(sc.launch_us),
                    &[("index_elementwise_kernel", "kernel", s, 20_000, "")],
                );
                self.gpu_free = s + 20_000;
                self.t = at + ns(sc.launch_us) + 30_000;
                self.cpu("cpu_op", "aten::index", op, self.t);
                self.t += 2_000;
            }
            open.push((g, resume, region));
        }
        for (g, resume, region) in open.into_iter().rev() {
            let frame = g;
            let id = if g == 0 { compile_id } else { 0 };
            self.cpu(
                "cpu_op",
                &format!("Torch-Compiled Region: {frame}/{id}"),
                region,
                self.t,
            );
            self.t += 1_000;
            if g > 0 {
                self.cpu(
                    "python_function",
                    &format!("train.py(80): torch_dynamo_resume_in_forward_at_{}", 84 + g),
                    resume,
                    self.t,
                );
                self.t += 1_000;
            }
        }
        self.cpu(
            "python_function",
            "train.py(80): forward",
            fwd_start,
            self.t,
        );
        self.t += 2_000;
    }

    /// A `[memory]` sample at `ts` of `bytes` (negative: a free) at `addr`; returns `addr`.
    fn memory(&mut self, ts: i64, bytes: i64, addr: u64) -> u64 {
        let a = &mut self.alloc;
        a.allocated += bytes;
        // The caching allocator reserves in 20 MB segments and keeps them.
        let needed = (a.allocated + 20_971_519) / 20_971_520 * 20_971_520;
        a.reserved = a.reserved.max(needed);
        a.ev += 1;
        let (allocated, reserved, ev) = (a.allocated, a.reserved, a.ev);
        self.ev(format!(
            r#"{{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": {PID}, "tid": {PID}, "ts": {}, "args": {{"Total Reserved": {reserved}, "Total Allocated": {allocated}, "Bytes": {bytes}, "Addr": {addr}, "Device Id": 0, "Device Type": 1, "Ev Idx": {ev}}}}}"#,
            us(ts)
        ));
        addr
    }

    /// An allocation of `bytes` at `ts` at a new address; returns the address.
    fn allocate(&mut self, ts: i64, bytes: i64) -> u64 {
        self.alloc.next_addr += 1 << 24;
        let addr = 0x7f00_0000_0000 + self.alloc.next_addr;
        self.memory(ts, bytes, addr)
    }

    /// The backward pass of `activations` (addresses of 8 MB blocks, freed in reverse): one
    /// backward op per activation, each with a kernel and a 2 MB temporary; in step 0 each
    /// fourth op also allocates a 4 MB gradient kept across steps.
    fn backward(&mut self, activations: &[u64], step: usize, sc: &Scenario) {
        for (k, &addr) in activations.iter().enumerate().rev() {
            let start = self.t;
            self.op_with_kernel("aten::mm", "sm90_xmma_gemm_bf16_kernel", sc);
            let end = self.t - 2_000;
            let tmp = self.allocate(start + 500, 2_097_152);
            self.memory(start + 1_000, -2_097_152, tmp);
            if step == 0 && k % 4 == 0 {
                self.allocate(start + 1_500, 4_194_304);
            }
            self.memory(end - 500, -8_388_608, addr);
            self.cpu(
                "cpu_op",
                "autograd::engine::evaluate_function: AddmmBackward0",
                start - 100,
                end + 100,
            );
        }
    }

    /// A blocking call that returns when the GPU queue has drained.
    fn blocking(&mut self, api: &str, gpu: &[(&str, &str, i64, &str)]) {
        self.blocking_then(api, gpu, 3_000);
    }

    /// A blocking call that returns `own_ns` after the device drained (its own work, such
    /// as a free unmapping memory).
    fn blocking_then(&mut self, api: &str, gpu: &[(&str, &str, i64, &str)], own_ns: i64) {
        let start = self.t;
        let mut ops = Vec::new();
        let mut free = self.gpu_free;
        for &(name, cat, dur, extra) in gpu {
            let s = (start + 5_000).max(free);
            ops.push((name, cat, s, dur, extra));
            free = s + dur;
        }
        self.gpu_free = free;
        let end = free.max(start + 2_000) + own_ns;
        self.launch(api, start, end - start, &ops);
        self.t = end + 1_000;
    }
}

/// Writes the trace of `sc`.
#[must_use]
pub fn generate(sc: &Scenario) -> String {
    let mut sim = Sim {
        out: String::new(),
        first: true,
        t: 1_000_000,
        gpu_free: 1_000_000,
        corr: 0,
        alloc: Allocator::default(),
    };
    if sc.memory.is_some() {
        // Weights loaded before the profiler started: only the totals know them.
        sim.alloc.allocated = 2_000_000_000;
    }
    for step in 0..sc.steps {
        let step_start = sim.t;
        let gpu_first = sim.gpu_free.max(step_start);
        // optimizer.zero_grad() and Python bookkeeping: CPU only.
        let zero_start = sim.t;
        sim.t += ns(300.0);
        sim.cpu(
            "user_annotation",
            "Optimizer.zero_grad#SGD.zero_grad",
            zero_start,
            sim.t,
        );
        sim.t += 2_000;
        match sc.loader {
            Loader::None => {}
            Loader::SingleProcess(d) | Loader::MultiProcess(d) => {
                let iter = if matches!(sc.loader, Loader::SingleProcess(_)) {
                    "_SingleProcessDataLoaderIter"
                } else {
                    "_MultiProcessingDataLoaderIter"
                };
                let end = sim.t + ns(d);
                sim.cpu(
                    "python_function",
                    "torch/utils/data/dataloader.py(733): __next__",
                    sim.t,
                    end,
                );
                sim.cpu(
                    "user_annotation",
                    &format!("enumerate(DataLoader)#{iter}.__next__"),
                    sim.t,
                    end,
                );
                sim.t = end + 2_000;
            }
        }
        match sc.input_copy {
            InputCopy::None => {}
            InputCopy::PageableSync | InputCopy::PinnedNonBlocking => {
                let pageable = matches!(sc.input_copy, InputCopy::PageableSync);
                let op_start = sim.t;
                sim.t += 3_000;
                let name = if pageable {
                    "Memcpy HtoD (Pageable -> Device)"
                } else {
                    "Memcpy HtoD (Pinned -> Device)"
                };
                let extra = r#", "bytes": 12582912"#;
                if pageable {
                    sim.blocking("cudaMemcpyAsync", &[(name, "gpu_memcpy", 250_000, extra)]);
                    sim.blocking("cudaStreamSynchronize", &[]);
                } else {
                    let at = sim.t;
                    let s = (at + 10_000).max(sim.gpu_free);
                    sim.launch(
                        "cudaMemcpyAsync",
                        at,
                        8_000,
                        &[(name, "gpu_memcpy", s, 250_000, extra)],
                    );
                    sim.gpu_free = s + 250_000;
                    sim.t = at + 10_000;
                }
                let end = sim.t;
                for op in ["aten::to", "aten::_to_copy", "aten::copy_"] {
                    sim.cpu("cpu_op", op, op_start, end);
                }
                sim.cpu("python_function", "train.py(44): train_step", op_start, end);
                sim.t = end + 2_000;
            }
        }
        // Forward and backward.
        match sc.graph_replay_recorded_every {
            None if sc.compiled.is_some() => {
                if let Some(c) = sc.compiled {
                    sim.compiled_forward(c, step, sc);
                }
            }
            None => {
                let mut activations = Vec::new();
                for k in 0..sc.kernels {
                    let op = ["aten::linear", "aten::relu", "aten::add"][k % 3];
                    let start = sim.t;
                    sim.op_with_kernel(op, "sm90_xmma_gemm_bf16_kernel", sc);
                    if sc.memory.is_some() {
                        activations.push(sim.allocate(start + 1_000, 8_388_608));
                    }
                }
                if sc.memory.is_some() {
                    sim.backward(&activations, step, sc);
                }
            }
            Some(every) => {
                let at = sim.t;
                let k_dur = ns(sc.kernel_us);
                let first = (at + 25_000).max(sim.gpu_free);
                let mut ops = Vec::new();
                for k in 0..sc.kernels {
                    if k % every == 0 {
                        ops.push((
                            "graph_kernel",
                            "kernel",
                            first + count(k) * k_dur,
                            k_dur,
                            "",
                        ));
                    }
                }
                sim.launch("cudaGraphLaunch", at, 20_000, &ops);
                sim.cpu("cpu_op", "CUDAGraph.replay", at - 1_000, at + 21_000);
                sim.gpu_free = first + count(sc.kernels) * k_dur;
                sim.t = at + 23_000;
            }
        }
        // Optimizer: CPU bookkeeping, then a few kernels.
        let opt_start = sim.t;
        sim.t += ns(400.0);
        for _ in 0..3 {
            sim.op_with_kernel("aten::_foreach_add_", "multi_tensor_apply_kernel", sc);
        }
        if sc.memory.is_some() && step == 0 {
            sim.allocate(opt_start + 1_000, 16_777_216);
        }
        sim.cpu(
            "user_annotation",
            "Optimizer.step#SGD.step",
            opt_start,
            sim.t,
        );
        if let Some(plan) = sc.memory {
            // running_loss += loss (kept) or += loss.item() (freed in the op).
            let start = sim.t + 1_000;
            let kept = plan.kept_per_step > 0;
            let bytes = if kept { plan.kept_per_step } else { 4_194_304 };
            let addr = sim.allocate(start + 1_000, bytes);
            if !kept {
                sim.memory(start + 3_000, -bytes, addr);
            }
            sim.t = start + 5_000;
            sim.cpu("cpu_op", "aten::add", start, sim.t);
            sim.cpu(
                "python_function",
                "train.py(57): train_step",
                start - 500,
                sim.t + 500,
            );
            sim.t += 2_000;
        }
        if sc.item_every.is_some_and(|n| step % n == n - 1) {
            // total_loss += loss.item(): an async copy into pinned memory, then a stream sync.
            let start = sim.t;
            let at = start + 2_000;
            let s = (at + 5_000).max(sim.gpu_free);
            sim.launch(
                "cudaMemcpyAsync",
                at,
                6_000,
                &[(
                    "Memcpy DtoH (Device -> Pinned)",
                    "gpu_memcpy",
                    s,
                    2_000,
                    r#", "bytes": 4"#,
                )],
            );
            sim.gpu_free = s + 2_000;
            sim.t = at + 7_000;
            sim.blocking("cudaStreamSynchronize", &[]);
            let end = sim.t;
            sim.cpu("cpu_op", "aten::item", start, end);
            sim.cpu(
                "cpu_op",
                "aten::_local_scalar_dense",
                start + 1_000,
                end - 500,
            );
            sim.cpu(
                "python_function",
                "train.py(52): log_loss",
                start - 1_000,
                end + 500,
            );
            sim.t = end + 2_000;
        }
        if sc.allocator_free_every_step {
            let start = sim.t;
            // Unmapping the freed memory takes 10 ms after the device drained: longer than
            // the GPU work queued before it, so it costs GPU time even if it did not wait.
            sim.blocking_then("hipFree", &[], 10_000_000);
            sim.cpu(
                "cpu_op",
                "autograd::engine::evaluate_function: ConvolutionBackward0",
                start - 500,
                sim.t + 500,
            );
            sim.cpu(
                "python_function",
                "train.py(70): train_step",
                start - 1_000,
                sim.t + 1_000,
            );
            // The next op's CPU work starts after the free returned: the GPU waits.
            let work_start = sim.t + 1_000;
            sim.t = work_start + ns(600.0);
            sim.cpu("cpu_op", "aten::add_", work_start, sim.t);
        }
        if sc.device_sync_every_step {
            let start = sim.t;
            sim.blocking("cudaDeviceSynchronize", &[]);
            sim.cpu(
                "python_function",
                "train.py(61): train_step",
                start - 500,
                sim.t,
            );
            // Logging after the sync: the GPU has nothing queued meanwhile.
            let log_start = sim.t;
            sim.t += ns(600.0);
            sim.cpu("cpu_op", "aten::to", log_start, sim.t);
        }
        sim.cpu(
            "user_annotation",
            &format!("ProfilerStep#{step}"),
            step_start,
            sim.t,
        );
        sim.cpu(
            "python_function",
            "train.py(40): train_step",
            step_start,
            sim.t,
        );
        sim.ev(format!(
            r#"{{"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#{step}", "pid": 0, "tid": 7, "ts": {}, "dur": {}}}"#,
            us(gpu_first),
            us(sim.gpu_free.max(gpu_first) - gpu_first)
        ));
        sim.t += 5_000;
    }
    sim.ev(format!(r#"{{"name": "process_name", "ph": "M", "ts": 0, "pid": {PID}, "tid": 0, "args": {{"name": "python3"}}}}"#));
    sim.ev(format!(r#"{{"name": "thread_name", "ph": "M", "ts": 0, "pid": {PID}, "tid": {PID}, "args": {{"name": "thread {PID} (python3)"}}}}"#));
    sim.ev(r#"{"name": "thread_name", "ph": "M", "ts": 0, "pid": 0, "tid": 7, "args": {"name": "stream 7 "}}"#.to_string());
    let mut doc = String::new();
    let _ = write!(
        doc,
        "{{\n \"schemaVersion\": 1,\n \"deviceProperties\": [{{\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\", \"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132}}],\n \"with_stack\": 1,\n \"baseTimeNanoseconds\": 1767189312000000000,\n \"traceEvents\": [\n{}\n ],\n \"traceName\": \"scenario\"\n}}\n",
        sim.out
    );
    doc
}
