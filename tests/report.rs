//! The report renderers end to end: snapshots of HTML, Markdown and JSON on project fixtures
//! (deterministic output), escaping of hostile names, the default report file, and the size
//! bound.

use std::path::PathBuf;
use tracelens_tests::{repo_root, tracelens};

/// Fixtures rendered into `tests/snapshots/`, by path relative to the tests crate (the CLI
/// runs in-process with that directory as cwd, so the path in the output is stable).
const SNAPSHOTS: [(&str, &str); 3] = [
    ("modern_base_ns", "../fixtures/kineto/modern_base_ns.json"),
    (
        "item_every_step",
        "../fixtures/scenarios/item_every_step.json",
    ),
    (
        "dataloader_single_process",
        "../fixtures/scenarios/dataloader_single_process.json",
    ),
];

fn render(trace: &str, format: &str) -> String {
    let run = tracelens(["analyze", trace, "--format", format]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.stdout
}

#[test]
fn html_markdown_and_json_match_their_snapshots() {
    let dir = repo_root().join("tests/snapshots");
    let bless = std::env::var_os("TRACELENS_BLESS").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for (name, trace) in SNAPSHOTS {
        for (format, ext) in [("html", "html"), ("md", "md"), ("json", "json")] {
            let out = render(trace, format);
            let path = dir.join(format!("{name}.{ext}"));
            if bless {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &out).unwrap();
            } else if std::fs::read_to_string(&path).ok().as_deref() != Some(out.as_str()) {
                stale.push(path.display().to_string());
            }
            assert_eq!(
                out,
                render(trace, format),
                "{name}.{ext} differs between two runs"
            );
        }
    }
    assert!(
        stale.is_empty(),
        "snapshots differ (review, then TRACELENS_BLESS=1): {stale:?}"
    );
}

#[test]
fn markdown_stays_under_sixty_lines() {
    for (_, trace) in SNAPSHOTS {
        let md = render(trace, "md");
        assert!(
            md.lines().count() < 60,
            "{trace}: {} lines",
            md.lines().count()
        );
    }
}

#[test]
fn hostile_names_are_escaped_everywhere() {
    let trace = "../fixtures/kineto/xss_names.json";
    let html = render(trace, "html");
    // Only the report's own script tag; every trace string is inert text.
    assert_eq!(
        html.matches("<script").count(),
        1,
        "one inline script, ours"
    );
    for raw in ["<img", "<b onmouseover", "</script><script>"] {
        assert!(!html.contains(raw), "raw {raw:?} in the HTML");
    }
    // The hostile text is still there, as inert escaped text.
    assert!(html.contains("img src=x onerror=alert"));
    assert!(html.contains("&#60;script&#62;alert(&#39;gpu&#39;)&#60;/script&#62;"));
    assert!(html.contains("Content-Security-Policy"));
    assert!(html.contains("default-src 'none'"));
    assert!(
        !html.contains("hf_abcdefghijklmnopqrstuvwxyz"),
        "secrets never reach the report"
    );
    let md = render(trace, "md");
    assert!(!md.contains("<script") && !md.contains("<img"), "{md}");
}

#[test]
fn report_loads_nothing_from_the_network() {
    for (_, trace) in SNAPSHOTS {
        let html = render(trace, "html");
        for needle in ["http://", "https://", "src=", "@import", "url(", "<link"] {
            assert!(!html.contains(needle), "{trace}: {needle:?} in the report");
        }
    }
}

