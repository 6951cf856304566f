//! Nsight Systems exports: every corpus export loads, the nsys-compatible rules reproduce the
//! golden `nsys analyze` outputs row for row, the native diagnoses work on real exports, and
//! project-made exports (real DDL) cover the edge cases.

use std::path::{Path, PathBuf};
use tracelens_analysis::attribute::syncs::SyncTrigger;
use tracelens_analysis::measure::window::WindowKind;
use tracelens_analysis::{device_utilization, diagnose, FindingKind, VerdictKind};
use tracelens_model::{LaneKey, SpanKind, WarningKind};
use tracelens_tests::consistency::{advice_context_errors, consistency_errors, rerender_errors};
use tracelens_tests::nsys_export::Export;
use tracelens_tests::{corpus_dir, tracelens};

fn exports(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.join("nsys")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "sqlite") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
#[cfg_attr(
    no_corpus,
    ignore = "no trace corpus: set TRACELENS_CORPUS to shared/traces"
)]
fn every_corpus_export_loads_and_conserves_idle_time() {
    let Some(root) = corpus_dir("every_corpus_export_loads_and_conserves_idle_time") else {
        return;
    };
    let files = exports(&root);
    assert!(files.len() >= 20, "found {} exports", files.len());
    let mut schemas = std::collections::BTreeSet::new();
    for path in &files {
        let t =
            tracelens_nsys::import_file(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        schemas.insert(
            t.metadata
                .versions
                .get("nsys_export_schema_version")
                .cloned()
                .unwrap_or_default(),
        );
        if !t.has_gpu_activity() {
            assert!(
                t.warnings
                    .iter()
                    .any(|w| w.kind == WarningKind::NoGpuActivity),
                "{}",
                path.display()
            );
        }
        let report = tracelens_report::Report::build(&t);
        let mut errors = consistency_errors(&t, &report);
        errors.extend(rerender_errors(&report));
        errors.extend(advice_context_errors(&report.diagnosis));
        assert!(errors.is_empty(), "{}: {errors:#?}", path.display());
        let a = tracelens_analysis::analyze(&t);
        for (idle, u) in a.device_idle.iter().zip(device_utilization(&t)) {
            let sum: i64 = idle.by_cause.values().sum();
            assert_eq!(
                sum,
                u.window.as_ref().map_or(0, |h| h.idle_ns),
                "{}",
                path.display()
            );
        }
    }
    for s in ["3.0.0", "3.7.2", "3.25.0"] {
        assert!(schemas.contains(s), "schema {s} covered: {schemas:?}");
    }
}

/// The table blocks (header, dashes, rows, truncation note) per rule of an analyze output.
fn rule_tables(text: &str) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut out: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    let lines: Vec<&str> = text.lines().collect();
    let mut rule: Option<String> = None;
    let mut in_table = false;
    for (i, l) in lines.iter().enumerate() {
        if let Some(rest) = l.strip_prefix(" ** ") {
            let name = rest
                .rsplit('(')
                .next()
                .unwrap_or("")
                .trim_end_matches("):")
                .to_string();
            out.insert(name.clone(), Vec::new());
            rule = Some(name);
            in_table = false;
            continue;
        }
        let Some(r) = &rule else { continue };
        let next_is_dash = lines.get(i + 1).is_some_and(|n| n.starts_with(" ---"));
        if l.starts_with(" ---") {
            in_table = true;
        } else if in_table && l.trim().is_empty() {
            in_table = false;
            continue;
        }
        if next_is_dash || in_table || l.starts_with("Only the top") {
            out.get_mut(r).unwrap().push(l.to_string());
        }
    }
    out.remove("dx12_mem_ops");
    out
}

#[test]
#[cfg_attr(
    no_corpus,
    ignore = "no trace corpus: set TRACELENS_CORPUS to shared/traces"
)]
fn nsys_rules_reproduce_the_golden_outputs_row_for_row() {
    let Some(root) = corpus_dir("nsys_rules_reproduce_the_golden_outputs_row_for_row") else {
        return;
    };
    let n = root.join("nsys");
    let cases = [
        ("generated/synthetic_cuda_pytorch_like_nsys2023.4.4.sqlite", "generated/synthetic_cuda_pytorch_like_nsys2023.4.4.expected_analyze.txt"),
        ("converted/Raphael-Hao__Abacus__report1.qdrep.nsys2023.4.4.sqlite", "converted/Raphael-Hao__Abacus__report1.expected_nsys2023.4.4_analyze.txt"),
        ("public/GindaChen__nsys-ai/tests/fixtures/h100_2gpu_1s.sqlite", "public/GindaChen__nsys-ai/tests/fixtures/h100_2gpu_1s.expected_nsys2023.4.4_analyze.txt"),
    ];
    for (db, golden) in cases {
        let run = tracelens([
            "analyze".into(),
            "--rules".into(),
            "nsys".into(),
            n.join(db).into_os_string(),
        ]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let ours = rule_tables(&run.stdout);
        let theirs = rule_tables(&std::fs::read_to_string(n.join(golden)).unwrap());
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            theirs.keys().collect::<Vec<_>>(),
            "{db}"
        );
        for (rule, rows) in &theirs {
            assert_eq!(&ours[rule], rows, "{db}: {rule}");
        }
        assert!(theirs.values().map(Vec::len).sum::<usize>() > 0 || db.contains("h100"));
    }
    // CSV output is byte-identical to `nsys analyze --format csv`.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nsys-csv");
    let _ = std::fs::remove_dir_all(&dir);
    let db = n.join("generated/synthetic_cuda_pytorch_like_nsys2023.4.4.sqlite");
    let run = tracelens([
        "analyze".into(),
        "--rules".into(),
        "nsys".into(),
        db.into_os_string(),
        "-o".into(),
        dir.clone().into_os_string(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for rule in [
        "cuda_memcpy_async",
        "cuda_memcpy_sync",
        "cuda_memset_sync",
        "cuda_api_sync",
        "gpu_gaps",
        "gpu_time_util",
    ] {
        let name = format!("synthetic_cuda_pytorch_like_nsys2023.4.4_{rule}.csv");
        assert_eq!(
            std::fs::read_to_string(dir.join(&name)).unwrap(),
            std::fs::read_to_string(n.join("generated").join(&name)).unwrap(),
            "{name}"
        );
    }
}

#[test]
#[cfg_attr(
    no_corpus,
    ignore = "no trace corpus: set TRACELENS_CORPUS to shared/traces"
)]
fn native_diagnoses_report_pageable_and_synchronous_copies_with_their_cost() {
    let Some(root) =
        corpus_dir("native_diagnoses_report_pageable_and_synchronous_copies_with_their_cost")
    else {
        return;
    };
    for (rel, pageable_htod) in [
        (
            "nsys/generated/synthetic_cuda_pytorch_like_nsys2023.4.4.sqlite",
            9,
        ),
        (
            "nsys/converted/Raphael-Hao__Abacus__report1.qdrep.nsys2023.4.4.sqlite",
            1258,
        ),
    ] {
        let t = tracelens_nsys::import_file(&root.join(rel)).unwrap();
        let d = diagnose(&t);
        assert_eq!(d.copies.htod_pageable.count, pageable_htod, "{rel}");
        let f = d
            .findings
            .iter()
            .find(|f| f.kind == FindingKind::PageableCopies)
            .unwrap_or_else(|| panic!("{rel}: {:#?}", d.findings));
        assert!(
            f.cpu_cost_per_step_ns.unwrap_or(0) > 0 && f.estimated_win_ns > 0,
            "{rel}: {f:#?}"
        );
        assert!(
            d.syncs.calls > 0,
            "{rel}: the blocking copies and syncs are listed"
        );
    }
}

#[test]
#[cfg_attr(
    no_corpus,
    ignore = "no trace corpus: set TRACELENS_CORPUS to shared/traces"
)]
fn two_process_export_shows_both_gpus_and_the_428_ms_stream_syncs() {
    let Some(root) = corpus_dir("two_process_export_shows_both_gpus_and_the_428_ms_stream_syncs")
    else {
        return;
    };
    let t = tracelens_nsys::import_file(
        &root.join("nsys/public/GindaChen__nsys-ai/tests/fixtures/h100_2gpu_1s.sqlite"),
    )
    .unwrap();
    assert_eq!(
        t.devices.iter().map(|d| d.index).collect::<Vec<_>>(),
        vec![0, 1]
    );
    assert_eq!(
        t.devices
            .iter()
            .map(|d| d.processes.clone())
            .collect::<Vec<_>>(),
        vec![vec![111], vec![112]],
        "one process per GPU"
    );
    assert_eq!(t.devices[1].streams, vec![15]);
    let d = diagnose(&t);
    let long: Vec<_> = t
        .spans
        .iter()
        .filter(|s| {
            s.kind == SpanKind::Runtime
                && t.names.get(s.name).starts_with("cudaStreamSynchronize")
                && s.dur_ns > 428_000_000
        })
        .collect();
    assert_eq!(long.len(), 2, "one 428 ms stream sync per process");
    let pids: std::collections::BTreeSet<_> = long
        .iter()
        .map(|s| match t.lane(s.lane).key {
            LaneKey::Cpu { pid, .. } => format!("{pid:?}"),
            LaneKey::Gpu { .. } => String::new(),
        })
        .collect();
    assert_eq!(pids.len(), 2);
    let site = d.syncs.sites.iter().max_by_key(|s| s.blocked_ns).unwrap();
    assert!(site.blocked_ns > 856_000_000, "{site:#?}");
    // The host waits on the GPU, which stays busy copying: the syncs are listed, but they are
    // no finding, and the verdict names the copies.
    assert!(site.gpu_idle_ns < 1_000_000, "{site:#?}");
    assert!(
        !d.findings
            .iter()
            .any(|f| f.kind == FindingKind::ImplicitSync),
        "{:#?}",
        d.findings
    );
    assert_eq!(d.verdict.kind, VerdictKind::GpuBound);
    assert!(
        d.verdict.text.contains("host-to-device copies"),
        "{}",
        d.verdict.text
    );
}

