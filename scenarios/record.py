"""Runs every scenario case (train.py) and packs the traces: the one command to run on a
lent GPU machine.

    python scenarios/record.py --out "$OUT" [--budget-s 420] [--cases a,b]

Each case runs in its own process with a time limit; the traces land in <out>/traces/<case>/
and are packed into <out>/scenario-traces.tar.gz with versions.txt (GPU, driver, CUDA,
PyTorch, Python, this driver's git revision when known). A case that fails or times out is
listed in versions.txt and the rest go on.
"""

import argparse
import os
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from train import CASES  # noqa: E402


def versions():
    lines = [f"python: {sys.version.split()[0]}"]
    try:
        import torch

        lines.append(f"torch: {torch.__version__}")
        lines.append(f"cuda: {torch.version.cuda}")
        if torch.cuda.is_available():
            lines.append(f"gpu: {torch.cuda.get_device_name(0)}")
    except Exception as e:  # the record still says what it could
        lines.append(f"torch: unavailable ({e})")
    try:
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        lines.append(f"nvidia-smi: {smi.stdout.strip()}")
    except Exception:
        pass
    try:
        rev = subprocess.run(
            ["git", "-C", HERE, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if rev.returncode == 0:
            lines.append(f"driver revision: {rev.stdout.strip()}")
    except Exception:
        pass
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--budget-s", type=float, default=420.0, help="for all cases together")
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--device", default="cuda", help="cpu only checks that the cases run")
    args = p.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        sys.exit(f"record.py: unknown cases: {', '.join(unknown)}")
    traces = os.path.join(args.out, "traces")
    os.makedirs(traces, exist_ok=True)
    log = versions()
    deadline = time.monotonic() + args.budget_s
    for case in cases:
        left = deadline - time.monotonic()
        if left < 10:
            log.append(f"{case}: skipped, out of time")
            continue
        started = time.monotonic()
        try:
            run = subprocess.run(
                [
                    sys.executable,
                    os.path.join(HERE, "train.py"),
                    "--case",
                    case,
                    "--out",
                    traces,
                    "--device",
                    args.device,
                ],
                capture_output=True,
                text=True,
                timeout=min(left, 120),
            )
            status = "ok" if run.returncode == 0 else f"exit {run.returncode}: {run.stderr[-400:]}"
        except subprocess.TimeoutExpired:
            status = "timed out"
        log.append(f"{case}: {status} ({time.monotonic() - started:.0f} s)")
        print(log[-1], flush=True)
    with open(os.path.join(traces, "versions.txt"), "w") as f:
        f.write("\n".join(log) + "\n")
    packed = os.path.join(args.out, "scenario-traces.tar.gz")
    with tarfile.open(packed, "w:gz") as tar:
        tar.add(traces, arcname="real")
    print(f"packed {packed} ({os.path.getsize(packed) / 1e6:.1f} MB)", flush=True)


if __name__ == "__main__":
    main()
