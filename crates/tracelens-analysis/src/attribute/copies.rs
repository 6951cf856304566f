//! Copies inside the analysis window by kind and link: pageable versus pinned host copies,
//! device and peer copies (with each device pair's achieved rate), how much of their GPU time
//! is exposed (not overlapped by any kernel), how long they block the host, the order the host
//! issues copies and kernels across streams, and pinned copies still followed by a blocking
//! sync.

use crate::attribute::syncs::{SyncCall, SyncTrigger};
use crate::measure::intervals::merge_into_last;
use rustc_hash::FxHashSet;
use serde::Serialize;
use std::collections::VecDeque;
use tracelens_model::{CopyDirection, Interval, MemoryKind, SpanId, SpanKind, TimeNs, Trace};

/// The smallest host copy whose rate says what the link moves: smaller ones are bound by
/// their fixed latency, not by pinned or pageable memory.
pub const FASTER_COPY_MIN_BYTES: u64 = 1 << 20;

/// Totals for one class of copies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CopyStats {
    /// Number of copies.
    pub count: u64,
    /// Bytes moved (where stated).
    pub bytes: u64,
    /// GPU time.
    pub gpu_ns: TimeNs,
    /// GPU time not overlapped by any kernel on the device.
    pub exposed_ns: TimeNs,
    /// Time the launching API calls block the host (pageable copies block), less a blocking
    /// copy's wait for the work queued ahead of it on its stream.
    pub host_blocked_ns: TimeNs,
}

impl CopyStats {
    /// Achieved rate in GB/s (bytes over GPU time), when both are known.
    #[must_use]
    pub fn gb_per_s(&self) -> Option<f64> {
        (self.bytes > 0 && self.gpu_ns > 0).then(|| self.bytes as f64 / self.gpu_ns as f64)
    }

    fn add(&mut self, bytes: Option<u64>, gpu_ns: TimeNs, exposed_ns: TimeNs, host_ns: TimeNs) {
        self.count += 1;
        self.bytes += bytes.unwrap_or(0);
        self.gpu_ns += gpu_ns;
        self.exposed_ns += exposed_ns;
        self.host_blocked_ns += host_ns;
    }
}

/// All copies of a trace, classified.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct CopyReport {
    /// Host→device from pageable memory.
    pub htod_pageable: CopyStats,
    /// Device→host into pageable memory.
    pub dtoh_pageable: CopyStats,
    /// Host→device from pinned memory.
    pub htod_pinned: CopyStats,
    /// Device→host into pinned memory.
    pub dtoh_pinned: CopyStats,
    /// Host↔device where the tracer does not say pageable or pinned (ROCm).
    pub host_kind_unknown: CopyStats,
    /// Device→device copies on one device.
    pub device_to_device: CopyStats,
    /// Peer copies between devices.
    #[serde(default)]
    pub peer_to_peer: CopyStats,
    /// Peer copies by device pair, where the trace names the devices (Nsight Systems), the
    /// pairs in order.
    #[serde(default)]
    pub peer_links: Vec<PeerLink>,
    /// Copies whose direction is not stated.
    pub other: CopyStats,
    /// Host→device copies on a stream that also runs kernels, exposed (serialized with compute).
    pub htod_serialized_with_compute: u64,
    /// Syncs right after a pinned copy: `pin_memory=True` without `non_blocking=True`.
    pub pinned_copies_then_synced: u64,
    /// Pageable copies (both directions) not counted by a reported sync finding: the ones the
    /// pageable-copy finding counts.
    pub pageable_unclaimed: CopyStats,
    /// The API calls that launched those copies.
    #[serde(skip)]
    pub pageable_unclaimed_calls: Vec<SpanId>,
    /// Those copies of [`FASTER_COPY_MIN_BYTES`] or more that ran slower than their device's
    /// fastest large host copy, or than pinned copies run over its host link
    /// ([`crate::measure::peaks::host_link`]), each with the fraction of its time it would
    /// take at the faster rate.
    #[serde(skip)]
    pub pageable_unclaimed_speedups: Vec<(SpanId, f64)>,
    /// Unified-memory migrations (pages moved on faults or prefetches): not host copies the
    /// program issues, so out of every class above.
    #[serde(default)]
    pub unified_migrations: CopyStats,
    /// Per device and direction: totals, the part no pageable-copy or sync finding counts, and
    /// the ops that issue the copies.
    #[serde(default)]
    pub by_device: Vec<DeviceCopies>,
}

