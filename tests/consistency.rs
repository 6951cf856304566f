//! Invariants that make every number a user reads agree with every other, checked on any
//! trace: percents within 0-100, GPU-idle wins that add up to at most the idle time, each
//! finding's percent equal to its per-step win over the verdict's step, breakdown steps that
//! sum to themselves, a verdict busy figure recomputed from the spans, and the same step shown
//! by every renderer.

use tracelens_analysis::diagnose::finding::Severity;
use tracelens_analysis::measure::intervals::{total_ns, union};
use tracelens_analysis::{FindingKind, WinKind};
use tracelens_model::{format_ms, Trace};
use tracelens_report::escape::{markdown_text, terminal_text};
use tracelens_report::Report;

fn in_range(errors: &mut Vec<String>, what: &str, p: f64) {
    if !(0.0..=100.0 + 1e-9).contains(&p) || p.is_nan() {
        errors.push(format!("{what} = {p} is not a percent in 0..=100"));
    }
}

/// The critical path tiles its step, its shares add up to 100, and each prediction lies
/// between the step less the finding's upper bound and the step (all fixes at most any one).
fn critical_path_errors(d: &tracelens_analysis::Diagnosis, e: &mut Vec<String>) {
    let cp = &d.critical_path;
    for (name, shares) in [
        ("breakdown", &cp.breakdown),
        ("step_breakdown", &cp.step_breakdown),
    ] {
        for s in shares.iter() {
            in_range(e, "critical_path percent", s.percent);
            if s.ns < 0 {
                e.push(format!("critical_path.{name}: {:?} negative", s.kind));
            }
        }
        let sum: f64 = shares.iter().map(|s| s.percent).sum();
        if !shares.is_empty() && (sum - 100.0).abs() > 0.01 {
            e.push(format!("critical_path.{name} sums to {sum} %"));
        }
    }
    if let (Some(iv), 0) = (cp.interval, cp.segments_omitted) {
        let mut at = iv.start_ns;
        for s in &cp.segments {
            if s.start_ns != at || s.end_ns <= s.start_ns {
                e.push(format!(
                    "critical path: segment at {} does not follow {at}",
                    s.start_ns
                ));
                break;
            }
            at = s.end_ns;
        }
        if at != iv.end_ns {
            e.push(format!(
                "critical path ends at {at}, its step at {}",
                iv.end_ns
            ));
        }
        let step_sum: i64 = cp.step_breakdown.iter().map(|s| s.ns).sum();
        if step_sum != iv.dur_ns() {
            e.push(format!(
                "critical path: {step_sum} ns of a {} ns step",
                iv.dur_ns()
            ));
        }
    }
    let step = d
        .window
        .as_ref()
        .map_or(0, tracelens_analysis::AnalysisWindow::step_ns);
    let mut best = step;
    for f in &d.findings {
        let Some(p) = f.predicted_step_ns else {
            if f.prediction.is_empty() {
                e.push(format!(
                    "{}: neither a prediction nor why not",
                    f.kind.label()
                ));
            }
            continue;
        };
        best = best.min(p);
        if p > step || p < step - f.estimated_win_per_step_ns {
            e.push(format!(
                "{}: predicted step {p} outside [{} − {}, {step}]",
                f.kind.label(),
                step,
                f.estimated_win_per_step_ns
            ));
        }
    }
    // Ranked by expected gain: the predicted saving, else the upper bound.
    // One-time work may rank below every per-step finding worth fixing whatever its gain
    // (issue 62), never above one with a larger gain, except the first finding of a cold
    // run: the one-time work whose fix is the verdict's (capture the steady state) leads. A
    // wait the trace cannot explain (no lever: its fix is to record more) may follow the
    // findings that have one, and CPU work the capture did not record may follow a per-step
    // lever worth a tenth of the step.
    for (i, w) in d.findings.windows(2).enumerate() {
        let set_apart = w[0].ranks_before_one_time_work() && !w[1].ranks_before_one_time_work();
        let cold_lead = i == 0 && d.verdict.cold_run.is_some() && w[0].one_time.is_some();
        let unexplained_after =
            w[1].kind == FindingKind::GpuWait && w[0].kind != FindingKind::GpuWait;
        let lever_before_unrecorded =
            w[0].ranks_before_unrecorded_work() && w[1].is_unrecorded_host_work();
        if !set_apart
            && !cold_lead
            && !lever_before_unrecorded
            && !unexplained_after
            && w[0].expected_gain_ns(step) < w[1].expected_gain_ns(step)
        {
            e.push(format!(
                "{} ranked above {} with a smaller expected gain",
                w[0].kind.label(),
                w[1].kind.label()
            ));
        }
    }
    if let Some(all) = &cp.all_fixes {
        if all.predicted_step_ns > best || all.measured_step_ns != step {
            e.push(format!(
                "all fixes predict {} of {}, above the best single fix {best}",
                all.predicted_step_ns, all.measured_step_ns
            ));
        }
    }
}

