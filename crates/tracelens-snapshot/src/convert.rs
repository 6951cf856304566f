//! The snapshot's fields (`torch.cuda.memory._snapshot()`: `segments`, `device_traces`,
//! `allocator_settings`; those of PyTorch 2.0 to 2.9, each optional) and their conversion:
//! each device's history into allocator samples on one lane, the totals rebuilt backwards
//! from the segments at the snapshot, the segments and failed requests into the allocator's
//! state.

use crate::pickle::Value;
use std::collections::BTreeMap;
use std::path::Path;
use tracelens_model::{
    AllocatorState, CaptureTool, Detail, Ident, LaneKey, MemoryDevice, MemorySample, NameId,
    OutOfMemory, SegmentState, SourceInfo, Trace, TraceBuilder,
};

/// The format id.
pub const FORMAT: &str = "torch_memory_snapshot";

/// What one history entry does.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Action {
    Alloc,
    Free,
    SegmentAlloc,
    SegmentFree,
    Oom,
    Other,
}

fn action(name: Option<&str>) -> Action {
    match name {
        Some("alloc") => Action::Alloc,
        // `free_requested` marks a free waiting on other streams; the block returns at
        // `free_completed` (`free` in early 2.x snapshots).
        Some("free_completed" | "free") => Action::Free,
        Some("segment_alloc" | "segment_map") => Action::SegmentAlloc,
        Some("segment_free" | "segment_unmap") => Action::SegmentFree,
        Some("oom") => Action::Oom,
        _ => Action::Other,
    }
}

fn int(v: &Value, key: &str) -> Option<i64> {
    v.get(key)?.int()
}

/// Call stacks already formatted, by the shared storage they come from: a snapshot's entries
/// share memoized frame lists and frames, and a crafted one can point a million entries at one
/// long list, so each list and each frame is formatted once.
#[derive(Default)]
struct Stacks {
    lists: std::collections::HashMap<usize, Option<NameId>>,
    frames: std::collections::HashMap<usize, Option<String>>,
    /// Frames formatted so far.
    formatted: u64,
}

impl Stacks {
    /// The Python frames of an entry as an interned `Call stack` string (`file.py(12): f;…`,
    /// innermost first), when any.
    fn of(&mut self, entry: &Value, b: &mut TraceBuilder) -> Option<NameId> {
        let list = entry.get("frames")?;
        let key = list.shared_id();
        if let Some(done) = key.and_then(|k| self.lists.get(&k)) {
            return *done;
        }
        let mut py: Vec<String> = Vec::new();
        for f in list.items() {
            let formatted = &mut self.formatted;
            let mut format = || {
                *formatted += 1;
                frame(&f)
            };
            let text = match f.shared_id() {
                Some(k) => self.frames.entry(k).or_insert_with(format).clone(),
                None => format(),
            };
            py.extend(text);
        }
        let id = (!py.is_empty()).then(|| b.intern(&py.join(";")));
        if let Some(k) = key {
            self.lists.insert(k, id);
        }
        id
    }
}

/// One frame as `file.py(12): f`, when it is Python's.
fn frame(f: &Value) -> Option<String> {
    let file = f.get("filename")?;
    let file = file.str()?;
    if !file.ends_with(".py") {
        return None;
    }
    let name = f.get("name").and_then(|n| n.str().map(str::to_string));
    Some(format!(
        "{}({}): {}",
        file.replace(';', ","),
        int(f, "line").unwrap_or(0),
        name.unwrap_or_default().replace(';', ",")
    ))
}

/// Whether the decoded value is a snapshot: a dict with `segments` or `device_traces`.
pub(crate) fn is_snapshot(v: &Value) -> bool {
    v.is_dict() && (v.get("segments").is_some() || v.get("device_traces").is_some())
}

fn segment(seg: &Value) -> SegmentState {
    let blocks = seg.get("blocks").map(|b| b.items()).unwrap_or_default();
    let free: Vec<i64> = blocks
        .iter()
        .filter(|bl| {
            bl.get("state")
                .and_then(|s| s.str().map(|s| s == "inactive"))
                == Some(true)
        })
        .map(|bl| int(bl, "size").unwrap_or(0))
        .collect();
    SegmentState {
        device: int(seg, "device").unwrap_or(0),
        total_bytes: int(seg, "total_size").unwrap_or(0),
        allocated_bytes: int(seg, "allocated_size").unwrap_or(0),
        active_bytes: int(seg, "active_size").unwrap_or(0),
        largest_free_block_bytes: free.iter().copied().max().unwrap_or(0),
        free_blocks: u32::try_from(free.len()).unwrap_or(u32::MAX),
        expandable: seg.get("is_expandable").and_then(|e| e.bool()) == Some(true),
    }
}

