//! What the job analysis keeps of one rank ([`RankSummary`]): its results, window and
//! collectives, standing without its trace.

use crate::report::Report;
use crate::results::Results;
use serde::{Deserialize, Serialize};
use tracelens_analysis::attribute::collectives::Collective;
use tracelens_model::TimeNs;

/// What the job analysis keeps of one rank.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankSummary {
    /// The file it came from (with `#process N` when a multi-process export was split).
    pub file: String,
    /// `distributedInfo.rank` (Kineto), when the trace says.
    pub rank_in_trace: Option<i64>,
    /// `distributedInfo.world_size`, when the trace says.
    pub world_size: Option<i64>,
    /// `distributedInfo.backend` (`nccl`, `gloo`), when the trace says.
    #[serde(default)]
    pub backend: Option<String>,
    /// Its analysis window (trace clock), when it has one.
    #[serde(default)]
    pub window: Option<(TimeNs, TimeNs)>,
    /// Its results.
    pub results: Results,
    /// Its collective kernels on the focus device, by start.
    pub collectives: Vec<Collective>,
    /// Step number and length of each profiled step.
    pub steps: Vec<(i64, TimeNs)>,
}

impl Default for RankSummary {
    fn default() -> Self {
        RankSummary {
            file: String::new(),
            rank_in_trace: None,
            world_size: None,
            backend: None,
            window: None,
            results: Results::empty(),
            collectives: Vec::new(),
            steps: Vec::new(),
        }
    }
}

impl RankSummary {
    /// Summarises one analysed rank: its report and its collectives on the focus device
    /// ([`tracelens_analysis::attribute::collectives::collectives_on`]).
    #[must_use]
    pub fn of(report: &Report, collectives: Vec<Collective>) -> RankSummary {
        let d = &report.diagnosis;
        let distributed = report.metadata.distributed.as_ref();
        RankSummary {
            file: report.input.path.clone(),
            rank_in_trace: distributed.and_then(|x| x.rank),
            world_size: distributed.and_then(|x| x.world_size),
            backend: distributed.and_then(|x| x.backend.clone()),
            window: d
                .window
                .as_ref()
                .map(|w| (w.interval.start_ns, w.interval.end_ns)),
            results: report.results(),
            collectives,
            steps: d
                .window
                .as_ref()
                .map(|w| {
                    w.steps
                        .iter()
                        .map(|s| (s.number, s.interval.dur_ns()))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}
