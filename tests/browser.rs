//! A real browser opens the report of a real corpus trace: the page renders its verdict and
//! findings, logs nothing to the console and makes no network request. A control page that
//! does both proves the checks can fail. Screenshots of three real traces (wide and narrow,
//! light and dark) are saved under the test's target folder for people to look at.
//!
//! Needs Chromium (`chromium`, `chromium-browser`, `google-chrome`, or `$TRACELENS_CHROMIUM`);
//! skipped loudly without it unless `TRACELENS_REQUIRE_BROWSER=1` (set by `.ci/run`).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tracelens_tests::{corpus_dir, tracelens};

/// Real traces of three kinds the page tests read: training CUDA Kineto, inference ROCm
/// Kineto, a (two-process) Nsight Systems export.
const REAL_TRACES: [(&str, &str); 3] = [
    (
        "resnet50_nw0",
        "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.pt.trace.json.gz",
    ),
    (
        "qwen_mi300",
        "other/TraceLens/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    ),
    (
        "nsys_2gpu",
        "nsys/public/GindaChen__nsys-ai/tests/fixtures/mfu_2gpu_after.sqlite",
    ),
];

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TRACELENS_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in [
            "chromium",
            "chromium-browser",
            "google-chrome",
            "google-chrome-stable",
        ] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

/// What one headless run saw.
struct PageRun {
    dom: String,
    console: Vec<String>,
    page_requests: Vec<String>,
}

fn open(browser: &Path, page: &Path, work: &Path, extra: &[String]) -> PageRun {
    let netlog = work.join(format!(
        "net-{}.json",
        page.file_stem().unwrap().to_string_lossy()
    ));
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!(
            "--user-data-dir={}",
            work.join("profile").display()
        ))
        .arg(format!("--log-net-log={}", netlog.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    // Read both pipes on threads so a chatty browser cannot block on a full pipe.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).ok();
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).ok();
        s
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let dom = out_t.join().unwrap();
    let stderr = err_t.join().unwrap();
    let console = stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    PageRun {
        dom,
        console,
        page_requests: page_requests(&netlog),
    }
}

/// URLs requested by the page itself (the browser's own background requests carry the
/// initiator "not an origin"; the document's own file:// load is not a request to a network).
fn page_requests(netlog: &Path) -> Vec<String> {
    let raw = std::fs::read_to_string(netlog).unwrap_or_default();
    let doc: Value = serde_json::from_str(&raw)
        .or_else(|_| serde_json::from_str(&format!("{}]}}", raw.trim_end().trim_end_matches(','))))
        .unwrap_or(Value::Null);
    let Some(start_job) = doc["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"].as_i64()
    else {
        return vec!["<net log unreadable>".into()];
    };
    doc["events"]
        .as_array()
        .map(|events| {
            events
                .iter()
                .filter(|e| e["type"].as_i64() == Some(start_job))
                .filter_map(|e| {
                    let url = e["params"]["url"].as_str()?;
                    let initiator = e["params"]["initiator"].as_str().unwrap_or("");
                    (initiator != "not an origin"
                        && !url.starts_with("file:")
                        && !url.starts_with("data:"))
                    .then(|| url.to_string())
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
#[cfg_attr(
    no_corpus,
    ignore = "no trace corpus: set TRACELENS_CORPUS to shared/traces"
)]
#[cfg_attr(no_browser, ignore = "no chromium on PATH")]
fn report_renders_offline_in_chromium_without_errors_or_requests() {
    let Some(browser) = chromium() else {
        if std::env::var_os("TRACELENS_REQUIRE_BROWSER").is_some_and(|v| v == "1") {
            panic!("TRACELENS_REQUIRE_BROWSER=1 but no chromium found");
        }
        eprintln!("\n*** SKIPPED report_renders_offline_in_chromium: no chromium on PATH (apt-get install chromium) ***\n");
        return;
    };
    let Some(corpus) = corpus_dir("report_renders_offline_in_chromium_without_errors_or_requests")
    else {
        return;
    };
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();

    // The checks must be able to fail: a page that logs an error and loads a loopback image.
    let control = work.join("control.html");
    std::fs::write(
        &control,
        "<!DOCTYPE html><html><body><img src=\"http://127.0.0.1:9/probe.png\"><script>console.error('control')</script></body></html>",
    )
    .unwrap();
    let c = open(&browser, &control, &work, &["--dump-dom".into()]);
    assert!(
        !c.console.is_empty(),
        "console messages must be visible to the test"
    );
    assert!(
        c.page_requests.iter().any(|u| u.contains("127.0.0.1:9")),
        "{:?}",
        c.page_requests
    );

    let trace =
        corpus.join("other/TraceLens/h100/google_owlv2-large-patch14-ensemble__1016001.json.gz");
    let report = work.join("owlv2.tracelens.html");
    let run = tracelens([
        "analyze".into(),
        trace.into_os_string(),
        "-o".into(),
        report.clone().into_os_string(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = open(&browser, &report, &work, &["--dump-dom".into()]);
    assert!(
        r.dom.contains(
            "id=\"verdict\">GPU idle 53 % of each step, mostly waiting for the DataLoader"
        ),
        "{}",
        &r.dom[..r.dom.len().min(2000)]
    );
    assert!(
        r.dom.contains("class=\"finding high\""),
        "a high-severity finding is shown"
    );
    assert!(r.dom.contains("single-process iterator (num_workers=0)"));
    assert!(r.dom.contains("<svg"), "the timeline is drawn");
    // The busy-GPU views: memory (this trace has the allocator's totals), regions
    // (nn.Module ranges) and operators, each a table.
    for id in ["memory", "regions", "operators", "kernels", "efficiency"] {
        let at = r
            .dom
            .find(&format!("<h2 id=\"{id}\">"))
            .unwrap_or_else(|| panic!("no {id} section"));
        assert!(r.dom[at..].contains("<table"), "{id}: no table");
    }
    assert!(r.dom.contains("peak allocated"), "the memory table");
    assert!(
        r.dom.contains("against NVIDIA H100 SXM's dense BF16 peak"),
        "the efficiency note names the device's peak"
    );
    assert!(r.console.is_empty(), "console: {:?}", r.console);
    assert!(
        r.page_requests.is_empty(),
        "network requests: {:?}",
        r.page_requests
    );

    // Screenshots for people: three real traces (training CUDA Kineto, inference ROCm Kineto,
    // Nsight Systems), wide and narrow, light and dark.
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
    let _ = std::fs::remove_dir_all(&shots);
    std::fs::create_dir_all(&shots).unwrap();
    for (name, rel) in REAL_TRACES {
        let report = work.join(format!("{name}.html"));
        let run = tracelens([
            "analyze".into(),
            corpus.join(rel).into_os_string(),
            "-o".into(),
            report.clone().into_os_string(),
        ]);
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        for (theme, flags) in [
            ("light", vec![]),
            (
                "dark",
                vec![
                    "--force-dark-mode".to_string(),
                    "--blink-settings=preferredColorScheme=0".to_string(),
                ],
            ),
        ] {
            for width in [1400, 800] {
                let shot = shots.join(format!("{name}-{theme}-{width}.png"));
                let mut args = flags.clone();
                args.extend([
                    "--hide-scrollbars".to_string(),
                    format!("--window-size={width},2400"),
                    format!("--screenshot={}", shot.display()),
                ]);
                let page = open(&browser, &report, &work, &args);
                assert!(page.console.is_empty(), "{name}: {:?}", page.console);
                let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
                assert!(
                    size > 20_000,
                    "screenshot {} has {size} bytes",
                    shot.display()
                );
            }
        }
    }
    // The busy-GPU sections (memory, regions, operators, kernels) sit below the first
    // screen: the same page cut to them, wide and narrow, light and dark.
    let html = std::fs::read_to_string(&report).unwrap();
    let body = html
        .find("<body")
        .and_then(|b| html[b..].find('>').map(|e| b + e + 1));
    // Two cuts: kernels to operators, and the efficiency section on its own.
    for (cut_name, first, last) in [
        ("sections", "kernels", "efficiency"),
        ("efficiency", "efficiency", "health"),
    ] {
        let (from, to) = (
            html.find(&format!("<h2 id=\"{first}\">")),
            html.find(&format!("<h2 id=\"{last}\">")),
        );
        let (Some(body), Some(from), Some(to)) = (body, from, to) else {
            panic!("the report lost its {first} or {last} section");
        };
        let cut = work.join(format!("owlv2-{cut_name}.html"));
        let end = html.rfind("</body>").unwrap_or(html.len());
        std::fs::write(
            &cut,
            format!(
                "{}<main>{}</main>{}",
                &html[..body],
                &html[from..to],
                &html[end..]
            ),
        )
        .unwrap();
        for (theme, dark) in [("light", false), ("dark", true)] {
            for width in [1400, 800] {
                let shot = shots.join(format!("owlv2-{cut_name}-{theme}-{width}.png"));
                let mut args = vec![
                    "--hide-scrollbars".to_string(),
                    format!("--window-size={width},2400"),
                    format!("--screenshot={}", shot.display()),
                ];
                if dark {
                    args.push("--force-dark-mode".into());
                    args.push("--blink-settings=preferredColorScheme=0".into());
                }
                let page = open(&browser, &cut, &work, &args);
                assert!(page.console.is_empty(), "{cut_name}: {:?}", page.console);
                let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
                assert!(
                    size > 20_000,
                    "screenshot {} has {size} bytes",
                    shot.display()
                );
            }
        }
    }
    eprintln!("report screenshots: {}", shots.display());
}

/// The page's own layout report: `tests/layout_probe.js` run in the page after it laid out,
/// its JSON read back from the dumped DOM.
fn layout_problems(browser: &Path, page: &Path, work: &Path, width: u32) -> Vec<String> {
    let html = std::fs::read_to_string(page).unwrap();
    let probe = include_str!("layout_probe.js");
    // The probe is a script of the test's: the copy it runs in drops the page's
    // Content-Security-Policy (a job page allows no script at all); the layout is the same.
    let html = match (
        html.find("<meta http-equiv=\"Content-Security-Policy\""),
        html.find("<meta http-equiv=\"Content-Security-Policy\"")
            .and_then(|at| html[at..].find('>').map(|end| at + end + 1)),
    ) {
        (Some(from), Some(to)) => format!("{}{}", &html[..from], &html[to..]),
        _ => html,
    };
    let end = html.rfind("</body>").unwrap_or(html.len());
    let probed = work.join(format!(
        "{}-probe-{width}.html",
        page.file_stem().unwrap().to_string_lossy()
    ));
    std::fs::write(
        &probed,
        format!("{}<script>{probe}</script>{}", &html[..end], &html[end..]),
    )
    .unwrap();
    let run = open(
        browser,
        &probed,
        work,
        &[
            "--hide-scrollbars".into(),
            format!("--window-size={width},2400"),
            "--dump-dom".into(),
        ],
    );
    assert!(
        run.console.is_empty(),
        "{}: {:?}",
        page.display(),
        run.console
    );
    let marker = "<pre id=\"tracelens-layout\">";
    let at = run
        .dom
        .rfind(marker)
        .unwrap_or_else(|| panic!("{}: the layout probe did not run", page.display()))
        + marker.len();
    let json = &run.dom[at..at + run.dom[at..].find("</pre>").unwrap()];
    let json = json
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    let found: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(found["viewport"].as_u64(), Some(u64::from(width)));
    found["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            format!(
                "{} at {} px in #{}: {:?} ({})",
                p["kind"].as_str().unwrap_or_default(),
                width,
                p["section"].as_str().unwrap_or_default(),
                p["text"].as_str().unwrap_or_default(),
                p["detail"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

/// Issue 43: every section reads at 800 px and at 1400 px, measured in the page: no table
/// cell clipped past the page without a scroller to reach it, none squeezed to a word or a
/// few characters per line, none wrapped over more than four lines, no legend with two
/// entries of one colour. Training CUDA Kineto, inference ROCm Kineto, an Nsight Systems
/// export, a transformer with every busy-GPU section, a job page, a diff page and a history
/// page (its screenshots in `screenshots-history/`).
#[test]
fn every_section_reads_at_800_and_1400_px() {
    let Some(browser) = chromium() else {
        if std::env::var_os("TRACELENS_REQUIRE_BROWSER").is_some_and(|v| v == "1") {
            panic!("TRACELENS_REQUIRE_BROWSER=1 but no chromium found");
        }
        eprintln!(
            "\n*** SKIPPED every_section_reads_at_800_and_1400_px: no chromium on PATH ***\n"
        );
        return;
    };
    let Some(corpus) = corpus_dir("every_section_reads_at_800_and_1400_px") else {
        return;
    };
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("layout");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let mut pages = Vec::new();
    for (name, rel) in REAL_TRACES.into_iter().chain([
        (
            "owlv2",
            "other/TraceLens/h100/google_owlv2-large-patch14-ensemble__1016001.json.gz",
        ),
        ("dlrm_job", "other/param/dlrm_kineto"),
    ]) {
        let page = work.join(format!("{name}.html"));
        let run = tracelens([
            "analyze".into(),
            corpus.join(rel).into_os_string(),
            "--quiet".into(),
            "-o".into(),
            page.clone().into_os_string(),
        ]);
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        pages.push(page);
    }
    let diff = work.join("diff.html");
    let run = tracelens([
        "diff".into(),
        corpus
            .join("kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.pt.trace.json.gz")
            .into_os_string(),
        corpus
            .join("kineto/tb_plugin/samples/resnet50_num_workers_4/worker0.pt.trace.json.gz")
            .into_os_string(),
        "-o".into(),
        diff.clone().into_os_string(),
    ]);
    assert_eq!(run.code, 0, "diff: {}", run.stderr);
    pages.push(diff);
    // A history page of three stored runs.
    let mut history = vec!["history".into()];
    for (i, rel) in [
        "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.pt.trace.json.gz",
        "kineto/tb_plugin/samples/resnet50_num_workers_4/worker0.1623213129365.pt.trace.json.gz",
        "kineto/tb_plugin/samples/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz",
    ]
    .iter()
    .enumerate()
    {
        let stored = work.join(format!("run{i}.json"));
        let run = tracelens([
            "analyze".into(),
            corpus.join(rel).into_os_string(),
            "--label".into(),
            format!("commit {i}").into(),
            "-o".into(),
            stored.clone().into_os_string(),
        ]);
        assert_eq!(run.code, 0, "{rel}: {}", run.stderr);
        history.push(stored.into_os_string());
    }
    let history_page = work.join("history.html");
    history.extend(["-o".into(), history_page.clone().into_os_string()]);
    let run = tracelens(history);
    assert_eq!(run.code, 0, "history: {}", run.stderr);
    pages.push(history_page.clone());
    // Screenshots of the history page for people, in a folder of their own: the other test
    // in this file runs at the same time and starts by emptying `screenshots/`.
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots-history");
    std::fs::create_dir_all(&shots).unwrap();
    for width in [1400, 800] {
        let shot = shots.join(format!("history-light-{width}.png"));
        let page = open(
            &browser,
            &history_page,
            &work,
            &[
                "--hide-scrollbars".into(),
                format!("--window-size={width},1600"),
                format!("--screenshot={}", shot.display()),
            ],
        );
        assert!(page.console.is_empty(), "history: {:?}", page.console);
        assert!(std::fs::metadata(&shot).map_or(0, |m| m.len()) > 10_000);
    }
    let mut problems = Vec::new();
    for page in &pages {
        for width in [800, 1400] {
            problems.extend(
                layout_problems(&browser, page, &work, width)
                    .into_iter()
                    .map(|p| format!("{}: {p}", page.file_name().unwrap().to_string_lossy())),
            );
        }
    }
    assert!(
        problems.is_empty(),
        "{} layout problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
