//! Decoding events on several threads: the main thread cuts the event array into runs of
//! whole events ([`crate::split`], 64 bytes at a time) and hands batches of them to
//! workers, each decoding into its own sink ([`EventSink`]); the sinks are absorbed in batch
//! order, which gives exactly the result of a one-thread read (for the Kineto dialect: names
//! and lanes first seen in the same order, spans in the same order). `TRACELENS_THREADS` sets the thread count
//! (default: the cores); 1 is the plain serial path.

use crate::EventSink;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Raw bytes per batch: large enough to amortise the hand-off, small enough to spread.
pub const BATCH_BYTES: usize = 2 << 20;

/// Raw events and runs of events, with their decoded-stream offsets.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    pieces: Vec<Piece>,
}

/// A range of a batch's bytes: one value, or a run of whole elements ([`crate::split`]),
/// walked the same way.
struct Piece {
    start: usize,
    end: usize,
    /// Decoded byte offset of `start`.
    offset: u64,
}

/// Threads to decode with.
#[must_use]
pub fn threads() -> usize {
    std::env::var("TRACELENS_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, 64)
}

/// The hand-off to the decoding threads.
pub struct Decoders<S: EventSink> {
    current: Batch,
    next_index: usize,
    to_workers: Option<SyncSender<(usize, Batch)>>,
    from_workers: Receiver<(usize, S)>,
    /// Batches the workers have decoded, emptied for reuse: the buffers are allocated once
    /// for the whole read, not once per batch.
    recycled: Receiver<Batch>,
    workers: Vec<JoinHandle<()>>,
    /// Decoded batches waiting for an earlier one.
    pending: std::collections::BTreeMap<usize, S>,
    /// The next batch to absorb.
    next_absorb: usize,
}

impl<S: EventSink> Decoders<S> {
    /// Starts `n` decoding threads.
    #[must_use]
    pub fn start(n: usize) -> Decoders<S> {
        let (to_workers, jobs) = sync_channel::<(usize, Batch)>(n * 2);
        let (results, from_workers) = std::sync::mpsc::channel();
        let (emptied, recycled) = std::sync::mpsc::channel();
        let jobs = Arc::new(Mutex::new(jobs));
        let workers = (0..n)
            .map(|_| {
                let jobs = Arc::clone(&jobs);
                let results = results.clone();
                let emptied = emptied.clone();
                std::thread::spawn(move || loop {
                    let job = jobs.lock().map(|rx| rx.recv());
                    let Ok(Ok((index, mut batch))) = job else {
                        return;
                    };
                    let mut reader = S::default();
                    for p in &batch.pieces {
                        let bytes = &batch.bytes[p.start..p.end];
                        crate::split::for_each_element(bytes, |rest, at| {
                            reader.next_event(rest, p.offset + at as u64)
                        });
                    }
                    batch.bytes.clear();
                    batch.pieces.clear();
                    // The reader may have stopped taking batches; the buffer is then dropped.
                    let _ = emptied.send(batch);
                    if results.send((index, reader)).is_err() {
                        return;
                    }
                })
            })
            .collect();
        Decoders {
            current: Batch::default(),
            next_index: 0,
            to_workers: Some(to_workers),
            from_workers,
            recycled,
            workers,
            pending: std::collections::BTreeMap::new(),
            next_absorb: 0,
        }
    }

    /// Absorbs, in order, the decoded batches that are ready, so each chunk's model is freed
    /// as soon as it joins the whole (memory stays near one model, not two).
    fn absorb_ready(&mut self, events: &mut S, wait: bool) {
        loop {
            while let Some(reader) = self.pending.remove(&self.next_absorb) {
                events.absorb(reader);
                self.next_absorb += 1;
            }
            if self.next_absorb >= self.next_index {
                return;
            }
            let got = if wait {
                self.from_workers.recv().ok()
            } else {
                self.from_workers.try_recv().ok()
            };
            match got {
                Some((i, reader)) => {
                    self.pending.insert(i, reader);
                }
                None => return,
            }
        }
    }

    /// Queues one raw value, or a run of whole events ([`crate::split`]), found at decoded
    /// byte `offset`.
    pub fn push(&mut self, raw: &[u8], offset: u64, events: &mut S) {
        let start = self.current.bytes.len();
        self.current.bytes.extend_from_slice(raw);
        let end = self.current.bytes.len();
        self.current.pieces.push(Piece { start, end, offset });
        if self.current.bytes.len() >= BATCH_BYTES {
            self.send();
            self.absorb_ready(events, false);
        }
    }

    fn send(&mut self) {
        if self.current.pieces.is_empty() {
            return;
        }
        let empty = self.recycled.try_recv().unwrap_or_default();
        let batch = std::mem::replace(&mut self.current, empty);
        if let Some(tx) = &self.to_workers {
            let _ = tx.send((self.next_index, batch));
        }
        self.next_index += 1;
    }

    /// Waits for every batch and absorbs them, in order, into `events`.
    pub fn finish(mut self, events: &mut S) {
        self.send();
        drop(self.to_workers.take());
        self.absorb_ready(events, true);
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}
