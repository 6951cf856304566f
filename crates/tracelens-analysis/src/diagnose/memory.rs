//! What to do about GPU memory: memory kept from step to step (a leak), activations or
//! persistent state filling a device near its limit, the allocator's unused reserve, and a
//! cache emptied inside the loop — each with its figures, the bytes a fix would free where
//! the trace says, and a fix that exists in the trace's PyTorch version and for its vendor.
//! The `[memory]` samples come from PyTorch's profiler only, so the advice is PyTorch's.

use crate::measure::environment::{Framework, Hardware, TorchVersion};
use crate::views::memory::DeviceMemory;
use crate::views::memory_blocks::AllocationSite;
use crate::vocabulary::devices::Vendor;
use serde::Serialize;
use tracelens_model::format_bytes;

/// `expandable_segments` in `PYTORCH_CUDA_ALLOC_CONF`.
const EXPANDABLE_CUDA: TorchVersion = TorchVersion::new(2, 1);
/// `expandable_segments` on ROCm (`PYTORCH_HIP_ALLOC_CONF`, ROCm 7.0 and later).
const EXPANDABLE_ROCM: TorchVersion = TorchVersion::new(2, 11);
/// `use_reentrant=False` in `torch.utils.checkpoint.checkpoint`.
const NON_REENTRANT_CHECKPOINT: TorchVersion = TorchVersion::new(1, 11);
/// Held at or above this share of the device's memory, the device is near its limit.
const TIGHT_PERCENT: f64 = 85.0;
/// Growth per step below this is noise (1 MiB).
const GROWTH_FLOOR_BYTES: i64 = 1 << 20;
/// Unused reserve below this at the peak is not worth a setting (512 MiB).
const SLACK_FLOOR_BYTES: i64 = 512 << 20;

/// What kind of memory problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryProblem {
    /// Memory alive at step ends grows: something keeps tensors from every step.
    Leak,
    /// Near the device's limit with activations the largest part of the peak.
    Activations,
    /// Near the device's limit with weights, gradients and optimizer state the largest part.
    PersistentState,
    /// The allocator holds much more than the tensors alive at the peak.
    Fragmentation,
    /// The allocator's cache is emptied inside the loop.
    EmptyCacheInLoop,
    /// A request failed: the run ran out of memory (memory snapshots record it).
    OutOfMemory,
}

/// One problem with its fix.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct MemoryAdvice {
    /// Which problem.
    pub problem: MemoryProblem,
    /// The GPU.
    pub device: i64,
    /// One line, with the numbers.
    pub title: String,
    /// What to change.
    pub fix: String,
    /// A short Python example.
    pub snippet: String,
    /// Bytes the fix would free at the peak (or over the window, for a leak), where the
    /// trace says.
    pub frees_bytes: Option<i64>,
}

/// Where a site is, in words: `aten::add at train.py:57 train_step`.
#[must_use]
pub fn site_words(s: &AllocationSite) -> String {
    match (&s.op, &s.line) {
        (Some(op), Some(line)) => format!("{op} at {line}"),
        (Some(op), None) => op.clone(),
        (None, Some(line)) => line.clone(),
        (None, None) => "no recorded op".into(),
    }
}

/// The memory problems of every device, fitted to the PyTorch version and vendor.
#[must_use]
pub fn advice(memory: &[DeviceMemory], fw: &Framework, hw: &Hardware) -> Vec<MemoryAdvice> {
    let mut out = Vec::new();
    for m in memory {
        if let Some(a) = leak(m) {
            out.push(a);
        }
        out.extend(tight(m, fw));
        if let Some(a) = fragmentation(m, fw, hw) {
            out.push(a);
        }
        if let Some(a) = empty_cache(m) {
            out.push(a);
        }
        if let Some(a) = out_of_memory(m, fw, hw) {
            out.push(a);
        }
    }
    out
}

