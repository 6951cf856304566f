"""The installed wheel: the binary and the module both work (run by .ci/run in a fresh venv).

No torch needed: the handler gets an object shaped like torch.profiler.profile.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import warnings

import tracelens

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "scenarios")


class FakeProfiler:
    """What on_trace_ready receives: step_num and export_chrome_trace(path)."""

    def __init__(self, trace: str, step: int):
        self.trace = trace
        self.step_num = step

    def export_chrome_trace(self, path: str) -> None:
        shutil.copyfile(self.trace, path)


def main() -> None:
    bad = os.path.join(FIXTURES, "dataloader_single_process.json")
    good = os.path.join(FIXTURES, "dataloader_multi_process_fast.json")
    # The binary installed in the venv's scripts folder.
    exe = tracelens.binary()
    assert os.path.dirname(exe) == os.path.dirname(sys.executable), (exe, sys.executable)
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("tracelens "), out.stdout
    # The module.
    doc = tracelens.analyze(bad)
    assert doc["schema_version"] == 5, doc["schema_version"]
    kinds = [f["kind"] for f in doc["diagnosis"]["findings"]]
    assert "data_loader_stall" in kinds, kinds
    try:
        tracelens.check(bad)
        raise AssertionError("the default rules must fail on a DataLoader stall")
    except tracelens.GateFailed as e:
        assert "finding.data_loader_stall.win_percent > 10" in str(e), str(e)
    assert "all 3 rules hold" in tracelens.check(good)
    try:
        tracelens.analyze(os.path.join(FIXTURES, "does-not-exist.json"))
        raise AssertionError("a missing file must raise")
    except tracelens.TracelensError as e:
        assert "no such file" in str(e), str(e)
    # The torch.profiler handler.
    with tempfile.TemporaryDirectory() as d:
        on_ready = tracelens.handler(d, worker_name="w0")
        on_ready(FakeProfiler(good, 7))
        names = sorted(os.listdir(d))
        assert names == ["w0.7.pt.trace.json.gz", "w0.7.pt.trace.tracelens.html"], names
        gate = tracelens.handler(d, worker_name="w1", fail_on=["idle.data_loading.percent > 10"])
        try:
            gate(FakeProfiler(bad, 3))
            raise AssertionError("the handler must raise when a rule fires")
        except tracelens.GateFailed as e:
            assert "gate failed" in str(e), str(e)
        # The report was written before the raise.
        assert os.path.isfile(os.path.join(d, "w1.3.pt.trace.tracelens.html"))
        # on_fail="warn": training goes on with a warning; a callable gets the message.
        warned = tracelens.handler(d, worker_name="w2", fail_on=["step.time_ms > 1us"], on_fail="warn")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warned(FakeProfiler(bad, 4))
        assert any("gate failed" in str(w.message) for w in caught), caught
        # The warning points at the line that ended the cycle (here), not into the library.
        assert all(os.path.basename(w.filename) == "test_wheel.py" for w in caught), caught
        seen = []
        tracelens.handler(d, worker_name="w3", fail_on=["step.time_ms > 1us"], on_fail=seen.append)(
            FakeProfiler(bad, 5)
        )
        assert len(seen) == 1 and "step.time_ms" in seen[0], seen
        # `check DIR/` reads the folder the handler wrote: the newest cycle of each worker,
        # the workers as the ranks of one job.
        out = subprocess.run([exe, "check", d, "--rule", "step.count < 1"], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
    with tempfile.TemporaryDirectory() as d:
        # A CPU-only run (a smoke test) with a GPU rule: the cycle ends after training ran, so
        # the rule passes with one warning, attributed to this file's line, not torch's.
        cpu = os.path.join(FIXTURES, "..", "kineto", "cpu_only.json")
        cpu_gate = tracelens.handler(d, worker_name="cpu", fail_on=["idle.data_loading.percent > 10"], report=False)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cpu_gate(FakeProfiler(cpu, 1))
            cpu_gate(FakeProfiler(cpu, 2))
        notes = [w for w in caught if "not measured" in str(w.message)]
        assert len(notes) == 1, [str(w.message) for w in caught]
        assert os.path.basename(notes[0].filename) == "test_wheel.py", notes[0].filename
        # The default set adapts to a CPU-only capture: its GPU rules pass as not measured.
        assert "not measured" in tracelens.check(cpu)
    # A misspelt rule raises when handler() is called, before any training step.
    try:
        tracelens.handler("unused", fail_on=["gpu.idle_precent > 5"])
        raise AssertionError("a misspelt rule must raise at handler()")
    except tracelens.TracelensError as e:
        assert "did you mean 'gpu.idle_percent'" in str(e), str(e)
    assert not os.path.exists("unused")
    print("python wheel: binary, analyze, check and handler work")
    engine_on_local_workers()


def engine_on_local_workers() -> None:
    """The Dask map with worker processes that find the wheel's binary themselves."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        print("python wheel: dask not installed here, engine not exercised")
        return
    from tracelens import engine

    traces = engine.expand_traces([os.path.join(FIXTURES, "dataloader_*.json"), FIXTURES + "/item_every_step.json"])
    assert len(traces) == 3, traces
    with tempfile.TemporaryDirectory() as out, LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, Client(cluster) as client:
        rows = list(engine.map_traces(client, traces, out))
        assert sorted(r["index"] for r in rows) == [0, 1, 2], rows
        for row in rows:
            assert row["status"] == "ok", row
            assert os.path.isfile(os.path.join(row["out"], "rank.parquet")), row
            assert not row["worker"].endswith(f":{os.getpid()}"), "ran in the driver"
    print("python wheel: the Dask map ran the wheel's binary on 2 worker processes")


if __name__ == "__main__":
    sys.exit(main())
