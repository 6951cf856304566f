//! The findings as Chrome-trace events, for `tracelens annotate`: a "tracelens" process with
//! one track of GPU idle per device (each segment named and coloured by its cause), one track
//! of findings (a slice per evidence range, with title, win, fix and call site in `args`),
//! flow arrows from each blocking sync to the idle it caused, and a track of the representative
//! step's critical path (a slice per segment) with flow arrows where it enters a thread (from
//! that thread) and where it moves between host and GPU, so the path reads as a chain of
//! arrows; each GPU's allocated and reserved memory as counters, with an instant at the
//! peak. Every event has category
//! `tracelens`, which the importer skips, so an annotated trace analyses like the original.
//!
//! Times are written back in the trace's own unit (µs, three decimals = the ns we read).

use serde_json::{json, Value};
use tracelens_analysis::views::annotations::{CriticalMark, IdleTrack, MemoryTrack, TraceId};
use tracelens_analysis::Diagnosis;

/// Our process id: far from real pids, so Perfetto shows it as its own process.
pub const ANNOTATION_PID: i64 = 2_000_000_000;
/// Track (tid) of the findings.
const FINDINGS_TID: i64 = 1;
/// Track of the critical path.
const CRITICAL_TID: i64 = 2;
/// Tracks of GPU idle: this plus the device index.
const IDLE_TID_BASE: i64 = 100;
/// Tracks of GPU memory's peak marker: this plus the device index.
const MEMORY_TID_BASE: i64 = 200;

/// A time in the trace's µs (the `ts` Perfetto shows for a Kineto trace), from our ns, written exactly (an f64 would lose the last
/// digits of epoch timestamps).
#[must_use]
pub fn ts_us(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    format!("{sign}{}.{:03}", a / 1000, a % 1000)
}

/// `event` (an object without times) with `"ts"` (and `"dur"`) put first, exactly.
fn timed(event: Value, start_ns: i64, dur_ns: Option<i64>) -> String {
    let body = event.to_string();
    let dur = dur_ns
        .map(|d| format!("\"dur\": {}, ", ts_us(d)))
        .unwrap_or_default();
    format!("{{\"ts\": {}, {dur}{}", ts_us(start_ns), &body[1..])
}

fn ident(id: &TraceId) -> Value {
    match id {
        TraceId::Num(n) => json!(n),
        TraceId::Text(t) => json!(t),
    }
}

fn meta(name: &str, tid: Option<i64>, args: Value) -> String {
    let mut e =
        json!({"ph": "M", "cat": "tracelens", "name": name, "pid": ANNOTATION_PID, "args": args});
    if let Some(tid) = tid {
        e["tid"] = json!(tid);
    }
    e.to_string()
}

/// One end of an arrow: process id, thread id, time.
type FlowEnd = (Value, Value, i64);

/// An arrow named `name` from the slice at `from` to the one at `to`, with the next flow id.
fn flow(out: &mut Vec<String>, id: &mut u64, name: &str, from: FlowEnd, to: FlowEnd) {
    let start = json!({
        "ph": "s", "cat": "tracelens", "id": *id, "name": name, "pid": from.0, "tid": from.1
    });
    out.push(timed(start, from.2, None));
    let end = json!({
        "ph": "f", "bp": "e", "cat": "tracelens", "id": *id, "name": name, "pid": to.0, "tid": to.1
    });
    out.push(timed(end, to.2, None));
    *id += 1;
}