fn temp_export(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nsys-made");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{name}.sqlite"))
}

/// The kernel table is read on a second connection and handed over in blocks between blocks
/// of runtime rows: every kernel arrives once and joins its launch, whether the runtime table
/// is longer than the kernel table or nearly empty, and the rows read are counted.
#[test]
fn kernels_read_beside_the_runtime_table_all_arrive_linked() {
    for (launches, kernels) in [(25_000, 20_000), (3, 20_000)] {
        let path = temp_export(&format!("kernel_blocks_{launches}"));
        let mut e = Export::create(&path, "META_DATA_EXPORT", "3.7.2");
        e.conn.execute_batch("BEGIN").unwrap();
        for i in 0..launches {
            e.runtime("cudaLaunchKernel_v7000", 7, 7, i * 100, i * 100 + 10, i);
        }
        for i in 0..kernels {
            e.kernel(
                &format!("k{}", i % 5),
                7,
                0,
                7,
                i * 100 + 50,
                i * 100 + 90,
                i,
            );
        }
        e.conn.execute_batch("COMMIT").unwrap();
        drop(e);
        let t = tracelens_nsys::import_file(&path).unwrap();
        let ids: Vec<_> = t.spans_of_kind(SpanKind::Kernel).collect();
        assert_eq!(ids.len(), 20_000, "{launches} launches");
        assert_eq!(
            t.links.gpu_ops_linked,
            u64::try_from(launches.min(kernels)).unwrap()
        );
        for k in ids {
            let start = t.span(k).start_ns;
            assert_eq!(t.name(k), format!("k{}", (start / 100) % 5));
            if let Some(l) = t.launch_of(k) {
                assert_eq!(
                    t.span(l).start_ns,
                    start - 50,
                    "launch of the kernel at {start}"
                );
            }
        }
        let Some(tracelens_model::Detail::Counts(rows)) = t.source.details.get("rows_by_table")
        else {
            panic!("rows by table")
        };
        assert_eq!(rows["CUPTI_ACTIVITY_KIND_KERNEL"], 20_000);
        assert_eq!(
            rows["CUPTI_ACTIVITY_KIND_RUNTIME"],
            u64::try_from(launches).unwrap()
        );
    }
}