fn leak(m: &DeviceMemory) -> Option<MemoryAdvice> {
    let g = m.growth.as_ref()?;
    let floor = GROWTH_FLOOR_BYTES.max(m.peak_allocated_bytes / 1000);
    if g.per_step_bytes < floor || g.kept_bytes_per_step < floor / 2 {
        return None;
    }
    let at = g.kept_sites.first().map_or(String::new(), |s| {
        format!(", most allocated at {}", site_words(s))
    });
    Some(MemoryAdvice {
        problem: MemoryProblem::Leak,
        device: m.device,
        title: format!(
            "GPU {}: memory alive at step ends grows {} per step over {} steps; each step keeps {} it never frees{at}",
            m.device,
            format_bytes(g.per_step_bytes),
            g.steps,
            format_bytes(g.kept_bytes_per_step)
        ),
        fix: "Something holds a reference to tensors from every step. At that line, accumulate a Python number (total_loss += loss.item(), once per logging interval) or a detached tensor (loss.detach()), never loss itself, which keeps its autograd graph alive; store .detach().cpu() copies in lists kept for logging or metrics; pass retain_graph=True to backward() only where a second backward needs the graph.".into(),
        snippet: "running_loss += loss.detach()   # not `running_loss += loss`: that keeps every step's graph\nhistory.append(out.detach().cpu())".into(),
        frees_bytes: Some(g.per_step_bytes.saturating_mul(i64::from(g.steps))),
    })
}

/// Activations or persistent state filling a device near its limit.
fn tight(m: &DeviceMemory, fw: &Framework) -> Option<MemoryAdvice> {
    let percent = m.peak_percent()?;
    if percent < TIGHT_PERCENT {
        return None;
    }
    let c = &m.composition.as_ref()?.categories;
    let peak = m.peak_allocated_bytes.max(1);
    let persistent = c
        .persistent
        .saturating_add(c.before_capture)
        .saturating_add(c.gradients);
    let head = format!(
        "GPU {} peaks at {percent:.0} % of its memory ({} held of {})",
        m.device,
        format_bytes(m.peak_held_bytes()),
        format_bytes(m.capacity_bytes.unwrap_or(0))
    );
    if c.activations.saturating_mul(100) / peak >= 40 {
        let call = if fw.at_least(NON_REENTRANT_CHECKPOINT) == Some(false) {
            "checkpoint(block, x)"
        } else {
            "checkpoint(block, x, use_reentrant=False)"
        };
        return Some(MemoryAdvice {
            problem: MemoryProblem::Activations,
            device: m.device,
            title: format!(
                "{head}; activations are {} of the {} allocated at the peak",
                format_bytes(c.activations),
                format_bytes(m.peak_allocated_bytes)
            ),
            fix: format!("Checkpoint the largest blocks (torch.utils.checkpoint.{call}): their activations are recomputed in the backward instead of kept, for about one more forward's time. Checkpointing every block frees up to the activations at the peak; half of them, about half that."),
            snippet: format!("from torch.utils.checkpoint import checkpoint\nfor block in self.blocks:\n    x = {call}"),
            frees_bytes: Some(c.activations),
        });
    }
    if persistent.saturating_mul(100) / peak >= 50 && c.gradients > 0 {
        return Some(MemoryAdvice {
            problem: MemoryProblem::PersistentState,
            device: m.device,
            title: format!(
                "{head}; weights, gradients and optimizer state held across steps are {} of the {} allocated at the peak",
                format_bytes(persistent),
                format_bytes(m.peak_allocated_bytes)
            ),
            fix: "Shard what every data-parallel rank holds a copy of: optimizer state and gradients with ZeRO (torch.distributed.optim.ZeroRedundancyOptimizer, DeepSpeed stage 1–2) or everything with FSDP; on one GPU, an 8-bit optimizer (bitsandbytes) keeps Adam's two states in a quarter of the memory, and foreach=False lowers the optimizer step's own transient peak.".into(),
            snippet: "from torch.distributed.optim import ZeroRedundancyOptimizer\nopt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=lr)".into(),
            frees_bytes: None,
        });
    }
    None
}

fn fragmentation(m: &DeviceMemory, fw: &Framework, hw: &Hardware) -> Option<MemoryAdvice> {
    // Expandable segments already on: the cache does not split fixed segments.
    if m.allocator.as_ref().and_then(|a| a.expandable_setting) == Some(true) {
        return None;
    }
    let reserved = m.reserved_at_peak_bytes?;
    let slack = reserved.saturating_sub(m.peak_allocated_bytes);
    if slack < SLACK_FLOOR_BYTES || slack.saturating_mul(4) < reserved {
        return None;
    }
    let (fix, snippet) = allocator_settings(fw, hw);
    Some(MemoryAdvice {
        problem: MemoryProblem::Fragmentation,
        device: m.device,
        title: format!(
            "GPU {}: the allocator holds {} reserved at the peak but only {} is in tensors; {} ({:.0} %) is cached and unused",
            m.device,
            format_bytes(reserved),
            format_bytes(m.peak_allocated_bytes),
            format_bytes(slack),
            slack as f64 * 100.0 / reserved.max(1) as f64
        ),
        fix,
        snippet,
        frees_bytes: Some(slack),
    })
}