/// The peer copies of one device pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PeerLink {
    /// The devices, source and destination.
    pub devices: tracelens_model::PeerDevices,
    /// Their copies.
    pub stats: CopyStats,
}

/// The order the host issues one device's copies and kernels across streams, where at least
/// two streams each carry host copies and kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueOrder {
    /// Every stream's copy in, then every stream's kernels, then every copy out.
    BreadthFirst,
    /// Each stream's copy in, kernels and copy out together, one stream after another.
    DepthFirst,
    /// Neither pattern dominates.
    Mixed,
}

/// One direction of copies on one device.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct DirectionCopies {
    /// All copies of the direction.
    pub all: CopyStats,
    /// Copies from or to pinned host memory (host↔device only).
    pub pinned: CopyStats,
    /// Copies from or to pageable host memory (host↔device only).
    pub pageable: CopyStats,
    /// Copies no pageable-copy or sync finding counts: pinned, device-to-device, and host
    /// copies whose memory kind is not stated, except the reads of `.item()` and tensor truth
    /// values (the sync findings own them).
    pub unclaimed: CopyStats,
    /// The CPU ops that issue the copies (the innermost op above the copy primitives), by GPU
    /// time, largest first (three at most): name, copies, GPU time.
    pub sources: Vec<(String, u64, TimeNs)>,
    /// Streams that carry copies of the direction.
    #[serde(default)]
    pub streams: u32,
}

/// The copies of one device, by direction.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct DeviceCopies {
    /// Device index.
    pub device: i64,
    /// Host to device.
    pub host_to_device: DirectionCopies,
    /// Device to host.
    pub device_to_host: DirectionCopies,
    /// Device to device on this device.
    pub device_to_device: DirectionCopies,
    /// Peer copies this device runs.
    #[serde(default)]
    pub peer_to_peer: DirectionCopies,
    /// How the host orders host copies and kernels across streams, where two or more streams
    /// carry both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issue_order: Option<IssueOrder>,
    /// Kernel time on the device inside the window (summed over streams): the most that
    /// overlapping the copies with kernels could hide.
    #[serde(default)]
    pub kernel_ns: TimeNs,
}

impl DeviceCopies {
    /// The four directions with their names.
    #[must_use]
    pub fn directions(&self) -> [(CopyDirection, &DirectionCopies); 4] {
        [
            (CopyDirection::HtoD, &self.host_to_device),
            (CopyDirection::DtoH, &self.device_to_host),
            (CopyDirection::DtoD, &self.device_to_device),
            (CopyDirection::PtoP, &self.peer_to_peer),
        ]
    }
}

/// Where a GPU op stands in a chunked copy-in / compute / copy-out pipeline.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    CopyIn,
    Compute,
    CopyOut,
}

