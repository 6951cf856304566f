//! torch.compile in the window: its compiled regions and graph calls, the compilation the
//! window holds (a first compile, or a recompile of a frame compiled before), graph breaks
//! (compiled regions nested in one another) with the eager ops that run between the compiled
//! graphs, and, where compiled code replays CUDA/HIP graphs, the region calls that ran
//! eagerly instead. What each name means is [`crate::vocabulary::compiled`]'s.
//!
//! A compilation is a recompile when the region that runs its code says the frame was
//! compiled before (`Torch-Compiled Region: F/C`, C ≥ 1), or, on PyTorch before 2.5 whose
//! regions carry no ids, when it falls after the window's first step.

use crate::measure::window::AnalysisWindow;
use crate::vocabulary::compiled::{self, CompiledName};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use tracelens_model::{NameId, SpanId, SpanKind, TimeNs, Trace};

/// At most this many recompiles and break sites are listed (the counts cover all).
pub const MAX_LISTED: usize = 10;

/// Why a frame was compiled again, from the shapes its ops ran with before and after.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecompileCause {
    /// The recompiled code's ops ran on input shapes the earlier code never saw.
    ShapesChanged,
    /// The same input shapes: a guard on something else failed (a Python value, a global,
    /// a dtype, device or `requires_grad`).
    OtherGuard,
    /// Shapes were not recorded on both sides.
    Unknown,
}

/// One compilation in the window.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Compilation {
    /// Start, trace ns.
    pub start_ns: TimeNs,
    /// Host time it took.
    pub dur_ns: TimeNs,
    /// The profiler step it falls in.
    pub step: Option<i64>,
    /// The compiled frame, from the region that runs the code (PyTorch 2.5+).
    pub frame: Option<u32>,
    /// Its compile id: 0 for the frame's first compile.
    pub compile_id: Option<u32>,
    /// The user function being compiled, from the Python frames (`model.py:40 forward`).
    pub function: Option<String>,
    /// Whether the frame was compiled before.
    pub recompile: bool,
    /// Why, for a recompile.
    pub cause: Option<RecompileCause>,
}

/// Where graph breaks are.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct BreakSite {
    /// The line Dynamo resumes after (`model.py: forward line 90`), or the frame id of the
    /// region after the break when Python frames were not recorded (`frame 1`).
    pub site: String,
    /// Breaks there in the window.
    pub count: u64,
}

/// CUDA/HIP graph replays of compiled code (`mode="reduce-overhead"`, CUDA graph trees).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct GraphReplays {
    /// Compiled-graph calls (regions, where no graph call is recorded) that replayed a graph.
    pub replays: u64,
    /// Those that launched their kernels one by one instead.
    pub eager_runs: u64,
}

/// torch.compile's activity in the window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct CompiledRun {
    /// Outermost compiled-region calls in the window.
    pub region_calls: u64,
    /// Host time of those calls.
    pub region_ns: TimeNs,
    /// Compiled-graph calls (`CompiledFunction`, `## Call CompiledFxGraph … ##`).
    pub graph_calls: u64,
    /// Distinct compiled frames (by id, PyTorch 2.5+).
    pub frames: u64,
    /// Every compilation in the window (one-time work), first compiles and recompiles.
    pub compilations: u64,
    /// Their host time.
    pub compile_ns: TimeNs,
    /// The recompiles among them.
    pub recompiles: u64,
    /// Their host time.
    pub recompile_ns: TimeNs,
    /// The first compilations, recompiles first (at most [`MAX_LISTED`]).
    pub listed: Vec<Compilation>,
    /// Compiled regions entered inside another one: graph breaks (or skipped frames).
    pub graph_breaks: u64,
    /// Host time of the eager ops between compiled graphs in regions with a break.
    pub eager_between_ns: TimeNs,
    /// Where the breaks are, most first (at most [`MAX_LISTED`]).
    pub break_sites: Vec<BreakSite>,
    /// Graph replays of compiled code, when compiled code replays any.
    pub graph_replays: Option<GraphReplays>,
    /// Profiler steps of the window (1 without steps): per-step figures divide by it.
    pub steps: u64,
}

