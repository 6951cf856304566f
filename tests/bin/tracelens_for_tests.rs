//! The `tracelens` command, built inside the tests crate so end-to-end tests can run it as a
//! process (with its own working directory, stdin and memory budget) through
//! `CARGO_BIN_EXE_tracelens_for_tests`. It is `crates/tracelens-cli/src/main.rs` verbatim.

#[global_allocator]
static ALLOCATOR: tracelens_cli::memory::BudgetAllocator = tracelens_cli::memory::BudgetAllocator;

fn main() {
    if let Err(problem) = tracelens_cli::memory::set_budget() {
        eprintln!("tracelens: error: {problem}");
        std::process::exit(tracelens_cli::EXIT_INPUT);
    }
    let code = tracelens_cli::run(
        std::env::args_os().collect(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    std::process::exit(code);
}
