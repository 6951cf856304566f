//! `tracelens-gen-job RANKS DIR [--slow RANK]`: writes a generated distributed job, one small
//! Kineto trace per rank (`rank{r}.json`), with a planted straggler that loads data slowly
//! (default: none). The same generator as the end-to-end tests' (one source for both).

#[path = "../../../../tests/synthetic_job.rs"]
mod synthetic_job;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(ranks), Some(dir)) = (
        args.first().and_then(|s| s.parse::<usize>().ok()),
        args.get(1),
    ) else {
        eprintln!("usage: tracelens-gen-job RANKS DIR [--slow RANK]");
        std::process::exit(2);
    };
    let slow = args
        .iter()
        .position(|a| a == "--slow")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok());
    synthetic_job::write_job(std::path::Path::new(dir), ranks, slow);
    println!("wrote {ranks} ranks into {dir}");
}
