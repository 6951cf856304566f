//! PyTorch memory snapshots as input: two real public snapshots (`fixtures/snapshots/`,
//! SOURCES.md) read with their totals and segments; crafted snapshots with a failed request
//! and with a leak; and hostile pickles refused in one line, never decoded.

use serde_json::Value;
use tracelens_tests::{fixtures_dir, tracelens};

/// A pickle value to write (protocol 2, the opcodes Python writes for plain data).
enum P {
    Int(i64),
    Str(&'static str),
    Bool(bool),
    List(Vec<P>),
    Dict(Vec<(&'static str, P)>),
}

fn write(p: &P, out: &mut Vec<u8>) {
    match p {
        P::Int(i) => {
            let b = i.to_le_bytes();
            out.push(0x8a); // LONG1
            out.push(8);
            out.extend(b);
        }
        P::Str(s) => {
            out.push(b'X'); // BINUNICODE
            out.extend(u32::try_from(s.len()).unwrap().to_le_bytes());
            out.extend(s.as_bytes());
        }
        P::Bool(b) => out.push(if *b { 0x88 } else { 0x89 }),
        P::List(items) => {
            out.extend(b"](");
            for i in items {
                write(i, out);
            }
            out.push(b'e');
        }
        P::Dict(items) => {
            out.extend(b"}(");
            for (k, v) in items {
                write(&P::Str(k), out);
                write(v, out);
            }
            out.push(b'u');
        }
    }
}

fn pickle(p: &P) -> Vec<u8> {
    let mut out = vec![0x80, 2];
    write(p, &mut out);
    out.push(b'.');
    out
}

fn frames(file: &'static str, line: i64, name: &'static str) -> P {
    P::List(vec![P::Dict(vec![
        ("filename", P::Str(file)),
        ("line", P::Int(line)),
        ("name", P::Str(name)),
    ])])
}

fn entry(
    action: &'static str,
    addr: i64,
    size: i64,
    t_us: i64,
    at: (&'static str, i64, &'static str),
) -> P {
    P::Dict(vec![
        ("action", P::Str(action)),
        ("addr", P::Int(addr)),
        ("size", P::Int(size)),
        ("stream", P::Int(0)),
        ("time_us", P::Int(t_us)),
        ("frames", frames(at.0, at.1, at.2)),
    ])
}

fn segment(total: i64, allocated: i64, free_block: i64) -> P {
    P::Dict(vec![
        ("device", P::Int(0)),
        ("address", P::Int(0x7f00_0000_0000)),
        ("total_size", P::Int(total)),
        ("allocated_size", P::Int(allocated)),
        ("active_size", P::Int(allocated)),
        ("requested_size", P::Int(allocated)),
        ("segment_type", P::Str("large")),
        ("is_expandable", P::Bool(false)),
        (
            "blocks",
            P::List(vec![
                P::Dict(vec![
                    ("size", P::Int(allocated)),
                    ("state", P::Str("active_allocated")),
                ]),
                P::Dict(vec![
                    ("size", P::Int(free_block)),
                    ("state", P::Str("inactive")),
                ]),
            ]),
        ),
    ])
}

fn analyze(path: &std::path::Path) -> (i32, Value, String) {
    let run = tracelens([
        "analyze".into(),
        path.as_os_str().to_owned(),
        "--format".into(),
        "json".into(),
    ]);
    let doc = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
    (run.code, doc, run.stderr)
}

fn temp(name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tracelens-snapshots-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn real_public_snapshots_read_with_their_totals_segments_and_lines() {
    for (name, segments, history) in [
        ("cs336_forward_magma27.pickle.gz", 216, 5163),
        ("cs336_bcrafton.pickle.gz", 96, 6486),
    ] {
        let path = fixtures_dir().join("snapshots").join(name);
        let (code, doc, err) = analyze(&path);
        assert_eq!(code, 0, "{name}: {err}");
        assert_eq!(doc["input"]["format"], "torch_memory_snapshot", "{name}");
        assert_eq!(doc["input"]["records_read"], history, "{name}");
        let v = &doc["diagnosis"]["verdict"];
        assert!(
            v["text"].as_str().unwrap().contains("memory snapshot"),
            "{name}: {v}"
        );
        let m = &doc["diagnosis"]["memory"][0];
        assert_eq!(m["basis"], "allocator_totals", "{name}");
        assert_eq!(m["allocator"]["segments"], segments, "{name}");
        // The categories add up to the peak; the peak is never above what is reserved.
        let c = &m["composition"]["categories"];
        let sum: i64 = c
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_i64().unwrap())
            .sum();
        assert_eq!(
            sum,
            m["peak_allocated_bytes"].as_i64().unwrap(),
            "{name}: {c}"
        );
        assert!(m["peak_reserved_bytes"].as_i64() >= m["peak_allocated_bytes"].as_i64());
        // Allocation sites are the user's lines from the stacks.
        let site = m["composition"]["sites"][0]["line"].as_str().unwrap_or("");
        assert!(site.contains(".py:"), "{name}: {site}");
    }
    // MAGMA27's run: the largest live blocks at the peak come from model.py line 39.
    let (_, doc, _) = analyze(
        &fixtures_dir()
            .join("snapshots")
            .join("cs336_forward_magma27.pickle.gz"),
    );
    let m = &doc["diagnosis"]["memory"][0];
    assert_eq!(m["peak_allocated_bytes"], 13_927_832_064i64);
    assert!(m["composition"]["sites"][0]["line"]
        .as_str()
        .unwrap()
        .ends_with("model.py:39 forward"));
}

/// A snapshot whose history allocates 3 GB in `train.py:20`, then fails a 4 GB request, on
/// a device with 6 GB reserved in one segment: 2 GB cached unused but the largest free block
/// only 1 GB.
fn oom_snapshot(with_room: bool) -> Vec<u8> {
    let gb = 1_000_000_000;
    let mut history = Vec::new();
    for i in 0..3 {
        history.push(entry(
            "alloc",
            0x1000 + i * gb,
            gb,
            100 + i,
            ("/home/u/train.py", 20, "forward"),
        ));
    }
    let requested = if with_room { gb } else { 4 * gb };
    history.push(P::Dict(vec![
        ("action", P::Str("oom")),
        ("addr", P::Int(0)),
        ("size", P::Int(requested)),
        ("device_free", P::Int(gb / 2)),
        ("time_us", P::Int(200)),
        ("frames", frames("/home/u/train.py", 21, "forward")),
    ]));
    pickle(&P::Dict(vec![
        ("segments", P::List(vec![segment(6 * gb, 3 * gb, gb)])),
        ("device_traces", P::List(vec![P::List(history)])),
        (
            "allocator_settings",
            P::Dict(vec![
                ("PYTORCH_CUDA_ALLOC_CONF", P::Str("")),
                ("expandable_segments", P::Bool(false)),
            ]),
        ),
    ]))
}

#[test]
fn an_out_of_memory_error_is_told_with_what_was_alive_and_whether_the_cache_had_room() {
    let path = temp("oom.pickle", &oom_snapshot(false));
    let (code, doc, err) = analyze(&path);
    assert_eq!(code, 0, "{err}");
    let m = &doc["diagnosis"]["memory"][0];
    let oom = &m["allocator"]["out_of_memory"][0];
    assert_eq!(oom["requested_bytes"], 4_000_000_000i64);
    assert_eq!(oom["allocated_bytes"], 3_000_000_000i64, "{oom}");
    assert_eq!(oom["device_free_bytes"], 500_000_000);
    assert_eq!(oom["alive_sites"][0]["line"], "/home/u/train.py:20 forward");
    let advice = doc["diagnosis"]["memory_advice"].as_array().unwrap();
    let a = advice
        .iter()
        .find(|a| a["problem"] == "out_of_memory")
        .expect("an OOM problem");
    assert!(
        a["title"]
            .as_str()
            .unwrap()
            .contains("a request of 4.00 GB failed"),
        "{a}"
    );
    // 3 GB cached unused is less than 4 GB: the tensors need more than the device.
    assert!(a["fix"].as_str().unwrap().contains("checkpoint"), "{a}");
    // A 1 GB request with 3 GB cached unused: fragmentation, and the setting that helps.
    let path = temp("oom_fragmented.pickle", &oom_snapshot(true));
    let (_, doc, _) = analyze(&path);
    let advice = doc["diagnosis"]["memory_advice"].as_array().unwrap();
    let a = advice
        .iter()
        .find(|a| a["problem"] == "out_of_memory")
        .unwrap();
    assert!(a["fix"].as_str().unwrap().contains("fragmented"), "{a}");
    assert!(
        a["fix"]
            .as_str()
            .unwrap()
            .contains("expandable_segments:True"),
        "{a}"
    );
    let md = tracelens([
        "analyze".into(),
        path.into_os_string(),
        "--format".into(),
        "md".into(),
    ]);
    assert!(md.stdout.contains("out-of-memory errors"), "{}", md.stdout);
}

#[test]
fn hostile_pickles_are_refused_in_one_line() {
    // 2^40 copies of a list through the memo: refused before anything is built.
    let mut laughs = b"\x80\x02](".to_vec();
    laughs.extend(std::iter::repeat_n(&b"K\x00"[..], 16).flatten());
    laughs.extend(b"eq\x00");
    for level in 1..10u8 {
        laughs.extend(b"](");
        laughs.extend(std::iter::repeat_n([b'h', level - 1], 16).flatten());
        laughs.extend([b'e', b'q', level]);
    }
    laughs.push(b'.');
    let deep: Vec<u8> = [&b"\x80\x02"[..], &[b']'; 100_000], &[b'a'; 99_999], b"."].concat();
    let cases: [(&str, Vec<u8>, &str); 6] = [
        (
            "global.pickle",
            b"\x80\x02cos\nsystem\n(S'true'\ntR.".to_vec(),
            "constructs objects (GLOBAL)",
        ),
        (
            "reduce.pickle",
            b"\x80\x04N)R.".to_vec(),
            "constructs objects (REDUCE)",
        ),
        ("laughs.pickle", laughs, "expands to more than"),
        ("deep.pickle", deep, "nests deeper than"),
        (
            "cut.pickle",
            b"\x80\x04}(X\x00\x00\x10\x00abc".to_vec(),
            "cut short",
        ),
        (
            "other.pickle",
            pickle(&P::List(vec![P::Int(1)])),
            "not a PyTorch memory snapshot",
        ),
    ];
    for (name, bytes, says) in cases {
        let path = temp(name, &bytes);
        let (code, _, err) = analyze(&path);
        assert_eq!(code, 2, "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(err.contains(name) && err.contains(says), "{name}: {err}");
    }
}
