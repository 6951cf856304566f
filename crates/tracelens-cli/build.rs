//! The commit and the commit date `tracelens --version` prints, from git when the source is a
//! checkout ("unknown" in a source archive without one).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
    let commit = git(&["rev-parse", "--short=9", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let date = git(&["log", "-1", "--format=%cs"]).unwrap_or_else(|| "unknown date".into());
    println!("cargo:rustc-env=TRACELENS_COMMIT={commit}");
    println!("cargo:rustc-env=TRACELENS_COMMIT_DATE={date}");
    println!("cargo:rerun-if-changed=build.rs");
    // A new commit moves the branch's ref (or HEAD itself, detached): build again then.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/packed-refs");
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{branch}");
        }
    }
}
