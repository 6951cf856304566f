//! `tracelens analyze`: one trace (or the ranks of a job) read, analysed, rendered, gated.

use crate::args::{AnalyzeArgs, Format};
use crate::memory::peak_rss_mb;
use crate::output::{self, report_path_for, terminal_width};
use crate::sink::{fail, Sink};
use crate::stop::Stop;
use crate::{gate, job, progress};
use std::io::IsTerminal;
use std::path::Path;
use tracelens_report::escape::terminal_text;

pub(crate) fn analyze(args: &AnalyzeArgs, out: &mut Sink) -> Result<(), Stop> {
    if let Some(files) = job::job_files(args, out.stderr) {
        return match files.len() {
            0 => Err(fail(out.stderr, &args.trace, job::NO_TRACES_IN_FOLDER)),
            // A folder holding one trace is that trace.
            1 if args.more.is_empty() => {
                let mut one = args.clone();
                one.trace = files[0].clone();
                analyze(&one, out)
            }
            _ => job::analyze_job(args, files, out),
        };
    }
    // Refuse a bad output before spending time on reading the trace: one over the input,
    // or one in a folder that does not exist.
    let writes_report =
        args.output.is_none() && !args.no_report && args.format.is_none_or(|f| f == Format::Text);
    let (report_path, report_note) = report_path_for(&args.trace);
    let target = match &args.output {
        Some(p) if p.as_os_str() != "-" => Some(p.clone()),
        None if writes_report => Some(report_path.clone()),
        _ => None,
    };
    if let Some(path) = &target {
        out.check_not_input(path)?;
        // Parquet output is a folder of tables, created as needed.
        let folder = match path
            .parent()
            .filter(|_| args.format != Some(Format::Parquet))
        {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !folder.is_dir() {
            return Err(fail(
                out.stderr,
                path,
                "cannot write output: no such directory",
            ));
        }
    }
    // Bad rules are refused before the trace is read.
    let rules = gate::parse_all(&args.fail_on, args.not_measured, out.stderr)?;
    let started = std::time::Instant::now();
    let mut trace =
        progress::open(&args.trace, args.quiet).map_err(|e| fail(out.stderr, &args.trace, e))?;
    tracelens_load::attach_captures(&mut trace, &args.trace, args.capture.as_deref())
        .map_err(|(file, e)| fail(out.stderr, &file, e))?;
    if args.redact_path {
        trace.source.path = output::file_name_of(&trace.source.path);
    }
    let loaded = started.elapsed();
    let read_peak = peak_rss_mb();
    let read_cpu_s = process_cpu_s();
    // One capture of several rank processes (Nsight Systems of `torchrun`): their job.
    if args.format != Some(Format::Parquet) && !trace.rank_processes().is_empty() {
        return job::analyze_capture(args, &trace, out);
    }
    let spans = trace.spans.len();
    let analysis = tracelens_analysis::analyze(&trace);
    let collectives = (args.format == Some(Format::Parquet)).then(|| {
        tracelens_analysis::attribute::collectives::collectives_on(
            &trace,
            analysis.diagnosis.focus_device,
        )
    });
    let mut report = tracelens_results::Report::new(&trace, analysis);
    report.label = args.label.clone();
    let rank = collectives.map(|c| tracelens_results::RankSummary::of(&report, c));
    // The report stands on its own: the trace's memory goes before rendering.
    drop(trace);
    let analysed = started.elapsed();
    if args.timings {
        let _ = writeln!(
            out.stderr,
            "timings: read {:.3} s ({} spans{}), analyse {:.3} s{}{}",
            loaded.as_secs_f64(),
            spans,
            read_cpu_s.map_or_else(String::new, |c| format!(", CPU {c:.3} s")),
            (analysed - loaded).as_secs_f64(),
            read_cpu_s
                .zip(process_cpu_s())
                .map_or_else(String::new, |(r, a)| format!(" (CPU {:.3} s)", a - r)),
            match (read_peak, peak_rss_mb()) {
                (Some(r), Some(a)) =>
                    format!("; peak RSS {r} MB after reading, {a} MB after analysing"),
                _ => String::new(),
            }
        );
    }
    let tty = std::io::stdout().is_terminal();
    let color = tty && std::env::var_os("NO_COLOR").is_none();
    let width = terminal_width(tty);
    let render = |format: Format, color: bool| {
        output::render_report(
            &report,
            format,
            &output::text_options(color, width, args.verbose),
        )
    };
    if args.format == Some(Format::Parquet) {
        let Some(dir) = args.output.as_ref().filter(|p| p.as_os_str() != "-") else {
            return Err(fail(
                out.stderr,
                &args.trace,
                "--format parquet needs -o DIR (a folder for the tables)",
            ));
        };
        return match rank {
            Some(rank) => job::write_parquet(&rank, dir, out),
            None => Ok(()),
        };
    }
    match (&args.output, args.format) {
        // -o -: the chosen format (default text) on stdout, nothing else.
        (Some(p), format) if p.as_os_str() == "-" => {
            out.print(&render(format.unwrap_or(Format::Text), color))?;
        }
        // -o FILE: the summary on stdout, the file in its format, its path last.
        (Some(path), format) => {
            let format = format.unwrap_or_else(|| Format::from_extension(path));
            if format != Format::Text {
                out.print(&render(Format::Text, color))?;
            }
            out.write_file(path, &render(format, false))?;
            out.announce("wrote ", path)?;
        }
        // --format json|md|html: that format on stdout.
        (None, Some(format)) if format != Format::Text => {
            out.print(&render(format, false))?;
        }
        // The plain command: summary, then the HTML report beside it.
        (None, _) => {
            out.print(&render(Format::Text, color))?;
            if writes_report {
                out.write_file(&report_path, &render(Format::Html, false))?;
                out.announce("report: ", &report_path)?;
                if let Some(note) = report_note {
                    out.print(&format!("        ({})\n", terminal_text(&note)))?;
                }
            }
        }
    }
    if args.annotate.annotations.is_some() || !args.fail_on.is_empty() {
        let results = &report.results();
        if let Some(lines) = args.annotate.lines(results) {
            out.print_commands(&lines)?;
        }
        out.flush()?;
        gate::fail_on(&rules, &tracelens_results::Metrics::of(results), out.stderr)?;
    }
    Ok(())
}

/// CPU seconds (user and system) the process has used so far, all threads together.
fn process_cpu_s() -> Option<f64> {
    // SAFETY: `getrusage` fills the zeroed struct it is handed and reads nothing else.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        (libc::getrusage(libc::RUSAGE_SELF, &mut usage) == 0).then_some(usage)
    }?;
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(seconds(usage.ru_utime) + seconds(usage.ru_stime))
}
