//! What the CPU samples of a capture (Nsight Systems' `-s cpu`) show a thread doing over
//! some stretches of time: the sampled work, grouped by what it is and where in the program
//! it runs, largest first.

use crate::vocabulary::samples::{
    classify, is_program_module, is_unresolved, module_file, SampledWork,
};
use rustc_hash::FxHashMap;
use tracelens_model::{Interval, LaneKey, Trace};

/// Samples from which their parts are worth naming: fewer say little.
pub const MIN_SAMPLES: u64 = 5;

/// One kind of sampled work at one place.
#[derive(Clone, Debug, PartialEq)]
pub struct SampledPart {
    /// What it is.
    pub work: SampledWork,
    /// Where most of its samples are: the innermost function of the program's own code on
    /// the stack, or the library call the program made (`calculatePixels in mandelbrot`).
    pub place: String,
    /// Samples in it.
    pub samples: u64,
}

/// What the samples show over the stretches asked about.
#[derive(Clone, Debug, PartialEq)]
pub struct SampledHostWork {
    /// Samples in the stretches.
    pub samples: u64,
    /// The parts, one per kind of work, largest first.
    pub parts: Vec<SampledPart>,
}

impl SampledHostWork {
    /// Share of the samples in `part`, in percent.
    #[must_use]
    pub fn percent(&self, part: &SampledPart) -> f64 {
        crate::num::percent(
            i64::try_from(part.samples).unwrap_or(i64::MAX),
            i64::try_from(self.samples).unwrap_or(i64::MAX),
        )
    }

    /// The parts in a phrase, those of a tenth of the samples or more (three at most): "228
    /// CPU samples: 53 % zlib compression (stbiw__zlib_countm in mandelbrot), 47 %
    /// stbiw__encode_png_line in mandelbrot".
    #[must_use]
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .parts
            .iter()
            .filter(|p| self.percent(p) >= 10.0)
            .take(3)
            .map(|p| {
                let what = match p.work {
                    SampledWork::Program => p.place.clone(),
                    w => format!("{} ({})", w.describe(), p.place),
                };
                format!("{:.0} % {what}", self.percent(p))
            })
            .collect();
        format!("{} CPU samples: {}", self.samples, parts.join(", "))
    }

    /// The largest part, when it holds half the samples or more.
    #[must_use]
    pub fn dominant(&self) -> Option<&SampledPart> {
        self.parts.first().filter(|p| p.samples * 2 >= self.samples)
    }
}

/// What the samples of each `(thread, stretch)` show, together; `None` without at least
/// [`MIN_SAMPLES`] of them.
#[must_use]
pub fn sampled_in(
    trace: &Trace,
    stretches: impl IntoIterator<Item = (LaneKey, Interval)>,
) -> Option<SampledHostWork> {
    let samples = &trace.cpu_samples;
    if samples.samples.is_empty() {
        return None;
    }
    // Parts by stack: the same stack is classified once.
    let mut by_stack: FxHashMap<u32, u64> = FxHashMap::default();
    let mut total = 0u64;
    for (thread, iv) in stretches {
        for s in samples.of_thread_in(thread, iv.start_ns, iv.end_ns) {
            *by_stack.entry(s.stack).or_default() += 1;
            total += 1;
        }
    }
    if total < MIN_SAMPLES {
        return None;
    }
    // By kind of work, each with the place most of its samples are in.
    let mut places: FxHashMap<(SampledWork, String), u64> = FxHashMap::default();
    for (stack, n) in by_stack {
        let frames: Vec<(&str, &str)> = samples
            .stacks
            .get(stack as usize)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .map(|f| (trace.names.get(f.symbol), trace.names.get(f.module)))
            .collect();
        let work = classify(&frames);
        *places.entry((work, place(work, &frames))).or_default() += n;
    }
    let mut by_work: FxHashMap<SampledWork, (u64, String, u64)> = FxHashMap::default();
    for ((work, place), n) in places {
        let e = by_work.entry(work).or_insert((0, String::new(), 0));
        e.0 += n;
        if n > e.2 || (n == e.2 && place < e.1) {
            (e.1, e.2) = (place, n);
        }
    }
    let mut parts: Vec<SampledPart> = by_work
        .into_iter()
        .map(|(work, (samples, place, _))| SampledPart {
            work,
            place,
            samples,
        })
        .collect();
    parts.sort_by(|a, b| {
        b.samples
            .cmp(&a.samples)
            .then(a.work.cmp(&b.work))
            .then(a.place.cmp(&b.place))
    });
    Some(SampledHostWork {
        samples: total,
        parts,
    })
}

/// Where a stack runs, as `function (file)`: for the program's own work its innermost frame
/// in the program's code; for work in a library, the library call the program made (the
/// frame just inside the program's code); else the innermost frame.
fn place(work: SampledWork, frames: &[(&str, &str)]) -> String {
    let own = frames.iter().position(|(_, m)| is_program_module(m));
    let frame = match (work, own) {
        (SampledWork::Program, Some(i)) => frames.get(i),
        (_, Some(i)) if i > 0 => frames.get(i - 1),
        (_, Some(i)) => frames.get(i),
        (_, None) => frames.first(),
    };
    match frame {
        // An unresolved address says only its file.
        Some((symbol, module)) if is_unresolved(symbol) => module_file(module).to_string(),
        Some((symbol, module)) => {
            let symbol = tracelens_model::kernel_display_name(symbol);
            format!("{symbol} in {}", module_file(module))
        }
        None => "an unknown place".into(),
    }
}
