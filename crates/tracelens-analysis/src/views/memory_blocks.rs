//! Where one GPU's allocated memory goes: the allocator's samples paired into blocks by
//! address (an allocation and its free), each block's category from its lifetime, and one
//! sweep in time order that gives the level by category over the window, what is alive at the
//! peak and who allocated it, and what stays alive from step to step.
//!
//! The rule for each category (docs/memory.md says the same):
//! - **temporary**: freed on the allocating thread while the op that allocated it (the
//!   outermost op running then) still runs;
//! - **gradient**: allocated in autograd's backward and still alive when the backward ends
//!   (freed by the optimizer, `zero_grad` or a later step, or never);
//! - **activation**: allocated outside the backward (the forward) and freed in the backward;
//! - **persistent**: alive at the end of the step that allocated it (weights, optimizer
//!   state, caches, and anything that leaks);
//! - **alive at capture end**: allocated in the last step (or in a capture without steps)
//!   and not freed before the capture ends, so no step end tells state from activations;
//! - **other**: the rest (intermediates freed later in the same phase);
//! - **before capture**: held before the first sample (weights loaded before profiling), and
//!   whatever the samples do not pair; the allocated level minus the blocks above.

use crate::vocabulary::phases::StepPhase;
use serde::Serialize;
use std::collections::HashMap;
use tracelens_model::{MemorySample, SpanId, SpanKind, Trace};

/// What a block of memory holds, from its lifetime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryCategory {
    /// Held before the first sample, or not paired by the samples.
    BeforeCapture,
    /// Alive across a step's end: weights, optimizer state, caches, leaks.
    Persistent,
    /// Allocated in the forward, freed in the backward.
    Activation,
    /// Allocated in the backward, alive after it.
    Gradient,
    /// Freed inside the op that allocated it.
    Temporary,
    /// Freed later in the same phase.
    Other,
    /// Allocated in the last step (or a capture without steps), alive at its end.
    AliveAtEnd,
}

impl MemoryCategory {
    /// Every category, in display order.
    pub const ALL: [MemoryCategory; 7] = [
        MemoryCategory::BeforeCapture,
        MemoryCategory::Persistent,
        MemoryCategory::Gradient,
        MemoryCategory::Activation,
        MemoryCategory::Temporary,
        MemoryCategory::Other,
        MemoryCategory::AliveAtEnd,
    ];

    /// Words for a reader.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            MemoryCategory::BeforeCapture => "held before capture",
            MemoryCategory::Persistent => "persistent (weights, optimizer state, kept tensors)",
            MemoryCategory::Activation => "activations",
            MemoryCategory::Gradient => "gradients",
            MemoryCategory::Temporary => "temporaries",
            MemoryCategory::Other => "other intermediates",
            MemoryCategory::AliveAtEnd => "alive at capture end",
        }
    }

    /// Whether memory of this category grows with the batch (activations and the
    /// intermediates around them do; weights, gradients and optimizer state do not). Memory
    /// alive at the capture's end is counted as growing: the estimate errs towards less room.
    #[must_use]
    pub fn scales_with_batch(self) -> bool {
        matches!(
            self,
            MemoryCategory::Activation
                | MemoryCategory::Temporary
                | MemoryCategory::Other
                | MemoryCategory::AliveAtEnd
        )
    }
}

/// Bytes by category; they add up to the allocated level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CategoryBytes {
    /// Held before the capture (or unpaired).
    pub before_capture: i64,
    /// Persistent.
    pub persistent: i64,
    /// Activations.
    pub activations: i64,
    /// Gradients.
    pub gradients: i64,
    /// Temporaries.
    pub temporaries: i64,
    /// Other intermediates.
    pub other: i64,
    /// Alive at the capture's end.
    #[serde(default)]
    pub alive_at_end: i64,
}

impl CategoryBytes {
    /// The bytes of `c`.
    #[must_use]
    pub fn get(&self, c: MemoryCategory) -> i64 {
        match c {
            MemoryCategory::BeforeCapture => self.before_capture,
            MemoryCategory::Persistent => self.persistent,
            MemoryCategory::Activation => self.activations,
            MemoryCategory::Gradient => self.gradients,
            MemoryCategory::Temporary => self.temporaries,
            MemoryCategory::Other => self.other,
            MemoryCategory::AliveAtEnd => self.alive_at_end,
        }
    }

    fn slot(&mut self, c: MemoryCategory) -> &mut i64 {
        match c {
            MemoryCategory::BeforeCapture => &mut self.before_capture,
            MemoryCategory::Persistent => &mut self.persistent,
            MemoryCategory::Activation => &mut self.activations,
            MemoryCategory::Gradient => &mut self.gradients,
            MemoryCategory::Temporary => &mut self.temporaries,
            MemoryCategory::Other => &mut self.other,
            MemoryCategory::AliveAtEnd => &mut self.alive_at_end,
        }
    }

    /// The sum of every category: the allocated level.
    #[must_use]
    pub fn total(&self) -> i64 {
        MemoryCategory::ALL
            .iter()
            .fold(0i64, |s, &c| s.saturating_add(self.get(c)))
    }

