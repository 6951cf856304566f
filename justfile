# Common tasks. `just --list` shows them; each is one plain cargo command underneath.

corpus := env_var_or_default("TRACELENS_CORPUS", "../shared/traces")

# Run all tests (the corpus tests read {{corpus}}).
test:
    TRACELENS_CORPUS={{corpus}} cargo test --workspace

# Formatting and lints, as CI runs them.
lint:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings

# What CI runs.
ci:
    bash .ci/run

# Analyze the bundled example trace.
example:
    cargo run --release -p tracelens-cli -- analyze fixtures/kineto/modern_base_ns.json

# Throughput and peak memory against `cat`, on generated traces (sizes in MB).
bench sizes="100,1000":
    cargo build --release -p tracelens-cli -p tracelens-bench
    ./target/release/tracelens-bench --sizes {{sizes}} --tracelens target/release/tracelens

# Same on a real trace replicated to each size (shifted ts, ids and step numbers).
bench-real sizes="200,1000" trace=(corpus + "/kineto/tb_plugin/samples/resnet50_num_workers_4/worker0.pt.trace.json.gz"):
    cargo build --release -p tracelens-cli -p tracelens-bench
    ./target/release/tracelens-bench --sizes {{sizes}} --replicate {{trace}} --tracelens target/release/tracelens

# Same on gzip-compressed traces.
bench-gz sizes="100,1000":
    cargo build --release -p tracelens-cli -p tracelens-bench
    ./target/release/tracelens-bench --gzip --sizes {{sizes}} --tracelens target/release/tracelens

# Install the `tracelens` binary into ~/.cargo/bin.
install:
    cargo install --path crates/tracelens-cli

# Nsight Systems exports inflated from a corpus export to each size (MB), against the baseline
# binary built from the last tag, or from `base` (a commit) when given: time, peak RSS, bytes per
# row and the new/old ratios, in one run.
bench-nsys sizes="1000,5000" base="":
    cargo build --release -p tracelens-cli -p tracelens-bench
    just bench-baseline "{{base}}"
    ./target/release/tracelens-bench --nsys {{corpus}}/nsys/converted/Raphael-Hao__Abacus__report1.qdrep.nsys2023.4.4.sqlite --sizes {{sizes}} --tracelens target/release/tracelens --baseline target-baseline/release/tracelens

# The whole comparison in one run: a real Kineto trace replicated to 1 GB, plain and gzip, and a
# real export inflated to 500 MB and 1 GB, each against the baseline binary and the peers (HTA and
# nsys-ai at pinned versions, installed into bench-traces/peers/ on first use; about 30 minutes).
bench-suite base="":
    cargo build --release -p tracelens-cli -p tracelens-bench
    just bench-baseline "{{base}}"
    TRACELENS_CORPUS={{corpus}} ./target/release/tracelens-bench --suite --sizes 500,1000 --peers --tracelens target/release/tracelens --baseline target-baseline/release/tracelens

# Builds the baseline `tracelens` (the last tag, or the commit `base`) into target-baseline/,
# from a worktree of that commit, for the benchmarks' ratios.
bench-baseline base="":
    #!/usr/bin/env bash
    set -euo pipefail
    rev="{{base}}"
    if [ -z "$rev" ]; then rev=$(git describe --tags --abbrev=0 2>/dev/null) || { echo "no tag yet: give base=COMMIT" >&2; exit 2; }; fi
    tree=target-baseline/tree
    git worktree remove --force "$tree" 2>/dev/null || true
    git worktree add --force --detach "$tree" "$rev" >/dev/null
    (cd "$tree" && CARGO_TARGET_DIR="$PWD/.." cargo build --release -p tracelens-cli)
    git worktree remove --force "$tree"
    echo "baseline: $rev -> target-baseline/release/tracelens"

# Every corpus trace analysed by the baseline binary and by this tree's: the JSON reports must
# not change (a speed or memory change leaves every answer as it was).
compare-corpus base="":
    cargo build --release -p tracelens-cli -p tracelens-bench
    just bench-baseline "{{base}}"
    ./target/release/tracelens-compare --old target-baseline/release/tracelens --new target/release/tracelens --corpus {{corpus}}

# Fuzz each target for SECONDS (nightly toolchain and cargo-fuzz, installed when missing; not
# in CI). Seeds: the project's fixtures. A crash lands in fuzz/artifacts/TARGET/: copy it to
# fixtures/fuzz/ (tests/fuzz_regressions.rs replays every file there) and fix it.
fuzz seconds="60":
    rustup toolchain list | grep -q nightly || rustup toolchain install nightly --profile minimal
    command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
    mkdir -p fuzz/corpus/kineto_import fuzz/corpus/nsys_import fuzz/corpus/trace_strings fuzz/corpus/rule_parser fuzz/corpus/parquet_read
    cp fixtures/kineto/*.json fixtures/scenarios/*.json fixtures/fuzz/*.json fuzz/corpus/kineto_import/ 2>/dev/null || true
    cd fuzz && for t in kineto_import nsys_import trace_strings rule_parser parquet_read memory_snapshot; do cargo +nightly fuzz run $t -- -max_total_time={{seconds}} -rss_limit_mb=2048 -max_len=1048576 2>&1 | grep -E "^(#[0-9]+ +DONE|Done|==[0-9]+==)|SUMMARY|panicked" ; done

# Crafted inputs that once crashed or ran away: exit code, seconds and peak memory of each.
hostile tracelens="target/release/tracelens":
    cargo build --release -p tracelens-cli -p tracelens-bench
    ./target/release/tracelens-hostile --tracelens {{tracelens}}

# The reduce step at scale: merge N generated per-rank Parquet folders.
merge-bench ranks="1000":
    cargo build --release -p tracelens-cli -p tracelens-bench
    ./target/release/tracelens-merge-bench --ranks {{ranks}}
