//! A real kernel log: messages written to /dev/kmsg at known times on CLOCK_MONOTONIC,
//! read back with `dmesg` and read by whylate as a kernel log. Checks the count, the
//! text, and each message's time against the writer's own clock readings.

use super::*;
use std::io::Write;
use std::time::{Duration, Instant};

const DEVKMSG: &str = "/proc/sys/kernel/printk_devkmsg";

/// Lifts the rate limit on /dev/kmsg writers (10 messages per 5 s by default) for the
/// test, and puts the setting back when dropped, also when the test fails.
pub(crate) struct Unlimited(String);

impl Unlimited {
    pub(crate) fn set() -> Result<Unlimited, String> {
        let old = std::fs::read_to_string(DEVKMSG).map_err(|e| format!("{DEVKMSG}: {e}"))?;
        std::fs::write(DEVKMSG, "on\n").map_err(|e| format!("{DEVKMSG}: {e}"))?;
        Ok(Unlimited(old.trim().to_string()))
    }
}

impl Drop for Unlimited {
    fn drop(&mut self) {
        // The handler wants the line with its newline.
        let _ = std::fs::write(DEVKMSG, format!("{}\n", self.0));
    }
}

/// The printk time of a /dev/kmsg write is taken inside the write(): between the clock
/// readings around it. Times are compared as differences from the first message, so the
/// boot offset of printk's clock drops out; its rate against CLOCK_MONOTONIC may differ by
/// the clocksource's skew, bounded here at 100 ppm of the span.
#[test]
fn dmesg_is_read_as_a_kernel_log_with_the_writers_times() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() && skip("not root: /dev/kmsg and dmesg need root") {
        return;
    }
    let before = std::fs::read_to_string(DEVKMSG).unwrap_or_default();
    let limit = match Unlimited::set() {
        Ok(g) => g,
        Err(e) => {
            skip(&e);
            return;
        }
    };
    // Unique across runs: the kernel log keeps earlier runs' messages, and pids recur.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    let tag = format!(
        "whylate-live-{}-{}:",
        std::process::id(),
        now.map_or(0, |d| d.as_nanos())
    );
    let mut kmsg = match std::fs::OpenOptions::new().write(true).open("/dev/kmsg") {
        Ok(f) => f,
        Err(e) => {
            skip(&format!("/dev/kmsg: {e}"));
            return;
        }
    };
    const N: usize = 60;
    let t0 = Instant::now();
    let mut clocks = Vec::new();
    for i in 0..N {
        let before = t0.elapsed().as_nanos() as i64;
        // One write is one record; `<6>` = KERN_INFO.
        kmsg.write_all(format!("<6>{tag} message {i} of {N}\n").as_bytes())
            .unwrap();
        let after = t0.elapsed().as_nanos() as i64;
        clocks.push((before, after));
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(limit);
    let out = Command::new("dmesg").output().unwrap();
    assert!(
        out.status.success(),
        "dmesg: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mine: String = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(&tag))
        .map(|l| format!("{l}\n"))
        .collect();
    let dir = tmpdir("kmsg");
    let log = dir.path().join("dmesg.txt");
    std::fs::write(&log, &mine).unwrap();
    let o = Command::new(whylate())
        .args(["explain", "--json"])
        .arg(&log)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["inputs"][0]["format"], "kernel-log");
    assert_eq!(
        j["kernel"]["messages"], N as u64,
        "one event per message written"
    );
    assert_eq!(j["kernel"]["kinds"], serde_json::json!([]));
    // Each message's time against the writer's clock readings around its write.
    let times: Vec<i64> = mine
        .lines()
        .map(|l| {
            let t = l.trim_start_matches('[').split(']').next().unwrap().trim();
            let (s, f) = t.split_once('.').unwrap();
            s.parse::<i64>().unwrap() * 1_000_000_000 + f.parse::<i64>().unwrap() * 1_000
        })
        .collect();
    assert_eq!(times.len(), N);
    let span = clocks[N - 1].1 - clocks[0].0;
    // The clocks' rate may differ by up to 100 ppm; dmesg prints whole microseconds.
    let skew = span / 10_000 + 1_000;
    for i in 1..N {
        let d = times[i] - times[0];
        let (lo, hi) = (clocks[i].0 - clocks[0].1, clocks[i].1 - clocks[0].0);
        assert!(
            d + skew >= lo && d <= hi + skew,
            "message {i}: {d} ns after the first in the log, the writer saw it between {lo} and {hi} ns"
        );
    }
    assert_eq!(
        std::fs::read_to_string(DEVKMSG).unwrap_or_default(),
        before,
        "printk_devkmsg restored"
    );
    eprintln!(
        "kmsg: {N} messages over {} ms read back from dmesg, each within its write()",
        span / 1_000_000
    );
}