/// The annotation events of a diagnosis and its idle tracks, each a JSON object in one string.
#[must_use]
pub fn annotation_events(
    d: &Diagnosis,
    tracks: &[IdleTrack],
    critical: &[CriticalMark],
    memory: &[MemoryTrack],
) -> Vec<String> {
    let mut out = vec![
        meta("process_name", None, json!({"name": "tracelens analysis"})),
        meta("process_sort_index", None, json!({"sort_index": -1})),
        meta(
            "thread_name",
            Some(FINDINGS_TID),
            json!({"name": "findings (estimated wins)"}),
        ),
    ];
    let per = crate::per(d);
    for (rank, f) in d.findings.iter().enumerate() {
        for iv in &f.evidence.time_ranges {
            let event = json!({
                "ph": "X", "cat": "tracelens", "pid": ANNOTATION_PID, "tid": FINDINGS_TID,
                "name": format!("#{} {}", rank + 1, tracelens_model::shorten(&f.title, 100)),
                "args": {
                    "title": f.title,
                    "severity": format!("{:?}", f.severity),
                            "win": crate::win_line(f, per),
                    "predicted": crate::prediction_phrase(f, d),
                    "fix": f.fix,
                    "call_site": f.call_site,
                }
            });
            out.push(timed(event, iv.start_ns, Some(iv.dur_ns())));
        }
    }
    let mut flow_id: u64 = 1;
    if !critical.is_empty() {
        let title = match d.critical_path.step {
            Some(n) => format!("critical path (step {n})"),
            None => "critical path".to_string(),
        };
        out.push(meta(
            "thread_name",
            Some(CRITICAL_TID),
            json!({ "name": title }),
        ));
        let mut prev: Option<&CriticalMark> = None;
        for m in critical {
            let name = if m.name.is_empty() {
                m.kind.describe().to_string()
            } else {
                tracelens_model::shorten(&m.name, 100)
            };
            let event = json!({
                "ph": "X", "cat": "tracelens", "pid": ANNOTATION_PID, "tid": CRITICAL_TID,
                "name": name,
                "args": {"kind": m.kind.label(), "meaning": m.kind.describe(), "name": m.name}
            });
            out.push(timed(event, m.interval.start_ns, Some(m.interval.dur_ns())));
            // Where the path enters a thread, an arrow from that thread to its slice on the
            // path; where it moves between host and GPU, one from the previous slice.
            let entered = m
                .thread
                .as_ref()
                .filter(|&t| prev.and_then(|p| p.thread.as_ref()) != Some(t));
            let to = (
                json!(ANNOTATION_PID),
                json!(CRITICAL_TID),
                m.interval.start_ns,
            );
            if let Some((pid, tid)) = entered {
                let from = (ident(pid), ident(tid), m.interval.start_ns);
                flow(&mut out, &mut flow_id, "critical path", from, to.clone());
            }
            if let Some(p) = prev.filter(|p| p.kind.on_gpu() != m.kind.on_gpu()) {
                let from = (
                    json!(ANNOTATION_PID),
                    json!(CRITICAL_TID),
                    p.interval.start_ns,
                );
                flow(&mut out, &mut flow_id, "critical path", from, to);
            }
            prev = Some(m);
        }
    }
    for idle in tracks {
        let tid = IDLE_TID_BASE + idle.device;
        out.push(meta(
            "thread_name",
            Some(tid),
            json!({"name": format!("GPU {} idle, by cause", idle.device)}),
        ));
        for seg in &idle.marks {
            let event = json!({
                "ph": "X", "cat": "tracelens", "pid": ANNOTATION_PID, "tid": tid,
                "name": format!("idle: {}", seg.cause.label().replace('_', " ")),
                "args": {"cause": seg.cause.label(), "meaning": seg.cause.describe()}
            });
            out.push(timed(
                event,
                seg.interval.start_ns,
                Some(seg.interval.dur_ns()),
            ));
            // An arrow from the blocking call to the idle it caused.
            let Some(sync) = &seg.sync else { continue };
            flow(
                &mut out,
                &mut flow_id,
                "blocking sync → GPU idle",
                (ident(&sync.pid), ident(&sync.tid), sync.start_ns),
                (json!(ANNOTATION_PID), json!(tid), seg.interval.start_ns),
            );
        }
    }
    memory_events(&mut out, memory);
    out
}

/// Each GPU's memory: `GPU N memory (MB)` counters of allocated and reserved, and an instant
/// at the window's peak on a track of its own.
fn memory_events(out: &mut Vec<String>, memory: &[MemoryTrack]) {
    let mb = |b: i64| (b as f64 / 1e6 * 1000.0).round() / 1000.0;
    for m in memory {
        let name = format!("GPU {} memory (MB)", m.device);
        for c in &m.counters {
            let mut args = json!({"allocated": mb(c.allocated_bytes)});
            if let Some(r) = c.reserved_bytes {
                args["reserved"] = json!(mb(r));
            }
            let event = json!({
                "ph": "C", "cat": "tracelens", "pid": ANNOTATION_PID, "name": name, "args": args
            });
            out.push(timed(event, c.ts_ns, None));
        }
        let Some((at, bytes)) = m.peak else { continue };
        let tid = MEMORY_TID_BASE + m.device;
        out.push(meta(
            "thread_name",
            Some(tid),
            json!({"name": format!("GPU {} memory peak", m.device)}),
        ));
        let event = json!({
            "ph": "i", "s": "t", "cat": "tracelens", "pid": ANNOTATION_PID, "tid": tid,
            "name": format!("GPU {} peak: {} allocated", m.device, tracelens_model::format_bytes(bytes)),
        });
        out.push(timed(event, at, None));
    }
}