    /// The bytes that grow with the batch.
    #[must_use]
    pub fn scaling(&self) -> i64 {
        MemoryCategory::ALL
            .iter()
            .filter(|c| c.scales_with_batch())
            .fold(0i64, |s, &c| s.saturating_add(self.get(c)))
    }
}

/// Where blocks were allocated: the op (outermost on the allocating thread) and the user's
/// Python line around it.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct AllocationSite {
    /// The op, or `None` when no op ran.
    pub op: Option<String>,
    /// `file:line function` of the nearest non-library Python frame, when recorded.
    pub line: Option<String>,
    /// The category most of the bytes are in.
    pub category: MemoryCategory,
    /// Bytes.
    pub bytes: i64,
    /// Blocks.
    pub blocks: u64,
}

/// One block: an allocation and, when seen, its free.
#[derive(Clone, Copy)]
pub(crate) struct Block {
    /// Index of the allocating sample.
    pub alloc: u32,
    /// Index of the freeing sample (`NOT_FREED` when alive at the last sample).
    pub free: u32,
    pub bytes: i64,
    pub category: MemoryCategory,
    /// The outermost op on the allocating thread then.
    pub op: Option<SpanId>,
    /// The innermost span there (for the Python line).
    pub inner: Option<SpanId>,
    /// The allocation's own Python stack, when the sample records one (memory snapshots).
    pub stack: Option<tracelens_model::NameId>,
}

pub(crate) const NOT_FREED: u32 = u32::MAX;

/// A name whose step phase is cached: a span's, or an allocation's Python stack.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Named {
    Span(tracelens_model::NameId),
    Stack(tracelens_model::NameId),
}

/// What runs on a thread at one instant.
#[derive(Clone, Copy, Default)]
struct Context {
    outer_op: Option<SpanId>,
    inner: Option<SpanId>,
    phase: Option<StepPhase>,
}

/// The blocks of `samples` (one device, in time order, every one with an address), each
/// with its category; `step_of[i]` is the index of the window step holding sample `i`, of
/// `steps` steps.
pub(crate) fn blocks(
    trace: &Trace,
    samples: &[&MemorySample],
    step_of: &[Option<u32>],
    steps: usize,
) -> Vec<Block> {
    let last_step = steps.checked_sub(1).and_then(|s| u32::try_from(s).ok());
    let mut phases: HashMap<Named, Option<StepPhase>> = HashMap::new();
    let mut open: HashMap<u64, usize> = HashMap::new();
    let mut blocks: Vec<Block> = Vec::new();
    // The context of each block's allocation, kept until its free is seen.
    let mut alloc_ctx: Vec<Context> = Vec::new();
    let close =
        |blocks: &mut Vec<Block>, b: usize, at: usize, free_ctx: Context, alloc_ctx: &Context| {
            let block = &mut blocks[b];
            block.free = u32::try_from(at).unwrap_or(NOT_FREED);
            block.category = freed_category(trace, samples, block, alloc_ctx, free_ctx, step_of);
        };
    for (i, m) in samples.iter().enumerate() {
        let Some(addr) = m.addr else { continue };
        let ctx = context(trace, &mut phases, m);
        if m.bytes > 0 {
            if let Some(old) = open.insert(addr, blocks.len()) {
                // Its free was not recorded: it ends here.
                let a = alloc_ctx[old];
                close(&mut blocks, old, i, ctx, &a);
            }
            blocks.push(Block {
                alloc: u32::try_from(i).unwrap_or(NOT_FREED),
                free: NOT_FREED,
                bytes: m.bytes,
                category: MemoryCategory::Other,
                op: ctx.outer_op,
                inner: ctx.inner,
                stack: m.call_stack,
            });
            alloc_ctx.push(ctx);
        } else if m.bytes < 0 {
            if let Some(b) = open.remove(&addr) {
                let a = alloc_ctx[b];
                close(&mut blocks, b, i, ctx, &a);
            }
        }
    }
    // Alive at the last sample.
    for &b in open.values() {
        let block = &mut blocks[b];
        block.category = alive_category(block, &alloc_ctx[b], step_of, last_step);
    }
    blocks
}

/// The category of a block freed at `block.free`.
fn freed_category(
    trace: &Trace,
    samples: &[&MemorySample],
    block: &Block,
    at_alloc: &Context,
    at_free: Context,
    step_of: &[Option<u32>],
) -> MemoryCategory {
    let (a, f) = (samples[block.alloc as usize], samples[block.free as usize]);
    if let Some(op) = at_alloc.outer_op {
        let s = trace.span(op);
        if f.lane == a.lane && f.ts_ns <= s.start_ns.saturating_add(s.dur_ns) {
            return MemoryCategory::Temporary;
        }
    }
    let backward = |c: &Context| c.phase == Some(StepPhase::Backward);
    if backward(at_alloc) {
        return if backward(&at_free) {
            MemoryCategory::Other
        } else {
            MemoryCategory::Gradient
        };
    }
    if backward(&at_free) {
        return MemoryCategory::Activation;
    }
    let (sa, sf) = (step_of[block.alloc as usize], step_of[block.free as usize]);
    if sa.is_some() && sf != sa {
        return MemoryCategory::Persistent;
    }
    MemoryCategory::Other
}

