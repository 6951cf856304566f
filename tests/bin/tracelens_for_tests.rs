//! The `tracelens` command, built inside the tests crate so end-to-end tests can run it as a
//! process (with its own working directory) through `CARGO_BIN_EXE_tracelens_for_tests`.

fn main() {
    let code = tracelens_cli::run(
        std::env::args_os().collect(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    std::process::exit(code);
}