/// The order the host issued `device`'s host copies and kernels in (inside `window`): over
/// the launch calls in host order, breadth-first when the stream changes from one call to the
/// next more than twice as often as the stage does, depth-first when the stage changes more
/// than twice as often as the stream. `None` unless two streams each carry host copies and
/// kernels.
fn issue_order(
    trace: &Trace,
    device: &tracelens_model::Device,
    window: Option<Interval>,
) -> Option<IssueOrder> {
    let mut calls: Vec<(TimeNs, tracelens_model::LaneId, Stage)> = Vec::new();
    for &lane in &device.lanes {
        for id in trace.lane_span_ids(lane) {
            let s = trace.span(id);
            if window.is_some_and(|w| s.interval().clip(w).is_none()) {
                continue;
            }
            let stage = match s.kind {
                SpanKind::Kernel => Stage::Compute,
                SpanKind::Memcpy => match trace.copy_info(id).map(|c| c.direction) {
                    Some(CopyDirection::HtoD) => Stage::CopyIn,
                    Some(CopyDirection::DtoH) => Stage::CopyOut,
                    _ => continue,
                },
                _ => continue,
            };
            if let Some(call) = trace.launch_of(id) {
                calls.push((trace.span(call).start_ns, lane, stage));
            }
        }
    }
    // Streams that carry both host copies and kernels.
    let mut copies = FxHashSet::default();
    let mut kernels = FxHashSet::default();
    for &(_, lane, stage) in &calls {
        if stage == Stage::Compute {
            kernels.insert(lane);
        } else {
            copies.insert(lane);
        }
    }
    if copies.intersection(&kernels).count() < 2 {
        return None;
    }
    calls.sort_unstable_by_key(|&(t, _, _)| t);
    let (mut stream_changes, mut stage_changes) = (0_usize, 0_usize);
    for pair in calls.windows(2) {
        stream_changes += usize::from(pair[0].1 != pair[1].1);
        stage_changes += usize::from(pair[0].2 != pair[1].2);
    }
    Some(if stream_changes > 2 * stage_changes {
        IssueOrder::BreadthFirst
    } else if stage_changes > 2 * stream_changes {
        IssueOrder::DepthFirst
    } else {
        IssueOrder::Mixed
    })
}

/// The innermost CPU op above the copy primitives around a copy's launch.
fn copy_source(trace: &Trace, copy: SpanId) -> Option<tracelens_model::NameId> {
    let launch = trace.launch_of(copy)?;
    trace
        .ancestors(launch)
        .find(|&a| {
            let s = trace.span(a);
            matches!(s.kind, SpanKind::CpuOp | SpanKind::UserAnnotation)
                && !trace.is_step_span(a)
                && !crate::vocabulary::ops::is_copy_primitive(trace.names.get(s.name))
        })
        .map(|a| trace.span(a).name)
}

impl CopyReport {
    /// Pageable copies in both directions.
    #[must_use]
    pub fn pageable(&self) -> CopyStats {
        let (a, b) = (self.htod_pageable, self.dtoh_pageable);
        CopyStats {
            count: a.count + b.count,
            bytes: a.bytes + b.bytes,
            gpu_ns: a.gpu_ns + b.gpu_ns,
            exposed_ns: a.exposed_ns + b.exposed_ns,
            host_blocked_ns: a.host_blocked_ns + b.host_blocked_ns,
        }
    }
}

