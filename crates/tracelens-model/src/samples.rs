//! CPU samples: where each sampled thread was when the sampler fired (Nsight Systems'
//! `-s cpu`), as call stacks of symbol and module names, deduplicated.

use crate::lane::LaneKey;
use crate::names::NameId;
use crate::time::TimeNs;

/// Frames kept of each stack, innermost first: deeper frames (the program's entry, the
/// runtime's start-up) say nothing about the work.
pub const MAX_FRAMES: usize = 48;

/// Samples kept: a capture sampling for hours holds more than a report needs; the first ones
/// are kept and the rest counted.
pub const MAX_SAMPLES: usize = 1_000_000;

/// One frame of a sampled stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    /// The function (`stbiw__zlib_compress`), or an address where it is unresolved.
    pub symbol: NameId,
    /// The file it is in (`/usr/lib/x86_64-linux-gnu/libz.so.1`, the program's own binary).
    pub module: NameId,
}

/// One sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuSample {
    /// When it was taken.
    pub ts_ns: TimeNs,
    /// The thread sampled.
    pub thread: LaneKey,
    /// Index of its stack in [`CpuSamples::stacks`].
    pub stack: u32,
}

/// The samples of a capture, in time order, and their distinct stacks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CpuSamples {
    /// The samples, by time.
    pub samples: Vec<CpuSample>,
    /// Distinct stacks, innermost frame first, at most [`MAX_FRAMES`] each.
    pub stacks: Vec<Vec<Frame>>,
    /// Samples past [`MAX_SAMPLES`], not kept.
    pub dropped: u64,
}

impl CpuSamples {
    /// The samples of `thread` taken in `[start_ns, end_ns)`.
    pub fn of_thread_in(
        &self,
        thread: LaneKey,
        start_ns: TimeNs,
        end_ns: TimeNs,
    ) -> impl Iterator<Item = &CpuSample> {
        let from = self.samples.partition_point(|s| s.ts_ns < start_ns);
        self.samples[from..]
            .iter()
            .take_while(move |s| s.ts_ns < end_ns)
            .filter(move |s| s.thread == thread)
    }

    /// The stack of a sample, innermost frame first.
    #[must_use]
    pub fn stack(&self, sample: &CpuSample) -> &[Frame] {
        self.stacks
            .get(sample.stack as usize)
            .map_or(&[][..], Vec::as_slice)
    }
}

/// Builds [`CpuSamples`] from samples read one frame at a time, deduplicating stacks.
#[derive(Debug, Default)]
pub struct CpuSamplesBuilder {
    out: CpuSamples,
    index: rustc_hash::FxHashMap<Vec<Frame>, u32>,
    /// The sample being read: its id, time, thread and frames so far.
    open: Option<(i64, TimeNs, LaneKey, Vec<Frame>)>,
}

impl CpuSamplesBuilder {
    /// Adds a frame of sample `id`, taken at `ts_ns` on `thread`; the frames of one sample
    /// come together, innermost first, and another id starts a new sample.
    pub fn frame(&mut self, id: i64, ts_ns: TimeNs, thread: LaneKey, frame: Frame) {
        match &mut self.open {
            Some((open_id, _, _, frames)) if *open_id == id => {
                if frames.len() < MAX_FRAMES {
                    frames.push(frame);
                }
            }
            _ => {
                self.close();
                self.open = Some((id, ts_ns, thread, vec![frame]));
            }
        }
    }

    fn close(&mut self) {
        let Some((_, ts_ns, thread, frames)) = self.open.take() else {
            return;
        };
        if self.out.samples.len() >= MAX_SAMPLES {
            self.out.dropped += 1;
            return;
        }
        let next = u32::try_from(self.out.stacks.len()).unwrap_or(u32::MAX);
        let stack = *self.index.entry(frames).or_insert_with_key(|frames| {
            self.out.stacks.push(frames.clone());
            next
        });
        self.out.samples.push(CpuSample {
            ts_ns,
            thread,
            stack,
        });
    }

    /// The samples, sorted by time.
    #[must_use]
    pub fn finish(mut self) -> CpuSamples {
        self.close();
        self.out.samples.sort_by_key(|s| s.ts_ns);
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lane::Ident;

    /// Frames of two samples with one stack and a third with another: two stacks, three
    /// samples in time order; a thread's samples are found by time.
    #[test]
    fn samples_share_their_stacks_and_are_found_by_thread_and_time() {
        let thread = LaneKey::Cpu {
            pid: Ident::Num(1),
            tid: Ident::Num(1),
        };
        let other = LaneKey::Cpu {
            pid: Ident::Num(1),
            tid: Ident::Num(2),
        };
        let f = |s: u32| Frame {
            symbol: NameId(s),
            module: NameId(9),
        };
        let mut b = CpuSamplesBuilder::default();
        for (id, ts, th, frames) in [
            (3, 300, thread, vec![f(1), f(2)]),
            (1, 100, thread, vec![f(1), f(2)]),
            (2, 200, other, vec![f(5)]),
        ] {
            for fr in frames {
                b.frame(id, ts, th, fr);
            }
        }
        let s = b.finish();
        assert_eq!(s.stacks.len(), 2);
        assert_eq!(
            s.samples.iter().map(|x| x.ts_ns).collect::<Vec<_>>(),
            [100, 200, 300]
        );
        let mine: Vec<_> = s.of_thread_in(thread, 0, 250).collect();
        assert_eq!(mine.len(), 1);
        assert_eq!(s.stack(mine[0]), &[f(1), f(2)]);
    }
}