/// The communication figures: hidden and exposed tile the collective time; shares in 0–100;
/// exposed never more than the step; the exposed-communication finding's win is the exposed
/// time; per-operation figures are positive and finite.
fn communication_errors(d: &tracelens_analysis::Diagnosis, e: &mut Vec<String>) {
    let Some(c) = &d.communication else {
        return;
    };
    if c.hidden_ns + c.exposed_ns != c.communication_ns || c.hidden_ns < 0 || c.exposed_ns < 0 {
        e.push(format!(
            "communication: hidden {} + exposed {} != {}",
            c.hidden_ns, c.exposed_ns, c.communication_ns
        ));
    }
    in_range(e, "comm overlap_percent", c.overlap_percent);
    in_range(e, "comm exposed_percent", c.exposed_percent);
    if let Some(w) = &d.window {
        if c.exposed_per_step_ns > w.step_ns() {
            e.push(format!(
                "communication: exposed {} per step > step {}",
                c.exposed_per_step_ns,
                w.step_ns()
            ));
        }
    }
    for f in &d.findings {
        if f.kind == tracelens_analysis::FindingKind::ExposedCommunication
            && f.estimated_win_ns != c.exposed_ns
        {
            e.push(format!(
                "exposed-communication win {} != communication.exposed_ns {}",
                f.estimated_win_ns, c.exposed_ns
            ));
        }
    }
    for o in &c.by_op {
        if o.count == 0 || o.time_ns < 0 || o.sized > o.count {
            e.push(format!(
                "communication {:?}: count {} time {} sized {}",
                o.op, o.count, o.time_ns, o.sized
            ));
        }
        if let Some(b) = o.busbw_gb_per_s {
            if !b.is_finite() || b <= 0.0 {
                e.push(format!("communication {:?}: bus bandwidth {b}", o.op));
            }
        }
        if let Some(p) = o.busbw_percent_of_peak {
            in_range(e, "comm busbw_percent_of_peak", p);
        }
    }
}

