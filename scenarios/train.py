"""One small training loop with a planted input-pipeline or sync problem per case, recorded
with torch.profiler, so tracelens can be checked against traces whose cause is known.

    python scenarios/train.py --case item_every_step --out traces/

Everything is made in memory (a small CNN, random images and labels): nothing is
downloaded. Each case runs a warm-up and then profiles ACTIVE_STEPS steps, written by
tensorboard_trace_handler as <out>/<case>/<case>.<time>.pt.trace.json.gz.

Each planted problem sits in a small function of its own whose `def` line is marked
`# planted: <case>`: Kineto names a Python frame by the line its function starts on, so a
call site reads `train.py:<def line> <function>`. scenarios/expected/<case>.toml names that
line, and a test checks that it is still marked.
"""

import argparse
import os
import sys

CASES = {
    # name: what is planted (or fixed)
    "baseline": "clean: 4 workers, pinned memory, non_blocking copies, no per-step sync",
    "workers_0": "DataLoader(num_workers=0) with a CPU-heavy dataset",
    "workers_4": "fixed twin of workers_0: num_workers=4",
    "cv2_threads": "cv2 augmentation in 4 workers, each with all cores' threads",
    "cv2_threads_fixed": "fixed twin: cv2.setNumThreads(1) and OMP_NUM_THREADS=1 per worker",
    "pinned_blocking": "pin_memory=True but .to(device) without non_blocking",
    "pinned_non_blocking": "fixed twin: pin_memory=True and non_blocking=True",
    "pageable_copy": "pin_memory=False: pageable .to(device) every step",
    "item_every_step": "loss.item() every step",
    "item_every_50": "fixed twin: loss.item() every 50 steps",
    "tensor_any": "`if tensor.any():` in the loop",
    "synchronize": "torch.cuda.synchronize() every step",
    "tiny_kernels": "a Python loop of tiny elementwise ops per step",
    "tiny_kernels_compiled": "fixed twin: the same ops under torch.compile (CUDA graphs)",
}

WARMUP_STEPS = 3
ACTIVE_STEPS = 8
BATCH = 64
IMAGE = 64


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", required=True, choices=sorted(CASES))
    p.add_argument("--out", required=True, help="folder for the trace")
    p.add_argument("--device", default="cuda")
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    case = args.case
    # OMP_NUM_THREADS must be set before torch and cv2 start their pools.
    if case == "cv2_threads_fixed":
        os.environ["OMP_NUM_THREADS"] = "1"
    import torch
    import torch.nn as nn
    from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

    from scenario_data import RandomImages, worker_init

    torch.manual_seed(0)
    device = torch.device(args.device)
    heavy = case in ("workers_0", "workers_4", "cv2_threads", "cv2_threads_fixed")
    augment = case in ("cv2_threads", "cv2_threads_fixed")
    steps = WARMUP_STEPS + ACTIVE_STEPS + 2
    dataset = RandomImages(steps * BATCH, IMAGE, heavy=heavy, augment=augment)
    workers = 0 if case == "workers_0" else 4
    pin = case != "pageable_copy"
    loader = torch.utils.data.DataLoader(
        dataset,
        batch_size=BATCH,
        num_workers=workers,
        pin_memory=pin,
        worker_init_fn=worker_init(case == "cv2_threads_fixed"),
        persistent_workers=workers > 0,
    )
    model = nn.Sequential(
        nn.Conv2d(3, 64, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(64, 128, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(128, 10),
    ).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    scale = torch.ones(1024, device=device)
    compiled_tail = None
    if case == "tiny_kernels_compiled":
        compiled_tail = torch.compile(tiny_ops, mode="reduce-overhead")
    non_blocking = case not in ("pinned_blocking", "pageable_copy")

    trace_dir = os.path.join(args.out, case)
    os.makedirs(trace_dir, exist_ok=True)
    with profile(
        activities=[ProfilerActivity.CPU]
        + ([ProfilerActivity.CUDA] if device.type == "cuda" else []),
        schedule=schedule(wait=1, warmup=WARMUP_STEPS - 1, active=ACTIVE_STEPS, repeat=1),
        on_trace_ready=tensorboard_trace_handler(trace_dir, worker_name=case, use_gzip=True),
        with_stack=True,
    ) as prof:
        batches = iter(loader)
        for step in range(WARMUP_STEPS + ACTIVE_STEPS):
            images, labels = next_batch(batches)
            images, labels = copy_batch(images, labels, device, non_blocking)
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(images), labels)
            loss.backward()
            optimizer.step()
            if case == "tiny_kernels":
                scale = tiny_ops(scale)
            elif compiled_tail is not None:
                scale = compiled_tail(scale).clone()
            if case == "item_every_step":
                log_loss(loss, step)
            elif case == "item_every_50" and step % 50 == 0:
                log_loss(loss, step)
            if case == "tensor_any":
                check_finite(loss)
            if case == "synchronize":
                wait_for_gpu()
            prof.step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    print(f"{case}: {ACTIVE_STEPS} steps recorded under {trace_dir}", flush=True)


def next_batch(batches):  # planted: workers_0, cv2_threads
    return next(batches)


def copy_batch(images, labels, device, non_blocking):  # planted: pinned_blocking, pageable_copy
    images = images.to(device, non_blocking=non_blocking)
    labels = labels.to(device, non_blocking=non_blocking)
    return images, labels


def tiny_ops(x):  # planted: tiny_kernels
    for _ in range(200):
        x = x * 1.0001 + 0.0001
    return x


def log_loss(loss, step):  # planted: item_every_step
    value = loss.item()
    if step % 50 == 0:
        print(f"step {step}: loss {value:.4f}", flush=True)


def check_finite(loss):  # planted: tensor_any
    import torch

    if torch.isnan(loss).any():
        raise FloatingPointError("loss is NaN")


def wait_for_gpu():  # planted: synchronize
    import torch

    if torch.cuda.is_available():  # only for a smoke run on the CPU
        torch.cuda.synchronize()


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main(sys.argv[1:])