#[test]
fn colliding_correlation_ids_join_within_their_process() {
    let path = temp_export("two_processes");
    let mut e = Export::create(&path, "META_DATA_EXPORT", "3.7.2");
    e.runtime("cudaLaunchKernel_v7000", 111, 111, 100, 110, 5);
    e.runtime("cudaLaunchKernel_v7000", 112, 112, 200, 210, 5);
    e.kernel("k_of_111", 111, 0, 7, 300, 400, 5);
    e.kernel("k_of_112", 112, 1, 7, 500, 600, 5);
    e.gpu(0, "NVIDIA H100 80GB HBM3");
    drop(e);
    let t = tracelens_nsys::import_file(&path).unwrap();
    assert_eq!(t.links.gpu_ops_linked, 2);
    for k in t.spans_of_kind(SpanKind::Kernel) {
        let launch = t.launch_of(k).unwrap();
        let LaneKey::Cpu { pid, .. } = t.lane(t.span(launch).lane).key else {
            panic!()
        };
        let want = if t.name(k) == "k_of_111" { 111 } else { 112 };
        assert_eq!(pid, tracelens_model::Ident::Num(want), "{}", t.name(k));
    }
    assert_eq!(t.devices[0].name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
}

#[test]
fn lazy_pre_2023_4_export_without_gpu_tables_says_so() {
    let path = temp_export("lazy_old");
    let mut e = Export::create(&path, "EXPORT_META_DATA", "3.1.2");
    e.conn
        .execute_batch(
            "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL; DROP TABLE CUPTI_ACTIVITY_KIND_MEMCPY;
             DROP TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION; DROP TABLE TARGET_INFO_GPU; DROP TABLE ENUM_CUDA_MEM_KIND;",
        )
        .unwrap();
    e.nvtx("train step", 7, 7, 0, Some(1_000));
    drop(e);
    let t = tracelens_nsys::import_file(&path).unwrap();
    assert_eq!(t.metadata.versions["nsys_export_schema_version"], "3.1.2");
    assert!(!t.has_gpu_activity());
    assert!(t
        .warnings
        .iter()
        .any(|w| w.kind == WarningKind::NoGpuActivity));
    assert_eq!(t.source.version, "nsys_schema_3.1.2");
}

#[test]
fn item_and_data_loader_ranges_from_nvtx_are_diagnosed() {
    let path = temp_export("item_and_loader");
    let mut e = Export::create(&path, "META_DATA_EXPORT", "3.7.2");
    let (pid, tid) = (42, 42);
    let mut corr = 0;
    let mut t = 1_000_000i64;
    for step in 0..4 {
        // DataLoader wait (3 ms) on the training thread.
        e.nvtx(
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__, op_id = 1",
            pid,
            tid,
            t,
            Some(t + 3_000_000),
        );
        t += 3_000_000;
        // A 2 ms kernel, then loss.item(): DtoH into pinned memory and a stream sync.
        corr += 1;
        e.runtime("cudaLaunchKernel_v7000", pid, tid, t, t + 5_000, corr);
        e.kernel("fwd", pid, 0, 7, t + 10_000, t + 2_010_000, corr);
        let item = t + 20_000;
        corr += 1;
        e.runtime(
            "cudaMemcpyAsync_v3020",
            pid,
            tid,
            item + 2_000,
            item + 8_000,
            corr,
        );
        e.memcpy(pid, 0, 7, t + 2_010_000, t + 2_012_000, corr, 4, 2, 2, 1);
        corr += 1;
        e.runtime(
            "cudaStreamSynchronize_v3020",
            pid,
            tid,
            item + 9_000,
            t + 2_015_000,
            corr,
        );
        e.nvtx(
            &format!("aten::item, seq = {step}, op_id = 2"),
            pid,
            tid,
            item,
            Some(t + 2_016_000),
        );
        e.nvtx(
            "aten::_local_scalar_dense, op_id = 3",
            pid,
            tid,
            item + 1_000,
            Some(t + 2_015_500),
        );
        // Logging after the sync: 1 ms of CPU work, the GPU has nothing queued.
        e.nvtx_registered("log_metrics", pid, tid, t + 2_017_000, t + 3_017_000);
        t += 3_020_000;
    }
    e.nvtx("never closed", pid, tid, -5_000, None);
    drop(e);
    let trace = tracelens_nsys::import_file(&path).unwrap();
    let names: Vec<&str> = trace
        .spans
        .iter()
        .map(|s| trace.names.get(s.name))
        .collect();
    assert!(
        names.contains(&"log_metrics")
            && names.contains(&"never closed")
            && names.contains(&"aten::item")
    );
    let open = trace
        .spans
        .iter()
        .find(|s| trace.names.get(s.name) == "never closed")
        .unwrap();
    assert_eq!(
        open.start_ns, -5_000,
        "negative timestamps are kept as stored"
    );
    assert!(
        open.end_ns() >= t - 3_000_000,
        "an unclosed range ends where the table ends"
    );
    let d = diagnose(&trace);
    let kinds: Vec<FindingKind> = d.findings.iter().map(|f| f.kind).collect();
    assert!(
        kinds.contains(&FindingKind::DataLoaderStall),
        "{:#?}",
        d.findings
    );
    let item = d
        .syncs
        .sites
        .iter()
        .find(|s| s.trigger == SyncTrigger::Item)
        .expect("the .item() sync");
    assert_eq!(item.count, 4);
    assert!(item.gpu_idle_ns > 0);
    assert!(
        d.findings
            .iter()
            .any(|f| f.kind == FindingKind::ImplicitSync && f.title.starts_with(".item()")),
        "{:#?}",
        d.findings
    );
}

#[test]
fn unified_memory_migrations_are_not_pageable_copies() {
    let path = temp_export("uvm");
    let mut e = Export::create(&path, "META_DATA_EXPORT", "3.17.2");
    e.runtime("cudaMemcpyAsync_v3020", 9, 9, 0, 5_000, 1);
    e.memcpy(9, 0, 7, 10_000, 20_000, 1, 1 << 20, 11, 7, 7);
    e.memcpy(9, 0, 7, 30_000, 40_000, 2, 1 << 20, 12, 7, 7);
    e.kernel("k", 9, 0, 7, 50_000, 60_000, 3);
    drop(e);
    let t = tracelens_nsys::import_file(&path).unwrap();
    // The kernel's launch is missing from the export; a migration has none to miss.
    let unlinked: u64 = t
        .warnings
        .iter()
        .filter(|w| w.kind == tracelens_model::WarningKind::UnlinkedGpuOp)
        .map(|w| w.count)
        .sum();
    assert_eq!(unlinked, 1, "{:#?}", t.warnings);
    let d = diagnose(&t);
    assert_eq!(d.copies.pageable().count, 0);
    assert!(d
        .findings
        .iter()
        .all(|f| f.kind != FindingKind::PageableCopies));
    // Migrations are their own class: in no host-copy class and no direction's totals, so
    // no copy finding gives them pinned-copy advice.
    assert_eq!(d.copies.unified_migrations.count, 2);
    assert_eq!(d.copies.host_kind_unknown.count, 0);
    assert!(d
        .copies
        .by_device
        .iter()
        .all(|c| c.directions().iter().all(|(_, dir)| dir.all.count == 0)));
    let run = tracelens([
        "analyze".into(),
        "--rules".into(),
        "nsys".into(),
        path.into_os_string(),
    ]);
    assert!(
        run.stdout
            .contains("No asynchronous memcpy used pageable memory."),
        "{}",
        run.stdout
    );
}

/// The export at `path` diagnosed, with its first finding of `kind` (panics without one).
fn diagnosis_and_finding(
    path: &Path,
    kind: FindingKind,
) -> (tracelens_analysis::Diagnosis, tracelens_analysis::Finding) {
    let t = tracelens_nsys::import_file(path).unwrap();
    let d = diagnose(&t);
    let f = d
        .findings
        .iter()
        .find(|f| f.kind == kind)
        .unwrap_or_else(|| panic!("{}\n{:#?}", d.verdict.text, d.findings))
        .clone();
    (d, f)
}

/// A one-shot program: two 4 MiB pageable copies around a kernel, in at `in_ns` and back at
/// `out_ns` of GPU time; the pinned-copy finding's predicted time.
fn pinned_prediction(name: &str, in_ns: i64, out_ns: i64) -> (i64, i64) {
    let path = temp_export(name);
    let mut e = Export::create(&path, "META_DATA_EXPORT", "3.17.2");
    let mb4 = 4 << 20;
    e.runtime("cudaMemcpy_v3020", 9, 9, 0, 1_000 + in_ns, 1);
    e.memcpy(9, 0, 7, 500, 500 + in_ns, 1, mb4, 1, 0, 2);
    let k = 2_000 + in_ns;
    e.runtime("cudaLaunchKernel_v7000", 9, 9, k - 1_000, k - 500, 2);
    e.kernel("k", 9, 0, 7, k, k + 100_000, 2);
    let c = k + 101_000;
    e.runtime("cudaMemcpy_v3020", 9, 9, c - 500, c + out_ns + 500, 3);
    e.memcpy(9, 0, 7, c, c + out_ns, 3, mb4, 2, 2, 0);
    drop(e);
    let (d, f) = diagnosis_and_finding(&path, FindingKind::PageableCopies);
    let window_ns = d.verdict.window.unwrap().duration_ns;
    (window_ns, f.predicted_step_ns.unwrap())
}

/// Two 4 MiB pageable copies of 2 ms each around a kernel of `kernel_ns`, after a first
/// kernel 30 ms before with `pause_first`; the pageable-copy finding's fix.
fn pageable_fix_around(name: &str, kernel_ns: i64, pause_first: bool) -> String {
    let path = temp_export(name);
    let mut e = Export::create(&path, "META_DATA_EXPORT", "3.17.2");
    let mb4 = 4 << 20;
    if pause_first {
        e.runtime("cudaLaunchKernel_v7000", 9, 9, -30_001_000, -30_000_500, 4);
        e.kernel("k0", 9, 0, 7, -30_000_000, -29_990_000, 4);
    }
    e.runtime("cudaMemcpy_v3020", 9, 9, 0, 2_001_000, 1);
    e.memcpy(9, 0, 7, 500, 2_000_500, 1, mb4, 1, 0, 2);
    let k = 2_002_000;
    e.runtime("cudaLaunchKernel_v7000", 9, 9, k - 1_000, k - 500, 2);
    e.kernel("k", 9, 0, 7, k, k + kernel_ns, 2);
    let c = k + kernel_ns + 1_000;
    e.runtime("cudaMemcpy_v3020", 9, 9, c - 500, c + 2_000_500, 3);
    e.memcpy(9, 0, 7, c, c + 2_000_000, 3, mb4, 2, 2, 0);
    drop(e);
    diagnosis_and_finding(&path, FindingKind::PageableCopies)
        .1
        .fix
}

#[test]
fn copies_that_fill_the_window_are_told_to_copy_less_before_pinning() {
    let fix = pageable_fix_around("copy_bound", 100_000, false);
    assert!(
        fix.starts_with("These copies fill")
            && fix.contains("copy less first")
            && fix.contains("cudaMallocHost"),
        "{fix}"
    );
    // Its twin's kernel runs 20 ms after a pause: the copies are a small part of the
    // window, pinning leads (without the pause the window is GPU-bound and the replay says
    // pinning saves nothing: no finding).
    let fix = pageable_fix_around("copy_minor", 20_000_000, true);
    assert!(fix.starts_with("Allocate the host buffers pinned"), "{fix}");
}

#[test]
fn pinned_copies_are_predicted_at_the_fastest_large_host_copy_rate() {
    // Back to the host at a fifth of the rate in: pinned, it moves at least as fast as the
    // way in, 1.6 ms sooner.
    let (window_ns, predicted_ns) = pinned_prediction("pinned_faster", 400_000, 2_000_000);
    assert!(
        window_ns - predicted_ns >= 1_500_000,
        "{window_ns} → {predicted_ns}"
    );
    // Its twin moves both ways at one rate: nothing in the trace says pinned would be faster.
    let (window_ns, predicted_ns) = pinned_prediction("pinned_same_rate", 400_000, 400_000);
    assert!(
        window_ns - predicted_ns < 10_000,
        "{window_ns} → {predicted_ns}"
    );
}

/// A one-block kernel on a 132-multiprocessor GPU, with two managed-page migrations to the
/// GPU at `fault_at` (on a fault: migration cause 2); its small-grid fix.
fn small_grid_fix(name: &str, fault_at: i64) -> String {
    let path = temp_export(name);
    let mut e = Export::create(&path, "META_DATA_EXPORT", "3.17.2");
    e.gpu(0, "NVIDIA H100 80GB HBM3");
    e.runtime("cudaLaunchKernel_v7000", 9, 9, 0, 1_000, 1);
    e.kernel("k", 9, 0, 7, 2_000, 1_002_000, 1);
    for (corr, at) in [(10, fault_at), (11, fault_at + 20_000)] {
        e.memcpy(9, 0, 7, at, at + 10_000, corr, 65_536, 11, 7, 7);
    }
    e.conn
        .execute_batch("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET migrationCause = 2")
        .unwrap();
    drop(e);
    diagnosis_and_finding(&path, FindingKind::SmallGrid).1.fix
}

#[test]
fn pages_faulting_in_while_a_small_grid_runs_are_named_in_its_fix() {
    let fix = small_grid_fix("small_grid_faults", 500_000);
    assert!(
        fix.contains("2 unified-memory migrations to the GPU start inside it"),
        "{fix}"
    );
    // Its twin migrates after the kernel: nothing faults while it runs.
    let fix = small_grid_fix("small_grid_no_faults", 1_100_000);
    assert!(!fix.contains("fault"), "{fix}");
}

/// A kernel with one page fault to the GPU inside it, then three migrations after it, back to
/// the host (`to_host`) or to the GPU, each ending an idle gap; the verdict and the cause row.
fn migrations_after_a_kernel(name: &str, to_host: bool) -> (String, Option<String>) {
    let path = temp_export(name);
    let mut e = Export::create(&path, "META_DATA_EXPORT", "3.17.2");
    e.gpu(0, "NVIDIA H100 80GB HBM3");
    e.runtime("cudaLaunchKernel_v7000", 9, 9, 0, 1_000, 1);
    e.kernel("k", 9, 0, 7, 2_000, 1_002_000, 1);
    e.memcpy(9, 0, 7, 500_000, 510_000, 10, 65_536, 11, 7, 7);
    let kind = if to_host { 12 } else { 11 };
    for (corr, at) in [(11, 1_500_000), (12, 2_000_000), (13, 2_500_000)] {
        e.memcpy(9, 0, 7, at, at + 10_000, corr, 65_536, kind, 7, 7);
    }
    e.conn
        .execute_batch("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET migrationCause = 2")
        .unwrap();
    drop(e);
    let d = diagnose(&tracelens_nsys::import_file(&path).unwrap());
    let note = d.idle[0].by_cause[0]
        .note
        .map(|_| d.idle[0].by_cause[0].describe().to_string());
    (d.verdict.text, note)
}

#[test]
fn idle_ended_by_migrations_says_which_way_the_pages_move_and_faults_inside_kernels() {
    let (back, note) = migrations_after_a_kernel("um_back_to_host", true);
    assert!(
        back.contains("managed pages moving back to the host on its faults")
            && back.contains("one migration to the GPU starts while a kernel runs"),
        "{back}"
    );
    assert_eq!(
        note.as_deref(),
        Some("no launch behind it: gaps that end in unified-memory migrations")
    );
    let (to_gpu, _) = migrations_after_a_kernel("um_to_gpu", false);
    assert!(
        to_gpu.contains("managed pages moving to the GPU on faults")
            && !to_gpu.contains("back to the host"),
        "{to_gpu}"
    );
}

#[test]
fn sqlite_files_that_are_not_nsys_exports_are_refused() {
    let path = temp_export("not_nsys");
    let _ = std::fs::remove_file(&path);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE users (id INTEGER, name TEXT);")
        .unwrap();
    drop(conn);
    let run = tracelens([
        "analyze".into(),
        path.clone().into_os_string(),
        "--no-report".into(),
    ]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr.trim_end(),
        format!(
            "tracelens: error: {}: an SQLite database, but not an Nsight Systems export (none of its StringIds, META_DATA_EXPORT, CUPTI or NVTX tables)",
            path.display()
        )
    );
    let json = tracelens_tests::fixtures_dir().join("kineto/modern_base_ns.json");
    let run = tracelens([
        "analyze".into(),
        "--rules".into(),
        "nsys".into(),
        json.clone().into_os_string(),
    ]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr.trim_end(),
        format!("tracelens: error: {}: --rules nsys needs an Nsight Systems SQLite export (nsys export --type sqlite)", json.display())
    );
}

#[test]
fn os_runtime_waits_of_the_launching_thread_are_evidence() {
    let path = temp_export("osrt_waits");
    let mut e = Export::create(&path, "META_DATA_EXPORT", "3.7.2");
    let mut t = 1_000_000i64;
    for i in 0..5 {
        // A 1 ms kernel, then the thread waits 4 ms for a batch from a worker process.
        e.runtime("cudaLaunchKernel_v7000", 5, 5, t, t + 5_000, i + 1);
        e.kernel("step_kernel", 5, 0, 7, t + 10_000, t + 1_010_000, i + 1);
        e.osrt("pthread_cond_wait", 5, 5, t + 20_000, t + 4_020_000);
        e.osrt("pthread_cond_wait", 5, 9, t, t + 5_000_000); // another thread: not evidence
        t += 4_100_000;
    }
    e.conn
        .execute(
            "INSERT INTO OSRT_API VALUES (0, 0, 31, ?1, 1, 0, 0, 0)",
            [tracelens_tests::nsys_export::gtid(5, 5)],
        )
        .unwrap();
    drop(e);
    let trace = tracelens_nsys::import_file(&path).unwrap();
    assert_eq!(
        trace.spans_of_kind(SpanKind::OsRuntime).count(),
        10,
        "the marker row is skipped"
    );
    let d = diagnose(&trace);
    let waits = &d.idle[0].os_waits;
    assert_eq!(waits.len(), 1);
    assert_eq!(waits[0].0, "pthread_cond_wait");
    // Each gap runs from the kernel end (+1.01 ms) to the next launch (+4.1 ms); the wait
    // ends at +4.02 ms, so 3.01 ms of each of the 4 gaps is an OS wait.
    assert_eq!(
        waits[0].1,
        4 * 3_010_000,
        "only the launching thread's waits inside the gaps"
    );
    let host = d
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::HostCompute)
        .unwrap_or_else(|| panic!("{:#?}", d.findings));
    assert!(host.title.contains("blocked in OS waits"), "{}", host.title);
}

