//! What CPU region, frame and op names say the host is doing: one-time work (compilation,
//! autotuning, module and library loads, graph capture), the optimizer, logging, data work on
//! the host, garbage collection.

/// What a name says the host is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    /// Work done once per run: compilation (torch.compile, nvFuser, NVRTC), autotuning,
    /// cuDNN's algorithm search, module and library loads, lazy init, graph capture.
    OneTime,
    /// The optimizer step or `zero_grad`.
    Optimizer,
    /// Python's garbage collector.
    GarbageCollection,
    /// Logging and metrics.
    Logging,
    /// Data work in the training process.
    HostDataWork,
}

/// Lower-case substrings that name one-time work.
const WARM_UP: &[&str] = &[
    "warmup",
    "warm_up",
    "compilefusion",
    "compile_fx",
    "async_compile",
    "codecache.py",
    "autotun",
    "cudnnfind",
    "moduleload",
    "libraryload",
    "lazy_init",
    "graph_capture",
    "cuda_graph_runner",
    "capture_graph",
    "cudagraphs.py",
    // torch.compile's phases beyond those `compiled::of` names (its `(dynamo_timed)` ranges
    // and `convert_frame.py` frames): Inductor's and AOTAutograd's Python frames.
    "call_user_compiler",
    "aot_dispatch",
    "create_aot_dispatcher",
    "graphlowering",
    "compile_to_module",
    "fx_codegen_and_compile",
    "benchmark_all_configs",
    "pycodecache",
    // JIT compilers and library setup: NVRTC, hipRTC, cuDNN/MIOpen algorithm search.
    "nvrtc",
    "hiprtc",
    "miopenfind",
    // CUDA/HIP graph capture and instantiation.
    "begincapture",
    "endcapture",
    "graphinstantiate",
    // Parameter initialisation (nn.Module constructors).
    "reset_parameters",
    "torch/nn/init.py",
];

/// Lower-case substrings that name logging and metrics.
const LOGGING: &[&str] = &[
    "logging/__init__",
    "logger",
    "tqdm",
    "wandb",
    "summarywriter",
    "tensorboard",
    "add_scalar",
    "mlflow",
    "log_metrics",
    "built-in function print",
    "builtins.print",
];

/// Lower-case substrings that name data work on the host.
const DATA_WORK: &[&str] = &[
    "numpy",
    "pil/",
    "pil.",
    "torchvision/transforms",
    "collate",
    "pin_memory",
    "to_tensor",
    "cv2",
    "decode_image",
    // Hugging Face preprocessors (images, video, audio, text) and media decoders.
    "image_transforms",
    "image_processing",
    "feature_extraction",
    "video_processing",
    "tokenization_utils",
    "read_video",
    "decord",
    "torchaudio/transforms",
];

/// Lower-case substrings that name garbage collection.
const GARBAGE_COLLECTION: &[&str] = &["gc.collect", "method collect of", "gc_collect"];

fn any_of(lower: &str, words: &[&str]) -> bool {
    words.iter().any(|w| lower.contains(w))
}

/// Whether a name (region, frame, op or API call) is one-time work.
#[must_use]
pub fn is_one_time(name: &str) -> bool {
    of(name) == Some(Activity::OneTime)
}

/// What `name` says the host is doing, when it says.
#[must_use]
pub fn of(name: &str) -> Option<Activity> {
    let lower = name.to_ascii_lowercase();
    // CUDA graph capture regions ("capture_32_DECODE") are one-time.
    let capture = lower.starts_with("capture_") || lower.contains("graph capture");
    let compile = crate::vocabulary::compiled::of(name)
        == Some(crate::vocabulary::compiled::CompiledName::Compile);
    if capture || compile || any_of(&lower, WARM_UP) {
        Some(Activity::OneTime)
    } else if lower.contains("optimizer")
        || lower.contains("zero_grad")
        || lower.contains("torch/optim/")
    {
        Some(Activity::Optimizer)
    } else if any_of(&lower, GARBAGE_COLLECTION) {
        Some(Activity::GarbageCollection)
    } else if any_of(&lower, LOGGING) {
        Some(Activity::Logging)
    } else if any_of(&lower, DATA_WORK) {
        Some(Activity::HostDataWork)
    } else {
        None
    }
}