/// The time of each copy of `device` (clipped to `window`) that no kernel of the device
/// covers, and the streams that ran kernels. Copies and kernels are walked together in start
/// order: the kernels' union is held only from the current copy's start on, not whole.
fn exposed_copy_times(
    trace: &Trace,
    device: &tracelens_model::Device,
    window: Option<Interval>,
) -> (
    rustc_hash::FxHashMap<SpanId, TimeNs>,
    std::collections::BTreeSet<tracelens_model::LaneId>,
) {
    let mut exposed = rustc_hash::FxHashMap::default();
    let mut kernel_streams = std::collections::BTreeSet::new();
    let lanes = || device.lanes.iter().copied();
    let mut kernels = trace
        .spans_by_start(lanes())
        .map(|id| trace.span(id))
        .filter(|s| s.kind == SpanKind::Kernel)
        .peekable();
    let mut busy: VecDeque<Interval> = VecDeque::new();
    for id in trace.spans_by_start(lanes()) {
        let s = trace.span(id);
        if s.kind != SpanKind::Memcpy {
            continue;
        }
        let Some(iv) = window.map_or(Some(s.interval()), |w| s.interval().clip(w)) else {
            continue;
        };
        // The union is complete up to the copy's end once every kernel starting before it is in.
        while let Some(k) = kernels.next_if(|k| k.start_ns < iv.end_ns) {
            kernel_streams.insert(k.lane);
            if let Some(next) = merge_into_last(busy.back_mut(), k.interval()) {
                busy.push_back(next);
            }
        }
        // Later copies start no earlier: what ends before this one starts is done with.
        while busy.front().is_some_and(|b| b.end_ns <= iv.start_ns) {
            busy.pop_front();
        }
        let covered: TimeNs = busy
            .iter()
            .take_while(|b| b.start_ns < iv.end_ns)
            .filter_map(|b| b.clip(iv))
            .map(|c| c.dur_ns())
            .sum();
        exposed.insert(id, iv.dur_ns() - covered);
    }
    kernel_streams.extend(kernels.map(|k| k.lane));
    (exposed, kernel_streams)
}