/// Five 1 ms kernels; between them the launching thread runs 3 ms of Python, during which it
/// is switched out for 2 ms, preempted while runnable. With `explained`, a traced
/// `pthread_cond_wait` covers the switch.
fn descheduled_export(name: &str, explained: bool) -> PathBuf {
    descheduled_export_in_state(name, explained, 1)
}

/// The same, with the switch-outs in thread state `state`.
fn descheduled_export_in_state(name: &str, explained: bool, state: i64) -> PathBuf {
    let path = temp_export(name);
    let mut e = Export::create(&path, "META_DATA_EXPORT", "3.7.2");
    let mut t = 1_000_000i64;
    for i in 0..5 {
        e.runtime("cudaLaunchKernel_v7000", 5, 5, t, t + 5_000, i + 1);
        e.kernel("k", 5, 0, 7, t + 10_000, t + 1_010_000, i + 1);
        e.nvtx("python bookkeeping", 5, 5, t + 20_000, Some(t + 3_020_000));
        e.off_cpu_in_state(5, 5, t + 1_500_000, t + 3_500_000, state);
        if explained {
            e.osrt("pthread_cond_wait", 5, 5, t + 1_490_000, t + 3_510_000);
        }
        t += 4_000_000;
    }
    drop(e);
    path
}

#[test]
fn runnable_but_not_running_launch_thread_is_cpu_oversubscription() {
    let t = tracelens_nsys::import_file(&descheduled_export("descheduled", false)).unwrap();
    assert_eq!(t.spans_of_kind(SpanKind::OffCpu).count(), 5);
    let d = diagnose(&t);
    assert_eq!(
        d.idle[0].descheduled_ns,
        4 * 2_000_000,
        "the switch-outs inside the four gaps"
    );
    let f = d
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::CpuOversubscription)
        .unwrap_or_else(|| panic!("{:#?}", d.findings));
    assert!(f.title.contains("runnable but not running"), "{}", f.title);

    let twin =
        tracelens_nsys::import_file(&descheduled_export("descheduled_waiting", true)).unwrap();
    let d = diagnose(&twin);
    assert_eq!(
        d.idle[0].descheduled_ns, 0,
        "a thread blocked in a traced wait is not runnable"
    );
    assert!(
        d.findings
            .iter()
            .all(|f| f.kind != FindingKind::CpuOversubscription),
        "{:#?}",
        d.findings
    );
    assert_eq!(d.idle[0].os_waits[0].0, "pthread_cond_wait");
    // A switch-out into a wait the OS trace did not catch (state interruptible) leaves no
    // off-CPU span; a capture that does not say why (state unknown, every export of the
    // corpus) keeps the span but makes no oversubscription claim.
    for (state, spans) in [(2, 0), (0, 5)] {
        let path = descheduled_export_in_state(&format!("descheduled_state_{state}"), false, state);
        let t = tracelens_nsys::import_file(&path).unwrap();
        assert_eq!(t.source.records_thread_states, state != 0);
        assert_eq!(t.spans_of_kind(SpanKind::OffCpu).count(), spans);
        let d = diagnose(&t);
        assert_eq!(d.idle[0].descheduled_ns, 0, "state {state}");
        assert!(
            d.findings
                .iter()
                .all(|f| f.kind != FindingKind::CpuOversubscription),
            "state {state}: {:#?}",
            d.findings
        );
    }
}

