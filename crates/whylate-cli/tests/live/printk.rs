//! Seeds 001 and 004 on a machine with a serial console: lab/kmsgw writes error lines to
//! /dev/kmsg on CPU1 beside lab/periodic (SCHED_FIFO, so no task can delay it) there.
//! printk prints each line to the console from kmsgw's write() with interrupts off, and
//! the periods due meanwhile fire late. `whylate record` records both; whylate's lateness
//! per period must equal the thread's own (as `periods_match_log` pairs them), and
//! `explain --timer` must blame the late periods on printk printing kmsgw's lines to the
//! console, with the lines and bytes it logged.

use super::kmsg::Unlimited;
use super::*;

/// Why this machine cannot show the mechanism, if it cannot: no serial console on the
/// kernel command line, or a console log level that keeps error lines off it.
fn no_console() -> Option<String> {
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    if whylate::snapshot::parse_consoles(&cmdline).is_empty() {
        return Some("no serial console (console=ttyS...) on the kernel command line".into());
    }
    let level = std::fs::read_to_string("/proc/sys/kernel/printk").unwrap_or_default();
    match level
        .split_whitespace()
        .next()
        .and_then(|l| l.parse::<u32>().ok())
    {
        Some(l) if l > 3 => None,
        l => Some(format!(
            "console log level {l:?}: error lines (level 3) are not printed to the console"
        )),
    }
}

#[test]
fn a_printk_writer_beside_a_periodic_thread_is_named_as_the_slow_console() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() && skip("not root: tracefs and /dev/kmsg need root") {
        return;
    }
    if let Some(why) = no_console() {
        skip(&why);
        return;
    }
    if !have("cc") && skip("no C compiler for the lab programs") {
        return;
    }
    if !have("trace-cmd") && skip("no trace-cmd to print the trace for the period check") {
        return;
    }
    let _mount = MountGuard::new();
    let before = tracefs_state();
    let tmp = tmpdir("printk");
    let dir = tmp.path();
    let periodic = build_lab("periodic", dir).unwrap();
    let kmsgw = build_lab("kmsgw", dir).unwrap();
    let (log, klog, dat) = (dir.join("p.log"), dir.join("k.log"), dir.join("t.dat"));
    let count = 600;
    let out = {
        let _limit = match Unlimited::set() {
            Ok(g) => g,
            Err(e) => {
                skip(&e);
                return;
            }
        };
        // 600 periods of 1.33 ms (0.8 s) and 30 lines 25 ms apart (0.75 s) on CPU1.
        let script = format!(
            "{} --cpu 1 --fifo 50 --count {count} --log {} & {} --cpu 1 --count 30 --interval-us 25000 > {}; wait",
            s(&periodic),
            s(&log),
            s(&kmsgw),
            s(&klog)
        );
        Command::new(whylate())
            .args(["record", "-o"])
            .arg(&dat)
            .args(["--", "sh", "-c", &script])
            .output()
            .unwrap()
    };
    assert_eq!(before, tracefs_state(), "tracefs must be left as found");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let truth = read_periodic_log(&log);
    assert_eq!(truth.len(), count);
    let lat = latency_json(&["-m", "timer", "--task", "periodic", "--samples"], &dat);
    let rep = Command::new("trace-cmd")
        .args(["report", "-t"])
        .arg(&dat)
        .output()
        .unwrap();
    assert!(rep.status.success(), "trace-cmd report");
    let text = String::from_utf8_lossy(&rep.stdout);
    let p = periods_match_log(&lat, &truth, &text, 1)
        .unwrap_or_else(|e| panic!("{e} ({})", keep_for_failure("printk", &[&dat, &log])));
    let d = 300_000;
    let late = truth.iter().filter(|t| t.1 > d).count();
    assert!(
        late >= 1,
        "the console lines must make periods late: {}",
        std::fs::read_to_string(&klog).unwrap_or_default()
    );
    let out = Command::new(whylate())
        .args([
            "explain",
            "--json",
            "--timer",
            "--task",
            "periodic",
            "--deadline",
            "300us",
        ])
        .arg(&dat)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let misses = j["cycles"]["misses"].as_u64().unwrap();
    // explain's misses are whylate's periods over the deadline; a period only one side
    // counts late must be one both measure within 50 us across the deadline, or one the
    // trace shows stalled or could not see switched in.
    assert_eq!(p.ours.iter().filter(|&&o| o > d).count() as u64, misses);
    for i in (0..truth.len()).filter(|&i| (p.ours[i] > d) != (truth[i].1 > d)) {
        assert!(
            p.blind.contains(&i)
                || p.inferred.contains(&i)
                || p.ours[i].abs_diff(truth[i].1) <= 50_000,
            "period {i} split without a reason: whylate {} ns, the thread {} ns",
            p.ours[i],
            truth[i].1
        );
    }
    let c = &j["causes"][0];
    assert_eq!(c["category"], "slow-console", "{}", j["causes"]);
    assert_eq!(c["culprit"]["comm"], "kmsgw", "{}", j["causes"]);
    assert_eq!(
        c["culprit"]["caller"],
        "printk to the console inside write()"
    );
    // Each write() is one line: 119 characters and the newline.
    let chains = j["misses"].to_string();
    assert!(
        chains.contains("it logged 1 kernel message (120 bytes, printk:console)"),
        "{chains}"
    );
    // The recording read the line speed from console=.
    assert!(chains.contains("on the wire of tty"), "{chains}");
    assert!(
        j["advice"][0]["command"]
            .as_str()
            .unwrap()
            .starts_with("dmesg -n 1"),
        "{}",
        j["advice"]
    );
    automatic_mode_names_the_console_with_the_tick_recorded(dir, &periodic, &kmsgw);
    let ours_max = p.ours.iter().max().unwrap();
    let theirs_max = truth.iter().map(|t| t.1).max().unwrap();
    eprintln!(
        "printk: the thread's late periods (>300 us) {late}, whylate's {misses}; max lateness thread {theirs_max} ns, whylate {ours_max} ns; worst per-period difference {} ns, host stalls {:?}, untraced switch-ins {:?}; slow-console {} ns of excess in {} misses; kmsgw: {}",
        p.worst,
        p.blind,
        p.inferred,
        c["total_excess_ns"],
        c["count"],
        std::fs::read_to_string(&klog).unwrap_or_default().trim()
    );
}

