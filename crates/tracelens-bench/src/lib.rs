//! A generator of realistic synthetic Kineto traces, for benchmarks.
//!
//! Each step mimics a PyTorch training step recorded with `with_stack=True`: a DataLoader
//! wait, a pageable input copy with a stream sync, a forward and backward pass of ATen ops
//! each launching kernels (with `ac2g` flows), an optimizer step, a `.item()` sync and
//! allocator `[memory]` instants. Proportions follow real traces (python_function ≈ 2×
//! cpu_op, one runtime call per 2 ops, kernels ≈ launches, two flow events per launch).

pub mod hostile;
pub mod measure;
pub mod peers;

/// The value after `--name` in a command line, if given.
#[must_use]
pub fn option(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

use std::io::{self, Write};

/// Deterministic xorshift generator (no dependency, stable across platforms).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// A position below `n`.
    fn below(&mut self, n: usize) -> usize {
        let n = u64::try_from(n).unwrap_or(u64::MAX).max(1);
        usize::try_from(self.next() % n).unwrap_or(0)
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo)
    }
}

const KERNELS: [&str; 6] = [
    "ampere_sgemm_128x64_nn",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
    "void cudnn::cnn::conv2d_grouped_direct_kernel<false, true, false, false, 0, 0, int, float, float, float, float, float, float>(cudnn::cnn::GroupedDirectFpropParams, float const*, float const*, float*, float, float, float const*, float const*, cudnnActivationStruct)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>)",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    "void at::native::(anonymous namespace)::batch_norm_collect_statistics_kernel<float, float, float, 512>(at::GenericPackedTensorAccessor<float const, 3, at::RestrictPtrTraits, int>)",
];
const OPS: [&str; 6] = [
    "aten::linear",
    "aten::add",
    "aten::conv2d",
    "aten::mean",
    "aten::matmul",
    "aten::batch_norm",
];

