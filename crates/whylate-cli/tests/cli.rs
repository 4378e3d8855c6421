//! The `whylate` command as a user runs it.

use std::process::{Command, Output};

mod common;
use common::{repo, FROB};

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
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
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
}

/// Thousands of small inputs (one per CPU per host, say) are read in memory that grows with
/// what they hold, not with a buffer per file: 5000 files of one event each, under a 600 MB
/// address-space limit and a soft limit of 256 open files (each input was 1 MiB of address
/// space: 10,000 took 10.8 GB and aborted; the name checks were quadratic).
#[test]
fn thousands_of_small_inputs_fit_a_small_address_space() {
    let tmp = tempfile::tempdir().unwrap();
    let n = 5000u64;
    for i in 0..n {
        let line = format!(
            "  a-1 [000] d..1 {}.{:06}: irq_disable: caller=x+0x1/0x2 parent=y+0x1/0x2\n",
            10 + i / 1000,
            i % 1000
        );
        std::fs::write(tmp.path().join(format!("cpu{i:05}")), line).unwrap();
    }
    let o = Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -Sn 256 && ulimit -v 600000 && exec "$0" stats --json "$@""#)
        .arg(env!("CARGO_BIN_EXE_whylate"))
        .args((0..n).map(|i| tmp.path().join(format!("cpu{i:05}"))))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["events"], n);
    assert_eq!(j["first_ns"], 10_000_000_000u64);
    assert_eq!(j["last_ns"], 14_000_999_000u64);
}

/// Protobuf's varint of `v`.
fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A length-delimited field's key and length (its `len` bytes follow).
fn len_field(field: u64, len: u64, out: &mut Vec<u8>) {
    varint(field << 3 | 2, out);
    varint(len, out);
}

/// One Perfetto bundle of `n` (even) compact switches between two tasks, 1 µs apart, as
/// a converter writes one CPU's whole trace: a packet of 6n bytes, written in pieces.
fn giant_bundle(n: u64, w: &mut impl std::io::Write) {
    let (mut cs, mut head) = (Vec::new(), Vec::new());
    for name in [&b"taska"[..], b"taskb"] {
        len_field(5, name.len() as u64, &mut cs);
        cs.extend(name);
    }
    let mut first = Vec::new();
    varint(1_000_000_000, &mut first);
    let lists: [(u64, &[u8], u64); 5] = [
        (1, b"\xe8\x07", n - 1),
        (2, b"\x01", n),
        (3, b"\x64\x65", n / 2),
        (4, b"\x78", n),
        (6, b"\x00\x01", n / 2),
    ];
    let size = |f: u64, pat: &[u8], k: u64| {
        let body = pat.len() as u64 * k + if f == 1 { first.len() as u64 } else { 0 };
        let mut h = Vec::new();
        len_field(f, body, &mut h);
        h.len() as u64 + body
    };
    let cs_len = cs.len() as u64 + lists.iter().map(|&(f, p, k)| size(f, p, k)).sum::<u64>();
    let mut bundle = vec![0x08, 0x00];
    len_field(4, cs_len, &mut bundle);
    let bundle_len = bundle.len() as u64 + cs_len;
    let mut packet = Vec::new();
    len_field(1, bundle_len, &mut packet);
    len_field(1, packet.len() as u64 + bundle_len, &mut head);
    head.extend(packet);
    head.extend(bundle);
    head.extend(cs);
    w.write_all(&head).unwrap();
    for (f, pat, k) in lists {
        let body = pat.len() as u64 * k + if f == 1 { first.len() as u64 } else { 0 };
        let mut h = Vec::new();
        len_field(f, body, &mut h);
        if f == 1 {
            h.extend(&first);
        }
        w.write_all(&h).unwrap();
        let block = pat.repeat(1 << 16);
        for _ in 0..k >> 16 {
            w.write_all(&block).unwrap();
        }
        w.write_all(&pat.repeat((k & 0xffff) as usize)).unwrap();
    }
}

/// One bundle holding a whole CPU's trace (10 M compact switches, 60 MB in one packet) is
/// read as a stream, plain or compressed: held whole, its lists took 28 bytes a switch
/// and its events 70 more before the first went out (3.6 GB for 30 M switches).
#[test]
fn a_giant_bundle_is_read_in_bounded_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = tmp.path().join("giant.pftrace");
    let zst = tmp.path().join("giant.pftrace.zst");
    let n = 10_000_000;
    giant_bundle(
        n,
        &mut std::io::BufWriter::new(std::fs::File::create(&plain).unwrap()),
    );
    let mut z = zstd::Encoder::new(std::fs::File::create(&zst).unwrap(), 1).unwrap();
    giant_bundle(n, &mut z);
    z.finish().unwrap();
    for path in [&plain, &zst] {
        let o = Command::new("sh")
            .arg("-c")
            .arg(r#"ulimit -v 400000 && exec "$0" stats --json "$1""#)
            .arg(env!("CARGO_BIN_EXE_whylate"))
            .arg(path)
            .output()
            .unwrap();
        assert!(o.status.success(), "{path:?}: {}", text(&o.stderr));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(j["events"], n, "{path:?}");
        assert_eq!(j["first_ns"], 1_000_000_000u64, "{path:?}");
        assert_eq!(j["last_ns"], 1_000_000_000 + (n - 1) * 1000, "{path:?}");
    }
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
    assert!(text(&o.stdout).contains("the gzip stream is cut after"));
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
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
}

