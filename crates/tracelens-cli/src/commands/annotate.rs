//! `tracelens annotate`: the trace copied verbatim with our findings as extra tracks.

use crate::args::AnnotateArgs;
use crate::output::{self, default_report_path};
use crate::sink::{fail, Sink};
use crate::stop::Stop;
use std::path::PathBuf;
use tracelens_load as input;

/// `tracelens annotate`: the trace copied verbatim with our tracks added first.
pub(crate) fn annotate(args: &AnnotateArgs, out: &mut Sink) -> Result<(), Stop> {
    if args.output.as_ref().is_some_and(|p| p.as_os_str() == "-") {
        return annotate_to_stdout(args, out);
    }
    let path = args.output.clone().unwrap_or_else(|| {
        let report = default_report_path(&args.trace);
        let stem = report
            .to_string_lossy()
            .trim_end_matches(".tracelens.html")
            .to_string();
        PathBuf::from(format!("{stem}.annotated.json.gz"))
    });
    out.check_not_input(&path)?;
    let events = annotation_events(args, out)?;
    let gzip = path.to_string_lossy().ends_with(".gz");
    let mut stats = None;
    let mut read_failed = false;
    let written = output::write_atomically_with(&path, |w| {
        let copied = copy(args, w, &events, gzip);
        read_failed = copied.as_ref().is_err_and(|(_, read)| *read);
        stats = Some(copied.map_err(|(e, _)| e)?);
        Ok(())
    });
    if let Err(e) = written {
        return Err(copy_failed(args, out, &path, &e, read_failed));
    }
    let stats = stats.unwrap_or_default();
    out.announce("wrote ", &path)?;
    let dropped = if stats.dropped > 0 {
        format!(
            " ({} events that could not be copied whole were left out)",
            stats.dropped
        )
    } else {
        String::new()
    };
    out.print(&format!(
        "        {} trace events and {} tracelens events{dropped}; open it in ui.perfetto.dev or chrome://tracing\n",
        stats.events,
        events.len()
    ))
}

/// `-o -`: the annotated trace, uncompressed, on stdout (made [workflow-command
/// safe](tracelens_report::escape::workflow_command_safe) like all output); what was written
/// goes to stderr.
fn annotate_to_stdout(args: &AnnotateArgs, out: &mut Sink) -> Result<(), Stop> {
    let events = annotation_events(args, out)?;
    let mut stdout = output::CommandSafe::new(&mut *out.stdout);
    let mut buffered = std::io::BufWriter::new(&mut stdout);
    let copied = copy(args, &mut buffered, &events, false).and_then(|s| {
        std::io::Write::flush(&mut buffered)
            .map(|()| s)
            .map_err(|e| (e, false))
    });
    drop(buffered);
    match copied {
        Ok(stats) => {
            let _ = writeln!(
                out.stderr,
                "tracelens: wrote {} trace events and {} tracelens events to stdout",
                stats.events,
                events.len()
            );
            Ok(())
        }
        Err((e, false)) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Stop::ClosedPipe),
        Err((e, read)) => Err(copy_failed(
            args,
            out,
            std::path::Path::new("<stdout>"),
            &e,
            read,
        )),
    }
}

/// The trace read (refused when it inflates past
/// [`ANNOTATE_INFLATE_BOUND`](tracelens_load::ANNOTATE_INFLATE_BOUND), a likely gzip bomb),
/// analysed, and our tracks as trace events.
fn annotation_events(args: &AnnotateArgs, out: &mut Sink) -> Result<Vec<String>, Stop> {
    let trace =
        input::open_annotatable(&args.trace).map_err(|e| fail(out.stderr, &args.trace, e))?;
    let analysis = tracelens_analysis::analyze(&trace);
    let tracks = tracelens_analysis::views::annotations::idle_tracks(&trace, &analysis.device_idle);
    let critical = tracelens_analysis::views::annotations::critical_marks(
        &trace,
        &analysis.diagnosis.critical_path,
    );
    let memory =
        tracelens_analysis::views::annotations::memory_tracks(&trace, &analysis.diagnosis.memory);
    Ok(tracelens_report::perfetto::annotation_events(
        &analysis.diagnosis,
        &tracks,
        &critical,
        &memory,
    ))
}

/// Copies the trace with `events` into `w` (gzip-compressed when asked); an error comes with
/// whether reading the trace caused it (no write failed), not writing the output.
fn copy(
    args: &AnnotateArgs,
    w: &mut dyn std::io::Write,
    events: &[String],
    gzip: bool,
) -> Result<input::CopyStats, (std::io::Error, bool)> {
    let mut write_failed = false;
    let mut w = Tracked {
        inner: w,
        failed: &mut write_failed,
    };
    let copied = if gzip {
        let mut gz = flate2::write::GzEncoder::new(&mut w, flate2::Compression::new(6));
        input::write_annotated(&args.trace, &mut gz, events).and_then(|s| gz.finish().map(|_| s))
    } else {
        input::write_annotated(&args.trace, &mut w, events)
    };
    copied.map_err(|e| (e, !write_failed))
}

/// The one line for a failed copy: the input's problem when reading it failed (a gzip stream
/// cut short), else the output's.
fn copy_failed(
    args: &AnnotateArgs,
    out: &mut Sink,
    target: &std::path::Path,
    e: &std::io::Error,
    read: bool,
) -> Stop {
    if read {
        let why = format!(
            "cannot be copied: {} (a trace that is cut short can be analysed, not annotated)",
            input::read_problem(e)
        );
        return fail(out.stderr, &args.trace, why);
    }
    let why = format!("cannot write output: {}", input::write_problem(e));
    fail(out.stderr, target, why)
}

/// A writer that remembers whether a write to it failed, to tell output errors from input
/// errors surfacing through the same copy.
struct Tracked<'a> {
    inner: &'a mut dyn std::io::Write,
    failed: &'a mut bool,
}

impl std::io::Write for Tracked<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf).inspect_err(|_| *self.failed = true)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush().inspect_err(|_| *self.failed = true)
    }
}