/// The allocator settings that reuse cached memory better, in the vendor's environment
/// variable: expandable segments where the version has them, else a split limit and a
/// collection threshold.
fn allocator_settings(fw: &Framework, hw: &Hardware) -> (String, String) {
    let (var, expandable, since) = if hw.vendor == Vendor::Amd {
        (
            "PYTORCH_HIP_ALLOC_CONF",
            fw.at_least(EXPANDABLE_ROCM) == Some(true),
            "",
        )
    } else {
        let known = fw.at_least(EXPANDABLE_CUDA);
        let since = if known.is_none() {
            " (PyTorch 2.1 and later)"
        } else {
            ""
        };
        ("PYTORCH_CUDA_ALLOC_CONF", known != Some(false), since)
    };
    if expandable {
        (
            format!("Let the allocator grow segments instead of caching many fixed ones: {var}=expandable_segments:True{since} (set before the first CUDA call). Blocks of changing sizes (variable sequence lengths, a changing batch) then reuse one segment."),
            format!("{var}=expandable_segments:True python train.py"),
        )
    } else {
        (
            format!("Stop the allocator from splitting large cached blocks and let it return unused ones before it grows: {var}=max_split_size_mb:512,garbage_collection_threshold:0.8. Padding inputs to a few fixed sizes removes most of the size churn."),
            format!("{var}=max_split_size_mb:512,garbage_collection_threshold:0.8 python train.py"),
        )
    }
}

fn empty_cache(m: &DeviceMemory) -> Option<MemoryAdvice> {
    let in_steps = m.reserved_drop_steps;
    if in_steps < 2 {
        return None;
    }
    Some(MemoryAdvice {
        problem: MemoryProblem::EmptyCacheInLoop,
        device: m.device,
        title: format!(
            "GPU {}: the allocator's reserve shrank {} times in {in_steps} steps: the cache is emptied inside the loop and every step allocates from the driver again",
            m.device, m.reserved_drops
        ),
        fix: "Remove torch.cuda.empty_cache() (and gc.collect() around it) from the training loop: the caching allocator reuses freed blocks, and emptying it frees every cached segment (cudaFree/hipFree synchronize the device) and the next step allocates them from the driver again. Call it once between phases (after evaluation) if another process needs the memory.".into(),
        snippet: "for batch in loader:\n    train_step(batch)\n    # torch.cuda.empty_cache()   # remove from the loop".into(),
        frees_bytes: None,
    })
}

