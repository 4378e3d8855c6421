//! A test that cannot run here says so where the test command sums it up; under
//! `WHYLATE_REQUIRE_LIVE=1` (CI) it fails instead. Shared by the whylate and whylate-cli
//! tests (`#[path]`).

/// Adds `test: reason` to the file WHYLATE_SKIP_LOG names, when it is set: scripts/test
/// sums the skips up as its last line (a passing test's stderr is captured, so a skip
/// would otherwise go unseen).
pub fn log_skip(test: &str, reason: &str) {
    use std::io::Write as _;
    let Some(path) = std::env::var_os("WHYLATE_SKIP_LOG") else {
        return;
    };
    let f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path);
    if let Ok(mut f) = f {
        let _ = writeln!(f, "{test}: {}", reason.replace('\n', " "));
    }
}

/// Skips the calling test for `reason`: said on stderr (past the harness's capture) and
/// logged, or, under WHYLATE_REQUIRE_LIVE=1, a failure.
pub fn skip_or_fail(reason: &str) {
    use std::io::Write as _;
    if std::env::var("WHYLATE_REQUIRE_LIVE").as_deref() == Ok("1") {
        panic!("required (WHYLATE_REQUIRE_LIVE=1) but: {reason}");
    }
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
    log_skip(&test, reason);
}
