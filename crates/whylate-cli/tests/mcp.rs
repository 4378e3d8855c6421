//! `whylate mcp` driven by the official MCP Python SDK (tests/mcp/client_check.py): every
//! tool against the CLI's `--json` on the bundled examples, the refusals (outside the
//! roots, a symlink out, /dev/zero, a missing file, bad arguments) as tool errors while
//! the server keeps serving, and a cancelled long call that stops; `fleet` against the
//! CLI on findings of two hosts; and a second server with --allow-record whose `record`
//! writes a trace under the root that `stats` reads whole (as root; else the tool must
//! say it needs root). Without the SDK the test skips, or fails under
//! WHYLATE_REQUIRE_LIVE=1. Also the root under a race (race_check.py) and each call held to
//! its memory budget (memory_check.py).

mod common;

use common::{repo, skip};
use std::process::Command;

#[test]
fn the_python_sdk_client_gets_the_clis_answers_and_the_refusals() {
    let scratch = tempfile::tempdir().unwrap();
    run_check(
        "client_check.py",
        scratch.path(),
        &[&repo().join("examples")],
        "all MCP checks passed",
    );
}

/// tests/mcp/race_check.py: names under the root exchanged 10,000 times and more (a
/// trace, a symlink out, a FIFO; a findings table and a symlink to another host's) while
/// the SDK client calls the tools that read them: nothing outside is read or quoted,
/// nothing hangs. Then raw JSON-RPC lines get the error codes JSON-RPC defines.
#[test]
fn a_name_swapped_during_calls_is_never_followed_out_of_the_root() {
    let scratch = tempfile::tempdir().unwrap();
    run_check(
        "race_check.py",
        scratch.path(),
        &[],
        "all race checks passed",
    );
}

/// tests/mcp/memory_check.py: with `--call-memory 64`, two `latency` calls on 4 M
/// switches sent at once with two `stats` calls are refused at the budget, in words that
/// say so, while the stats calls are answered and the server stays up and small.
#[test]
fn a_call_past_its_memory_budget_is_refused_and_the_server_goes_on() {
    let scratch = tempfile::tempdir().unwrap();
    run_check(
        "memory_check.py",
        scratch.path(),
        &[],
        "all memory checks passed",
    );
}

/// Runs tests/mcp/`script` (the SDK client) against this build with `scratch` and
/// `args`, and checks it ends with `done`; exit 77 (the SDK is missing) is a skip.
fn run_check(script: &str, scratch: &std::path::Path, args: &[&std::path::Path], done: &str) {
    let o = Command::new("python3")
        .arg(repo().join("crates/whylate-cli/tests/mcp").join(script))
        .arg(env!("CARGO_BIN_EXE_whylate"))
        .args(args)
        .arg(scratch)
        .output()
        .expect("python3 runs");
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    if o.status.code() == Some(77) {
        skip(out.trim());
        return;
    }
    let log = std::fs::read_to_string(scratch.join("server.log")).unwrap_or_default();
    assert!(
        o.status.success(),
        "{script} failed:\n{out}\n{err}\nserver stderr:\n{log}"
    );
    assert!(out.contains(done), "{out}");
}