fn out_of_memory(m: &DeviceMemory, fw: &Framework, hw: &Hardware) -> Option<MemoryAdvice> {
    let a = m.allocator.as_ref()?;
    let first = a.out_of_memory.first()?;
    let cached_unused = first
        .reserved_bytes
        .map_or(0, |r| r.saturating_sub(first.allocated_bytes).max(0));
    let free = first.device_free_bytes.map_or(String::new(), |f| {
        format!(", {} free on the device", format_bytes(f))
    });
    let at = first.alive_sites.first().map_or(String::new(), |s| {
        format!(
            "; most of what was alive then was allocated at {}",
            site_words(s)
        )
    });
    let title = format!(
        "GPU {} ran out of memory {}: a request of {} failed with {} allocated and {} reserved{free}{at}",
        m.device,
        if a.out_of_memory.len() == 1 { "once".to_string() } else { format!("{} times", a.out_of_memory.len()) },
        format_bytes(first.requested_bytes),
        format_bytes(first.allocated_bytes),
        format_bytes(first.reserved_bytes.unwrap_or(first.allocated_bytes)),
    );
    // The cache held room for the request, but not in one block: fragmentation.
    let (fix, snippet) = if cached_unused >= first.requested_bytes
        && a.expandable_setting != Some(true)
    {
        let (settings, snippet) = allocator_settings(fw, hw);
        (
            format!("The cache held {} unused, more than the request, but not in one block: the memory is fragmented. {settings}", format_bytes(cached_unused)),
            snippet,
        )
    } else {
        (
            "The tensors alive then need more than the device has: free what the step no longer needs (del references, optimizer.zero_grad(set_to_none=True)), checkpoint the largest blocks' activations (torch.utils.checkpoint), run the forward under torch.autocast for half-size activations, or lower the batch size and accumulate gradients.".to_string(),
            "from torch.utils.checkpoint import checkpoint\nx = checkpoint(block, x, use_reentrant=False)".to_string(),
        )
    };
    Some(MemoryAdvice {
        problem: MemoryProblem::OutOfMemory,
        device: m.device,
        title,
        fix,
        snippet,
        frees_bytes: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::memory::PeakBasis;
    use crate::views::memory_blocks::CategoryBytes;
    use crate::views::memory_timeline::PeakComposition;

    const GB: i64 = 1_000_000_000;

    /// A device of 80 GB whose peak holds `categories` (allocated = their sum) and `reserved`.
    fn device(categories: CategoryBytes, reserved: i64) -> DeviceMemory {
        let allocated = categories.total();
        DeviceMemory {
            device: 0,
            basis: PeakBasis::AllocatorTotals,
            peak_allocated_bytes: allocated,
            peak_reserved_bytes: Some(reserved),
            peak_at_ns: 0,
            peak_op: None,
            capacity_bytes: Some(80 * GB),
            allocations: 1,
            frees: 0,
            allocated_bytes: allocated,
            steps: Vec::new(),
            reserved_at_peak_bytes: Some(reserved),
            points: Vec::new(),
            composition: Some(PeakComposition {
                categories,
                sites: Vec::new(),
            }),
            growth: None,
            reserved_drops: 0,
            reserved_drop_steps: 0,
            batch_fit: None,
            allocator: None,
        }
    }

    fn problems(m: &DeviceMemory) -> Vec<MemoryProblem> {
        advice(
            std::slice::from_ref(m),
            &Framework::default(),
            &Hardware::default(),
        )
        .into_iter()
        .map(|a| a.problem)
        .collect()
    }

    #[test]
    fn activations_near_the_limit_get_checkpointing_and_the_roomy_twin_nothing() {
        let tight = CategoryBytes {
            before_capture: 20 * GB,
            activations: 50 * GB,
            ..CategoryBytes::default()
        };
        let m = device(tight, 72 * GB);
        assert_eq!(problems(&m), [MemoryProblem::Activations]);
        let a = &advice(&[m], &Framework::default(), &Hardware::default())[0];
        assert!(a.fix.contains("torch.utils.checkpoint"), "{}", a.fix);
        assert_eq!(a.frees_bytes, Some(50 * GB));
        // The same split at a quarter of the device: nothing to say.
        let roomy = CategoryBytes {
            before_capture: 5 * GB,
            activations: 12 * GB,
            ..CategoryBytes::default()
        };
        assert!(problems(&device(roomy, 18 * GB)).is_empty());
    }

    #[test]
    fn persistent_state_near_the_limit_gets_sharding_only_in_training() {
        let training = CategoryBytes {
            before_capture: 40 * GB,
            persistent: 20 * GB,
            gradients: 8 * GB,
            activations: 2 * GB,
            ..CategoryBytes::default()
        };
        assert_eq!(
            problems(&device(training, 72 * GB)),
            [MemoryProblem::PersistentState]
        );
        // No gradients: an inference run's weights get no optimizer advice.
        let inference = CategoryBytes {
            gradients: 0,
            persistent: 28 * GB,
            ..training
        };
        assert!(problems(&device(inference, 72 * GB)).is_empty());
    }

    #[test]
    fn an_unused_reserve_and_an_emptied_cache_are_told() {
        let c = CategoryBytes {
            before_capture: 4 * GB,
            activations: 2 * GB,
            ..CategoryBytes::default()
        };
        // 6 GB in tensors, 12 GB reserved: 6 GB cached unused.
        let fragmented = device(c, 12 * GB);
        assert_eq!(problems(&fragmented), [MemoryProblem::Fragmentation]);
        let tidy = device(c, 6 * GB + 100_000_000);
        assert!(problems(&tidy).is_empty());
        let emptied = DeviceMemory {
            reserved_drops: 6,
            reserved_drop_steps: 3,
            ..tidy.clone()
        };
        assert_eq!(problems(&emptied), [MemoryProblem::EmptyCacheInLoop]);
        // One drop (after evaluation, say) is not a loop.
        let once = DeviceMemory {
            reserved_drops: 1,
            reserved_drop_steps: 1,
            ..tidy
        };
        assert!(problems(&once).is_empty());
    }
}
