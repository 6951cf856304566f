//! The `tracelens` binary: a thin wrapper over [`tracelens_cli::run`].

fn main() {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let code = tracelens_cli::run(
        std::env::args_os().collect(),
        &mut stdout.lock(),
        &mut stderr.lock(),
    );
    std::process::exit(code);
}
