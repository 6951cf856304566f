#!/usr/bin/env bash
# The Dask map (`python -m tracelens.engine`) over a generated 1,000-rank job on a local
# cluster (a scheduler and two single-thread worker processes), against `tracelens analyze
# DIR/` on the same machine, interleaved twice; then checks the merged job equals the direct
# one. Usage: bench/engine.sh PYTHON_WITH_DASK [RANKS]
set -euo pipefail
cd "$(dirname "$0")/.."
python="${1:?a python with dask[distributed]}"
ranks="${2:-1000}"
cargo build -q --release -p tracelens-cli -p tracelens-bench
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
target/release/tracelens-gen-job "$ranks" "$work/job" --slow 617 >/dev/null
mkdir -p "$work/bin" && ln -s "$PWD/target/release/tracelens" "$work/bin/tracelens"
export PATH="$work/bin:$PATH" PYTHONPATH="$PWD/python/src"
"$python" -m dask scheduler --scheduler-file "$work/s.json" --port 0 --no-dashboard >/dev/null 2>&1 &
while [ ! -f "$work/s.json" ]; do sleep 0.2; done
for w in 1 2; do
    "$python" -m dask worker --scheduler-file "$work/s.json" --nthreads 1 --no-dashboard >/dev/null 2>&1 &
done
for round in 1 2; do
    rm -rf "$work/out"
    "$python" -m tracelens.engine --scheduler-file "$work/s.json" --workers 2 --out "$work/out" \
        -o "$work/merged.json" "$work/job/" > "$work/map.log"
    head -1 "$work/map.log"
    start=$(date +%s.%N)
    tracelens analyze "$work/job/" --format json -o "$work/direct.json" >/dev/null
    end=$(date +%s.%N)
    python3 -c "s = $end - $start; print(f'analyze DIR/: $ranks ranks in {s:.2f} s ({$ranks / s:.0f} per second)')"
done
python3 - "$work" <<'PY'
import json, sys
a, b = (json.load(open(f"{sys.argv[1]}/{n}.json")) for n in ("merged", "direct"))
for d in (a, b):
    for r in d["job"]["ranks"]:
        r.pop("file", None)
print("merged job == analyze DIR/ (file paths aside):", a == b)
PY