#[test]
fn rules_show_raw_memory_kinds_when_the_enum_table_is_absent() {
    let path = temp_export("no_enum");
    let mut e = Export::create(&path, "META_DATA_EXPORT", "3.7.2");
    e.conn
        .execute_batch("DROP TABLE ENUM_CUDA_MEM_KIND;")
        .unwrap();
    e.runtime("cudaMemcpyAsync_v3020", 9, 9, 0, 5_000, 1);
    e.memcpy(9, 0, 7, 10_000, 20_000, 1, 4_194_304, 1, 0, 2);
    drop(e);
    let run = tracelens([
        "analyze".into(),
        "--rules".into(),
        "nsys".into(),
        path.into_os_string(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let row = run
        .stdout
        .lines()
        .find(|l| l.contains("cudaMemcpyAsync_v3020"))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[..5], &["10000", "10000", "0", "2", "4.194"], "{row}");
}

/// A sync's GPU-idle win is at most the time it blocked the host: the Abacus export's 1,256
/// stream syncs blocked 15.9 ms and are not blamed for the start-up gap before the real work.
#[test]
#[cfg_attr(
    no_corpus,
    ignore = "no trace corpus: set TRACELENS_CORPUS to shared/traces"
)]
fn syncs_are_charged_at_most_the_time_they_blocked() {
    let Some(root) = corpus_dir("syncs_are_charged_at_most_the_time_they_blocked") else {
        return;
    };
    let t = tracelens_nsys::import_file(
        &root.join("nsys/converted/Raphael-Hao__Abacus__report1.qdrep.nsys2023.4.4.sqlite"),
    )
    .unwrap();
    let d = diagnose(&t);
    for s in &d.syncs.sites {
        assert!(s.gpu_idle_ns <= s.blocked_ns, "{s:#?}");
    }
    let stream = d
        .syncs
        .sites
        .iter()
        .find(|s| s.trigger == SyncTrigger::StreamSynchronize)
        .unwrap();
    assert_eq!(stream.count, 1256);
    assert!(stream.gpu_idle_ns < 16_000_000, "{stream:#?}");
}

