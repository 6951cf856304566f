//! The report's sections, one module each: its HTML part (its own template), and the lines
//! the Markdown and terminal summaries take from it. [`SECTIONS`] lists them in page order
//! with what each summary shows of them, or why it shows nothing; the HTML layout renders
//! them in that order and a test checks that every section reaches every renderer it says
//! it does.

pub(crate) mod breakdown;
pub(crate) mod cells;
pub(crate) mod communication;
pub(crate) mod compiled;
pub(crate) mod copies;
pub(crate) mod critical_path;
pub(crate) mod efficiency;
pub(crate) mod findings;
pub(crate) mod health;
pub(crate) mod idle;
pub(crate) mod kernels;
pub(crate) mod launches;
pub(crate) mod memory;
pub(crate) mod operators;
pub(crate) mod overview;
pub(crate) mod regions;
pub(crate) mod serving;
pub(crate) mod summary;
pub(crate) mod syncs;
pub(crate) mod timeline;

use tracelens_results::Report;

/// What a summary (Markdown or terminal) shows of a section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    /// A line that starts with this text followed by a space (a Markdown row's `| Label |`,
    /// a terminal fact's label), or ends with it (a heading), when the section has content.
    As(&'static str),
    /// Nothing, and why.
    Not(&'static str),
}

impl Shown {
    /// Whether a rendered summary shows the section (never for [`Shown::Not`]).
    #[must_use]
    pub fn found_in(&self, rendered: &str) -> bool {
        let Shown::As(marker) = *self else {
            return false;
        };
        rendered.lines().any(|line| {
            line.strip_prefix(marker)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
                || line.ends_with(marker)
        })
    }
}

/// One section of the report.
#[derive(Clone, Copy)]
pub struct Section {
    /// Its anchor in the HTML page (`id="…"` of its heading).
    pub id: &'static str,
    /// Its HTML part.
    pub html: fn(&Report) -> String,
    /// What the Markdown summary shows of it.
    pub markdown: Shown,
    /// What the terminal summary shows of it.
    pub text: Shown,
}

/// Why the summaries leave out a section that is a picture.
const PICTURE: &str =
    "a picture: the summaries give its figures as words (idle by cause, breakdown)";
/// Why the summaries leave out a detail table.
const DETAIL: &str = "a detail table: what of it costs time is a finding the summary lists";

/// Every section, in the HTML page's order.
pub const SECTIONS: [Section; 18] = [
    Section {
        id: "overview",
        html: overview::html,
        markdown: Shown::Not(PICTURE),
        text: Shown::Not(PICTURE),
    },
    Section {
        id: "findings",
        html: findings::html,
        markdown: Shown::As("### Findings"),
        text: Shown::As("Findings,"),
    },
    Section {
        id: "timeline",
        html: timeline::html,
        markdown: Shown::Not(PICTURE),
        text: Shown::Not(PICTURE),
    },
    Section {
        id: "idle",
        html: idle::html,
        markdown: Shown::As("| Idle by cause"),
        text: Shown::As(", by cause:"),
    },
    Section {
        id: "launches",
        html: launches::html,
        markdown: Shown::Not(DETAIL),
        // The verdict and the first screen say how far the host runs ahead; launch-bound
        // stretches that cost time are a finding.
        text: Shown::Not(DETAIL),
    },
    Section {
        id: "breakdown",
        html: breakdown::html,
        markdown: Shown::Not(
            "the Markdown summary stays under 60 lines for CI comments: its idle-by-cause and critical-path rows carry the step's split",
        ),
        text: Shown::As("breakdown"),
    },
    Section {
        id: "communication",
        html: communication::html,
        markdown: Shown::As("| Communication |"),
        text: Shown::As("comm"),
    },
    Section {
        id: "critical-path",
        html: critical_path::html,
        markdown: Shown::As("| Critical path |"),
        text: Shown::As("critical"),
    },
    Section {
        id: "syncs",
        html: syncs::html,
        markdown: Shown::Not(DETAIL),
        text: Shown::Not(DETAIL),
    },
    Section {
        id: "copies",
        html: copies::html,
        markdown: Shown::Not(DETAIL),
        text: Shown::Not(DETAIL),
    },
    Section {
        id: "kernels",
        html: kernels::html,
        markdown: Shown::Not(DETAIL),
        text: Shown::Not(DETAIL),
    },
    Section {
        id: "memory",
        html: memory::html,
        markdown: Shown::As("| GPU memory |"),
        text: Shown::As("memory"),
    },
    Section {
        id: "regions",
        html: regions::html,
        markdown: Shown::As("| Regions |"),
        text: Shown::As("regions"),
    },
    Section {
        id: "compiled",
        html: compiled::html,
        markdown: Shown::As("| torch.compile |"),
        text: Shown::As("compile"),
    },
    Section {
        id: "serving",
        html: serving::html,
        markdown: Shown::As("| Serving |"),
        text: Shown::As("serving"),
    },
    Section {
        id: "operators",
        html: operators::html,
        markdown: Shown::As("### Top operators"),
        text: Shown::As("top op"),
    },
    Section {
        id: "efficiency",
        html: efficiency::html,
        markdown: Shown::As("| Efficiency |"),
        text: Shown::As("efficiency"),
    },
    Section {
        id: "health",
        html: health::html,
        markdown: Shown::As("| Trace |"),
        // The format and span counts are `--verbose` lines; the warnings always show.
        text: Shown::As("warnings"),
    },
];