/// Classifies every memcpy inside `window` (clipped to it; all of them without a window);
/// `claimed` copies are counted by a sync finding and left out of `pageable_unclaimed`.
#[must_use]
pub fn copy_report(
    trace: &Trace,
    window: Option<Interval>,
    syncs: &[SyncCall],
    claimed: &FxHashSet<SpanId>,
) -> CopyReport {
    let mut report = CopyReport::default();
    let mut peer_links: Vec<PeerLink> = Vec::new();
    for device in &trace.devices {
        let (exposed_by_copy, kernel_streams) = exposed_copy_times(trace, device, window);
        let mut mine = DeviceCopies {
            device: device.index,
            ..DeviceCopies::default()
        };
        let mut sources: [rustc_hash::FxHashMap<Option<tracelens_model::NameId>, (u64, TimeNs)>;
            4] = Default::default();
        let mut stream_sets: [FxHashSet<tracelens_model::LaneId>; 4] = Default::default();
        // The device's fastest large host copy (at least what pinned copies reach over its
        // host link), and its unclaimed pageable copies' rates.
        let mut fastest_host_rate = crate::measure::peaks::host_link(
            &crate::measure::environment::hardware(trace, Some(device.index)),
        )
        .map_or(0.0, |l| {
            l.gb_per_s * crate::measure::peaks::PINNED_SHARE_OF_HOST_LINK
        });
        let mut pageable_rates: Vec<(SpanId, f64)> = Vec::new();
        for &lane in &device.lanes {
            // Where the stream's earlier work ends: a blocking copy's call waits for it first.
            let mut stream_busy_until = TimeNs::MIN;
            for id in trace.lane_span_ids(lane) {
                let s = trace.span(id);
                let queued_until = stream_busy_until;
                if s.kind.is_gpu_work() {
                    stream_busy_until = stream_busy_until.max(s.end_ns());
                }
                if !matches!(s.kind, SpanKind::Memcpy | SpanKind::Kernel) {
                    continue;
                }
                let Some(iv) = window.map_or(Some(s.interval()), |w| s.interval().clip(w)) else {
                    continue;
                };
                if s.kind == SpanKind::Kernel {
                    mine.kernel_ns += iv.dur_ns();
                    continue;
                }
                let info = trace.copy_info(id).copied().unwrap_or_default();
                let exposed = exposed_by_copy.get(&id).copied().unwrap_or(0);
                // The call's time less its wait for the stream's earlier work: a blocking copy
                // waits for the work queued ahead of it, which no kind of host memory changes.
                let host_ns = trace.launch_of(id).map_or(0, |l| {
                    let call = trace.span(l);
                    let waited = queued_until
                        .min(s.start_ns)
                        .saturating_sub(call.start_ns)
                        .clamp(0, call.dur_ns);
                    call.dur_ns - waited
                });
                if info.migration.is_some() {
                    report
                        .unified_migrations
                        .add(info.bytes, iv.dur_ns(), exposed, host_ns);
                    continue;
                }
                // The whole copy's rate (not its clipped part's).
                let rate = info
                    .bytes
                    .filter(|&b| b >= FASTER_COPY_MIN_BYTES && s.dur_ns > 0)
                    .filter(|_| matches!(info.direction, CopyDirection::HtoD | CopyDirection::DtoH))
                    .map(|b| b as f64 / s.dur_ns as f64);
                if let Some(r) = rate {
                    fastest_host_rate = fastest_host_rate.max(r);
                }
                let slot = match (info.direction, info.src, info.dst) {
                    (CopyDirection::HtoD, MemoryKind::Pageable, _) => &mut report.htod_pageable,
                    (CopyDirection::DtoH, _, MemoryKind::Pageable) => &mut report.dtoh_pageable,
                    (CopyDirection::HtoD, MemoryKind::Pinned, _) => &mut report.htod_pinned,
                    (CopyDirection::DtoH, _, MemoryKind::Pinned) => &mut report.dtoh_pinned,
                    (CopyDirection::HtoD | CopyDirection::DtoH, _, _) => {
                        &mut report.host_kind_unknown
                    }
                    (CopyDirection::DtoD, _, _) => &mut report.device_to_device,
                    (CopyDirection::PtoP, _, _) => &mut report.peer_to_peer,
                    _ => &mut report.other,
                };
                slot.add(info.bytes, iv.dur_ns(), exposed, host_ns);
                if let Some(devices) = info.peer {
                    match peer_links.iter_mut().find(|l| l.devices == devices) {
                        Some(l) => l.stats.add(info.bytes, iv.dur_ns(), exposed, host_ns),
                        None => {
                            let mut stats = CopyStats::default();
                            stats.add(info.bytes, iv.dur_ns(), exposed, host_ns);
                            peer_links.push(PeerLink { devices, stats });
                        }
                    }
                }
                let pageable = matches!(
                    (info.direction, info.src, info.dst),
                    (CopyDirection::HtoD, MemoryKind::Pageable, _)
                        | (CopyDirection::DtoH, _, MemoryKind::Pageable)
                );
                if pageable && !claimed.contains(&id) {
                    if let Some(call) = trace.launch_of(id) {
                        report.pageable_unclaimed_calls.push(call);
                    }
                    if let Some(r) = rate {
                        pageable_rates.push((id, r));
                    }
                    report
                        .pageable_unclaimed
                        .add(info.bytes, iv.dur_ns(), exposed, host_ns);
                }
                let slot = match info.direction {
                    CopyDirection::HtoD => Some(0),
                    CopyDirection::DtoH => Some(1),
                    CopyDirection::DtoD => Some(2),
                    CopyDirection::PtoP => Some(3),
                    _ => None,
                };
                if let Some(slot) = slot {
                    stream_sets[slot].insert(lane);
                    let dir = match slot {
                        0 => &mut mine.host_to_device,
                        1 => &mut mine.device_to_host,
                        2 => &mut mine.device_to_device,
                        _ => &mut mine.peer_to_peer,
                    };
                    dir.all.add(info.bytes, iv.dur_ns(), exposed, host_ns);
                    let host_kind = if info.direction == CopyDirection::HtoD {
                        info.src
                    } else {
                        info.dst
                    };
                    match (slot, host_kind) {
                        (0 | 1, MemoryKind::Pinned) => {
                            dir.pinned.add(info.bytes, iv.dur_ns(), exposed, host_ns);
                        }
                        (0 | 1, MemoryKind::Pageable) => {
                            dir.pageable.add(info.bytes, iv.dur_ns(), exposed, host_ns);
                        }
                        _ => {}
                    }
                    let source = copy_source(trace, id);
                    let sync_read = source.is_some_and(|n| {
                        let name = trace.names.get(n);
                        crate::vocabulary::ops::is_scalar_read_op(name)
                            || crate::vocabulary::ops::is_truth_value_op(name)
                    });
                    if !pageable && !sync_read && !claimed.contains(&id) {
                        dir.unclaimed.add(info.bytes, iv.dur_ns(), exposed, host_ns);
                    }
                    let e = sources[slot].entry(source).or_default();
                    e.0 += 1;
                    e.1 += iv.dur_ns();
                }
                if info.direction == CopyDirection::HtoD
                    && exposed > 0
                    && kernel_streams.contains(&lane)
                {
                    report.htod_serialized_with_compute += 1;
                }
            }
        }
        for (slot, found) in sources.into_iter().enumerate() {
            let mut named: Vec<(String, u64, TimeNs)> = found
                .into_iter()
                .filter_map(|(n, (c, t))| n.map(|n| (trace.names.get(n).to_string(), c, t)))
                .collect();
            named.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
            named.truncate(3);
            let dir = match slot {
                0 => &mut mine.host_to_device,
                1 => &mut mine.device_to_host,
                2 => &mut mine.device_to_device,
                _ => &mut mine.peer_to_peer,
            };
            dir.sources = named;
            dir.streams = u32::try_from(stream_sets[slot].len()).unwrap_or(u32::MAX);
        }
        report.pageable_unclaimed_speedups.extend(
            pageable_rates
                .into_iter()
                .filter(|&(_, r)| r < fastest_host_rate)
                .map(|(id, r)| (id, r / fastest_host_rate)),
        );
        // The order matters only where two streams carry host copies (one pass more otherwise).
        if stream_sets[0].union(&stream_sets[1]).count() >= 2 {
            mine.issue_order = issue_order(trace, device, window);
        }
        if mine.directions().iter().any(|(_, d)| d.all.count > 0) {
            report.by_device.push(mine);
        }
    }
    peer_links.sort_by_key(|l| l.devices);
    report.peer_links = peer_links;
    report.pinned_copies_then_synced = syncs
        .iter()
        .filter(|c| c.trigger == SyncTrigger::SyncCopy)
        .filter(|c| {
            c.copy
                .is_some_and(|k| k.src == MemoryKind::Pinned || k.dst == MemoryKind::Pinned)
        })
        .count() as u64;
    report
}