#[test]
fn latency_on_the_bundled_example() {
    let o = run(&["latency", "examples/pty-poll.ftrace.gz", "--top", "3"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = text(&o.stdout);
    assert!(s.lines().next().unwrap().contains("105283 events"), "{s}");
    for m in [
        "== wakeup ==",
        "== runqueue ==",
        "== work ==",
        "== syscall ==",
    ] {
        assert!(s.contains(m), "{m} missing");
    }
    // The recording's story: frobnicator waits behind the hog on CPU0.
    assert!(s.contains("CPU held by: hog[7450]"), "{s}");
}

#[test]
fn latency_json_schema_keys() {
    let o = run(&[
        "latency",
        "--json",
        "--measure",
        "wakeup,irqsoff",
        "--task",
        "frob*",
        "examples/pty-poll.ftrace.gz",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let m = &j["measures"][0];
    assert_eq!(m["measure"], "wakeup");
    let g = &m["groups"][0];
    for k in [
        "key",
        "metric",
        "count",
        "min_ns",
        "p50_ns",
        "p90_ns",
        "p99_ns",
        "p999_ns",
        "max_ns",
        "total_ns",
        "histogram",
        "worst",
    ] {
        assert!(!g[k].is_null(), "group key {k}");
    }
    let w = &g["worst"][0];
    for k in ["ts_ns", "cpu", "tid", "comm", "value_ns", "detail"] {
        assert!(!w[k].is_null(), "worst key {k}");
    }
    // --task frob* keeps frobnicator and frobdev only.
    for g in m["groups"].as_array().unwrap() {
        assert!(
            g["key"].as_str().unwrap().starts_with("frob"),
            "{}",
            g["key"]
        );
    }
    // The example has no preemptirq events: irqsoff says what to record.
    let irqsoff = &j["measures"][1];
    assert_eq!(irqsoff["measure"], "irqsoff");
    assert!(irqsoff["missing_events"][0]["needs"][0]
        .as_str()
        .unwrap()
        .contains("irq_disable"));
}

#[test]
fn latency_window_and_cpu_filters() {
    let all = run(&[
        "latency",
        "--json",
        "-m",
        "wakeup",
        "examples/pty-poll.ftrace.gz",
    ]);
    let cut = run(&[
        "latency",
        "--json",
        "-m",
        "wakeup",
        "--cpu",
        "0",
        "--window",
        "742.1..742.2",
        "examples/pty-poll.ftrace.gz",
    ]);
    let count = |o: &Output| -> u64 {
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        j["measures"][0]["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["count"].as_u64().unwrap())
            .sum()
    };
    let (a, c) = (count(&all), count(&cut));
    assert!(c > 0 && c < a, "{c} of {a}");
    let j: serde_json::Value = serde_json::from_slice(&cut.stdout).unwrap();
    for w in j["measures"][0]["worst"].as_array().unwrap() {
        let ts = w["ts_ns"].as_u64().unwrap();
        assert!((742_100_000_000..=742_200_000_000).contains(&ts));
        assert_eq!(w["cpu"], 0);
    }
}

#[test]
fn latency_usage_errors_exit_2() {
    for (args, want) in [
        (&["latency", "-m", "nope", "x"][..], "unknown measure"),
        (&["latency", "--window", "soon", "x"][..], "expected A..B"),
        (&["latency", "-m", "throughput", "x"][..], "needs --event"),
        (
            &["latency", "--interval", "fast", "--event", "console", "x"][..],
            "--interval",
        ),
        (
            &["latency", "--event", "console", "--expect", "fast", "x"][..],
            "or a line speed (115200baud)",
        ),
        (&["latency", "--event", "console[len>", "x"][..], "selector"),
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            text(&o.stderr).contains(want),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
}

#[test]
fn throughput_of_console_bytes_against_the_baud_rate() {
    // Seed 001's question: does the console keep up with 115200 baud (11520 B/s)? Here
    // one 100-byte line every 40 ms = 2525 B/s (100 bytes + newline, 25 lines a second).
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let p = dir.join("console.txt");
    let mut t = String::new();
    let msg = "x".repeat(100);
    for i in 0..100u64 {
        let ns = 1_000_000_000 + i * 40_000_000;
        t.push_str(&format!(
            " kworker/0:1-42 [000] d..1. {}.{:06}: console: {msg}\n",
            ns / 1_000_000_000,
            (ns % 1_000_000_000) / 1000
        ));
    }
    std::fs::write(&p, t).unwrap();
    let o = run(&[
        "latency",
        "--json",
        "-m",
        "throughput",
        "--event",
        "console",
        "--field",
        "len",
        "--expect",
        "11520",
        p.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let m = &j["measures"][0];
    assert_eq!(m["unit"], "per_s");
    let g = &m["groups"][0];
    assert_eq!(g["key"], "console len");
    assert_eq!(g["extra"]["total"], 10_100);
    assert_eq!(g["extra"]["intervals_below_expected"], 4);
    assert_eq!(g["p50_ns"], 2525);
    // The same as a selected stream against the line speed: 10100 bytes over the 3.96 s
    // the stream was active is 2551/s, 22% of 115200 baud's 11520 B/s.
    let o = run(&[
        "latency",
        "--json",
        "-m",
        "throughput",
        "--event",
        "console[len>1]",
        "--field",
        "len",
        "--expect",
        "115200baud",
        p.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let m = &j["measures"][0];
    let g = &m["groups"][0];
    assert_eq!(g["extra"]["expected_per_s"], 11520.0);
    let share = g["extra"]["share_of_expected"].as_f64().unwrap();
    assert!((share - 10_100.0 / 3.96 / 11520.0).abs() < 1e-9, "{share}");
    let verdict = m["notes"][0].as_str().unwrap();
    assert!(
        verdict.starts_with("console[len>1] ran at 2551/s over the 4 interval(s) it was active (3.960 s), 22% of the expected 11520/s"),
        "{verdict}"
    );
}

#[test]
fn throughput_of_a_function_graph_stream() {
    // Seed 001's count of serial8250_console_putchar calls per second, from a
    // function_graph trace: one byte every 400 us is 2500/s, 22% of 115200 baud.
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("fg.txt");
    let mut t = String::new();
    for i in 0..2_500u64 {
        let ns = 1_000_000_000 + i * 400_000;
        let (sec, us) = (ns / 1_000_000_000, (ns % 1_000_000_000) / 1000);
        t += &format!(" sertest-9 [000] {sec}.{us:06}: funcgraph_entry:                   |  serial8250_console_putchar() {{\n");
        t += &format!(" sertest-9 [000] {sec}.{:06}: funcgraph_entry:      + 12.787 us  |    io_serial_in();\n", us + 1);
        t += &format!(
            " sertest-9 [000] {sec}.{:06}: funcgraph_exit:       + 14.000 us  |  }}\n",
            us + 14
        );
    }
    std::fs::write(&p, t).unwrap();
    let o = run(&[
        "latency",
        "--json",
        "-m",
        "throughput",
        "--event",
        "funcgraph_entry[func=serial8250_console_putchar]",
        "--expect",
        "115200baud",
        p.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let g = &j["measures"][0]["groups"][0];
    assert_eq!(g["extra"]["total"], 2_500, "only the putchar entries: {g}");
    assert_eq!(g["p50_ns"], 2_500);
    let share = g["extra"]["share_of_expected"].as_f64().unwrap();
    assert!((share - 0.217).abs() < 0.001, "{share}");
}

#[test]
fn plain_whylate_file_explains_the_worst_outliers() {
    let o = run(&["examples/pty-poll.ftrace.gz"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = text(&o.stdout);
    assert!(
        s.lines()
            .next()
            .unwrap()
            .contains("outliers across the measures"),
        "{s}"
    );
    // The recording's hogs hold the busy-polling client off its CPU.
    let why = s.split("were late").nth(1).unwrap();
    let first_cause = why.lines().nth(2).unwrap();
    assert!(
        first_cause.contains("runqueue-wait") && first_cause.contains("hog["),
        "{first_cause}"
    );
    assert!(s.contains("advice:"));
    let j = run(&["explain", "--json", "examples/pty-poll.ftrace.gz"]);
    let j: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    assert!(j["misses"].as_array().unwrap().len() >= 10);
    assert!(j["causes"][0]["culprit"]["comm"] == "hog");
}

#[test]
fn explain_usage_errors_exit_2() {
    for (args, want) in [
        (
            &[
                "explain",
                "--from",
                "x[",
                "--to",
                "y",
                "examples/pty-poll.ftrace.gz",
            ][..],
            "expected `]`",
        ),
        (
            &[
                "explain",
                "--from",
                "x",
                "--to",
                "y",
                "--deadline",
                "soon",
                "examples/pty-poll.ftrace.gz",
            ][..],
            "--deadline",
        ),
        (
            &[
                "explain",
                "--from",
                "x",
                "--to",
                "y",
                "--arch",
                "sparc",
                "examples/pty-poll.ftrace.gz",
            ][..],
            "--arch",
        ),
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            text(&o.stderr).contains(want),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
    // --from without --to is a clap usage error.
    let o = run(&["explain", "--from", "x", "examples/pty-poll.ftrace.gz"]);
    assert_eq!(o.status.code(), Some(2));
}

/// The bundled recording has the workload's own ground truth (`pty-poll.cycles`): the
/// cycles whylate cuts and the misses it counts must equal it, and the hogs are named.
#[test]
fn explain_on_the_bundled_example_matches_its_ground_truth() {
    let truth = std::fs::read_to_string(repo().join("examples/pty-poll.cycles")).unwrap();
    let lat: Vec<u64> = truth
        .lines()
        .map(|l| l.split_whitespace().nth(2).unwrap().parse().unwrap())
        .collect();
    let over = lat.iter().filter(|&&l| l > 3_500_000).count() as u64;
    let o = run(&[
        "explain",
        "--json",
        "--from",
        "sys_enter_write[comm=frobnicator,count=7]",
        "--to",
        "sys_exit_read[comm=frobnicator,ret>0]",
        "--deadline",
        "3.5ms",
        "examples/pty-poll.ftrace.gz",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["cycles"]["count"], lat.len() as u64);
    assert_eq!(j["cycles"]["misses"], over);
    assert_eq!(j["causes"][0]["culprit"]["comm"], "hog");
    let hog: f64 = j["causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["culprit"]["comm"] == "hog")
        .map(|c| c["share"].as_f64().unwrap())
        .sum();
    assert!(hog >= 0.8, "hogs' share {hog}");
}

/// `path` needs descriptor names that only a `whylate record` trace.dat carries: on a text
/// trace it matches nothing, and the report says why instead of silently showing 0 cycles.
#[test]
fn path_without_a_snapshot_matches_nothing_and_says_so() {
    let o = run(&[
        "explain",
        "--json",
        "--from",
        "sys_enter_write[comm=frobnicator,count=7,path~/dev/*]",
        "--to",
        "sys_exit_read[comm=frobnicator,ret>0]",
        "examples/pty-poll.ftrace.gz",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["cycles"]["count"], 0);
    assert!(j["machine"].is_null());
    let notes = j["notes"].to_string();
    assert!(notes.contains("filters on `path`"), "{notes}");
}

/// Runs whylate with `stdin` fed to it.
fn run_with_stdin(args: &[&str], stdin: &[u8]) -> Output {
    use std::io::Write;
    let mut c = Command::new(env!("CARGO_BIN_EXE_whylate"))
        .args(args)
        .current_dir(repo())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(stdin).unwrap();
    c.wait_with_output().unwrap()
}

/// A bad input is one line on stderr naming what is wrong, exit 2.
fn refused(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stdout));
    let err = text(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    err
}

#[test]
fn selectors_the_trace_cannot_match_are_refused_with_its_closest_names() {
    let cycle = |from: &str| {
        run(&[
            "explain",
            "examples/pty-poll.ftrace.gz",
            "--from",
            from,
            "--to",
            "sys_exit_read[comm=frobnicator,ret>0]",
        ])
    };
    let e = refused(&cycle("sys_enter_wrte[comm=frobnicator]"));
    assert!(
        e.contains("no `sys_enter_wrte` event; did you mean sys_enter_write"),
        "{e}"
    );
    let e = refused(&cycle("sys_enter_write[cmm=frobnicator]"));
    assert!(e.contains("no field `cmm`; did you mean comm?"), "{e}");
    let e = refused(&cycle("sys_enter_write[count=seven]"));
    assert!(e.contains("`count` is a number"), "{e}");
    let e = refused(&cycle("sys_enter_write[comm=a,,count=7]"));
    assert!(e.contains("condition 2 is empty"), "{e}");
    // A selector the trace could match but does not is an answer, not an error.
    let o = cycle("sys_enter_write[comm=nobody]");
    assert!(o.status.success());
    assert!(text(&o.stdout).starts_with("0 cycles"));
}

#[test]
fn a_softirq_vector_that_does_not_exist_is_refused_with_the_names() {
    let e = refused(&run(&[
        "explain",
        "examples/frob.dat.zst",
        "--softirq",
        "BOGUS",
    ]));
    assert!(
        e.contains("\"BOGUS\" is not a softirq vector")
            && e.contains("HI TIMER NET_TX NET_RX BLOCK IRQ_POLL TASKLET SCHED HRTIMER RCU"),
        "{e}"
    );
    let e = refused(&run(&[
        "explain",
        "examples/frob.dat.zst",
        "--softirq",
        "NET_RXX",
    ]));
    assert!(e.contains("did you mean NET_RX?"), "{e}");
    let e = refused(&run(&[
        "explain",
        "examples/frob.dat.zst",
        "--softirq",
        "42",
    ]));
    assert!(e.contains("0-9"), "{e}");
}

#[test]
fn a_pairing_key_no_event_has_is_refused_with_the_closest_fields() {
    let mut args = vec!["explain", "examples/frob.dat.zst"];
    args.extend(FROB);
    args.extend(["--key", "bogusfield"]);
    let e = refused(&run(&args));
    assert!(
        e.contains("--key bogusfield: neither `sys_enter_write` nor `sys_exit_read` events have a field `bogusfield`"),
        "{e}"
    );
}

#[test]
fn a_window_or_cpu_filter_that_leaves_nothing_says_what_the_trace_has() {
    let e = refused(&run(&[
        "latency",
        "examples/frob.dat.zst",
        "--window",
        "2..1",
    ]));
    assert!(e.contains("ends before it starts"), "{e}");
    for filter in [["--window", "1..2"], ["--cpu", "4096"]] {
        let mut args = vec!["latency", "examples/frob.dat.zst", "-m", "wakeup"];
        args.extend(filter);
        // A value that names nothing in the trace is the command line's error.
        let out = refused(&run(&args));
        assert!(
            out.contains(&format!(
                "{} {} left no samples",
                filter[0],
                if filter[0] == "--cpu" {
                    "4096"
                } else {
                    "1.000000..2.000000"
                }
            )) && out.contains("the trace spans")
                && out.contains("on CPUs 0-"),
            "{out}"
        );
    }
}

#[test]
fn durations_that_cannot_be_meant_are_refused_with_the_reason() {
    let e = |d: &str| {
        refused(&run(&[
            "explain",
            "examples/pty-poll.ftrace.gz",
            "--timer",
            "--deadline",
            d,
        ]))
    };
    assert!(e("0").contains("a zero deadline makes every cycle a miss"));
    assert!(e("3").contains("expected a number and a unit"));
    assert!(e("99999999999s").contains("longer than a year"));
    let e = refused(&run(&[
        "latency",
        "examples/pty-poll.ftrace.gz",
        "-m",
        "throughput",
        "--event",
        "x",
        "--interval",
        "0s",
    ]));
    assert!(e.contains("an interval must be longer than 0"), "{e}");
}

#[test]
fn empty_binary_and_cut_inputs_say_what_they_are() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty.txt");
    std::fs::write(&empty, "").unwrap();
    let e = refused(&run(&["stats", empty.to_str().unwrap()]));
    assert!(e.trim_end().ends_with("empty.txt: empty file"), "{e}");
    // Random bytes: their first bytes in hex, not a 300-byte "first line".
    let noise = tmp.path().join("noise.bin");
    let bytes: Vec<u8> = (0..4000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(&noise, &bytes).unwrap();
    let e = refused(&run(&["stats", noise.to_str().unwrap()]));
    assert!(e.contains("(not text)") && e.len() < 400, "{e}");
    // A trace.dat.zst cut short: what is there is read, and the cut is said.
    let whole = std::fs::read(repo().join("examples/frob.dat.zst")).unwrap();
    let cut = tmp.path().join("cut.dat.zst");
    std::fs::write(&cut, &whole[..whole.len() - 10_000]).unwrap();
    let o = run(&["stats", cut.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("the zstd stream is cut after"), "{out}");
}

#[test]
fn a_dash_reads_standard_input() {
    let gz = std::fs::read(repo().join("examples/pty-poll.ftrace.gz")).unwrap();
    let o = run_with_stdin(&["stats", "-"], &gz);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).starts_with("105283 events, ftrace format"));
    // A binary format too (spooled, as it needs to seek).
    let dat = std::fs::read(repo().join("examples/frob.dat.zst")).unwrap();
    let o = run_with_stdin(&["stats", "-"], &dat);
    assert!(
        text(&o.stdout).contains("trace.dat format"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn version_names_the_command_and_typos_get_did_you_mean() {
    let o = run(&["--version"]);
    assert!(
        text(&o.stdout).starts_with("whylate "),
        "{}",
        text(&o.stdout)
    );
    let e = refused(&run(&["explian", "examples/pty-poll.ftrace.gz"]));
    assert!(e.contains("did you mean explain?"), "{e}");
    // Global options before the command.
    let o = run(&["-q", "stats", "examples/pty-poll.ftrace.gz"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

#[test]
fn kallsyms_names_a_perf_data_recorded_on_another_kernel() {
    let args = |extra: &[&str]| {
        let mut a = vec!["explain", "examples/frob.perf.data.zst", "--json"];
        a.extend(FROB);
        a.extend(extra);
        run(&a)
    };
    let o = args(&["--kallsyms", "examples/frob.perf.kallsyms.zst"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("flush_to_ldisc"));
    // A file that is not a symbol table is refused with its line.
    let e = refused(&args(&["--kallsyms", "examples/README.md"]));
    assert!(
        e.contains("README.md:1: expected a /proc/kallsyms line"),
        "{e}"
    );
}

/// Runs whylate with `--json` after the command word, and parses its output.
fn json(args: &[&str]) -> serde_json::Value {
    let mut all = vec![args[0], "--json"];
    all.extend(&args[1..]);
    let o = run(&all);
    assert!(o.status.success(), "{}", text(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

const SEEDS: &str = "crates/whylate/tests/data/seeds";

#[test]
fn explain_function_on_seed001s_pasted_excerpt_names_the_wait_for_the_transmitter() {
    // One byte through the 8250 console: the final wait_for_xmitr takes 411.342 us where
    // 115200 baud needs 86.8 us a byte.
    let f = format!("{SEEDS}/seed001-funcgraph-bare.txt");
    let j = json(&[
        "explain",
        "--function",
        "wait_for_xmitr",
        "--expect",
        "115200baud",
        &f,
    ]);
    assert_eq!(j["deadline_ns"], 86_806);
    assert_eq!(
        (
            j["cycles"]["count"].as_u64(),
            j["cycles"]["misses"].as_u64()
        ),
        (Some(2), Some(1))
    );
    let m = &j["misses"][0];
    assert_eq!(m["duration_ns"], 411_342);
    assert_eq!(j["causes"][0]["category"], "own-code");
    assert_eq!(j["causes"][0]["culprit"]["caller"], "wait_for_xmitr");
    let what = m["chain"][0]["what"].as_str().unwrap();
    assert_eq!(what, "wait_for_xmitr, called from serial8250_console_write");
    // The first advice keeps printk off the serial console.
    let a = j["advice"][0]["command"].as_str().unwrap();
    assert!(a.starts_with("dmesg -n 1"), "{a}");
    // The text names neither a task nor a CPU the excerpt does not have.
    let o = run(&[
        "explain",
        "--function",
        "wait_for_xmitr",
        "--expect",
        "115200baud",
        &f,
    ]);
    let s = text(&o.stdout);
    assert!(
        s.contains("miss at 0.000008: took 411.3 us (324.5 us late)"),
        "{s}"
    );
}

#[test]
fn explain_function_without_function_graph_takes_its_irqs_off_sections() {
    // Seed 004: console_unlock held CPU6 with interrupts off for 10.966 ms; the arch
    // timer's interrupt entered 2 us after, and its hrtimer reported itself 9.657 ms late.
    let f = format!("{SEEDS}/seed004-ftrace.txt");
    let j = json(&["explain", "--function", "console_unlock", &f]);
    let m = &j["misses"][0];
    assert_eq!(
        (m["duration_ns"].as_u64(), m["cpu"].as_u64()),
        (Some(10_966_000), Some(6))
    );
    assert_eq!(j["causes"][0]["category"], "irqs-off");
    let chain: Vec<&str> = (m["chain"].as_array().unwrap().iter())
        .map(|l| l["what"].as_str().unwrap())
        .collect();
    assert_eq!(
        chain[1],
        "irq 3 (arch_timer) entered 2.0 us after interrupts came back on"
    );
    assert!(
        chain[2].starts_with("hrtimer_cb reported itself 9.657 ms late"),
        "{chain:?}"
    );
}

#[test]
fn explain_function_bad_input_is_located() {
    let f = format!("{SEEDS}/seed004-ftrace.txt");
    let o = run(&[
        "explain",
        "--function",
        "console_unlock",
        "--expect",
        "fast",
        &f,
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(e.contains("--expect: expected a rate per second"), "{e}");
    let o = run(&["explain", "--function", "f[", &f]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}

#[test]
fn explain_expect_on_seed003b_finds_the_interrupt_that_never_got_its_napi_poll() {
    // The e1000e interrupt at 4980.739166 came while NAPI polled (napi_poll 21 us later);
    // the next napi_schedule came with the retransmission's interrupt, 202.166 ms later.
    let f = format!("{SEEDS}/seed003b-napi.txt");
    let pat = "e1000e_intr -> napi_schedule within 1ms";
    let j = json(&["explain", "--expect", pat, &f]);
    assert_eq!(
        (
            j["cycles"]["count"].as_u64(),
            j["cycles"]["misses"].as_u64()
        ),
        (Some(2), Some(1))
    );
    assert_eq!(
        (j["expect"]["late"].as_u64(), j["expect"]["never"].as_u64()),
        (Some(1), Some(0))
    );
    let m = &j["misses"][0];
    assert_eq!(
        (m["start_ns"].as_u64(), m["duration_ns"].as_u64()),
        (Some(4_980_739_166_000), Some(202_166_000))
    );
    let chain: Vec<&str> = (m["chain"].as_array().unwrap().iter())
        .map(|l| l["what"].as_str().unwrap())
        .collect();
    assert!(
        chain[1].starts_with("napi_poll: napi poll on napi struct ffff880797f80c10"),
        "{chain:?}"
    );
    let o = run(&["explain", "--expect", pat, &f]);
    let first = text(&o.stdout).lines().next().unwrap().to_string();
    assert!(
        first.starts_with("2 e1000e_intr: 1 without napi_schedule from the same CPU within 1.000 ms (1 came later, 0 never)"),
        "{first}"
    );
}

#[test]
fn explain_expect_bad_patterns_and_events_are_clear() {
    let f = format!("{SEEDS}/seed003b-napi.txt");
    let o = run(&[
        "explain",
        "--expect",
        "e1000e_intr => napi_poll within 1ms",
        &f,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("--expect: expected 'A -> B within T'"),
        "{}",
        text(&o.stderr)
    );
    let o = run(&[
        "explain",
        "--expect",
        "e1000e_intr -> napi_sched within 1ms",
        &f,
    ]);
    assert_ne!(o.status.code(), Some(0));
    let e = text(&o.stderr);
    assert!(e.contains("napi_schedule"), "the closest name: {e}");
}

#[test]
fn explain_on_seed001s_dmesg_names_the_slow_serial_console() {
    // The interleaved dmesg: a soft lockup on CPU#33, an RCU stall listing CPUs 14 and 33,
    // an NMI backtrace of CPU 14, and modprobe's stack on CPU 18 through console_unlock.
    let f = format!("{SEEDS}/seed001-dmesg.txt");
    let j = json(&["explain", &f]);
    assert_eq!(j["inputs"][0]["format"], "kernel-log");
    let k = &j["kernel"];
    assert_eq!(k["console_stacks"], serde_json::json!([1, 2]));
    assert_eq!(k["kinds"][0], serde_json::json!(["soft lockup", 1]));
    let c = &j["causes"][0];
    assert_eq!(
        (
            c["category"].as_str(),
            c["culprit"]["caller"].as_str(),
            c["culprit"]["cpu"].as_u64()
        ),
        (Some("slow-console"), Some("console_unlock"), Some(18))
    );
    let stack = (j["misses"].as_array().unwrap().iter())
        .find(|m| m["cpu"] == 18)
        .map(|m| m["chain"][1]["what"].as_str().unwrap().to_string())
        .unwrap();
    assert!(
        stack.contains(
            "console_unlock <- vprintk_emit <- printk <- print_modules <- watchdog_timer_fn"
        ),
        "{stack}"
    );
    assert!(j["advice"][0]["command"]
        .as_str()
        .unwrap()
        .starts_with("dmesg -n 1"));
    let o = run(&["explain", &f]);
    let first = text(&o.stdout).lines().next().unwrap().to_string();
    assert!(
        first.contains("1 of 2 stacks run through printk's console path: a slow serial console"),
        "{first}"
    );
    // syslogd's broadcast: the lockups, and no stack to judge them by.
    let o = run(&["explain", &format!("{SEEDS}/seed001-syslog.txt")]);
    let first = text(&o.stdout).lines().next().unwrap().to_string();
    assert_eq!(
        first,
        "kernel log: 3 soft lockup; no mechanism recognised: the log holds no stack"
    );
}

#[test]
fn a_timed_dmesg_gives_its_byte_rate_and_merges_with_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("dmesg.txt");
    // 200 lines of 59 bytes over 1.99 s: 5,930 bytes/s; then a lockup with its stack.
    let mut t = String::new();
    for i in 0..200u64 {
        t += &format!(
            "[  {}.{:06}] scsi 0:0:{i:03}:0: Direct-Access  Linux  scsi_debug\n",
            10 + i / 100,
            (i % 100) * 10_000
        );
    }
    t += "[   12.000000] watchdog: BUG: soft lockup - CPU#1 stuck for 23s! [modprobe:77]\n";
    t += "[   12.000001] CPU: 1 PID: 77 Comm: modprobe Not tainted 6.18.0 #1\n";
    t += "[   12.000002] Call Trace:\n";
    t += "[   12.000003]  <IRQ>\n";
    t += "[   12.000004]  wait_for_xmitr+0x40/0xa0\n";
    t += "[   12.000005]  serial8250_console_write+0x1f0/0x3c0\n";
    t += "[   12.000006]  console_unlock+0x144/0x330\n";
    std::fs::write(&log, &t).unwrap();
    let j = json(&["explain", log.to_str().unwrap()]);
    let bps = j["kernel"]["bytes_per_s"].as_f64().unwrap();
    // Each message and its newline, over the log's 2.000006 s.
    let bytes: usize = t
        .lines()
        .map(|l| l.split_once("] ").unwrap().1.len() + 1)
        .sum();
    let want = bytes as f64 / 2.000006;
    assert!((bps - want).abs() < 1e-6 * want, "{bps} vs {want}");
    assert_eq!(j["misses"][0]["duration_ns"], 23_000_000_000u64);
    assert_eq!(j["causes"][0]["culprit"]["caller"], "console_unlock");
    // Beside a trace with scheduling events: the trace's outliers, the log named first.
    let trace = dir.path().join("trace.txt");
    std::fs::write(
        &trace,
        "  a-5 [001] d..2 11.000000: sched_switch: prev_comm=a prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=b next_pid=6 next_prio=120\n  b-6 [001] d..2 12.500000: sched_switch: prev_comm=b prev_pid=6 prev_prio=120 prev_state=S ==> next_comm=a next_pid=5 next_prio=120\n",
    )
    .unwrap();
    let j = json(&["explain", log.to_str().unwrap(), trace.to_str().unwrap()]);
    let notes = j["notes"].to_string();
    assert!(
        notes.contains("the kernel log beside the trace: kernel log: 1 soft lockup"),
        "{notes}"
    );
}

#[test]
fn a_wall_clock_dmesg_without_reports_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("dmesg-T.txt");
    std::fs::write(
        &log,
        "[Tue Nov 24 23:15:25 2026] Linux version 6.18.44 (builder@host)\n[Tue Nov 24 23:15:26 2026] Command line: console=ttyS0 quiet\n",
    )
    .unwrap();
    let o = run(&["explain", log.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let first = text(&o.stdout).lines().next().unwrap().to_string();
    assert_eq!(first, "kernel log: 2 messages, no report in them (soft or hard lockup, RCU stall, hung task, NMI backtrace, dropped messages)");
}

/// `watch` needs to know what a miss is, and says so before it touches tracefs (no root
/// needed to be told); a bad selector is refused the same way.
#[test]
fn watch_without_a_mode_or_with_a_bad_selector_is_a_usage_error() {
    let o = run(&["watch", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("--from/--to, --timer"), "{err}");
    let o = run(&[
        "watch",
        "--from",
        "sys_enter_write[",
        "--to",
        "x",
        "--",
        "true",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--from"), "{}", text(&o.stderr));
}

/// Runs whylate in `dir` with `stdin` fed to it; the input may be left unread (a run
/// refused before reading it).
fn run_in(dir: &std::path::Path, args: &[&str], stdin: &[u8]) -> Output {
    use std::io::Write;
    let mut c = Command::new(env!("CARGO_BIN_EXE_whylate"))
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let _ = c.stdin.take().unwrap().write_all(stdin);
    c.wait_with_output().unwrap()
}

/// A small ftrace text trace: a task woken and run on CPU 0, `n` times.
fn small_trace(n: u32) -> String {
    let mut t = String::new();
    for i in 0..n {
        let s = 10.0 + f64::from(i) * 0.001;
        t += &format!("          <idle>-0     [000] d..2. {s:.6}: sched_waking: comm=app pid=7 prio=120 target_cpu=000\n");
        t += &format!("          <idle>-0     [000] d..2. {:.6}: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=app next_pid=7 next_prio=120\n", s + 0.0002);
        t += &format!("             app-7     [000] d..2. {:.6}: sched_switch: prev_comm=app prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n", s + 0.0005);
    }
    t
}

#[test]
fn an_output_that_is_an_input_or_a_trace_is_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let trace = small_trace(50);
    std::fs::write(d.join("A.txt"), &trace).unwrap();
    std::fs::write(d.join("B.txt"), &trace).unwrap();
    std::fs::copy(repo().join("examples/frob.dat.zst"), d.join("f.dat.zst")).unwrap();
    let untouched = |f: &str| std::fs::read(d.join(f)).unwrap() == trace.as_bytes();
    // Two traces meant, the first taken as the output: it is a trace, so it stays.
    let e = refused(&run_in(d, &["export", "--perfetto", "A.txt", "B.txt"], b""));
    assert!(
        e.contains("--perfetto A.txt: already exists and is a trace (ftrace)"),
        "{e}"
    );
    assert!(untouched("A.txt"));
    // A binary trace, compressed, is recognised too.
    let e = refused(&run_in(
        d,
        &["explain", "B.txt", "--html", "f.dat.zst"],
        b"",
    ));
    assert!(e.contains("is a trace (trace.dat)"), "{e}");
    // The input itself, under its name or another.
    let e = refused(&run_in(d, &["report", "A.txt", "-o", "A.txt"], b""));
    assert!(e.contains("-o A.txt: is the input A.txt"), "{e}");
    let e = refused(&run_in(d, &["explain", "A.txt", "--html", "./A.txt"], b""));
    assert!(e.contains("--html ./A.txt: is the input A.txt"), "{e}");
    assert!(untouched("A.txt"));
    // An input inside a directory output, under a name the run writes there.
    std::fs::create_dir(d.join("svg")).unwrap();
    std::fs::write(d.join("svg/raster.svg"), &trace).unwrap();
    let e = refused(&run_in(
        d,
        &["report", "svg/raster.svg", "--svg", "svg"],
        b"",
    ));
    assert!(
        e.contains("--svg svg: the run writes svg/raster.svg there"),
        "{e}"
    );
    // What whylate wrote before is no trace: writing it again is fine.
    for _ in 0..2 {
        for args in [
            &["export", "A.txt", "--perfetto", "p.json"][..],
            &["report", "A.txt", "-o", "r.html", "--svg", "svg"],
        ] {
            let o = run_in(d, args, b"");
            assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
        }
    }
}

#[test]
fn the_same_input_given_twice_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("A.txt"), small_trace(10)).unwrap();
    std::os::unix::fs::symlink(d.join("A.txt"), d.join("link.txt")).unwrap();
    let e = refused(&run_in(d, &["explain", "A.txt", "A.txt"], b""));
    assert!(e.contains("A.txt: given twice as an input"), "{e}");
    let e = refused(&run_in(d, &["latency", "A.txt", "link.txt"], b""));
    assert!(
        e.contains("link.txt: given twice as an input (also as A.txt)"),
        "{e}"
    );
    let e = refused(&run_in(d, &["stats", "-", "-"], small_trace(10).as_bytes()));
    assert!(e.contains("- (standard input): given twice"), "{e}");
    let e = refused(&run_in(d, &["diff", "-", "-"], small_trace(10).as_bytes()));
    assert!(e.contains("is both A and B"), "{e}");
    // A copy of it (another file, the same bytes) would count twice as well.
    std::fs::write(d.join("copy.txt"), small_trace(10)).unwrap();
    let e = refused(&run_in(d, &["explain", "A.txt", "copy.txt"], b""));
    assert!(e.contains("copy.txt: holds the same bytes as A.txt"), "{e}");
    // Two traces, or one file compared with itself, are fine.
    std::fs::write(d.join("B.txt"), small_trace(11)).unwrap();
    let o = run_in(d, &["stats", "A.txt", "B.txt"], b"");
    assert!(o.status.success(), "{}", text(&o.stderr));
}

#[test]
fn outputs_and_host_are_checked_before_any_input_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    // Not a trace: reading it first would say so instead.
    std::fs::write(d.join("prose.txt"), "hello world\n").unwrap();
    std::fs::write(d.join("file"), "x").unwrap();
    let cases: [&[&str]; 6] = [
        &["explain", "prose.txt", "--html", "file/r.html"],
        &["explain", "prose.txt", "--svg", "file"],
        &["explain", "prose.txt", "--parquet", "file/x"],
        &["report", "prose.txt", "-o", "file/r.html"],
        &["export", "prose.txt", "--perfetto", "file/p.json"],
        &["latency", "prose.txt", "--parquet", "."],
    ];
    for (i, args) in cases.iter().enumerate() {
        let o = run_in(d, args, b"");
        if i == 5 {
            // A writable directory: then the input is read, and refused.
            assert!(refused(&o).contains("not a trace"));
            continue;
        }
        let e = refused(&o);
        assert!(
            e.contains("file") && !e.contains("not a trace"),
            "{args:?}: {e}"
        );
    }
    let e = refused(&run_in(
        d,
        &["explain", "prose.txt", "--parquet", "pq", "--host", "a/b"],
        b"",
    ));
    assert!(e.contains("--host") && e.contains("\"a/b\""), "{e}");
    // A host too long for a directory name is refused before anything is read or made.
    let long = "h".repeat(300);
    let e = refused(&run_in(
        d,
        &[
            "explain",
            "prose.txt",
            "--parquet",
            "pq300",
            "--host",
            &long,
        ],
        b"",
    ));
    assert!(
        e.contains("at most 200") && e.matches("os error").count() == 0,
        "{e}"
    );
    assert!(!d.join("pq300").exists());
    let e = refused(&run_in(
        d,
        &[
            "explain",
            "prose.txt",
            "--parquet",
            "pq",
            "--label",
            "k=(no k)",
        ],
        b"",
    ));
    assert!(e.contains("reserved"), "{e}");
    // A directory option's own directory is created when its parent exists, and said;
    // no other directory is made (a file's directory, a missing parent).
    std::fs::write(d.join("A.txt"), small_trace(50)).unwrap();
    let o = run_in(
        d,
        &[
            "explain",
            "A.txt",
            "--html",
            "r.html",
            "--svg",
            "s",
            "--parquet",
            "q",
        ],
        b"",
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    for p in ["r.html", "s/histogram.svg", "q"] {
        assert!(d.join(p).exists(), "{p}");
    }
    let said = text(&o.stderr);
    assert!(
        said.contains("created the directory s (--svg)")
            && said.contains("created the directory q (--parquet)"),
        "{said}"
    );
    for args in [
        &["explain", "A.txt", "--html", "h/1/r.html"][..],
        &["explain", "A.txt", "--svg", "s2/1"],
        &["explain", "A.txt", "--parquet", "q2/1"],
        &["report", "A.txt", "-o", "r/1/r.html"],
        &["export", "A.txt", "--perfetto", "p/1/p.json"],
    ] {
        let e = refused(&run_in(d, args, b""));
        assert!(
            e.contains("does not exist") && e.contains("mkdir -p"),
            "{args:?}: {e}"
        );
    }
    for p in ["h", "s2", "q2", "r", "p"] {
        assert!(!d.join(p).exists(), "{p} was created");
    }
}

#[test]
fn a_fifo_carries_a_binary_trace_as_standard_input_does() {
    let tmp = tempfile::tempdir().unwrap();
    let zst = std::fs::read(repo().join("examples/frob.dat.zst")).unwrap();
    let plain = zstd::decode_all(&zst[..]).unwrap();
    let want = text(&run(&["stats", "examples/frob.dat.zst"]).stdout);
    assert!(want.contains("trace.dat format"), "{want}");
    for (name, bytes) in [("z.fifo", zst), ("p.fifo", plain)] {
        let fifo = tmp.path().join(name);
        let st = Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(st.success());
        let f2 = fifo.clone();
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            // Opening blocks until whylate opens the other end.
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .open(&f2)
                .and_then(|mut f| f.write_all(&bytes));
        });
        let o = run(&["stats", fifo.to_str().unwrap()]);
        writer.join().unwrap();
        assert!(o.status.success(), "{name}: {}", text(&o.stderr));
        // The same report but for the file's name and compression.
        let got = text(&o.stdout);
        let first = |s: &str| {
            s.lines()
                .next()
                .unwrap()
                .split(" format")
                .next()
                .unwrap()
                .to_string()
        };
        assert_eq!(first(&got), first(&want), "{name}");
    }
}

#[test]
fn json_into_a_closed_pipe_ends_quietly_as_text_does() {
    for json in [false, true] {
        let mut args = vec!["latency", "examples/pty-poll.ftrace.gz", "--top", "1000"];
        if json {
            args.extend(["--json", "--samples"]);
        }
        let mut c = Command::new(env!("CARGO_BIN_EXE_whylate"))
            .args(&args)
            .current_dir(repo())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before anything is written (`| head -0`).
        drop(c.stdout.take());
        let o = c.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "json {json}: {}", text(&o.stderr));
        assert_eq!(text(&o.stderr), "", "json {json}");
    }
}

#[test]
fn help_is_wrapped_to_the_terminal_width() {
    for cmd in [&["--help"][..], &["explain", "--help"], &["latency", "-h"]] {
        let o = Command::new(env!("CARGO_BIN_EXE_whylate"))
            .args(cmd)
            .env("COLUMNS", "80")
            .output()
            .unwrap();
        assert!(o.status.success());
        let help = text(&o.stdout);
        let widest = help.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(widest <= 80, "{cmd:?}: {widest} columns:\n{help}");
    }
}

/// The top-level help lists each command on one line (its `about`; the details are in
/// `whylate CMD --help`), and `explain --help` groups its options by mode.
#[test]
fn top_level_help_is_one_line_per_command_and_explain_help_is_grouped_by_mode() {
    for columns in [None, Some("80")] {
        let mut c = Command::new(env!("CARGO_BIN_EXE_whylate"));
        c.arg("--help");
        if let Some(n) = columns {
            c.env("COLUMNS", n);
        } else {
            c.env_remove("COLUMNS");
        }
        let help = text(&c.output().unwrap().stdout);
        let list: Vec<&str> = help
            .lines()
            .skip_while(|l| *l != "Commands:")
            .skip(1)
            .take_while(|l| !l.is_empty())
            .collect();
        assert!(list.len() >= 10, "{help}");
        for line in &list {
            // A continuation line would be indented past the command column.
            assert!(
                line.starts_with("  ") && !line.starts_with("   "),
                "a command's summary wraps (COLUMNS={columns:?}): {line:?}\n{help}"
            );
            assert!(line.chars().count() < 100, "{line:?}");
        }
    }
    let o = Command::new(env!("CARGO_BIN_EXE_whylate"))
        .args(["explain", "--help"])
        .output()
        .unwrap();
    let help = text(&o.stdout);
    for heading in [
        "Cycles (--from/--to):",
        "Timer (--timer):",
        "Softirq (--softirq):",
        "Function (--function):",
        "Expect (--expect, or a rate with --function):",
        "Every mode:",
        "Output:",
        "Input:",
        "Examples, one per mode:",
    ] {
        assert!(
            help.lines().any(|l| l == heading),
            "no {heading:?} in explain --help:\n{help}"
        );
    }
    // The details live in `--help`; `-h` keeps the one-line summary.
    let short = text(
        &Command::new(env!("CARGO_BIN_EXE_whylate"))
            .args(["explain", "-h"])
            .output()
            .unwrap()
            .stdout,
    );
    assert!(help.contains("One mode per heading below") && !short.contains("One mode per heading"));
}

/// The README is a quick start that links into docs/: it keeps the two set-up commands
/// (`.ci/run` runs the second), and every relative link it or docs/reference.md has
/// leads to a file, and to a heading of it when it names one.
#[test]
fn the_readme_quick_start_keeps_its_commands_and_its_links_resolve() {
    let root = repo();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(readme
        .contains("\ncargo run --release -p whylate-cli -- explain examples/frob.dat.zst \\\n"));
    assert!(readme.contains("\n./scripts/test\n"));
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    assert!(ci.contains("./scripts/test"));
    // GitHub's anchor of a heading: lowercase, punctuation dropped, spaces as hyphens.
    let slug = |h: &str| -> String {
        h.trim_start_matches('#')
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect()
    };
    for doc in ["README.md", "docs/reference.md"] {
        let path = root.join(doc);
        let text = std::fs::read_to_string(&path).unwrap();
        for link in text.split("](").skip(1).filter_map(|s| s.split(')').next()) {
            if link.starts_with("http") {
                continue;
            }
            let (file, anchor) = link.split_once('#').unwrap_or((link, ""));
            let target = path.parent().unwrap().join(file);
            assert!(target.exists(), "{doc}: {link}: no {}", target.display());
            if !anchor.is_empty() {
                let t = std::fs::read_to_string(&target).unwrap();
                assert!(
                    t.lines().any(|l| l.starts_with('#') && slug(l) == anchor),
                    "{doc}: {link}: no such heading"
                );
            }
        }
    }
}

#[path = "../../whylate/src/testkit_rtla.rs"]
mod rtla_gen;

/// A generated timerlat trace (4 CPUs x 250 activations, six planted late ones) in a
/// temporary file.
fn timerlat_file() -> tempfile::TempPath {
    let text = rtla_gen::timerlat_trace(4, 250, &rtla_gen::planted(), true);
    let mut f = tempfile::Builder::new().suffix(".txt").tempfile().unwrap();
    std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
    f.into_temp_path()
}

#[test]
fn explain_a_timerlat_trace_with_no_options() {
    let f = timerlat_file();
    let p = f.to_str().unwrap();
    let o = run(&["explain", "--json", p]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["deadline_ns"], 50_000);
    assert_eq!(j["cycles"]["count"], 1000);
    let misses = j["misses"].as_array().unwrap();
    assert_eq!(misses.len(), 6);
    for (m, plant) in misses
        .iter()
        .zip([125_000u64, 94_000, 66_000, 65_000, 65_000, 51_000])
    {
        let total = m["duration_ns"].as_u64().unwrap();
        assert_eq!(total, plant);
        let sum: u64 = (m["chain"].as_array().unwrap().iter())
            .flat_map(|l| l["held_by"].as_array().unwrap())
            .map(|h| h["ns"].as_u64().unwrap())
            .sum();
        assert_eq!(sum, total, "{m}");
    }
    assert_eq!(j["causes"][0]["category"], "thread-noise");
    assert_eq!(j["causes"][0]["culprit"]["comm"], "hog");
    let t = run(&["explain", p, "--deadline", "100us"]);
    let s = text(&t.stdout);
    assert!(
        t.status.success() || t.status.code() == Some(1),
        "{}",
        text(&t.stderr)
    );
    assert!(
        s.contains("1 missed (0 no reply), deadline 100.0 us"),
        "{s}"
    );
    assert!(s.contains("hog[4242]"), "{s}");
}

#[test]
fn latency_timerlat_per_cpu_and_context() {
    let f = timerlat_file();
    let o = run(&["latency", "-m", "timerlat", "--json", f.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let groups = j["measures"][0]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 8);
    let g = (groups.iter())
        .find(|g| g["key"] == "CPU3" && g["metric"] == "thread")
        .unwrap();
    assert_eq!(
        (g["count"].as_u64(), g["max_ns"].as_u64()),
        (Some(250), Some(125_000))
    );
}

#[test]
fn record_timerlat_on_a_kernel_without_the_tracer() {
    let tracers = std::fs::read_to_string("/sys/kernel/tracing/available_tracers");
    let Ok(tracers) = tracers else {
        eprintln!("skipped: tracefs not readable (not root)");
        return;
    };
    if tracers.split_whitespace().any(|t| t == "timerlat") {
        eprintln!("skipped: this kernel has the timerlat tracer");
        return;
    }
    let out = std::env::temp_dir().join("whylate-timerlat-test.dat");
    let out = out.to_str().unwrap();
    let watch = [
        "watch",
        "--timerlat",
        "--period",
        "1000",
        "--duration",
        "1s",
    ];
    for args in [
        &["record", "--timerlat", "--period", "1000", "-o", out][..],
        &watch,
    ] {
        let o = run(args);
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(
            e.contains("has no timerlat tracer") && e.contains("CONFIG_TIMERLAT_TRACER=y"),
            "{e}"
        );
        assert!(!std::path::Path::new(out).exists());
    }
}

/// `watch --timerlat` explains the tracer's activations: another mode beside it is a
/// usage error said before tracefs is touched (so also without root).
#[test]
fn watch_timerlat_takes_no_other_mode() {
    let o = run(&["watch", "--timerlat", "--timer", "--duration", "1s"]);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("--timerlat watches the timerlat tracer's activations; it takes no --timer"),
        "{e}"
    );
    // A period the kernel would refuse is refused before anything is touched.
    for bad in ["0", "99", "1000001", "x"] {
        let o = run(&["watch", "--timerlat", "--period", bad]);
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{e}");
        assert!(e.contains("--period"), "{e}");
    }
    let o = run(&["watch", "--period", "100", "--timer"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("--timerlat"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn list_causes_prints_the_catalogue_without_a_trace() {
    let o = run(&["explain", "--list-causes"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    for id in [
        "runqueue-wait",
        "deferred-to-ksoftirqd",
        "softirq-backlog",
        "cpu-idle",
    ] {
        assert!(out.contains(&format!("\n{id}\n")), "{id} missing:\n{out}");
    }
    assert!(out.contains("\ntrace-cut  (blind spot)\n"), "{out}");
    assert_eq!(out.matches("  means: ").count(), 35, "{out}");
    // With a trace it is a usage error, not a silent choice.
    let o = run(&["explain", "--list-causes", "examples/frob.dat.zst"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}

/// Values that name nothing are errors that say which values exist (exit 2), not a
/// quiet "no samples" or an option ignored.
#[test]
fn values_that_name_nothing_are_refused() {
    let o = run(&["latency", "examples/frob.dat.zst", "--cpu", "99999"]);
    let e = refused(&o);
    assert!(
        e.contains("no events on CPU 99999") && e.contains("on CPUs 0-1"),
        "{e}"
    );
    let o = run(&["stats", "examples/frob.dat.zst", "--format", "perf-data"]);
    let e = refused(&o);
    assert!(
        e.contains("--format perf.data") && e.contains("is a trace.dat"),
        "{e}"
    );
    // The format it is, given, still reads.
    assert!(
        run(&["stats", "examples/frob.dat.zst", "--format", "trace-dat"])
            .status
            .success()
    );
}

/// `whylate FILE` takes every explain option, as its output suggests (`--top, --json`):
/// the same answer as `whylate explain FILE`, and global options may come first.
#[test]
fn the_short_form_takes_explain_options() {
    let short = run(&["examples/frob.dat.zst", "--json", "--top", "1"]);
    let long = run(&["explain", "examples/frob.dat.zst", "--json", "--top", "1"]);
    assert_eq!(
        short.status.code(),
        long.status.code(),
        "{}",
        text(&short.stderr)
    );
    assert_eq!(text(&short.stdout), text(&long.stdout));
    assert!(text(&short.stdout).starts_with('{'));
    let quiet = run(&["-q", "examples/frob.dat.zst", "--top", "1"]);
    assert!(
        text(&quiet.stdout).contains("outliers across the measures"),
        "{}",
        text(&quiet.stderr)
    );
    // A mistyped command is still said as such.
    let typo = run(&["expain", "examples/frob.dat.zst"]);
    assert!(
        text(&typo.stderr).contains("did you mean explain?"),
        "{}",
        text(&typo.stderr)
    );
}

/// Automatic mode's first cause on each bundled recording is what its lab scenario did:
/// the hogs beside frob's device and beside the timer's thread, the NET_RX flood steered
/// to the periodic thread's CPU. (The timer example's thread waits about 40 ms behind the
/// hog every period: past the absolute threshold its own usual does not excuse that.)
#[test]
fn automatic_mode_names_each_examples_own_cause_first() {
    for (file, category, culprit) in [
        ("examples/frob.dat.zst", "runqueue-wait", "hog"),
        ("examples/frob.pftrace.gz", "runqueue-wait", "hog"),
        ("examples/pty-poll.ftrace.gz", "runqueue-wait", "hog"),
        ("examples/timer.dat.zst", "runqueue-wait", "hog"),
        ("examples/softirq.dat.zst", "softirq", "NET_RX"),
    ] {
        let o = run(&[file, "--json", "--top", "1"]);
        let j: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{file}: {e}: {}", text(&o.stderr)));
        let c = &j["causes"][0];
        let who = c["culprit"]["comm"]
            .as_str()
            .or(c["culprit"]["vector"].as_str());
        assert_eq!(
            (c["category"].as_str(), who),
            (Some(category), Some(culprit)),
            "{file}: {}",
            j["causes"]
        );
    }
}

/// `whylate --help` says which commands this build lacks (fleet, mcp are features).
#[test]
fn help_marks_the_commands_this_build_lacks() {
    let h = text(&run(&["--help"]).stdout);
    let fleet = h
        .lines()
        .find(|l| l.trim_start().starts_with("fleet "))
        .unwrap();
    let mcp = h
        .lines()
        .find(|l| l.trim_start().starts_with("mcp "))
        .unwrap();
    assert_eq!(
        fleet.contains("needs a build with --features fleet"),
        !cfg!(feature = "fleet"),
        "{fleet}"
    );
    assert_eq!(
        mcp.contains("needs a build with --features mcp"),
        !cfg!(feature = "mcp"),
        "{mcp}"
    );
}