/// The category of a block alive at the last sample.
fn alive_category(
    block: &Block,
    at_alloc: &Context,
    step_of: &[Option<u32>],
    last_step: Option<u32>,
) -> MemoryCategory {
    if at_alloc.phase == Some(StepPhase::Backward) {
        return MemoryCategory::Gradient;
    }
    // Alive past the end of its step: persistent; allocated in the last step or outside
    // steps, no step end says which.
    let sa = step_of[block.alloc as usize];
    if sa.is_some() && sa != last_step {
        MemoryCategory::Persistent
    } else {
        MemoryCategory::AliveAtEnd
    }
}

/// What runs where sample `m` was made: the outermost and innermost spans on its thread
/// then, and the step phase the enclosing names say; for a sample without spans around it,
/// the phase its own Python stack says (memory snapshots).
fn context(
    trace: &Trace,
    phases: &mut HashMap<Named, Option<StepPhase>>,
    m: &MemorySample,
) -> Context {
    let mut ctx = Context::default();
    let range = trace.lane(m.lane).spans.clone();
    let (first, end) = (range.start as usize, range.end as usize);
    let on_lane = trace.spans.get(first..end).unwrap_or(&[]);
    let at = on_lane.partition_point(|s| s.start_ns <= m.ts_ns);
    if let Some(last) = at.checked_sub(1).map(|i| SpanId::at(first + i)) {
        for id in std::iter::once(last).chain(trace.ancestors(last)) {
            let s = trace.span(id);
            if s.start_ns.saturating_add(s.dur_ns) < m.ts_ns {
                continue;
            }
            ctx.inner.get_or_insert(id);
            if s.kind == SpanKind::CpuOp {
                ctx.outer_op = Some(id);
            }
            let phase = *phases
                .entry(Named::Span(s.name))
                .or_insert_with(|| crate::vocabulary::phases::of(trace.name(id)));
            // The outermost phase wins: an optimizer's ops inside a backward hook stay backward.
            if phase.is_some() {
                ctx.phase = phase;
            }
        }
    }
    if ctx.inner.is_none() {
        if let Some(stack) = m.call_stack {
            ctx.phase = *phases.entry(Named::Stack(stack)).or_insert_with(|| {
                // Innermost first: the last frame that names a phase is the outermost.
                trace
                    .names
                    .get(stack)
                    .rsplit(';')
                    .find_map(crate::vocabulary::phases::of)
            });
        }
    }
    ctx
}

/// An allocation site: the op's name and the Python line.
type SiteKey = (Option<tracelens_model::NameId>, Option<String>);

/// The allocation sites of `blocks`, most bytes first, at most `limit`.
pub(crate) fn sites<'a>(
    trace: &Trace,
    blocks: impl Iterator<Item = &'a Block>,
    limit: usize,
) -> Vec<AllocationSite> {
    let mut by_site: HashMap<SiteKey, (i64, u64, CategoryBytes)> = HashMap::new();
    // The user line of each span or stack, found once.
    let mut lines: HashMap<(Option<SpanId>, Option<tracelens_model::NameId>), Option<String>> =
        HashMap::new();
    for b in blocks {
        let line = lines
            .entry((b.inner, b.stack))
            .or_insert_with(|| {
                let frame = match (b.inner, b.stack) {
                    (Some(inner), _) => trace.python_frame_where(inner, |f| !f.is_library()),
                    (None, Some(stack)) => {
                        tracelens_model::parse_call_stack(trace.names.get(stack))
                            .into_iter()
                            .find(|f| !f.is_library())
                    }
                    (None, None) => None,
                };
                frame.map(|f| format!("{}:{} {}", f.file, f.line, f.function))
            })
            .clone();
        let key = (b.op.map(|o| trace.span(o).name), line);
        let e = by_site.entry(key).or_default();
        e.0 = e.0.saturating_add(b.bytes);
        e.1 += 1;
        *e.2.slot(b.category) = e.2.get(b.category).saturating_add(b.bytes);
    }
    let mut out: Vec<AllocationSite> = by_site
        .into_iter()
        .map(|((op, line), (bytes, blocks, cats))| AllocationSite {
            op: op.map(|n| trace.names.get(n).to_string()),
            line,
            category: MemoryCategory::ALL
                .into_iter()
                .max_by_key(|&c| cats.get(c))
                .unwrap_or(MemoryCategory::Other),
            bytes,
            blocks,
        })
        .collect();
    out.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then_with(|| (&a.op, &a.line).cmp(&(&b.op, &b.line)))
    });
    out.truncate(limit);
    out
}

/// Adds `bytes` of `c` to `sums`.
pub(crate) fn add(sums: &mut CategoryBytes, c: MemoryCategory, bytes: i64) {
    let slot = sums.slot(c);
    *slot = slot.saturating_add(bytes);
}
