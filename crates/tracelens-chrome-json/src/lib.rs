//! Chrome-trace JSON (the Trace Event Format) as syntax: a streaming reader of the document
//! (`{"traceEvents": [...], ...}` or a bare array) that hands each event's raw bytes and each
//! other top-level key to an [`EventSink`] — one sink per dialect, resolved at compile time,
//! so no dynamic call per event — on one thread or several ([`parallel`]), with bounded
//! memory and the point where a cut document stops; the JSON scanner and value decoders the
//! sinks read fields with; and the byte-for-byte copy that inserts events ([`annotate`]).
//! PyTorch's Kineto traces are one dialect (`tracelens-kineto`).
#![deny(missing_docs)]

pub mod annotate;
pub mod document;
pub mod input;
pub mod json;
pub mod parallel;
pub mod scan;
pub mod split;

pub use annotate::{copy_with_events, CopyStats};
pub use document::{read_document, Container, Document, Start};
pub use input::Input;

/// What a dialect does with the document: each element of the event array, and each other
/// top-level key. With several threads ([`parallel`]) each batch of events goes to its own
/// sink (`Default`), and the sinks are absorbed in document order.
pub trait EventSink: Default + Send + 'static {
    /// One element of the event array: its raw bytes, found at decoded byte `offset`.
    fn event(&mut self, raw: &[u8], offset: u64);
    /// Reads the element at the start of `bytes` (more elements may follow it) and returns
    /// its length; the result must be what [`EventSink::event`] gives on that element alone.
    fn next_event(&mut self, bytes: &[u8], offset: u64) -> usize;
    /// A top-level key other than `traceEvents`, with its value parsed.
    fn top_level(&mut self, key: &str, value: &json::Value);
    /// Takes in the sink of the batch that follows this one's events.
    fn absorb(&mut self, later: Self);
}
