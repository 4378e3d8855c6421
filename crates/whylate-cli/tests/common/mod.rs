//! Helpers shared by the CLI test targets (each target uses a part of them).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root (the bundled examples are relative to it).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs whylate in the repository root and returns (stdout, stderr); it must succeed.
pub fn whylate(args: &[&str]) -> (String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_whylate"))
        .args(args)
        .current_dir(repo())
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert!(o.status.success(), "whylate {args:?}: {err}");
    (out, err)
}

/// Says why a test skips; with WHYLATE_REQUIRE_LIVE=1 (CI) a skip is a failure.
pub fn skip(reason: &str) -> bool {
    if std::env::var("WHYLATE_REQUIRE_LIVE").as_deref() == Ok("1") {
        panic!("required (WHYLATE_REQUIRE_LIVE=1) but: {reason}");
    }
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    eprintln!("SKIPPED {test}: {reason}");
    log_skip(&test, reason);
    true
}

#[path = "../../../whylate/tests/common/skip.rs"]
mod skip;
pub use skip::log_skip;

/// The frob scenario's request/reply cycle (seed 000's selectors and deadline).
pub const FROB: [&str; 6] = [
    "--from",
    "sys_enter_write[comm=frobnicator,count=7]",
    "--to",
    "sys_exit_read[comm=frobnicator,ret>0]",
    "--deadline",
    "3.5ms",
];