impl CompiledRun {
    /// Graph breaks per step.
    #[must_use]
    pub fn breaks_per_step(&self) -> f64 {
        #[expect(
            clippy::cast_precision_loss,
            reason = "counts of breaks and steps are far below 2^52"
        )]
        let (breaks, steps) = (self.graph_breaks as f64, self.steps.max(1) as f64);
        breaks / steps
    }
}

/// "No span".
const NONE: u32 = u32::MAX;

/// How many torch.compile spans deep a walk goes: regions nest one level per graph break, so
/// a crafted trace nested deeper cannot make every launch's walk long.
const MAX_NESTING: usize = 64;

fn index(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(NONE)
}

/// What the window shows of torch.compile; `None` when it shows nothing of it.
#[must_use]
pub fn compiled_run(trace: &Trace, window: &AnalysisWindow) -> Option<CompiledRun> {
    let names: Vec<Option<CompiledName>> = (0..trace.names.len())
        .map(|k| compiled::of(trace.names.get(NameId::at(k))))
        .collect();
    if names.iter().all(Option::is_none) {
        return None;
    }
    let host = |kind: SpanKind| {
        matches!(
            kind,
            SpanKind::CpuOp | SpanKind::UserAnnotation | SpanKind::PythonFunction
        )
    };
    let name_of = |i: usize| {
        let s = &trace.spans[i];
        if host(s.kind) {
            names[s.name.0 as usize]
        } else {
            None
        }
    };
    // The nearest enclosing (or own) torch.compile span of every span, filled in the main
    // pass below: a parent sorts before its children.
    let n = trace.spans.len();
    let mut marker = vec![NONE; n];
    let enclosing = |marker: &[u32], i: usize| {
        trace
            .parent(SpanId::at(i))
            .map_or(NONE, |p| marker[p.0 as usize])
    };
    // The nearest torch.compile span from marker `m` outwards that `want`s its name, bounded.
    let nearest = |marker: &[u32], mut m: u32, want: &dyn Fn(CompiledName) -> bool| {
        for _ in 0..MAX_NESTING {
            if m == NONE {
                return NONE;
            }
            if name_of(m as usize).is_some_and(want) {
                return m;
            }
            m = enclosing(marker, m as usize);
        }
        NONE
    };
    let is_region = |c: CompiledName| matches!(c, CompiledName::Region { .. });
    let w = window.interval;
    // Spans that overlap the window count (the host runs ahead of the GPU's window).
    let in_window = |s: &tracelens_model::Span| s.start_ns < w.end_ns && s.end_ns() > w.start_ns;
    // What a launch is counted under for graph replays: its compiled graph's call, or its
    // region where the trace records no graph calls (PyTorch writes both since 2.2).
    let has_graph_calls = names.contains(&Some(CompiledName::GraphCall));
    let is_unit = |c: CompiledName| match c {
        CompiledName::GraphCall => true,
        CompiledName::Region { .. } => !has_graph_calls,
        _ => false,
    };
    let mut run = CompiledRun {
        steps: window.step_count() as u64,
        ..CompiledRun::default()
    };
    let mut frames = FxHashSet::default();
    let mut sites: FxHashMap<String, u64> = FxHashMap::default();
    let mut broken = FxHashSet::default();
    let mut regions: Vec<(usize, Option<u32>, Option<u32>)> = Vec::new();
    let mut compiles = Vec::new();
    let mut launches: FxHashMap<u32, (bool, bool)> = FxHashMap::default();
    for i in 0..n {
        let s = &trace.spans[i];
        marker[i] = if name_of(i).is_some() {
            index(i)
        } else {
            enclosing(&marker, i)
        };
        if !in_window(s) {
            continue;
        }
        if s.kind.is_api_call() {
            let name = trace.name(SpanId::at(i));
            let graph = crate::vocabulary::ops::is_graph_launch(name);
            if graph || crate::vocabulary::api::is_kernel_launch(name) {
                let r = nearest(&marker, enclosing(&marker, i), &is_unit);
                if r != NONE {
                    let e = launches.entry(r).or_default();
                    e.0 |= graph;
                    e.1 |= !graph;
                }
            }
            continue;
        }
        match name_of(i) {
            Some(CompiledName::Region { frame, compile }) => {
                frames.extend(frame);
                regions.push((i, frame, compile));
                let outer = nearest(&marker, enclosing(&marker, i), &is_region);
                if outer == NONE {
                    run.region_calls += 1;
                    run.region_ns += s.dur_ns;
                } else {
                    run.graph_breaks += 1;
                    broken.insert(outer);
                    *sites.entry(break_site(trace, i, frame)).or_default() += 1;
                }
            }
            Some(CompiledName::GraphCall) => run.graph_calls += 1,
            Some(CompiledName::Compile)
                if nearest(&marker, enclosing(&marker, i), &|c| {
                    c == CompiledName::Compile
                }) == NONE =>
            {
                compiles.push(i);
            }
            _ => {}
        }
    }
    // Eager ops between the graphs of a region with a break: outermost framework ops whose
    // nearest torch.compile span is that region itself.
    if !broken.is_empty() {
        for i in 0..n {
            let s = &trace.spans[i];
            if s.kind != SpanKind::CpuOp || !in_window(s) {
                continue;
            }
            let m = enclosing(&marker, i);
            if m == NONE || !broken.contains(&m) {
                continue;
            }
            let outermost = trace
                .ancestors(SpanId::at(i))
                .take_while(|a| marker[a.0 as usize] == m && a.0 != m)
                .all(|a| trace.span(a).kind != SpanKind::CpuOp);
            if outermost {
                run.eager_between_ns += s.dur_ns;
            }
        }
    }
    run.frames = frames.len() as u64;
    let mut sites: Vec<BreakSite> = sites
        .into_iter()
        .map(|(site, count)| BreakSite { site, count })
        .collect();
    sites.sort_by(|a, b| b.count.cmp(&a.count).then(a.site.cmp(&b.site)));
    sites.truncate(MAX_LISTED);
    run.break_sites = sites;
    if launches.values().any(|&(graph, _)| graph) {
        run.graph_replays = Some(GraphReplays {
            replays: launches.values().filter(|&&(g, _)| g).count() as u64,
            eager_runs: launches.values().filter(|&&(g, k)| !g && k).count() as u64,
        });
    }
    let first_step = window.steps.first().map(|s| s.number);
    let mut all: Vec<(usize, Compilation)> = compiles
        .into_iter()
        .map(|i| (i, compilation(trace, window, i, &regions, first_step)))
        .collect();
    run.compilations = all.len() as u64;
    run.compile_ns = all.iter().map(|(_, c)| c.dur_ns).sum();
    run.recompiles = all.iter().filter(|(_, c)| c.recompile).count() as u64;
    run.recompile_ns = all
        .iter()
        .filter(|(_, c)| c.recompile)
        .map(|(_, c)| c.dur_ns)
        .sum();
    all.sort_by_key(|(_, c)| (!c.recompile, c.start_ns));
    all.truncate(MAX_LISTED);
    // The compiled function, from the Python frames, for the listed ones only.
    let mut listed: Vec<Compilation> = all
        .into_iter()
        .map(|(i, mut c)| {
            c.function = trace
                .python_frame_where(SpanId::at(i), |f| !f.is_library())
                .map(|f| format!("{}:{} {}", f.file, f.line, f.function));
            c
        })
        .collect();
    let mut causes = FxHashMap::default();
    for c in listed.iter_mut().filter(|c| c.recompile) {
        let cause = *causes
            .entry((c.frame, c.compile_id))
            .or_insert_with(|| recompile_cause(trace, &regions, &marker, c));
        c.cause = Some(cause);
    }
    run.listed = listed;
    let anything = run.region_calls + run.graph_calls + run.compilations > 0;
    anything.then_some(run)
}