#[test]
fn plain_command_writes_the_report_beside_the_summary() {
    let dir = std::env::temp_dir().join(format!("tracelens-default-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = repo_root().join("fixtures/scenarios/item_every_step.json");
    let copy = dir.join("run7.pt.trace.json");
    std::fs::copy(&trace, &copy).unwrap();
    // The default report goes to the current directory; the CLI is in-process, so run the
    // binary with `dir` as its cwd instead of changing the test's.
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_tracelens_for_tests"));
    let out = std::process::Command::new(exe)
        .arg("analyze")
        .arg(&copy)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().last(),
        Some("report: run7.tracelens.html"),
        "{stdout}"
    );
    let html = std::fs::read_to_string(dir.join("run7.tracelens.html")).unwrap();
    assert!(html.contains("id=\"verdict\""));
    let out = std::process::Command::new(PathBuf::from(env!("CARGO_BIN_EXE_tracelens_for_tests")))
        .args(["analyze", "--no-report"])
        .arg(&copy)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("report:"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn output_format_follows_the_extension_and_stdout_dash() {
    let dir = std::env::temp_dir().join(format!("tracelens-ext-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = "../fixtures/kineto/modern_base_ns.json";
    for (file, starts) in [
        ("r.html", "<!DOCTYPE html>"),
        ("r.md", "## tracelens"),
        ("r.json", "{"),
        ("r.txt", "tracelens "),
    ] {
        let path = dir.join(file);
        let run = tracelens([
            "analyze".into(),
            trace.into(),
            "-o".into(),
            path.clone().into_os_string(),
        ]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(run
            .stdout
            .trim_end()
            .ends_with(&format!("wrote {}", path.display())));
        assert!(
            std::fs::read_to_string(&path).unwrap().starts_with(starts),
            "{file}"
        );
    }
    let run = tracelens(["analyze", trace, "-o", "-", "--format", "md"]);
    assert!(run.stdout.starts_with("## tracelens"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Report sizes stay bounded: evidence is sampled and the timeline binned to pixels.
#[test]
fn report_size_is_bounded_on_the_largest_scenario() {
    let html = render(
        "../fixtures/scenarios/launch_bound_tiny_kernels.json",
        "html",
    );
    assert!(html.len() < 400_000, "{} bytes", html.len());
}

#[test]
fn report_rerenders_a_stored_result_byte_for_byte() {
    let dir = std::env::temp_dir().join(format!("tracelens-rerender-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, trace) in SNAPSHOTS {
        let result = dir.join(format!("{name}.json"));
        std::fs::write(&result, render(trace, "json")).unwrap();
        let result = result.to_str().unwrap();
        for format in ["html", "md", "json"] {
            let again = tracelens(["report", result, "--format", format]);
            assert_eq!(again.code, 0, "{}", again.stderr);
            assert_eq!(again.stdout, render(trace, format), "{name} as {format}");
        }
        // The summary, without the HTML file analyze writes beside it.
        let direct = tracelens(["analyze", trace, "--no-report"]);
        let again = tracelens(["report", result]);
        assert_eq!(again.code, 0, "{}", again.stderr);
        assert_eq!(again.stdout, direct.stdout, "{name} as text");
        // -o FILE: the format follows the extension.
        let html = dir.join(format!("{name}.html"));
        let run = tracelens(["report", result, "-o", html.to_str().unwrap()]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(
            std::fs::read_to_string(&html).unwrap(),
            render(trace, "html")
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn report_refuses_other_versions_and_non_results_in_one_line() {
    let dir = std::env::temp_dir().join(format!("tracelens-rerender-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let doc = render("../fixtures/scenarios/item_every_step.json", "json");
    let version = format!("\"schema_version\": {}", tracelens_report::SCHEMA_VERSION);
    assert!(doc.contains(&version));
    let cases = [
        (
            "newer.json",
            doc.replacen(&version, "\"schema_version\": 99", 1),
            "schema version 99 is newer than this tracelens reads",
        ),
        (
            "older.json",
            doc.replacen(&version, "\"schema_version\": 3", 1),
            "schema version 3 is older than this tracelens reads",
        ),
        (
            "trace.json",
            std::fs::read_to_string(repo_root().join("fixtures/scenarios/item_every_step.json"))
                .unwrap(),
            "not a tracelens result",
        ),
        ("broken.json", doc[..doc.len() / 2].to_string(), "malformed"),
        ("text.json", "hello".to_string(), "not JSON"),
    ];
    for (file, text, why) in cases {
        let path = dir.join(file);
        std::fs::write(&path, text).unwrap();
        let run = tracelens(["report", path.to_str().unwrap(), "--format", "html"]);
        assert_eq!(run.code, 2, "{file}");
        assert!(run.stdout.is_empty(), "{file}: {}", run.stdout);
        assert_eq!(run.stderr.lines().count(), 1, "{file}: {}", run.stderr);
        assert!(run.stderr.contains(why), "{file}: {}", run.stderr);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_readme_example_is_what_the_command_prints() {
    // The README shows the summary at 100 columns: it must stay the real output.
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let command = "$ tracelens analyze fixtures/scenarios/dataloader_single_process.json\n";
    let start = readme.find(command).expect("the README shows the example") + command.len();
    let shown = &readme[start..start + readme[start..].find("```").unwrap()];
    let dir = std::env::temp_dir().join(format!("tracelens-readme-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tracelens_for_tests"))
        .current_dir(&dir)
        .env("COLUMNS", "100")
        .arg("analyze")
        .arg(repo_root().join("fixtures/scenarios/dataloader_single_process.json"))
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let printed = String::from_utf8(out.stdout).unwrap();
    let version = format!("tracelens {}", env!("CARGO_PKG_VERSION"));
    assert_eq!(
        shown.replace("tracelens 0.1.0", &version),
        printed,
        "update the README's example"
    );
}

#[test]
fn no_shared_output_embeds_the_absolute_path() {
    // Reports travel (artifacts, PR comments): they name inputs by file name. Only the JSON
    // keeps the path as given, and --redact-path drops its folders too.
    let trace = repo_root().join("fixtures/scenarios/item_every_step.json");
    let twin = repo_root().join("fixtures/scenarios/item_read_every_n_steps.json");
    let folder = repo_root().join("fixtures").display().to_string();
    let (t, w) = (trace.to_str().unwrap(), twin.to_str().unwrap());
    for args in [
        vec!["analyze", t, "--format", "html"],
        vec!["analyze", t, "--format", "md"],
        vec!["analyze", t, "--no-report"],
        vec!["analyze", t, "--format", "json", "--redact-path"],
        vec!["diff", t, w, "--format", "html"],
        vec!["diff", t, w, "--format", "md"],
        vec!["diff", t, w],
    ] {
        let run = tracelens(args.iter().copied());
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        assert!(!run.stdout.contains(&folder), "{args:?} embeds {folder}");
    }
    let json = tracelens(["analyze", t, "--format", "json"]).stdout;
    assert!(
        json.contains(&format!("\"path\": \"{t}\"")),
        "the JSON keeps the path given"
    );
}

#[test]
fn the_step_chart_has_a_column_per_step_to_scale() {
    // item_every_step: six equal steps, each one kernel-heavy column.
    let html = render("../fixtures/scenarios/item_every_step.json", "html");
    let chart = &html[html.find("<svg class=\"ov steps\"").expect("a step chart")..];
    let chart = &chart[..chart.find("</svg>").unwrap()];
    let kernels = chart.matches("<rect class=\"kernel\"").count();
    assert_eq!(kernels, 6, "{chart}");
    assert!(chart.contains("<title>step "), "{chart}");
    // A single-step trace has no chart (its table says it all).
    let one = render("../fixtures/kineto/modern_base_ns.json", "html");
    assert!(!one.contains("<svg class=\"ov steps\""));
}

/// Every section of the report reaches each renderer its entry in `SECTIONS` says it does:
/// its anchor in some trace's HTML page, its row in some trace's Markdown summary, its line
/// in some trace's terminal summary, over the corpus; a summary that leaves a section out
/// says why in the registry.
#[test]
fn every_section_reaches_every_renderer_it_says_it_does() {
    use tracelens_report::{Shown, SECTIONS};
    let Some(root) =
        tracelens_tests::corpus_dir("every_section_reaches_every_renderer_it_says_it_does")
    else {
        return;
    };
    // (section, renderer) pairs not yet seen.
    let mut missing: std::collections::BTreeSet<(usize, &str)> = std::collections::BTreeSet::new();
    for (i, s) in SECTIONS.iter().enumerate() {
        missing.insert((i, "html"));
        for (renderer, shown) in [("markdown", s.markdown), ("text", s.text)] {
            match shown {
                Shown::As(_) => {
                    missing.insert((i, renderer));
                }
                Shown::Not(why) => assert!(why.len() > 20, "{}: say why not", s.id),
            }
        }
    }
    let mut files: Vec<PathBuf> = walk(&root);
    files.sort();
    let mut read = 0;
    for path in files {
        if missing.is_empty() {
            break;
        }
        let Ok(trace) = tracelens_load::open(&path) else {
            continue;
        };
        read += 1;
        let report = tracelens_report::Report::build(&trace);
        let html = tracelens_report::render_html(&report);
        let markdown = tracelens_report::render_markdown(&report);
        let text = tracelens_report::render_text(&report, false);
        missing.retain(|&(i, renderer)| {
            let s = &SECTIONS[i];
            !match renderer {
                "html" => html.contains(&format!(" id=\"{}\"", s.id)),
                "markdown" => s.markdown.found_in(&markdown),
                _ => s.text.found_in(&text),
            }
        });
    }
    let missing: Vec<String> = missing
        .iter()
        .map(|&(i, renderer)| format!("{} in {renderer}", SECTIONS[i].id))
        .collect();
    assert!(
        missing.is_empty(),
        "after {read} traces, never shown: {}",
        missing.join(", ")
    );
}

/// Every trace-looking file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else if tracelens_load::is_trace_file_name(&path) {
            out.push(path);
        }
    }
    out
}

/// A program the trace shows is not PyTorch reads no PyTorch API in any output: the HTML
/// page, the Markdown and the terminal summaries of every native program in the corpus'
/// `diverse/` folder (notes on missing figures included, not only findings).
#[test]
fn a_native_program_reads_no_pytorch_in_any_output() {
    use tracelens_analysis::measure::environment::Program;
    let Some(root) = tracelens_tests::corpus_dir("a_native_program_reads_no_pytorch") else {
        return;
    };
    let mut native = 0;
    for path in walk(&root.join("diverse")) {
        let Ok(trace) = tracelens_load::open(&path) else {
            continue;
        };
        let report = tracelens_report::Report::build(&trace);
        if report.diagnosis.framework.program != Program::Native {
            continue;
        }
        native += 1;
        for (what, text) in [
            ("html", tracelens_report::render_html(&report)),
            ("markdown", tracelens_report::render_markdown(&report)),
            ("text", tracelens_report::render_text(&report, true)),
        ] {
            assert!(
                !text.contains("torch"),
                "{} ({what}): {}",
                path.display(),
                text.lines()
                    .find(|l| l.contains("torch"))
                    .unwrap_or_default()
            );
        }
    }
    assert!(native >= 3, "only {native} native programs in diverse/");
}