/// Unified-memory migrations to `device` on a fault (not a prefetch) that start while a
/// kernel runs on it inside `window` (only kernels named `kernel`, when given): those
/// kernels' times include the faults' service.
#[must_use]
pub fn fault_migrations_inside_kernels(
    trace: &Trace,
    device: i64,
    window: Interval,
    kernel: Option<tracelens_model::NameId>,
) -> u64 {
    let on_device = |lane| matches!(trace.lane(lane).key, tracelens_model::LaneKey::Gpu { device: d, .. } if d == device);
    let mut runs: Vec<Interval> = Vec::new();
    let mut starts: Vec<TimeNs> = Vec::new();
    for lane in trace.gpu_lanes().filter(|&l| on_device(l)) {
        for id in trace.lane_span_ids(lane) {
            let s = trace.span(id);
            if s.kind == SpanKind::Kernel && kernel.is_none_or(|k| k == s.name) {
                runs.extend(s.interval().clip(window));
            } else if trace.is_migration(id)
                && trace.copy_info(id).is_some_and(|c| {
                    c.direction == CopyDirection::HtoD
                        && !c
                            .migration
                            .is_some_and(tracelens_model::MigrationCause::requested)
                })
            {
                starts.push(s.start_ns);
            }
        }
    }
    let runs = crate::measure::intervals::union(runs);
    starts
        .into_iter()
        .filter(|&t| {
            let k = runs.partition_point(|r| r.start_ns <= t);
            k > 0 && t < runs[k - 1].end_ns
        })
        .count() as u64
}
