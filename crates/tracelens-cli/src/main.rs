//! The `tracelens` binary: a thin wrapper over [`tracelens_cli::run`], with the memory
//! budget of [`tracelens_cli::memory`] as its allocator.

#[global_allocator]
static ALLOCATOR: tracelens_cli::memory::BudgetAllocator = tracelens_cli::memory::BudgetAllocator;

fn main() {
    tracelens_cli::memory::share_heap_arenas();
    if let Err(problem) = tracelens_cli::memory::set_budget() {
        eprintln!("tracelens: error: {problem}");
        std::process::exit(tracelens_cli::EXIT_INPUT);
    }
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let code = tracelens_cli::run(
        std::env::args_os().collect(),
        &mut stdout.lock(),
        &mut stderr.lock(),
    );
    std::process::exit(code);
}