#[test]
fn annotate_refuses_an_export_in_one_line_naming_its_format() {
    let path = descheduled_export("annotate_refused", false);
    let out = path.with_extension("annotated.json.gz");
    let run = tracelens([
        "annotate".into(),
        path.clone().into_os_string(),
        "-o".into(),
        out.clone().into_os_string(),
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("not into the Nsight Systems SQLite export format"),
        "{}",
        run.stderr
    );
    assert!(!out.exists(), "no output for a refused input");
}

/// Five steps of a kernel then a synchronous `cudaMemcpy`; with `twice`, each memcpy is also
/// recorded as `cudaMemcpy_v3020` with the same correlation id, as some Nsight 2022 exports do.
fn memcpy_export(name: &str, twice: bool) -> PathBuf {
    let path = temp_export(name);
    let mut e = Export::create(&path, "META_DATA_EXPORT", "3.7.2");
    let mut t = 1_000_000i64;
    for i in 0..5 {
        let (launch, copy) = (2 * i + 1, 2 * i + 2);
        e.runtime("cudaLaunchKernel_v7000", 5, 5, t, t + 5_000, launch);
        e.kernel("k", 5, 0, 7, t + 10_000, t + 1_010_000, launch);
        e.runtime("cudaMemcpy", 5, 5, t + 20_000, t + 1_100_000, copy);
        if twice {
            e.runtime("cudaMemcpy_v3020", 5, 5, t + 20_500, t + 1_099_500, copy);
        }
        t += 2_000_000;
    }
    drop(e);
    path
}

#[test]
fn a_call_recorded_under_two_api_names_counts_once() {
    let once = tracelens_nsys::import_file(&memcpy_export("memcpy_once", false)).unwrap();
    let twice = tracelens_nsys::import_file(&memcpy_export("memcpy_twice", true)).unwrap();
    let runtime = |t: &tracelens_model::Trace| t.spans_of_kind(SpanKind::Runtime).count();
    assert_eq!(runtime(&once), 10);
    assert_eq!(runtime(&twice), 10, "the repeated rows are one call each");
    let (d1, d2) = (diagnose(&once), diagnose(&twice));
    assert_eq!(d1.syncs.calls, d2.syncs.calls);
    assert_eq!(d1.syncs.blocked_ns, d2.syncs.blocked_ns);
    assert!(twice
        .warnings
        .iter()
        .any(|w| w.kind == WarningKind::DuplicateEvent && w.message.contains("two API names")));
    assert!(once
        .warnings
        .iter()
        .all(|w| w.kind != WarningKind::DuplicateEvent));
}

/// A library's NVTX domain is kept in the metadata and names the program; a peer copy keeps
/// its two devices.
#[test]
fn nvtx_domains_and_peer_devices_are_read() {
    let path = temp_export("domains_and_peers");
    let mut e = Export::create(&path, "META_DATA_EXPORT", "3.7.2");
    e.conn
        .execute_batch(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES (5, NULL, 75, 'libcudf', 0, 3);
             INSERT INTO PROCESSES VALUES (7, 7, 'python3');",
        )
        .unwrap();
    e.runtime("cudaMemcpyPeerAsync_v4000", 7, 7, 100, 110, 1);
    e.memcpy(7, 0, 7, 200, 300, 1, 4_000_000, 10, 2, 2);
    e.conn
        .execute_batch("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET srcDeviceId = 0, dstDeviceId = 1")
        .unwrap();
    drop(e);
    let t = tracelens_nsys::import_file(&path).unwrap();
    assert_eq!(t.metadata.nvtx_domains, vec!["libcudf".to_string()]);
    let copy = t.spans_of_kind(SpanKind::Memcpy).next().unwrap();
    assert_eq!(
        t.copy_info(copy).and_then(|c| c.peer),
        tracelens_model::PeerDevices::new(0, 1)
    );
    let fw = tracelens_analysis::measure::environment::framework(&t);
    assert_eq!(
        fw.library,
        Some(tracelens_analysis::measure::environment::PythonLibrary::CuDf)
    );
}

/// An OS-runtime wait still open when the session stopped ends with the session, so the
/// capture is the session's length; the twin without the session table keeps the wait whole.
#[test]
fn an_os_wait_past_the_session_ends_with_it() {
    for with_session in [true, false] {
        let path = temp_export(&format!("osrt_past_session_{with_session}"));
        let mut e = Export::create(&path, "EXPORT_META_DATA", "3.11.0");
        e.runtime("cudaLaunchKernel_v7000", 7, 7, 1_000_000, 1_010_000, 1);
        e.kernel("k", 7, 0, 7, 1_020_000, 1_500_000, 1);
        e.osrt("sem_wait", 7, 8, 500_000, 9_000_000_000);
        if with_session {
            e.conn
                .execute_batch(
                    "CREATE TABLE ANALYSIS_DETAILS (globalVid INTEGER, duration INTEGER, startTime INTEGER, stopTime INTEGER);
                     INSERT INTO ANALYSIS_DETAILS VALUES (1, 600000000, 100, 600000100);",
                )
                .unwrap();
        }
        drop(e);
        let t = tracelens_nsys::import_file(&path).unwrap();
        let last = t.spans.iter().map(|s| s.end_ns()).max().unwrap();
        let want = if with_session {
            600_000_000
        } else {
            9_000_000_000
        };
        assert_eq!(last, want, "session table: {with_session}");
    }
}

/// CUDA API calls traced but no GPU record back, under WSL2: the verdict names WSL2 and does
/// not ask for `-t cuda` again; the same export without the kernel release names no WSL.
#[test]
fn gpu_activity_missing_under_wsl2_is_named_and_not_blamed_on_the_flags() {
    for wsl in [true, false] {
        let path = temp_export(&format!("no_activity_wsl_{wsl}"));
        let mut e = Export::create(&path, "EXPORT_META_DATA", "3.20.3");
        e.runtime("cudaMemcpyAsync_v3020", 7, 7, 1_000, 165_000_000, 1);
        e.runtime("cudaLaunchKernel_v7000", 7, 7, 165_100_000, 165_110_000, 2);
        let release = if wsl {
            "6.6.87.2-microsoft-standard-WSL2"
        } else {
            "6.8.0-45-generic"
        };
        e.conn
            .execute_batch(&format!(
                "CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid INTEGER, devStateName TEXT NOT NULL, name TEXT NOT NULL, nameEnum INTEGER NOT NULL, value TEXT NOT NULL);
                 INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (1, 'Local', 'SoftwareReleaseVersion', 618, '{release}');
                 INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (1, 'Local', 'Hostname', 619, 'secret-host');"
            ))
            .unwrap();
        drop(e);
        let t = tracelens_nsys::import_file(&path).unwrap();
        assert!(
            t.metadata.extra.values().all(|v| v != "secret-host"),
            "the host name is not kept"
        );
        let text = diagnose(&t).verdict.text;
        assert!(text.starts_with("GPU activity not recorded"), "{text}");
        assert!(
            !text.contains("profile again with nsys profile -t cuda"),
            "{text}"
        );
        assert_eq!(text.contains("WSL2"), wsl, "{text}");
    }
}

/// A program that only allocated: no GPU work, the calls named and the context creation
/// said, never "nothing to diagnose".
#[test]
fn a_capture_without_gpu_work_says_the_program_never_reached_it() {
    let path = temp_export("never_launched");
    let mut e = Export::create(&path, "EXPORT_META_DATA", "3.1.2");
    e.runtime("cudaMalloc_v3020", 7, 7, 1_000, 3_000_000_000, 1);
    e.runtime("cudaMalloc_v3020", 7, 7, 3_000_100_000, 3_000_200_000, 2);
    e.runtime("cudaFree_v3020", 7, 7, 3_000_300_000, 3_000_500_000, 3);
    drop(e);
    let text = diagnose(&tracelens_nsys::import_file(&path).unwrap())
        .verdict
        .text;
    assert!(text.starts_with("No GPU work in this capture"), "{text}");
    assert!(text.contains("cudaMalloc ×2, cudaFree"), "{text}");
    assert!(text.contains("it creates the context"), "{text}");
}

/// One tiny kernel, then seconds of host time: without a later API call the run reached no
/// more GPU work and a longer capture would not help; with one, a longer capture might.
#[test]
fn a_run_that_stops_calling_the_gpu_is_not_told_to_capture_longer() {
    for later_call in [false, true] {
        let path = temp_export(&format!("idle_tail_{later_call}"));
        let mut e = Export::create(&path, "EXPORT_META_DATA", "3.4.0");
        e.runtime("cudaLaunchKernel_v7000", 7, 7, 1_000_000, 1_010_000, 1);
        e.kernel("emptyKernel", 7, 0, 7, 1_020_000, 1_076_000, 1);
        e.osrt("read", 7, 7, 1_100_000, 3_000_000_000);
        if later_call {
            e.runtime("cudaFree_v3020", 7, 7, 3_000_100_000, 3_000_200_000, 2);
        }
        drop(e);
        let text = diagnose(&tracelens_nsys::import_file(&path).unwrap())
            .verdict
            .text;
        assert!(text.contains("Too short to judge"), "{text}");
        assert_eq!(text.contains("no GPU call in the"), !later_call, "{text}");
    }
}

/// A loop whose gaps no call covers: with CPU samples in the capture the fix reads them
/// and never asks for `-s cpu`; the twin without samples asks for them.
#[test]
fn cpu_work_advice_never_asks_for_sampling_the_capture_already_did() {
    for sampled in [true, false] {
        let path = temp_export(&format!("sampled_{sampled}"));
        let mut e = Export::create(&path, "EXPORT_META_DATA", "3.16.1");
        for i in 0..10_i64 {
            let t = i * 500_000;
            e.runtime("cudaLaunchKernel_v7000", 7, 7, t, t + 5_000, i + 1);
            e.kernel("step", 7, 0, 7, t + 10_000, t + 110_000, i + 1);
        }
        if sampled {
            e.conn
                .execute_batch(
                    "CREATE TABLE COMPOSITE_EVENTS (id INTEGER, start INTEGER, cpu INTEGER, threadState INTEGER, globalTid INTEGER, cpuCycles INTEGER);
                     INSERT INTO COMPOSITE_EVENTS VALUES (1, 200000, 0, 1, 7, 100);
                     INSERT INTO COMPOSITE_EVENTS VALUES (2, 300000, 0, 1, 7, 100);",
                )
                .unwrap();
        }
        drop(e);
        let (_, f) = diagnosis_and_finding(&path, FindingKind::HostCompute);
        assert_eq!(
            f.fix.contains("already holds CPU samples"),
            sampled,
            "{}",
            f.fix
        );
        assert_eq!(f.fix.contains("-s cpu"), !sampled, "{}", f.fix);
    }
}

/// Gaps in which the launching thread sits in `poll`: the time is an OS wait with its own
/// fix (find what it waits on), not unrecorded CPU work; the twin without the wait is.
#[test]
fn idle_inside_an_os_wait_is_a_wait_not_unrecorded_work() {
    for waits in [true, false] {
        let path = temp_export(&format!("os_wait_gaps_{waits}"));
        let mut e = Export::create(&path, "EXPORT_META_DATA", "3.16.1");
        for i in 0..10_i64 {
            let t = i * 500_000;
            e.runtime("cudaLaunchKernel_v7000", 7, 7, t, t + 5_000, i + 1);
            e.kernel("step", 7, 0, 7, t + 10_000, t + 110_000, i + 1);
            if waits {
                e.osrt("poll", 7, 7, t + 120_000, t + 480_000);
            }
        }
        drop(e);
        let d = diagnose(&tracelens_nsys::import_file(&path).unwrap());
        let f = d
            .findings
            .iter()
            .find(|f| f.kind == FindingKind::HostCompute)
            .unwrap_or_else(|| panic!("{:#?}", d.findings));
        let label = f.sub_cause.map(|w| w.label());
        if waits {
            assert_eq!(label, Some("os_wait"), "{}", f.title);
            assert!(f.fix.contains("waits in poll"), "{}", f.fix);
        } else {
            assert_eq!(label, Some("not_recorded"), "{}", f.title);
        }
    }
}

/// A whole run (its first runtime call creates the context) whose kernels are shorter than their
/// launches: 30 launches in all are told to batch, not to build a CUDA graph that would not
/// repay itself; 300 launches are told the graph.
#[test]
fn a_run_too_short_for_a_graph_is_told_to_batch() {
    for launches in [30_i64, 300] {
        let path = temp_export(&format!("launch_bound_run_{launches}"));
        let mut e = Export::create(&path, "EXPORT_META_DATA", "3.16.1");
        // The driver's entry points are looked up before the first runtime call, which
        // creates the context.
        e.runtime("cuGetProcAddress_v2", 7, 7, 0, 2_000, 999_999);
        e.runtime("cudaMalloc_v3020", 7, 7, 10_000, 200_000_000, 1_000_000);
        let start = 200_100_000;
        for i in 0..launches {
            let t = start + i * 20_000;
            e.runtime("cudaLaunchKernel_v7000", 7, 7, t, t + 19_000, i + 1);
            e.kernel("tiny", 7, 0, 7, t + 19_500, t + 21_500, i + 1);
        }
        drop(e);
        let d = diagnose(&tracelens_nsys::import_file(&path).unwrap());
        let f = d
            .findings
            .iter()
            .find(|f| f.lever == Some(tracelens_analysis::diagnose::lever::Lever::FewerLaunches))
            .unwrap_or_else(|| panic!("{}\n{:#?}", d.verdict.text, d.findings));
        assert_eq!(f.fix.starts_with("Batch"), launches < 100, "{}", f.fix);
    }
}

/// A run captured from its context's creation whose only GPU work is one tiny kernel, the
/// capture ending just after: that is all the run did, so it is told to grow the input, not
/// to capture a main loop it does not have.
#[test]
fn a_whole_run_of_one_tiny_kernel_is_told_to_grow_its_input() {
    let path = temp_export("whole_run_tiny");
    let mut e = Export::create(&path, "EXPORT_META_DATA", "3.16.1");
    e.runtime("cudaMalloc_v3020", 7, 7, 0, 58_000_000, 1_000);
    e.runtime("cudaLaunchKernel_v7000", 7, 7, 58_010_000, 58_015_000, 1);
    e.kernel("reduce", 7, 0, 7, 58_020_000, 58_024_000, 1);
    e.runtime("cudaFree_v3020", 7, 7, 58_030_000, 58_060_000, 1_001);
    drop(e);
    let text = diagnose(&tracelens_nsys::import_file(&path).unwrap())
        .verdict
        .text;
    assert!(text.contains("Too short to judge"), "{text}");
    assert!(text.contains("all the GPU work the run did"), "{text}");
    assert!(!text.contains("main loop"), "{text}");
}

/// A GEMM benchmark: two check launches, a host pause of `pause_ns` with no call, then 40
/// launches each timed on its own (event record, launch, event record, event synchronize).
fn per_launch_benchmark(name: &str, pause_ns: i64) -> tracelens_analysis::Diagnosis {
    let path = temp_export(name);
    let mut e = Export::create(&path, "META_DATA_EXPORT", "3.17.2");
    e.gpu(0, "NVIDIA GeForce RTX 4090");
    let mut corr = 0;
    let mut launch = |e: &mut Export, t: i64, kernel: &str| {
        corr += 1;
        e.runtime("cudaLaunchKernel_v7000", 7, 7, t, t + 5_000, corr);
        e.kernel(kernel, 7, 0, 7, t + 10_000, t + 210_000, corr);
    };
    launch(
        &mut e,
        0,
        "naive_gemm(const float *, const float *, float *, int, int, int)",
    );
    launch(
        &mut e,
        300_000,
        "naive_gemm(const float *, const float *, float *, int, int, int)",
    );
    let mut t = 600_000 + pause_ns;
    for _ in 0..40 {
        e.runtime("cudaEventRecord_v3020", 7, 7, t, t + 2_000, 0);
        launch(
            &mut e,
            t + 3_000,
            "naive_gemm(const float *, const float *, float *, int, int, int)",
        );
        e.runtime("cudaEventRecord_v3020", 7, 7, t + 9_000, t + 11_000, 0);
        e.runtime(
            "cudaEventSynchronize_v3020",
            7,
            7,
            t + 12_000,
            t + 214_000,
            0,
        );
        t += 300_000;
    }
    // A grid that covers the GPU: the kernel's own speed is the subject.
    e.conn
        .execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX = 1024", [])
        .unwrap();
    drop(e);
    diagnose(&tracelens_nsys::import_file(&path).unwrap())
}

/// A pause of a minute between a benchmark's check launches and its loop is outside the
/// window, said in the verdict; launches each timed on their own are its harness, and the
/// hand-written multiply it times is the finding. Without the pause, the window is the GPU's
/// whole extent.
#[test]
fn one_long_pause_is_set_aside_and_a_per_launch_benchmark_gets_its_kernel() {
    let d = per_launch_benchmark("benchmark_pause", 60_000_000_000);
    let w = d.window.as_ref().unwrap();
    assert_eq!(w.kind, WindowKind::WorkingPhase, "{}", d.verdict.text);
    assert!(w.interval.dur_ns() < 20_000_000, "{:?}", w.interval);
    let text = &d.verdict.text;
    assert!(text.contains("the one pause of 60000."), "{text}");
    assert!(text.contains("with the 2 GPU ops"), "{text}");
    assert!(text.contains("cudaProfilerStart()"), "{text}");
    assert!(text.contains("launch by launch"), "{text}");
    let first = &d.findings[0];
    assert_eq!(first.kind, FindingKind::KernelWork, "{:#?}", d.findings);
    assert!(first.fix.contains("cuBLAS"), "{}", first.fix);
    assert!(!d
        .findings
        .iter()
        .any(|f| f.win_kind == tracelens_analysis::WinKind::GpuIdle));

    let twin = per_launch_benchmark("benchmark_no_pause", 0);
    assert_eq!(twin.window.as_ref().unwrap().kind, WindowKind::GpuExtent);
    assert!(
        !twin.verdict.text.contains("pause"),
        "{}",
        twin.verdict.text
    );
}

/// An offload loop whose copies take `copy_us` of GPU time around a 20 µs kernel, with 3 ms
/// of host work between iterations.
fn offload_loop(name: &str, copy_us: i64) -> tracelens_analysis::Diagnosis {
    let path = temp_export(name);
    let mut e = Export::create(&path, "META_DATA_EXPORT", "3.17.2");
    let mut t = 1_000_000i64;
    for i in 0..30 {
        let (copy, launch) = (2 * i + 1, 2 * i + 2);
        let copy_end = t + 10_000 + copy_us * 1_000;
        e.runtime("cudaMemcpy_v3020", 5, 5, t, copy_end + 5_000, copy);
        // Host to device, from pageable memory to the device.
        e.memcpy(5, 0, 7, t + 10_000, copy_end, copy, 1 << 20, 1, 0, 3);
        let l = copy_end + 10_000;
        e.runtime("cudaLaunchKernel_v7000", 5, 5, l, l + 5_000, launch);
        e.kernel("solve", 5, 0, 7, l + 10_000, l + 30_000, launch);
        t = l + 3_000_000;
    }
    drop(e);
    diagnose(&tracelens_nsys::import_file(&path).unwrap())
}

/// A GPU whose busy time is mostly copies, ten times its kernels', is told that moving the
/// data costs more than the work; copies as short as the kernels are not.
#[test]
fn copies_that_outweigh_the_kernels_they_feed_are_named_in_the_verdict() {
    let d = offload_loop("copies_outweigh", 250);
    assert_eq!(d.verdict.kind, VerdictKind::GpuIdle);
    assert!(
        d.verdict.text.contains("% is copies")
            && d.verdict.text.contains("keep the operands on the GPU"),
        "{}",
        d.verdict.text
    );
    let twin = offload_loop("copies_match_kernels", 20);
    assert!(
        !twin.verdict.text.contains("% is copies"),
        "{}",
        twin.verdict.text
    );
}

/// A loop of 10 launches with 20 ms of host work between them, sampled every millisecond in
/// a stack whose innermost frames are `leaf` (symbol, module) under the program's `main`.
fn sampled_gaps(name: &str, leaf: (&str, &str)) -> tracelens_analysis::Diagnosis {
    let path = temp_export(name);
    let mut e = Export::create(&path, "META_DATA_EXPORT", "3.17.2");
    let mut t = 1_000_000i64;
    for i in 0..10 {
        e.runtime("cudaLaunchKernel_v7000", 7, 7, t, t + 5_000, i + 1);
        e.kernel("step", 7, 0, 7, t + 10_000, t + 1_010_000, i + 1);
        t += 21_000_000;
    }
    let (sym, module, main, exe) = (
        e.string(leaf.0),
        e.string(leaf.1),
        e.string("main"),
        e.string("/home/u/sim/sim"),
    );
    e.conn
        .execute_batch(
            "CREATE TABLE COMPOSITE_EVENTS (id INTEGER NOT NULL PRIMARY KEY, start INTEGER NOT NULL, cpu INTEGER, threadState INTEGER, globalTid INTEGER, cpuCycles INTEGER NOT NULL);
             CREATE TABLE SAMPLING_CALLCHAINS (id INTEGER NOT NULL, symbol INTEGER NOT NULL, module INTEGER NOT NULL, kernelMode INTEGER, thumbCode INTEGER, unresolved INTEGER, specialEntry INTEGER, originalIP INTEGER, unwindMethod INTEGER, stackDepth INTEGER NOT NULL, PRIMARY KEY (id, stackDepth));",
        )
        .unwrap();
    let g = tracelens_tests::nsys_export::gtid(7, 7);
    let mut id = 0;
    for k in 0..200i64 {
        id += 1;
        let at = 2_500_000 + k * 1_000_000;
        e.conn
            .execute(
                "INSERT INTO COMPOSITE_EVENTS VALUES (?1, ?2, 0, 1, ?3, 1)",
                rusqlite::params![id, at, g],
            )
            .unwrap();
        for (depth, (s, m)) in (0_i64..).zip([(sym, module), (main, exe)]) {
            e.conn
                .execute(
                    "INSERT INTO SAMPLING_CALLCHAINS (id, symbol, module, stackDepth) VALUES (?1, ?2, ?3, ?4)",
                    rusqlite::params![id, s, m, depth],
                )
                .unwrap();
        }
    }
    drop(e);
    diagnose(&tracelens_nsys::import_file(&path).unwrap())
}

/// Host work between launches that the capture sampled is named from its samples, with the
/// lever for what they show: the driver's PTX compiler is told to build for the GPU, the
/// program's own function to move off the path; without stacks it could only be re-profiled.
#[test]
fn sampled_host_work_between_launches_is_named_from_its_samples() {
    let jit = sampled_gaps(
        "sampled_jit",
        ("0x7f00", "/usr/lib/libnvidia-ptxjitcompiler.so.535"),
    );
    let f = jit
        .findings
        .iter()
        .find(|f| f.sub_cause.map(|s| s.label()) == Some("not_recorded"))
        .unwrap_or_else(|| panic!("{:#?}", jit.findings));
    assert!(f.title.contains("CPU samples"), "{}", f.title);
    assert!(f.fix.contains("-gencode arch=compute_"), "{}", f.fix);
    assert!(jit.program.contains("CPU work sampled") && !jit.program.contains("not read"));

    let own = sampled_gaps("sampled_own", ("reference_solution", "/home/u/sim/sim"));
    let f = own
        .findings
        .iter()
        .find(|f| f.sub_cause.map(|s| s.label()) == Some("not_recorded"))
        .unwrap_or_else(|| panic!("{:#?}", own.findings));
    assert!(
        f.fix.contains("program's own reference_solution in sim"),
        "{}",
        f.fix
    );
    assert!(!f.fix.contains("gencode"), "{}", f.fix);
}

/// A loop of 10 iterations: a `Compute i` range that launches a 1 ms kernel and lasts 2 ms,
/// then host work in an `IO i` range of 18 ms (in every iteration, or only in the first when
/// `every` is false) before the next launch.
fn io_phase_loop(name: &str, every: bool) -> PathBuf {
    let path = temp_export(name);
    let mut e = Export::create(&path, "META_DATA_EXPORT", "3.17.2");
    let mut t = 1_000_000i64;
    for i in 0..10 {
        e.nvtx(&format!("Compute {}", i * 10), 7, 7, t, Some(t + 2_000_000));
        e.runtime("cudaLaunchKernel_v7000", 7, 7, t, t + 5_000, i + 1);
        e.kernel("power_step", 7, 0, 7, t + 10_000, t + 1_010_000, i + 1);
        let io_ns = if every || i == 0 { 18_000_000 } else { 100_000 };
        e.nvtx(
            &format!("IO {}", i * 10),
            7,
            7,
            t + 2_000_000,
            Some(t + 2_000_000 + io_ns),
        );
        t += 2_000_000 + io_ns + 1_000_000;
    }
    drop(e);
    path
}

/// Host work in a numbered range that recurs every iteration is credited to that range (not
/// to the range the gap began in, `Compute i`, which holds 1 ms of it) as one family, and
/// gets the overlap lever; the same work in one range only is looked into with nested ranges.
#[test]
fn a_recurring_range_that_leaves_the_gpu_empty_is_told_to_overlap() {
    let (_, f) = diagnosis_and_finding(
        &io_phase_loop("io_every_iteration", true),
        FindingKind::HostCompute,
    );
    // The window ends at the last kernel: nine IO ranges lie inside it.
    assert!(
        f.title.contains("regions: IO N ×9 (162.000 ms)"),
        "{}",
        f.title
    );
    assert!(
        f.fix
            .contains("nothing queued while the range IO N runs (9 times)")
            && f.fix.contains("before"),
        "{}",
        f.fix
    );
    let (_, f) = diagnosis_and_finding(&io_phase_loop("io_once", false), FindingKind::HostCompute);
    assert!(f.title.contains("IO 0"), "{}", f.title);
    assert!(f.fix.contains("nested NVTX ranges"), "{}", f.fix);
}

/// Ten timesteps of one 800 µs kernel and 96 kernels of 5 µs, each launch (4 µs) followed
/// by a cudaDeviceSynchronize that returns 1 µs after its kernel ends (`synced`), or by
/// nothing.
fn launch_sync_loop(name: &str, synced: bool) -> PathBuf {
    let path = temp_export(name);
    let mut e = Export::create(&path, "META_DATA_EXPORT", "3.17.2");
    let (mut t, mut corr, mut gpu_free) = (1_000_000i64, 0i64, 0i64);
    for _ in 0..10 {
        for k in 0..97 {
            let dur = if k == 0 { 800_000 } else { 5_000 };
            corr += 1;
            e.runtime("cudaLaunchKernel_v7000", 7, 7, t, t + 4_000, corr);
            let start = (t + 3_000).max(gpu_free);
            e.kernel(
                if k == 0 { "big" } else { "halo" },
                7,
                0,
                7,
                start,
                start + dur,
                corr,
            );
            gpu_free = start + dur;
            t += 5_000;
            if synced {
                corr += 1;
                e.runtime(
                    "cudaDeviceSynchronize_v3020",
                    7,
                    7,
                    t,
                    gpu_free + 1_000,
                    corr,
                );
                t = gpu_free + 2_000;
            }
        }
    }
    drop(e);
    path
}

/// A sync after every launch drains the queue, so the next launch's round trip is exposed
/// only because of it: the sync's finding is credited the whole gap, and its replay (the
/// CPU running ahead) gives back the GPU's busy time; without the syncs there is no idle to
/// speak of and no sync finding.
#[test]
fn a_sync_after_every_launch_is_credited_the_launch_round_trips_it_exposes() {
    let (d, f) = diagnosis_and_finding(
        &launch_sync_loop("sync_every_launch", true),
        FindingKind::ImplicitSync,
    );
    assert_eq!(
        d.findings[0].kind,
        FindingKind::ImplicitSync,
        "{:#?}",
        d.findings
    );
    assert!(f.title.contains("(970 calls)"), "{}", f.title);
    // 969 gaps of 5 µs in the window (the last sync follows its last kernel): the drain
    // (2 µs) and the launch round trip (3 µs).
    assert_eq!(f.estimated_win_ns, 969 * 5_000, "{}", f.title);
    // Ten timesteps of 800 µs + 96 × 5 µs of kernels, back to back.
    assert_eq!(
        f.predicted_step_ns,
        Some(10 * (800_000 + 96 * 5_000)),
        "{}",
        f.prediction
    );
    assert!(
        d.verdict.text.contains("sync drained the queue"),
        "{}",
        d.verdict.text
    );
    let twin = diagnose(&tracelens_nsys::import_file(&launch_sync_loop("no_sync", false)).unwrap());
    assert!(
        !twin
            .findings
            .iter()
            .any(|f| f.kind == FindingKind::ImplicitSync),
        "{:#?}",
        twin.findings
    );
}

/// Two launches with a 500 ms gap between them in which the launching thread waits in poll
/// and then, when `reaps` is set, in waitpid (a compiler it ran as a child process).
fn child_process_gap(name: &str, reaps: bool) -> PathBuf {
    let path = temp_export(name);
    let mut e = Export::create(&path, "META_DATA_EXPORT", "3.17.2");
    e.runtime("cudaLaunchKernel_v7000", 5, 5, 1_000_000, 1_005_000, 1);
    e.kernel("first", 5, 0, 7, 1_010_000, 2_010_000, 1);
    e.osrt("poll", 5, 5, 2_100_000, 500_000_000);
    if reaps {
        e.osrt("waitpid", 5, 5, 500_010_000, 500_100_000);
    }
    e.runtime("cudaLaunchKernel_v7000", 5, 5, 501_000_000, 501_005_000, 2);
    e.kernel("compiled", 5, 0, 7, 501_010_000, 502_010_000, 2);
    drop(e);
    path
}

/// A wait that ends by reaping a child process is a program the thread ran (a JIT compiler):
/// run it once before the GPU work or cache its output; a wait with no child process keeps
/// the general advice.
#[test]
fn a_wait_for_a_child_process_is_told_to_run_it_before_the_gpu_work() {
    let (_, f) = diagnosis_and_finding(
        &child_process_gap("child_process_wait", true),
        FindingKind::HostCompute,
    );
    assert!(
        f.fix.contains("child process it started (poll for")
            && f.fix.contains("then waitpid reaps it"),
        "{}",
        f.fix
    );
    let (_, f) = diagnosis_and_finding(
        &child_process_gap("poll_wait", false),
        FindingKind::HostCompute,
    );
    assert!(!f.fix.contains("child process it started"), "{}", f.fix);
    assert!(f.fix.contains("find what it waits on"), "{}", f.fix);
}