/// Writes a trace of about `target_bytes` (at least one step) and returns the step count.
pub fn generate(out: &mut dyn Write, target_bytes: u64, seed: u64) -> io::Result<u64> {
    let mut w = Counting {
        inner: out,
        bytes: 0,
    };
    let mut rng = Rng(seed | 1);
    write!(
        w,
        "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{{\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 85018279936, \"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132}}],\n  \"cupti_version\": 22, \"cuda_runtime_version\": 12040, \"with_stack\": 1,\n  \"baseTimeNanoseconds\": 1767189312000000000,\n  \"traceEvents\": [\n"
    )?;
    let (pid, tid) = (4242, 4242);
    let mut ts_ns: u64 = 1_000_000_000;
    let mut gpu_ns: u64 = ts_ns;
    let mut corr: u64 = 1;
    let mut ext: u64 = 1;
    let mut py: u64 = 1;
    let mut step = 0u64;
    let mut first = true;
    let mut ev = |w: &mut Counting, text: String| -> io::Result<()> {
        if !first {
            w.write_all(b",\n")?;
        }
        first = false;
        w.write_all(text.as_bytes())
    };
    let us = |ns: u64| format!("{}.{:03}", ns / 1000, ns % 1000);
    while step == 0 || w.bytes < target_bytes {
        let step_start = ts_ns;
        let step_events_at = ts_ns;
        // DataLoader wait and a pageable input copy with a sync.
        let dl = rng.range(200_000, 2_000_000);
        ev(&mut w, format!("{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {ext}}}}}", us(ts_ns), us(dl)))?;
        ext += 1;
        ts_ns += dl;
        let copy_start = ts_ns;
        ev(&mut w, format!("{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::to\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": 90.000, \"args\": {{\"External id\": {ext}, \"Input Dims\": [[256, 3, 224, 224]], \"Input type\": [\"float\"]}}}}", us(copy_start)))?;
        ev(&mut w, format!("{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaMemcpyAsync\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": 40.000, \"args\": {{\"cbid\": 41, \"correlation\": {corr}, \"External id\": {ext}}}}}", us(copy_start + 5_000)))?;
        gpu_ns = gpu_ns.max(copy_start + 10_000);
        ev(&mut w, format!("{{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pageable -> Device)\", \"pid\": 0, \"tid\": 7, \"ts\": {}, \"dur\": 30.000, \"args\": {{\"External id\": {ext}, \"device\": 0, \"context\": 1, \"stream\": 7, \"correlation\": {corr}, \"bytes\": 154140672, \"memory bandwidth (GB/s)\": 5.1}}}}", us(gpu_ns)))?;
        gpu_ns += 30_000;
        corr += 1;
        ev(&mut w, format!("{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaStreamSynchronize\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": 40.000, \"args\": {{\"cbid\": 131, \"correlation\": {corr}, \"External id\": {ext}}}}}", us(copy_start + 46_000)))?;
        corr += 1;
        ext += 1;
        ts_ns = copy_start + 100_000;
        // Forward and backward: ops under Python frames, each launching kernels.
        let n_ops = rng.range(300, 500);
        for i in 0..n_ops {
            let frame_dur = 30_000;
            let file_line = 40 + (i % 50);
            ev(&mut w, format!("{{\"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"model.py({file_line}): forward\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": {}, \"args\": {{\"Python parent id\": {}, \"Python id\": {py}, \"Python thread\": 0}}}}", us(ts_ns), us(frame_dur), py.saturating_sub(1)))?;
            py += 1;
            ev(&mut w, format!("{{\"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"torch/nn/modules/module.py(1762): _call_impl\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": {}, \"args\": {{\"Python parent id\": {}, \"Python id\": {py}, \"Python thread\": 0}}}}", us(ts_ns + 500), us(frame_dur - 1_000), py - 1))?;
            py += 1;
            let op = OPS[rng.below(OPS.len())];
            ev(&mut w, format!("{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"{op}\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": 25.000, \"args\": {{\"External id\": {ext}, \"Record function id\": 0, \"Sequence number\": {i}, \"Fwd thread id\": 0, \"Input Dims\": [[256, 512], [512, 512]], \"Input type\": [\"float\", \"float\"], \"Ev Idx\": {i}}}}}", us(ts_ns + 1_000)))?;
            let launch_at = ts_ns + 12_000;
            ev(&mut w, format!("{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": 6.000, \"args\": {{\"cbid\": 211, \"correlation\": {corr}, \"External id\": {ext}}}}}", us(launch_at)))?;
            ev(&mut w, format!("{{\"ph\": \"s\", \"id\": {corr}, \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"cat\": \"ac2g\", \"name\": \"ac2g\"}}", us(launch_at)))?;
            let kdur = rng.range(5_000, 60_000);
            gpu_ns = gpu_ns.max(launch_at + 8_000);
            let k = KERNELS[rng.below(KERNELS.len())];
            ev(&mut w, format!("{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{k}\", \"pid\": 0, \"tid\": 7, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {ext}, \"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": 7, \"correlation\": {corr}, \"registers per thread\": 128, \"shared memory\": 49152, \"blocks per SM\": 2.5, \"warps per SM\": 10.0, \"grid\": [132, 1, 1], \"block\": [256, 1, 1], \"est. achieved occupancy %\": 25}}}}", us(gpu_ns), us(kdur)))?;
            ev(&mut w, format!("{{\"ph\": \"f\", \"id\": {corr}, \"pid\": 0, \"tid\": 7, \"ts\": {}, \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}}", us(gpu_ns)))?;
            gpu_ns += kdur;
            corr += 1;
            if i % 8 == 0 {
                ev(&mut w, format!("{{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"args\": {{\"Total Reserved\": 2097152000, \"Total Allocated\": 1048576000, \"Bytes\": 524288, \"Addr\": 139654046813696, \"Device Id\": 0, \"Device Type\": 1, \"Ev Idx\": {i}}}}}", us(ts_ns + 2_000)))?;
            }
            ext += 1;
            ts_ns += frame_dur + 1_000;
        }
        // loss.item(): a blocking sync.
        ev(&mut w, format!("{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::item\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": 50.000, \"args\": {{\"External id\": {ext}}}}}", us(ts_ns)))?;
        ev(&mut w, format!("{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaStreamSynchronize\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": 40.000, \"args\": {{\"cbid\": 131, \"correlation\": {corr}, \"External id\": {ext}}}}}", us(ts_ns + 5_000)))?;
        corr += 1;
        ext += 1;
        ts_ns = ts_ns.max(gpu_ns) + 60_000;
        ev(&mut w, format!("{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#{step}\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {ext}}}}}", us(step_events_at), us(ts_ns - step_start)))?;
        ext += 1;
        step += 1;
    }
    for (name, tid_, label) in [
        ("process_name", 0, "python3"),
        ("thread_name", tid, "thread 4242 (python3)"),
    ] {
        ev(&mut w, format!("{{\"name\": \"{name}\", \"ph\": \"M\", \"ts\": 1000000.000, \"pid\": {pid}, \"tid\": {tid_}, \"args\": {{\"name\": \"{label}\"}}}}"))?;
    }
    ev(&mut w, "{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 1000000.000, \"pid\": 0, \"tid\": 7, \"args\": {\"name\": \"stream 7 \"}}".to_string())?;
    write!(w, "\n  ],\n  \"traceName\": \"synthetic.json\"\n}}\n")?;
    Ok(step)
}

struct Counting<'a> {
    inner: &'a mut dyn Write,
    bytes: u64,
}

impl Write for Counting<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_at_least_the_target_and_is_deterministic() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let steps = generate(&mut a, 200_000, 7).unwrap();
        generate(&mut b, 200_000, 7).unwrap();
        assert!(steps >= 1);
        assert!(a.len() >= 200_000);
        assert_eq!(a, b);
        assert!(a.ends_with(b"}\n"));
    }
}
