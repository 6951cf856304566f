//! Every finding kind rendered under every program model: the same traces analysed as a
//! PyTorch program, a C/C++ CUDA program, an OpenACC program, an OpenMP-offload program, a
//! CuPy, cuDF, Numba and JAX program and an unidentified one, and each finding's fix, advice and snippet (and the verdict) checked
//! for another program's vocabulary.

use super::cpu_oversubscription::tests::descheduled;
use super::gpu_waits::testing::{waiting_trace, Wait};
use super::testing::{scenario, scenario_text};
use crate::diagnose::advice::foreign_words;
use crate::measure::environment::{
    Dialect, GpuApi, ImposedProgram, Offload, Program, PythonLibrary, IMPOSED_PROGRAM,
};
use crate::FindingKind;
use std::collections::BTreeSet;
use tracelens_model::Trace;

/// The program models, each as (program, offload, launch API) and the dialect it must give.
const MODELS: [(ImposedProgram, Dialect); 9] = [
    (
        (Program::PyTorch, None, GpuApi::CudaRuntime, None),
        Dialect::PyTorch,
    ),
    (
        (Program::Native, None, GpuApi::CudaRuntime, None),
        Dialect::CudaRuntime,
    ),
    (
        (
            Program::Native,
            Some(Offload::OpenAcc),
            GpuApi::CudaDriver,
            None,
        ),
        Dialect::OpenAcc,
    ),
    (
        (
            Program::Native,
            Some(Offload::OpenMp),
            GpuApi::CudaDriver,
            None,
        ),
        Dialect::OpenMp,
    ),
    (
        (Program::Unknown, None, GpuApi::Unknown, None),
        Dialect::Neutral,
    ),
    (
        (
            Program::Python,
            None,
            GpuApi::CudaRuntime,
            Some(PythonLibrary::CuPy),
        ),
        Dialect::Python(PythonLibrary::CuPy),
    ),
    (
        (
            Program::Python,
            None,
            GpuApi::CudaRuntime,
            Some(PythonLibrary::CuDf),
        ),
        Dialect::Python(PythonLibrary::CuDf),
    ),
    (
        (
            Program::Python,
            None,
            GpuApi::CudaDriver,
            Some(PythonLibrary::Numba),
        ),
        Dialect::Python(PythonLibrary::Numba),
    ),
    (
        (
            Program::Python,
            None,
            GpuApi::CudaRuntime,
            Some(PythonLibrary::Jax),
        ),
        Dialect::Python(PythonLibrary::Jax),
    ),
];

/// A scenario with one text replaced, imported again.
fn variant(name: &str, from: &str, to: &str) -> Trace {
    let text = scenario_text(name).replace(from, to);
    assert_ne!(text, scenario_text(name), "{name}: {from:?} not found");
    tracelens_kineto::import_reader(
        text.as_bytes(),
        std::path::Path::new("variant.json"),
        text.len() as u64,
        None,
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Traces that raise every finding kind between them.
fn traces() -> Vec<(String, Trace)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/scenarios");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            // text, not a trace name
            name.strip_suffix(".json").map(str::to_string)
        })
        .collect();
    names.sort();
    let mut out: Vec<(String, Trace)> = names
        .into_iter()
        .map(|n| {
            let t = scenario(&n);
            (n, t)
        })
        .collect();
    const GEMM: &str = "\"cat\": \"kernel\", \"name\": \"sm90_xmma_gemm_bf16_kernel\"";
    out.push((
        "all-reduces".into(),
        variant(
            "no_device_sync",
            GEMM,
            "\"cat\": \"kernel\", \"name\": \"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)\"",
        ),
    ));
    out.push((
        "device-to-device copies".into(),
        variant(
            "no_device_sync",
            GEMM,
            "\"cat\": \"gpu_memcpy\", \"name\": \"Memcpy DtoD (Device -> Device)\"",
        ),
    ));
    out.push((
        "host-to-device copies".into(),
        variant(
            "no_device_sync",
            GEMM,
            "\"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pinned -> Device)\"",
        ),
    ));
    out.push((
        "pageable copies".into(),
        variant(
            "pinned_non_blocking_copy",
            "(Pinned -> Device)",
            "(Pageable -> Device)",
        ),
    ));
    for (name, wait) in [
        ("stream waits", Wait::StreamEvent),
        ("collective waits", Wait::Collective),
        ("unrecorded waits", Wait::Unrecorded),
    ] {
        out.push((name.into(), waiting_trace(wait)));
    }
    out.push(("descheduled thread".into(), descheduled(false, true)));
    out.push((
        "one-block kernels".into(),
        super::small_grid::tests::one_kernel_loop(1),
    ));
    out.push((
        "a hand-written matrix multiply on a busy GPU".into(),
        super::kernel_work::tests::loop_of("matrixMulKernel", 1_000, 20),
    ));
    out.push((
        "unified-memory migrations".into(),
        super::unified_memory::tests::loop_with_migrations(true),
    ));
    out
}

#[test]
fn every_finding_kind_under_every_program_model_speaks_its_programs_language() {
    let traces = traces();
    let mut seen: BTreeSet<(FindingKind, usize)> = BTreeSet::new();
    let mut wrong = Vec::new();
    for (m, (model, dialect)) in MODELS.iter().enumerate() {
        IMPOSED_PROGRAM.set(Some(*model));
        for (name, trace) in &traces {
            let d = crate::analyze(trace).diagnosis;
            assert_eq!(d.framework.dialect(), *dialect, "{name}");
            let mut texts = vec![("verdict", d.verdict.text.clone())];
            for f in &d.findings {
                seen.insert((f.kind, m));
                let kind = f.kind.label();
                texts.push((kind, f.fix.clone()));
                texts.push((kind, f.advice.clone()));
                texts.push((kind, f.snippet.clone()));
            }
            for (what, text) in texts {
                // The verdict may name the trace's own ranges (PyTorch's DataLoader fetches).
                for w in foreign_words(*dialect)
                    .iter()
                    .filter(|&&w| what != "verdict" || w != "DataLoader")
                {
                    if text.contains(w) {
                        wrong.push(format!("{dialect:?} · {name} · {what}: {w:?} in {text:?}"));
                    }
                }
            }
        }
    }
    IMPOSED_PROGRAM.set(None);
    wrong.sort();
    wrong.dedup();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // Every kind was rendered under every model.
    for kind in FindingKind::ALL {
        for (m, (_, dialect)) in MODELS.iter().enumerate() {
            assert!(
                seen.contains(&(kind, m)),
                "{} never raised under {dialect:?}",
                kind.label()
            );
        }
    }
}
