//! `tracelens-gen SIZE_MB OUT [--gzip]`: writes a synthetic Kineto trace of about SIZE_MB.

use std::io::{BufWriter, Write};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(size), Some(out)) = (
        args.first().and_then(|s| s.parse::<u64>().ok()),
        args.get(1),
    ) else {
        eprintln!("usage: tracelens-gen SIZE_MB OUT [--gzip]");
        std::process::exit(2);
    };
    let gzip = args.iter().any(|a| a == "--gzip");
    let file = std::fs::File::create(out).unwrap_or_else(|e| {
        eprintln!("tracelens-gen: {out}: {e}");
        std::process::exit(2)
    });
    let result = if gzip {
        let mut enc =
            flate2::write::GzEncoder::new(BufWriter::new(file), flate2::Compression::fast());
        tracelens_bench::generate(&mut enc, size * 1_000_000, 42).and_then(|steps| {
            enc.finish()?.flush()?;
            Ok(steps)
        })
    } else {
        let mut w = BufWriter::with_capacity(1 << 20, file);
        tracelens_bench::generate(&mut w, size * 1_000_000, 42).and_then(|steps| {
            w.flush()?;
            Ok(steps)
        })
    };
    match result {
        Ok(steps) => eprintln!("wrote {out}: {steps} steps"),
        Err(e) => {
            eprintln!("tracelens-gen: {out}: {e}");
            std::process::exit(2);
        }
    }
}
