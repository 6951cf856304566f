"""Map tracelens over many traces on a Dask cluster; reduce with ``tracelens merge``.

The map runs ``tracelens analyze TRACE --format parquet`` once per trace, on the workers, with
the ``tracelens`` binary installed on each worker (``tracelens.binary()`` resolved there). Each
trace's tables land in ``OUT/trace-NNNNN/`` (written to a temporary folder first and renamed,
so a retried or killed task never leaves a half-written rank behind). The driver streams: at
most ``in_flight`` tasks are submitted at a time, and each finished trace becomes one line of
``OUT/map.jsonl`` as it completes, so the driver never holds every rank.

A trace that tracelens refuses (exit 2: truncated, not a trace, …) is a row with its error,
not a failed job, and is not retried (the answer would not change). A task that fails any
other way (the worker died, the binary was killed, exit code other than 0 and 2) is submitted
again, up to ``retries`` more times, then reported as failed. The reduce step merges the
ranks that succeeded: ``tracelens merge OUT/trace-*/`` (or DuckDB over ``OUT/*/*.parquet``).

    python -m tracelens.engine --scheduler tcp://HEAD:8786 --out OUT [-o job.json] TRACE|DIR|GLOB...

Why Dask rather than Ray: ``distributed`` is pure Python (a 9 s ``pip install`` into a fresh
venv on our CI machine), its scheduler and workers are plain processes started with
``dask scheduler`` / ``dask worker``, and the map needs nothing beyond task submission. On Ray
the same map is a ``@ray.remote`` wrapper around :func:`analyse_one` (README).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from typing import Iterable, Iterator, Optional

from . import binary

__all__ = ["expand_traces", "analyse_one", "map_traces", "merge", "main"]

# What `tracelens analyze` reads; anything else in a folder is left alone.
_TRACE_SUFFIXES = (".json", ".json.gz", ".sqlite")


class RankFailed(RuntimeError):
    """A task that failed for a reason other than its input (retried by the driver)."""


def expand_traces(inputs: Iterable[str]) -> list[str]:
    """Files, folders (their trace files, sorted), globs and object-storage URLs (as written),
    in the order given, each once."""
    seen: set[str] = set()
    out: list[str] = []
    for item in inputs:
        if "://" in item:
            # An object-storage URL (s3://, gs://, az://) goes to the workers as written: each
            # worker's tracelens reads it (a prefix is one job there, not expanded here).
            if item not in seen:
                seen.add(item)
                out.append(item)
            continue
        if os.path.isdir(item):
            found = sorted(
                os.path.join(item, name)
                for name in os.listdir(item)
                if name.endswith(_TRACE_SUFFIXES) and os.path.isfile(os.path.join(item, name))
            )
        elif os.path.exists(item):
            found = [item]
        else:
            found = sorted(glob.glob(item))
            if not found:
                raise FileNotFoundError(f"{item}: no such trace, folder or match")
        for path in found:
            path = os.path.abspath(path)
            if path not in seen:
                seen.add(path)
                out.append(path)
    return out


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def analyse_one(index: int, trace: str, out_root: str, extra_args: tuple = ()) -> dict:
    """One map task (runs on a worker): the Parquet tables of one trace, or its refusal."""
    started = time.perf_counter()
    final = os.path.join(out_root, f"trace-{index:05d}")
    scratch = os.path.join(out_root, f".trace-{index:05d}.{uuid.uuid4().hex[:12]}.tmp")
    row = {
        "index": index,
        "trace": trace,
        "worker": f"{socket.gethostname()}:{os.getpid()}",
    }
    try:
        done = subprocess.run(
            [binary(), "analyze", trace, "--format", "parquet", "-o", scratch, *extra_args],
            capture_output=True,
            text=True,
            errors="replace",
        )
        if done.returncode == 2:
            row.update(status="refused", error=_last_line(done.stderr), out=None)
        elif done.returncode != 0:
            raise RankFailed(
                f"{trace}: tracelens exited with {done.returncode}: {_last_line(done.stderr)}"
            )
        else:
            shutil.rmtree(final, ignore_errors=True)
            os.replace(scratch, final)
            row.update(status="ok", error=None, out=final)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    row["seconds"] = round(time.perf_counter() - started, 6)
    return row


def map_traces(
    client,
    traces: Iterable[str],
    out_root: str,
    *,
    retries: int = 2,
    in_flight: Optional[int] = None,
    extra_args: tuple = (),
) -> Iterator[dict]:
    """Runs :func:`analyse_one` for each trace on ``client``'s cluster; yields rows as they finish.

    Each row: index, trace, status (``ok``, ``refused`` or ``failed``), error, out, attempts,
    worker, seconds. ``in_flight`` bounds the tasks submitted at once (default: four per
    worker thread), so a list of a million traces streams through a small driver.
    """
    from distributed import as_completed

    os.makedirs(out_root, exist_ok=True)
    out_root = os.path.abspath(out_root)
    if in_flight is None:
        threads = sum(client.nthreads().values()) or 1
        in_flight = 4 * threads
    pending = iter(enumerate(traces))
    running: dict = {}
    queue = as_completed()

    def submit(index: int, trace: str, attempt: int) -> None:
        future = client.submit(
            analyse_one,
            index,
            trace,
            out_root,
            tuple(extra_args),
            key=f"tracelens-{index}-{attempt}-{uuid.uuid4().hex[:8]}",
            pure=False,
        )
        running[future.key] = (index, trace, attempt)
        queue.add(future)

    def top_up() -> None:
        while len(running) < in_flight:
            nxt = next(pending, None)
            if nxt is None:
                return
            submit(nxt[0], nxt[1], 1)

    top_up()
    for future in queue:
        index, trace, attempt = running.pop(future.key)
        try:
            row = future.result()
        except Exception as error:  # the worker died, the binary was killed, …
            if attempt <= retries:
                submit(index, trace, attempt + 1)
                future.release()
                continue
            row = {
                "index": index,
                "trace": trace,
                "status": "failed",
                "error": f"{type(error).__name__}: {error}",
                "out": None,
                "worker": None,
                "seconds": None,
            }
        future.release()
        row["attempts"] = attempt
        yield row
        top_up()


def merge(dirs: list[str], output: str) -> subprocess.CompletedProcess:
    """The reduce step: ``tracelens merge DIRS -o OUTPUT`` on this machine (the format from
    the output's extension, as tracelens chooses it)."""
    return subprocess.run(
        [binary(), "merge", *dirs, "-o", output],
        capture_output=True,
        text=True,
        errors="replace",
    )


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in text)