/// The break before nested region `i`: the resume function's Python frame, else its frame.
fn break_site(trace: &Trace, i: usize, frame: Option<u32>) -> String {
    trace
        .ancestors(SpanId::at(i))
        .take(MAX_NESTING)
        .filter(|&a| trace.span(a).kind == SpanKind::PythonFunction)
        .find_map(|a| compiled::graph_break_site(trace.name(a)))
        .unwrap_or_else(|| match frame {
            Some(f) => format!("before frame {f}"),
            None => "not recorded (record with with_stack=True)".into(),
        })
}

/// Compilation span `i`, with the region that runs its code: the first region on the same
/// thread that starts after the compilation ends.
fn compilation(
    trace: &Trace,
    window: &AnalysisWindow,
    i: usize,
    regions: &[(usize, Option<u32>, Option<u32>)],
    first_step: Option<i64>,
) -> Compilation {
    let s = &trace.spans[i];
    // `regions` is in span order: by lane, then by start within a lane.
    let lane = trace.lane(s.lane).spans.clone();
    let (lane_start, lane_end) = (lane.start as usize, lane.end as usize);
    let at = regions.partition_point(|&(r, _, _)| {
        r < lane_start || (r < lane_end && trace.spans[r].start_ns < s.end_ns())
    });
    let after = regions.get(at).filter(|&&(r, _, _)| r < lane_end);
    let (frame, compile_id) = after.map_or((None, None), |&(_, f, c)| (f, c));
    // The profiler step on the compiling thread (the host runs ahead of the GPU's steps).
    let step = trace
        .ancestors(SpanId::at(i))
        .find(|&a| trace.is_step_span(a))
        .and_then(|a| trace.step_of_name(trace.span(a).name))
        .or_else(|| window.step_at(s.start_ns));
    let recompile = match compile_id {
        Some(c) => c >= 1,
        None => step.is_some() && step != first_step,
    };
    Compilation {
        start_ns: s.start_ns,
        dur_ns: s.dur_ns,
        step,
        frame,
        compile_id,
        function: None,
        recompile,
        cause: None,
    }
}