/// Every consistency problem of one trace's overview and diagnosis (empty when all hold).
#[must_use]
pub fn consistency_errors(t: &Trace, r: &Report) -> Vec<String> {
    let (o, d) = (&r.overview, &r.diagnosis);
    let mut e = Vec::new();
    let v = &d.verdict;
    // Diffs and gates match findings across runs by key: host-compute and copy findings are
    // told apart by what they are (sub-cause, direction), never by their rank in the run.
    for f in &r.results().findings {
        let by_subject = matches!(f.kind, FindingKind::HostCompute | FindingKind::CopyTime);
        if by_subject && (f.key.contains('#') || !f.key.contains(':')) {
            e.push(format!("finding key {} does not name its subject", f.key));
        }
    }
    in_range(&mut e, "verdict.gpu_busy_percent", v.gpu_busy_percent);
    in_range(&mut e, "verdict.main_cause_percent", v.main_cause_percent);
    for (n, p) in [
        ("kernel", v.busy_by.kernel),
        ("memcpy", v.busy_by.memcpy),
        ("memset", v.busy_by.memset),
        ("communication", v.busy_by.communication),
    ] {
        in_range(&mut e, &format!("verdict.busy_by.{n}"), p);
    }
    for k in &v.kernel_classes {
        in_range(&mut e, "verdict.kernel_classes", k.percent);
    }
    for dev in &o.devices {
        for b in dev.window.iter().chain(&dev.first_to_last_op) {
            in_range(&mut e, "device busy_percent", b.busy_percent);
        }
    }
    for i in &d.idle {
        for c in &i.by_cause {
            in_range(&mut e, "idle.by_cause percent", c.percent);
        }
        let sum: i64 = i.by_cause.iter().map(|c| c.ns).sum();
        if sum != i.idle_ns {
            e.push(format!(
                "GPU {}: causes sum to {sum}, idle {}",
                i.device, i.idle_ns
            ));
        }
    }
    in_range(
        &mut e,
        "dataloader.share_percent",
        d.dataloader.share_percent,
    );
    // The efficiency view: percents in range, sums that add up, FLOPs only with a known op.
    let eff = &d.efficiency;
    in_range(&mut e, "efficiency.coverage_percent", eff.coverage_percent);
    for p in eff.mfu_percent.iter().chain(
        eff.classes
            .iter()
            .filter_map(|c| c.throughput.roofline_percent.as_ref())
            .chain(
                eff.operators
                    .iter()
                    .filter_map(|o| o.throughput.roofline_percent.as_ref()),
            ),
    ) {
        in_range(&mut e, "efficiency percent", *p);
    }
    let class_flops: f64 = eff.classes.iter().map(|c| c.throughput.flops).sum();
    if (class_flops - eff.flops).abs() > 1e-6 * eff.flops.max(1.0) {
        e.push(format!(
            "efficiency: classes sum to {class_flops} FLOPs, total {}",
            eff.flops
        ));
    }
    if eff.mfu_percent.is_some()
        != (eff.device.is_some() && eff.mfu_precision.is_some() && eff.peak_tflops.is_some())
    {
        e.push("efficiency: an MFU without a device peak, or a peak without an MFU".into());
    }
    critical_path_errors(d, &mut e);
    communication_errors(d, &mut e);
    for k in &d.top_kernels {
        if let Some(p) = k.mean_est_occupancy_percent {
            in_range(&mut e, "kernel occupancy", p);
        }
    }
    let Some(w) = &d.window else {
        if !d.findings.is_empty() {
            e.push("findings without a window".into());
        }
        return e;
    };
    if v.step_ns != w.step.mean_ns {
        e.push(format!(
            "verdict step {} != window step {}",
            v.step_ns, w.step.mean_ns
        ));
    }
    if w.has_steps() && w.covered_ns > w.interval.dur_ns() {
        e.push("steps cover more than the window".into());
    }
    // Findings: percent = per-step win / step; GPU-idle wins add up to at most the idle.
    for f in &d.findings {
        in_range(
            &mut e,
            &format!("{:?} estimated_win_percent", f.kind),
            f.estimated_win_percent,
        );
        let per_step = f.estimated_win_ns / i64::try_from(w.step_count()).unwrap_or(i64::MAX);
        if per_step != f.estimated_win_per_step_ns {
            e.push(format!(
                "{:?}: per-step win {} != {per_step}",
                f.kind, f.estimated_win_per_step_ns
            ));
        }
        let want = (per_step as f64 * 100.0 / v.step_ns.max(1) as f64).min(100.0);
        if (want - f.estimated_win_percent).abs() > 1e-6 {
            e.push(format!(
                "{:?}: {} % but per-step win / step = {want} %",
                f.kind, f.estimated_win_percent
            ));
        }
        if f.severity != Severity::from_share(f.estimated_win_percent) {
            e.push(format!("{:?}: severity does not follow its share", f.kind));
        }
        if f.win_kind == WinKind::HostOnly && f.estimated_win_ns != 0 {
            e.push(format!("{:?}: a host-only finding claims GPU time", f.kind));
        }
        // Every claim agrees with its own prediction, or says why not (issue 62).
        if let Some(p) = f.predicted_step_ns {
            let gain = (w.step.mean_ns - p).max(0);
            let cost = f.estimated_win_per_step_ns;
            let factor = tracelens_analysis::diagnose::GAIN_DISAGREEMENT_FACTOR;
            if cost > 0
                && gain.saturating_mul(factor) < cost
                && !f
                    .prediction
                    .contains(tracelens_analysis::diagnose::DISAGREEMENT_NOTE)
            {
                e.push(format!(
                    "{:?}: predicted gain {gain} ns is under 1/{factor} of the stated {cost} ns, unexplained: {}",
                    f.kind, f.prediction
                ));
            }
        }
        // One-time work never gets a per-step lever.
        if f.one_time.is_some() && f.lever.is_some_and(|l| l.per_step()) {
            e.push(format!(
                "{:?}: one-time work with a per-step lever {:?}",
                f.kind, f.lever
            ));
        }
    }
    let idle_wins: i64 = d
        .findings
        .iter()
        .filter(|f| f.win_kind == WinKind::GpuIdle)
        .map(|f| f.estimated_win_ns)
        .sum();
    if idle_wins != d.wins.gpu_idle_wins_ns || idle_wins > d.wins.idle_ns {
        e.push(format!(
            "GPU-idle wins {idle_wins} ns ({} reported) exceed the idle {} ns",
            d.wins.gpu_idle_wins_ns, d.wins.idle_ns
        ));
    }
    // Breakdown: each step's times sum to the step; without steps, to the window.
    if let Some(b) = &d.breakdown {
        for s in &b.steps {
            let sum: i64 = s.times.as_array().iter().sum();
            if sum != s.window.dur_ns() {
                e.push(format!(
                    "breakdown step #{} sums to {sum} of {}",
                    s.step,
                    s.window.dur_ns()
                ));
            }
        }
        let total: i64 = b.total.as_array().iter().sum();
        if total != w.covered_ns {
            e.push(format!(
                "breakdown total {total} != window {}",
                w.covered_ns
            ));
        }
        for x in b
            .percent
            .as_array()
            .into_iter()
            .chain([b.gpu_utilization_percent])
        {
            in_range(&mut e, "breakdown percent", x);
        }
    }
    // The verdict's busy figure, recomputed from the spans of its device.
    if let Some(dev) = v.device {
        let lanes = &t
            .devices
            .iter()
            .find(|x| x.index == dev)
            .expect("the device")
            .lanes;
        let busy = total_ns(&union(
            lanes
                .iter()
                .flat_map(|&l| t.lane_span_ids(l))
                .map(|id| t.span(id))
                .filter(|s| s.kind.is_gpu_work())
                .filter_map(|s| s.interval().clip(w.interval))
                .collect(),
        ));
        let want = busy as f64 * 100.0 / w.interval.dur_ns().max(1) as f64;
        if (want - v.gpu_busy_percent).abs() > 1e-6 {
            e.push(format!(
                "verdict busy {} % but the spans give {want} %",
                v.gpu_busy_percent
            ));
        }
    }
    // Every renderer shows the verdict and the same step (the terminal wraps lines: compare
    // with whitespace collapsed).
    let collapse = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let text = collapse(&tracelens_report::render_text(r, false));
    let md = tracelens_report::render_markdown(r);
    let step = format_ms(v.step_ns);
    let shown = [
        ("text", &text, collapse(&terminal_text(&v.text))),
        ("markdown", &md, markdown_text(&v.text)),
    ];
    for (name, out, verdict) in shown {
        if !out.contains(&verdict) {
            e.push(format!("{name} lacks the verdict"));
        }
        // Found iterations are called iterations, profiled steps steps.
        let what = match w.kind {
            tracelens_analysis::WindowKind::FoundIterations => "mean iteration",
            _ => "mean step",
        };
        let step_shown = match name {
            "markdown" => markdown_text(&format!("{what} {step}")),
            _ => format!("{what} {step}"),
        };
        if w.has_steps() && !out.contains(&step_shown) {
            e.push(format!("{name} does not show the step {step}"));
        }
    }
    // The verdict never clears the host while a High finding blames it.
    if v.text.contains("the host is not the bottleneck") {
        for f in &d.findings {
            let host_side = matches!(
                f.kind,
                FindingKind::HostCompute | FindingKind::DataLoaderStall | FindingKind::ImplicitSync
            );
            if host_side && f.severity == Severity::High {
                e.push(format!(
                    "the verdict says the host is not the bottleneck above a High {:?} finding",
                    f.kind
                ));
            }
        }
    }
    memory_errors(t, d, &mut e);
    e
}

