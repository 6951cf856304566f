//! GPU kernels by total time: the table of what the GPU spent its busy time on.

use rustc_hash::FxHashMap;
use serde::Serialize;
use tracelens_model::{NameId, SpanKind, TimeNs, Trace};

/// One kernel name's totals.
#[derive(Clone, Debug, Serialize)]
pub struct KernelStat {
    /// Kernel name.
    pub name: String,
    /// Launches.
    pub count: u64,
    /// Total GPU time.
    pub total_ns: TimeNs,
    /// Mean duration.
    pub mean_ns: TimeNs,
    /// Share of all kernel time, in percent.
    pub share_percent: f64,
}

/// The `limit` kernels with the most total time.
pub fn top_kernels(trace: &Trace, limit: usize) -> Vec<KernelStat> {
    let mut by_name: FxHashMap<NameId, (u64, TimeNs)> = FxHashMap::default();
    let mut all: TimeNs = 0;
    for s in &trace.spans {
        if s.kind == SpanKind::Kernel {
            let e = by_name.entry(s.name).or_default();
            e.0 += 1;
            e.1 += s.dur_ns;
            all += s.dur_ns;
        }
    }
    let mut stats: Vec<KernelStat> = by_name
        .into_iter()
        .map(|(n, (count, total_ns))| KernelStat {
            name: trace.names.get(n).to_string(),
            count,
            total_ns,
            mean_ns: total_ns / count.max(1) as TimeNs,
            share_percent: crate::dataloader::percent(total_ns, all),
        })
        .collect();
    stats.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then_with(|| a.name.cmp(&b.name))
    });
    stats.truncate(limit);
    stats
}
