#!/usr/bin/env bash
# The tracelens action's main step (action.yml runs it; tests/action.rs runs it with a
# simulated GitHub environment). Every input arrives in an environment variable, never
# pasted into the script: a trace path cannot become shell code.
#
#   TL_TRACE          a file, a folder (the newest cycle of each worker; several workers are
#                     the ranks of one job) or a glob
#   TL_RULES          a rules file, or `default`
#   TL_GATE           `true`: a failing rule fails the step; `false`: report only
#   TL_BASELINE       a trace or result JSON of the last good run ('' = none)
#   TL_BASELINE_CACHE where the default branch's results are cached ('' = none): read as the
#                     baseline when TL_BASELINE is empty, written with this run's results
#   TL_REPORT         where to write the HTML report
#   TL_ANNOTATIONS    `true`: annotate the PR's files with findings
#   TL_MIN_SEVERITY   low | medium | high: the least severity annotated
#   TL_HISTORY_DIR    where earlier runs' results are kept ('' = no history): this run's result
#                     joins them, `tracelens history` draws the series, rules get --history
#   TL_HISTORY_RUNS   how many runs the history keeps (default 20)
#   GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, GITHUB_WORKSPACE, RUNNER_TEMP: as the runner sets them
# Exit: 0 (gate passed or off), 1 (a rule failed with the gate on), 2 (bad input).
set -euo pipefail

: "${TL_TRACE:?the trace input is required}"
TL_RULES="${TL_RULES:-default}"
TL_GATE="${TL_GATE:-true}"
TL_BASELINE="${TL_BASELINE:-}"
TL_BASELINE_CACHE="${TL_BASELINE_CACHE:-}"
TL_REPORT="${TL_REPORT:-tracelens-report.html}"
TL_ANNOTATIONS="${TL_ANNOTATIONS:-true}"
TL_MIN_SEVERITY="${TL_MIN_SEVERITY:-medium}"
TL_HISTORY_DIR="${TL_HISTORY_DIR:-}"
TL_HISTORY_RUNS="${TL_HISTORY_RUNS:-20}"
case "$TL_HISTORY_RUNS" in ''|*[!0-9]*) echo "tracelens: error: history-runs must be a number, not '$TL_HISTORY_RUNS'" >&2; exit 2 ;; esac
: "${GITHUB_OUTPUT:?}" "${GITHUB_STEP_SUMMARY:?}"
TMP="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/tracelens-action.$$"
mkdir -p "$TMP"

case "$TL_GATE" in true|false) ;; *) echo "tracelens: error: gate must be true or false, not '$TL_GATE'" >&2; exit 2 ;; esac

# The input: a file or folder as given; a glob expanded here (one match is that file; several
# are linked into one folder, which tracelens reads as it reads any folder).
input="$TL_TRACE"
if [ ! -e "$input" ]; then
    shopt -s nullglob
    # shellcheck disable=SC2206 # the glob is the point: expanded, not word-split (IFS below)
    IFS=$'\n' matches=($TL_TRACE)
    unset IFS
    shopt -u nullglob
    case "${#matches[@]}" in
        0) echo "tracelens: error: $TL_TRACE: no such file, folder or matching trace" >&2; exit 2 ;;
        1) input="${matches[0]}" ;;
        *)
            input="$TMP/matched"
            mkdir -p "$input"
            for m in "${matches[@]}"; do ln -s "$(cd "$(dirname "$m")" && pwd)/$(basename "$m")" "$input/"; done
            ;;
    esac
fi

results="$TMP/results.json"
# Read once: the result document (or a job's), without the runner's folders in it.
# The run's label for the history: the commit and the run number, when the runner says.
sha="${GITHUB_SHA:-}"
label="${sha:0:9}${GITHUB_RUN_NUMBER:+ #$GITHUB_RUN_NUMBER}"
labelled=()
if [ -n "$label" ]; then labelled=(--label "$label"); fi
tracelens analyze "$input" --format json --redact-path -o "$results" --quiet ${labelled[@]+"${labelled[@]}"} >/dev/null

# Every other output comes from the stored result (a run's or a job's): the trace is read once.
summary="$TMP/summary.md"
tracelens report "$results" -o "$TL_REPORT" >/dev/null
tracelens report "$results" --format md > "$summary"