/// GPU memory: the level the view computes from the samples' sizes equals the allocator's
/// own total at every sample; the categories add up to the allocated level at the window's
/// peak and at every step's, none negative; reserved holds at least what is allocated.
pub fn memory_errors(t: &Trace, d: &tracelens_analysis::Diagnosis, e: &mut Vec<String>) {
    use tracelens_analysis::views::memory::{allocated_levels, gpu_samples, PeakBasis};
    use tracelens_analysis::views::memory_blocks::MemoryCategory;
    for m in d
        .memory
        .iter()
        .filter(|m| m.basis == PeakBasis::AllocatorTotals)
    {
        let samples = gpu_samples(t, m.device);
        let levels = allocated_levels(&samples, true);
        if let Some((i, s)) = samples
            .iter()
            .enumerate()
            .find(|(i, s)| s.total_allocated != Some(levels[*i]))
        {
            e.push(format!(
                "GPU {}: allocated level {} at sample {i} differs from the trace's total {:?}",
                m.device, levels[i], s.total_allocated
            ));
        }
        if let Some(p) = m.peak_percent() {
            in_range(e, "memory.peak_percent", p);
        }
        let peaks = m
            .composition
            .iter()
            .map(|c| {
                (
                    "window peak".to_string(),
                    m.peak_allocated_bytes,
                    c.categories,
                )
            })
            .chain(m.points.iter().filter_map(|p| {
                Some((
                    format!("point at {}", p.start_ns),
                    p.peak_allocated_bytes,
                    p.at_peak?,
                ))
            }));
        for (what, peak, c) in peaks {
            if c.total() != peak {
                e.push(format!(
                    "GPU {} {what}: categories sum to {}, allocated {peak}",
                    m.device,
                    c.total()
                ));
            }
            if let Some(k) = MemoryCategory::ALL.iter().find(|&&k| c.get(k) < 0) {
                e.push(format!("GPU {} {what}: {k:?} is negative", m.device));
            }
        }
        for p in &m.points {
            if p.peak_reserved_bytes
                .is_some_and(|r| r < p.peak_allocated_bytes)
            {
                e.push(format!(
                    "GPU {} point at {}: reserved {:?} below allocated {}",
                    m.device, p.start_ns, p.peak_reserved_bytes, p.peak_allocated_bytes
                ));
            }
        }
    }
}