/// The input shapes of the framework ops inside regions of `frame` compiled `compile`.
fn shapes_of(
    trace: &Trace,
    regions: &[(usize, Option<u32>, Option<u32>)],
    marker: &[u32],
    frame: u32,
    compile: u32,
) -> FxHashSet<NameId> {
    let wanted: FxHashSet<u32> = regions
        .iter()
        .filter(|&&(_, f, c)| f == Some(frame) && c == Some(compile))
        .map(|&(r, _, _)| index(r))
        .collect();
    let mut shapes = FxHashSet::default();
    if wanted.is_empty() {
        return shapes;
    }
    for (i, s) in trace.spans.iter().enumerate() {
        if s.kind != SpanKind::CpuOp {
            continue;
        }
        // The op's region: its nearest torch.compile span, or that span's region.
        let inside = std::iter::successors(Some(marker[i]), |&m| {
            trace
                .parent(SpanId(m))
                .map(|p| marker[p.0 as usize])
                .filter(|&p| p != NONE)
        })
        .take(8)
        .any(|m| wanted.contains(&m));
        if !inside {
            continue;
        }
        if let Some(dims) = trace.op_detail(SpanId::at(i)).and_then(|d| d.input_dims) {
            shapes.insert(dims);
        }
    }
    shapes
}

/// Why frame `c.frame` was compiled again: the shapes under its new code against those under
/// the code before.
fn recompile_cause(
    trace: &Trace,
    regions: &[(usize, Option<u32>, Option<u32>)],
    marker: &[u32],
    c: &Compilation,
) -> RecompileCause {
    let (Some(frame), Some(id)) = (c.frame, c.compile_id) else {
        return RecompileCause::Unknown;
    };
    let Some(before) = id.checked_sub(1) else {
        return RecompileCause::Unknown;
    };
    let new = shapes_of(trace, regions, marker, frame, id);
    let old = shapes_of(trace, regions, marker, frame, before);
    if new.is_empty() || old.is_empty() {
        RecompileCause::Unknown
    } else if new.is_subset(&old) {
        RecompileCause::OtherGuard
    } else {
        RecompileCause::ShapesChanged
    }
}