def main(argv: Optional[list[str]] = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m tracelens.engine",
        description="Map tracelens over traces on a Dask cluster, then merge the ranks.",
    )
    parser.add_argument("traces", nargs="+", help="trace files, folders of traces, or globs")
    parser.add_argument("--out", required=True, help="folder for the per-trace tables and map.jsonl")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--scheduler", help="the scheduler's address (tcp://HOST:PORT)")
    where.add_argument("--scheduler-file", help="the file `dask scheduler --scheduler-file` wrote")
    parser.add_argument("--workers", type=int, default=0, help="wait for this many workers first")
    parser.add_argument("--retries", type=int, default=2, help="extra attempts for a failed task")
    parser.add_argument("--in-flight", type=int, default=None, help="tasks submitted at once")
    parser.add_argument("-o", "--output", help="merge the ranks into this file (.json, .html, .md)")
    args = parser.parse_args(argv)

    from distributed import Client, LocalCluster

    traces = expand_traces(args.traces)
    if not traces:
        print("tracelens.engine: no traces in the inputs", file=sys.stderr)
        return 2
    cluster = None
    if args.scheduler or args.scheduler_file:
        client = Client(args.scheduler, scheduler_file=args.scheduler_file)
    else:
        cluster = LocalCluster(threads_per_worker=1, dashboard_address=None)
        client = Client(cluster)
    try:
        if args.workers:
            client.wait_for_workers(args.workers, timeout=120)
        started = time.perf_counter()
        ok: list[tuple[int, str]] = []
        bad: list[dict] = []
        manifest = os.path.join(args.out, "map.jsonl")
        os.makedirs(args.out, exist_ok=True)
        with open(manifest, "w", encoding="utf-8") as lines:
            for row in map_traces(
                client, traces, args.out, retries=args.retries, in_flight=args.in_flight
            ):
                lines.write(json.dumps(row) + "\n")
                lines.flush()
                if row["status"] == "ok":
                    ok.append((row["index"], row["out"]))
                else:
                    bad.append(row)
        seconds = time.perf_counter() - started
        print(
            f"mapped {len(traces)} traces in {seconds:.2f} s "
            f"({len(traces) / max(seconds, 1e-9):.1f} per second): {len(ok)} ok, "
            f"{len(bad)} not ({manifest})"
        )
        for row in sorted(bad, key=lambda r: r["index"]):
            print(_printable(f"  {row['status']}: {row['trace']}: {row['error']}"))
        if args.output:
            if not ok:
                print("tracelens.engine: no trace was analysed: nothing to merge", file=sys.stderr)
                return 2
            done = merge([out for _, out in sorted(ok)], args.output)
            if done.returncode != 0:
                print(_printable(_last_line(done.stderr)), file=sys.stderr)
                return done.returncode
            print(f"merged {len(ok)} ranks into {args.output}")
        return 0
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        # The output went to a pipe that closed (`| head`): stop quietly, as a CLI does.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