/// A report read back from its JSON renders byte for byte what the report rendered directly
/// (`tracelens report RESULT.json` against `tracelens analyze`), in every format.
#[must_use]
pub fn rerender_errors(report: &Report) -> Vec<String> {
    let json = tracelens_report::render_json(report);
    let back = match Report::from_json(&json) {
        Ok(back) => back,
        Err(e) => return vec![format!("its JSON does not read back: {e}")],
    };
    fn text(r: &Report, color: bool, verbose: bool) -> String {
        tracelens_report::render_text_with(
            r,
            &tracelens_report::TextOptions {
                color,
                width: 100,
                verbose,
            },
        )
    }
    type Render = fn(&Report) -> String;
    let renders: [(&str, Render); 5] = [
        ("JSON", tracelens_report::render_json),
        ("HTML", tracelens_report::render_html),
        ("Markdown", tracelens_report::render_markdown),
        ("text", |r| text(r, false, false)),
        ("verbose colour text", |r| text(r, true, true)),
    ];
    renders
        .into_iter()
        .filter(|(_, render)| render(report) != render(&back))
        .map(|(name, _)| format!("{name} re-rendered from the JSON differs"))
        .collect()
}

/// Advice that names an API or precision the trace's context lacks: TF32/bf16 below compute
/// capability 8.0, FP8 below 8.9, `torch.compile` below PyTorch 2.0, CUDA graph capture below
/// 1.10, `foreach=True` below 1.12. Only what the context rules out for sure counts (a range
/// that straddles a version may name it with its version).
#[must_use]
pub fn advice_context_errors(d: &tracelens_analysis::Diagnosis) -> Vec<String> {
    use tracelens_analysis::measure::environment::{
        TorchVersion, CUDA_GRAPHS, OPTIMIZER_FOREACH, TORCH_COMPILE,
    };
    let hw = &d.hardware;
    let fw = &d.framework;
    let mut banned: Vec<(&str, String)> = Vec::new();
    if hw.has_tf32() == Some(false) {
        for w in ["allow_tf32", "TF32", "bf16", "bfloat16"] {
            banned.push((w, format!("{} has no TF32/bf16", hw.describe())));
        }
    }
    if hw.has_fp8() == Some(false) {
        banned.push(("FP8", format!("{} has no FP8", hw.describe())));
    }
    let below = |v: TorchVersion| fw.at_least(v) == Some(false);
    if below(TORCH_COMPILE) {
        banned.push(("torch.compile", "PyTorch below 2.0".into()));
        banned.push(("scaled_dot_product_attention", "PyTorch below 2.0".into()));
    }
    if below(TorchVersion::new(1, 10)) {
        banned.push(("torch.autocast", "PyTorch below 1.10".into()));
    }
    if below(CUDA_GRAPHS) {
        banned.push(("torch.cuda.graph", "PyTorch below 1.10".into()));
        banned.push(("CUDAGraph", "PyTorch below 1.10".into()));
    }
    if below(OPTIMIZER_FOREACH) {
        banned.push(("foreach=True", "PyTorch below 1.12".into()));
    }
    use tracelens_analysis::measure::environment::Program;
    if matches!(fw.program, Program::Native | Program::Python) {
        for w in [
            "torch",
            "DataLoader",
            "pin_memory",
            "num_workers",
            ".item()",
            "with_stack",
            "set_to_none",
        ] {
            banned.push((w, format!("a {:?} program, not PyTorch", fw.program)));
        }
    }
    if fw.program == Program::Native {
        banned.push(("Python", "a native program".into()));
    }
    if !fw.cpu_ops_recorded {
        banned.push(("Python between ops", "no CPU ops recorded".into()));
        banned.push(("CPU work between API calls", "no CPU ops recorded".into()));
        banned.push(("per-step Python work", "no CPU ops recorded".into()));
    }
    let mut texts = vec![("verdict".to_string(), d.verdict.text.clone())];
    for f in &d.findings {
        texts.push((format!("{:?} finding title", f.kind), f.title.clone()));
    }
    for f in &d.findings {
        for text in [&f.fix, &f.advice, &f.snippet] {
            texts.push((format!("{:?} finding", f.kind), text.clone()));
        }
    }
    for a in d.compiled.iter().flat_map(|c| &c.advice) {
        for text in [&a.title, &a.fix, &a.snippet] {
            texts.push(("torch.compile advice".to_string(), text.clone()));
        }
    }
    for a in d.serving.iter().flat_map(|s| &s.advice) {
        for text in [&a.title, &a.fix] {
            texts.push(("serving advice".to_string(), text.clone()));
        }
    }
    let mut e = Vec::new();
    for (what, text) in &texts {
        for (word, why) in &banned {
            if text.contains(word) {
                e.push(format!("{what} names {word} ({why}): {text}"));
            }
        }
    }
    e
}