/// Issue 75's recording: sched, irq, the hrtimers, the local timer interrupt and
/// printk:console, no syscall events, on a NO_HZ kernel whose CPU1 idles between the
/// lines. Automatic mode's first cause is the console printing, none is the tick's timer.
fn automatic_mode_names_the_console_with_the_tick_recorded(
    dir: &Path,
    periodic: &Path,
    kmsgw: &Path,
) {
    let (log, dat) = (dir.join("p2.log"), dir.join("t2.dat"));
    let script = format!(
        "{} --cpu 1 --fifo 50 --count 600 --log {} & {} --cpu 1 --count 30 --interval-us 25000 > /dev/null; wait",
        s(periodic),
        s(&log),
        s(kmsgw)
    );
    let events =
        "sched,irq,timer,printk,irq_vectors:local_timer_entry,irq_vectors:local_timer_exit";
    let out = {
        let _limit = Unlimited::set().unwrap();
        Command::new(whylate())
            .args(["record", "-e", events, "-o"])
            .arg(&dat)
            .args(["--", "sh", "-c", &script])
            .output()
            .unwrap()
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(whylate())
        .arg(&dat)
        .arg("--json")
        .output()
        .unwrap();
    let j: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let c = &j["causes"][0];
    assert_eq!(
        (&c["category"], &c["culprit"]["comm"]),
        (&"slow-console".into(), &"kmsgw".into()),
        "{} ({})",
        j["causes"],
        keep_for_failure("printk-auto", &[&dat])
    );
    // No outlier is a tick's period ("hrtimer tick_nohz_handler due, for ...").
    for m in j["misses"].as_array().unwrap() {
        let from = (m["chain"].as_array().unwrap().iter()).find(|l| l["kind"] == "from");
        let what = from.map_or("", |l| l["what"].as_str().unwrap_or(""));
        assert!(!what.contains("hrtimer tick_"), "{what}");
    }
    eprintln!(
        "printk, automatic mode with the tick recorded: first cause {} {} ({:.0}%)",
        c["category"],
        c["culprit"]["comm"],
        c["share"].as_f64().unwrap_or(0.0) * 100.0
    );
}