/// The snapshot `raw` read from `path` as a trace.
pub(crate) fn trace(raw: &Value, path: &Path, shape: crate::shape::Shape) -> Trace {
    let mut b = TraceBuilder::new();
    let mut stacks = Stacks::default();
    let settings = raw.get("allocator_settings");
    let mut state = AllocatorState {
        expandable_segments: settings
            .as_ref()
            .and_then(|s| s.get("expandable_segments"))
            .and_then(|e| e.bool()),
        ..AllocatorState::default()
    };
    let mut end_allocated: BTreeMap<i64, i64> = BTreeMap::new();
    let mut end_reserved: BTreeMap<i64, i64> = BTreeMap::new();
    for seg in raw.get("segments").map(|s| s.items()).unwrap_or_default() {
        let s = segment(&seg);
        let a = end_allocated.entry(s.device).or_default();
        *a = a.saturating_add(s.allocated_bytes);
        let r = end_reserved.entry(s.device).or_default();
        *r = r.saturating_add(s.total_bytes);
        state.segments.push(s);
    }
    let traces: Vec<Vec<Value>> = raw
        .get("device_traces")
        .map(|t| t.items().iter().map(Value::items).collect())
        .unwrap_or_default();
    let has_times = traces.iter().flatten().any(|e| int(e, "time_us").is_some());
    let lane = b.lane(LaneKey::Cpu {
        pid: Ident::Num(0),
        tid: Ident::Num(0),
    });
    b.name_thread(Ident::Num(0), Ident::Num(0), "caching allocator history");
    let mut records = 0u64;
    for (device, events) in traces.iter().enumerate() {
        let device = i64::try_from(device).unwrap_or(i64::MAX);
        records += events.len() as u64;
        // The totals at the snapshot minus the history's changes: the totals before it.
        let (mut allocated, mut reserved) = (
            end_allocated.get(&device).copied().unwrap_or(0),
            end_reserved.get(&device).copied().unwrap_or(0),
        );
        for e in events {
            let size = int(e, "size").unwrap_or(0).max(0);
            match action(e.get("action").as_ref().and_then(Value::str)) {
                Action::Alloc => allocated = allocated.saturating_sub(size),
                Action::Free => allocated = allocated.saturating_add(size),
                Action::SegmentAlloc => reserved = reserved.saturating_sub(size),
                Action::SegmentFree => reserved = reserved.saturating_add(size),
                Action::Oom | Action::Other => {}
            }
        }
        let mut last_ns = 0i64;
        for (i, e) in events.iter().enumerate() {
            let ts_ns = if has_times {
                int(e, "time_us")
                    .map_or(last_ns, |t| t.saturating_mul(1000))
                    .max(last_ns)
            } else {
                i64::try_from(i).unwrap_or(i64::MAX).saturating_mul(1000)
            };
            last_ns = ts_ns;
            // A negative size is not the allocator's: read as nothing.
            let size = int(e, "size").unwrap_or(0).max(0);
            let bytes = match action(e.get("action").as_ref().and_then(Value::str)) {
                Action::Alloc => size,
                Action::Free => size.saturating_neg(),
                Action::SegmentAlloc => {
                    reserved = reserved.saturating_add(size);
                    continue;
                }
                Action::SegmentFree => {
                    reserved = reserved.saturating_sub(size);
                    continue;
                }
                Action::Oom => {
                    state.out_of_memory.push(OutOfMemory {
                        device,
                        ts_ns,
                        requested_bytes: size,
                        device_free_bytes: int(e, "device_free"),
                    });
                    continue;
                }
                Action::Other => continue,
            };
            allocated = allocated.saturating_add(bytes);
            let call_stack = stacks.of(e, &mut b);
            b.add_memory(MemorySample {
                ts_ns,
                lane,
                device: MemoryDevice::Gpu(device),
                bytes,
                addr: int(e, "addr").and_then(|a| u64::try_from(a).ok()),
                call_stack,
                total_allocated: Some(allocated),
                total_reserved: Some(reserved.max(allocated)),
            });
        }
    }
    let mut details = BTreeMap::new();
    details.insert(
        "segments".to_string(),
        Detail::Count(state.segments.len() as u64),
    );
    details.insert("pickle_values".to_string(), Detail::Count(shape.values));
    let source = SourceInfo {
        path: path.display().to_string(),
        format: FORMAT.into(),
        format_name: "PyTorch memory snapshot".into(),
        content: "pickle".into(),
        records: "history entries".into(),
        annotatable: false,
        version: if has_times {
            "with_times"
        } else {
            "without_times"
        }
        .into(),
        version_note: if has_times {
            "allocation history with times (time_us)".into()
        } else {
            "allocation history without times: samples are in allocation order, 1 µs apart".into()
        },
        records_read: records,
        capture_tool: CaptureTool::MemorySnapshot,
        details,
        ..SourceInfo::default()
    };
    let mut trace = b.finish(source);
    trace.allocator = Some(state);
    trace
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    fn dict(pairs: Vec<(&str, Value)>) -> Value {
        Value::Dict(Rc::new(RefCell::new(
            pairs
                .into_iter()
                .map(|(k, v)| (Value::Str(Rc::from(k)), v))
                .collect(),
        )))
    }

    #[test]
    fn entries_sharing_a_frame_list_format_it_once() {
        let frame = |line| {
            dict(vec![
                ("filename", Value::Str(Rc::from("train.py"))),
                ("line", Value::Int(line)),
                ("name", Value::Str(Rc::from("step"))),
            ])
        };
        let frames = Value::List(Rc::new(RefCell::new((0..100).map(frame).collect())));
        let entry = || dict(vec![("frames", frames.clone())]);
        let mut b = TraceBuilder::new();
        let mut stacks = Stacks::default();
        let first = stacks.of(&entry(), &mut b);
        for _ in 0..1000 {
            assert_eq!(stacks.of(&entry(), &mut b), first);
        }
        // 100 frames formatted once, not 100,100 times.
        assert_eq!(stacks.formatted, 100);
        // The twin: a list of its own per entry formats its frames again (each is new).
        let own = dict(vec![(
            "frames",
            Value::List(Rc::new(RefCell::new(vec![frame(7)]))),
        )]);
        assert!(stacks.of(&own, &mut b).is_some());
        assert_eq!(stacks.formatted, 101);
    }
}