# The baseline: given, else the cached results of the default branch.
baseline=()
if [ -n "$TL_BASELINE" ]; then
    baseline=(--baseline "$TL_BASELINE")
elif [ -n "$TL_BASELINE_CACHE" ] && [ -f "$TL_BASELINE_CACHE" ]; then
    cp "$TL_BASELINE_CACHE" "$TMP/baseline.json"
    baseline=(--baseline "$TMP/baseline.json")
fi
if [ "${#baseline[@]}" -gt 0 ]; then
    { echo; tracelens diff "${baseline[1]}" "$results" --format md; } >> "$summary"
fi
# The history: earlier runs' results (kept by action.yml's cache), this run added, the oldest
# beyond TL_HISTORY_RUNS dropped; named so that names sort in run order.
history=()
history_html=""
if [ -n "$TL_HISTORY_DIR" ]; then
    mkdir -p "$TL_HISTORY_DIR"
    this_run="$TL_HISTORY_DIR/$(printf '%012d' "${GITHUB_RUN_NUMBER:-0}")-$(date +%s).json"
    cp "$results" "$this_run"
    shopt -s nullglob
    kept=("$TL_HISTORY_DIR"/*.json)
    drop=$(( ${#kept[@]} - TL_HISTORY_RUNS ))
    for ((i = 0; i < drop; i++)); do rm -f "${kept[$i]}"; done
    kept=("$TL_HISTORY_DIR"/*.json)
    shopt -u nullglob
    # The rules compare this run with the earlier ones still kept.
    earlier=()
    for f in "${kept[@]}"; do
        if [ "$f" != "$this_run" ]; then earlier+=("$f"); fi
    done
    if [ "${#earlier[@]}" -gt 0 ]; then history=(--history "${earlier[@]}"); fi
    history_html="$TMP/history.html"
    tracelens history "${kept[@]}" -o "$history_html" >/dev/null
    { echo; tracelens history "${kept[@]}" --format md; } >> "$summary"
fi
cat "$summary" >> "$GITHUB_STEP_SUMMARY"
if [ -n "$TL_BASELINE_CACHE" ]; then
    mkdir -p "$(dirname "$TL_BASELINE_CACHE")"
    cp "$results" "$TL_BASELINE_CACHE"
fi

annotate=()
if [ "$TL_ANNOTATIONS" = true ]; then
    annotate=(--annotations github --min-severity "$TL_MIN_SEVERITY" --source-root "${GITHUB_WORKSPACE:-.}")
fi
set +e
tracelens check "$results" --rules "$TL_RULES" ${baseline[@]+"${baseline[@]}"} ${annotate[@]+"${annotate[@]}"} ${history[@]+"${history[@]}"}
gate_code=$?
set -e
case "$gate_code" in
    0) gate=pass ;;
    1) gate=fail ;;
    *) exit "$gate_code" ;;
esac

# Outputs: the figures the reports show, read from the result document.
python3 - "$results" "$gate" "$TL_REPORT" "$summary" "$history_html" >> "$GITHUB_OUTPUT" <<'PY'
import json, sys
path, gate, report, summary, history_html = sys.argv[1:6]
doc = json.load(open(path, encoding="utf-8"))
if "job" in doc:
    job = doc["job"]
    rank = (job.get("straggler") or {}).get("rank")
    row = next((r for r in job["ranks"] if r["rank"] == rank), job["ranks"][0])
    verdict = job["verdict"]
    busy = row["gpu_busy_percent"]
    step_ms = max(r["step_ns"] for r in job["ranks"]) / 1e6
else:
    v = doc["diagnosis"]["verdict"]
    verdict = v["text"]
    busy = v["gpu_busy_percent"] if doc["diagnosis"].get("focus_device") is not None else ""
    step_ms = v["step_ns"] / 1e6
# One line each: a value never carries a newline into the outputs file.
flat = lambda s: " ".join(str(s).split())
print(f"verdict={flat(verdict)}")
print(f"gpu-busy-percent={busy if busy == '' else f'{busy:.1f}'}")
print(f"step-ms={step_ms:.3f}")
print(f"results-json={path}")
print(f"report={report}")
print(f"gate={gate}")
print(f"summary-md={summary}")
print(f"history-html={history_html}")
PY

if [ "$gate" = fail ] && [ "$TL_GATE" = true ]; then
    exit 1
fi
exit 0
