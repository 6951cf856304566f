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

# Same on gzip-compressed traces.
bench-gz sizes="100,1000":
    cargo build --release -p tracelens-cli -p tracelens-bench
    ./target/release/tracelens-bench --gzip --sizes {{sizes}} --tracelens target/release/tracelens

# Install the `tracelens` binary into ~/.cargo/bin.
install:
    cargo install --path crates/tracelens-cli

# Load speed of an Nsight Systems export inflated from a corpus file to SIZE MB (doubling, so up to 2x).
bench-nsys size="1000":
    cargo build --release -p tracelens-cli -p tracelens-bench
    ./target/release/tracelens-inflate-nsys {{corpus}}/nsys/converted/Raphael-Hao__Abacus__report1.qdrep.nsys2023.4.4.sqlite bench-traces/nsys_{{size}}mb.sqlite {{size}}
    cat bench-traces/nsys_{{size}}mb.sqlite > /dev/null
    /usr/bin/time -f "tracelens: %e s, peak RSS %M KB" ./target/release/tracelens analyze bench-traces/nsys_{{size}}mb.sqlite --format json --timings > /dev/null
