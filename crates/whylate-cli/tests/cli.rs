//! The `whylate` command as a user runs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_whylate"))
        .args(args)
        .current_dir(repo())
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn stats_on_the_bundled_example() {
    let o = run(&["stats", "examples/pty-poll.ftrace.gz"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = text(&o.stdout);
    let first = s.lines().next().unwrap();
    assert!(first.contains("events, ftrace format, span"), "{first}");
    assert!(s.contains("frobnicator["), "{s}");
    assert!(s.contains("sys_enter_read"));
}

#[test]
fn stats_json_schema_keys() {
    let o = run(&["stats", "--json", "examples/pty-poll.ftrace.gz"]);
    assert!(o.status.success());
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for k in [
        "format",
        "events",
        "by_name",
        "by_cpu",
        "first_ns",
        "last_ns",
        "span_ns",
        "lost",
        "unparsed",
        "unparsed_samples",
        "top_tasks",
        "inputs",
        "notes",
    ] {
        assert!(j.get(k).is_some(), "missing key {k}");
    }
    // The kernel's header count equals what we read.
    let entries = j["inputs"][0]["header"]["entries_in_buffer"]
        .as_u64()
        .unwrap();
    assert_eq!(j["events"].as_u64().unwrap(), entries);
    assert_eq!(j["inputs"][0]["compression"], "gzip");
    let by_name = j["by_name"].as_object().unwrap();
    let sum: u64 = by_name.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(sum, j["events"].as_u64().unwrap());
}

#[test]
fn several_files_are_merged_in_time_order() {
    let d = std::env::temp_dir().join(format!("whylate-cli-merge-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    // Per-CPU trace_pipe captures (seed 004 read trace_pipe per CPU).
    std::fs::write(
        d.join("cpu0"),
        "  a-1 [000] d..1 10.000001: irq_disable: caller=x+0x1/0x2 parent=y+0x1/0x2\n  a-1 [000] d..1 10.000009: irq_enable: caller=x+0x1/0x2 parent=y+0x1/0x2\n",
    )
    .unwrap();
    std::fs::write(
        d.join("cpu1"),
        "  b-2 [001] d..1 10.000005: irq_disable: caller=x+0x1/0x2 parent=y+0x1/0x2\n",
    )
    .unwrap();
    let o = run(&[
        "stats",
        "--json",
        d.join("cpu0").to_str().unwrap(),
        d.join("cpu1").to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["events"], 3);
    assert_eq!(j["first_ns"], 10_000_001_000u64);
    assert_eq!(j["last_ns"], 10_000_009_000u64);
    assert_eq!(j["by_cpu"]["1"], 1);
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn unusable_input_exits_2_with_a_clear_message() {
    let o = run(&["stats", "crates/whylate/tests/data/bad/prose.txt"]);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(e.contains("prose.txt"), "{e}");
    assert!(e.contains("tried: "), "{e}");
    assert!(e.contains("\"hello world\""), "{e}");

    let o = run(&["stats", "no/such/file"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("no/such/file"));
}

#[test]
fn bad_lines_are_reported_with_file_and_line_and_strict_makes_them_fatal() {
    let f = "crates/whylate/tests/data/bad/malformed-middle.txt";
    let o = run(&["stats", f]);
    assert!(o.status.success());
    let s = text(&o.stdout);
    assert!(s.contains("3 lines not understood"), "{s}");
    assert!(s.contains("malformed-middle.txt:4:"), "{s}");
    let o = run(&["stats", "--strict", f]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("malformed-middle.txt:4:"));
}

#[test]
fn truncated_and_lost_are_said_in_the_output() {
    let o = run(&["stats", "crates/whylate/tests/data/bad/truncated.ftrace.gz"]);
    assert!(o.status.success());
    assert!(text(&o.stdout).contains("ends abruptly"));
    let d = std::env::temp_dir().join(format!("whylate-cli-lost-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join("lost.txt");
    std::fs::write(
        &p,
        "  a-1 [001] .... 1.000000: sched_waking: comm=b pid=2 prio=120 target_cpu=001\nCPU:1 [LOST 812 EVENTS]\n  a-1 [001] .... 1.500000: sched_waking: comm=b pid=2 prio=120 target_cpu=001\n",
    )
    .unwrap();
    let o = run(&["stats", "--json", p.to_str().unwrap()]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["lost"]["events"], 812);
    assert_eq!(j["lost"]["windows"][0]["from_ns"], 1_000_000_000u64);
    assert_eq!(j["lost"]["windows"][0]["to_ns"], 1_500_000_000u64);
    std::fs::remove_dir_all(&d).ok();
}
