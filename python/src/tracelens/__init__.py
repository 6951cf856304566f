"""tracelens from Python: run the bundled `tracelens` binary on a trace.

- ``analyze(path)`` returns the JSON document of ``tracelens analyze --format json`` as a dict.
- ``check(path, rules)`` evaluates CI rules; returns the output, raises ``GateFailed`` if one fires.
- ``handler(dir_name, fail_on=...)`` is a ``torch.profiler`` ``on_trace_ready`` callback that
  writes the trace, analyses it and writes the HTML report beside it.
- ``tracelens.engine`` maps the binary over many traces on a Dask cluster and merges the ranks
  (``pip install "tracelens-gpu[dask]"``; ``python -m tracelens.engine --help``).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import warnings
from typing import Callable, Iterable, Optional, Union

__all__ = ["analyze", "check", "handler", "binary", "GateFailed", "TracelensError"]


class TracelensError(RuntimeError):
    """The binary refused the input (exit code 2): the message is its one-line error."""


class GateFailed(RuntimeError):
    """A rule fired (exit code 1)."""


def binary() -> str:
    """Path of the ``tracelens`` executable installed with this package."""
    name = "tracelens.exe" if os.name == "nt" else "tracelens"
    for scheme in (None, "posix_user", "nt_user"):
        try:
            scripts = sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")
        except KeyError:
            continue
        candidate = os.path.join(scripts, name)
        if os.path.isfile(candidate):
            return candidate
    found = shutil.which(name) or shutil.which("tracelens")
    if found:
        return found
    raise FileNotFoundError("the tracelens binary is not installed next to this Python")


def _run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([binary(), *args], capture_output=True, text=True)


def analyze(path: str | os.PathLike) -> dict:
    """Analyses a trace; returns the JSON document (schema in docs/json-output.md)."""
    done = _run(["analyze", os.fspath(path), "--format", "json"])
    if done.returncode != 0:
        raise TracelensError(done.stderr.strip())
    return json.loads(done.stdout)


def check(path: str | os.PathLike, rules: Iterable[str] = ("default",)) -> str:
    """Checks rules on a trace or stored result; ``"default"`` alone means the default set.

    Returns the report; raises ``GateFailed`` (with the report) when a rule fires.
    """
    rules = list(rules)
    args = ["check", os.fspath(path)]
    if rules == ["default"]:
        args += ["--rules", "default"]
    else:
        for rule in rules:
            args += ["--rule", rule]
    done = _run(args)
    if done.returncode == 1:
        raise GateFailed(done.stdout)
    if done.returncode != 0:
        raise TracelensError(done.stderr.strip())
    return done.stdout


def _parse_rules(rules: list[str]) -> None:
    """Raises ``TracelensError`` naming the first rule that does not parse."""
    if not rules:
        return
    args = ["check", "--parse-only"]
    for rule in rules:
        args += ["--rule", rule]
    done = _run(args)
    if done.returncode != 0:
        raise TracelensError(done.stderr.strip())


def handler(
    dir_name: str | os.PathLike,
    worker_name: Optional[str] = None,
    fail_on: Optional[Iterable[str]] = None,
    report: bool = True,
    on_fail: Union[str, Callable[[str], None]] = "raise",
) -> Callable[[object], None]:
    """A ``torch.profiler`` ``on_trace_ready`` callback.

    Writes ``DIR/WORKER.STEP.pt.trace.json.gz`` (the profiler's own ``export_chrome_trace``,
    then gzip), analyses it, writes ``….tracelens.html`` beside it and prints the verdict.

    ``fail_on`` rules are parsed here, when ``handler()`` is called: a misspelt rule raises
    ``TracelensError`` before training starts, not at the first profiling cycle. When one
    fires, the report is already written, then ``on_fail`` decides: ``"raise"`` raises
    ``GateFailed``, ``"warn"`` issues a ``RuntimeWarning`` and training goes on, a callable
    is called with the message.
    """
    dir_name = os.fspath(dir_name)
    rules = list(fail_on or [])
    if not (on_fail in ("raise", "warn") or callable(on_fail)):
        raise ValueError(f'on_fail must be "raise", "warn" or a callable, not {on_fail!r}')
    _parse_rules(rules)

    def on_trace_ready(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        step = getattr(prof, "step_num", None)
        stem = f"{worker}.{step if step is not None else int(time.time() * 1000)}.pt.trace"
        plain = os.path.join(dir_name, stem + ".json")
        prof.export_chrome_trace(plain)
        path = plain + ".gz"
        with open(plain, "rb") as src, gzip.open(path, "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.remove(plain)
        args = ["analyze", path]
        if report:
            args += ["-o", os.path.join(dir_name, stem + ".tracelens.html")]
        else:
            args += ["--no-report"]
        for rule in rules:
            args += ["--fail-on", rule]
        # Training already ran when a cycle ends: a rule this capture cannot measure (a GPU
        # rule on a CPU run) passes with a note instead of stopping it; it is warned once.
        if rules:
            args += ["--not-measured", "pass"]
        # The report is written before the gate decides (exit 1 comes after the file).
        done = _run(args)
        sys.stdout.write(done.stdout)
        notes = [line for line in done.stderr.splitlines() if line.startswith("tracelens: note: rule")]
        for note in notes:
            if note not in noted:
                noted.add(note)
                _warn_at_caller(note)
        if done.returncode == 1:
            message = "\n".join(
                line for line in done.stderr.splitlines() if not line.startswith("tracelens: note:")
            ).strip()
            if on_fail == "raise":
                raise GateFailed(message)
            if on_fail == "warn":
                _warn_at_caller(message)
            else:
                on_fail(message)
        elif done.returncode != 0:
            raise TracelensError(done.stderr.strip())

    noted: set[str] = set()
    return on_trace_ready


def _warn_at_caller(message: str) -> None:
    """A ``RuntimeWarning`` attributed to the user's line (the ``prof.step()`` or the end of the
    ``with profile(...)`` block), not to torch's profiler or this module."""
    level = 1
    frame = sys._getframe(0)
    while frame is not None and _is_library_frame(frame.f_code.co_filename):
        frame = frame.f_back
        level += 1
    warnings.warn(message, RuntimeWarning, stacklevel=level if frame is not None else 2)


def _is_library_frame(filename: str) -> bool:
    """A frame of this module, of torch, or of Python's own context-manager plumbing."""
    parts = os.path.normpath(filename).split(os.sep)
    return (
        os.path.normpath(filename) == os.path.normpath(__file__)
        or "torch" in parts
        or os.path.basename(filename) == "contextlib.py"
    )
