//! Seed 002 over the network stack: datagrams from a sender on CPU0 to a real-time
//! receiver on CPU1, whose NET_RX softirq is deferred to ksoftirqd/1 by a flood and then
//! starved by a heavy task. The receiver's own per-packet clock is the truth.

use super::*;
use std::process::{Child, Stdio};

pub(crate) const BACKLOG: &str = "/proc/sys/net/core/netdev_max_backlog";
const PACKETS: usize = 800;
const DEADLINE_NS: u64 = 1_000_000;

/// A kernel knob set for the test and restored on drop (also when an assertion fails).
struct Knob {
    path: &'static str,
    old: String,
}

impl Knob {
    fn set(path: &'static str, v: &str) -> Result<Knob, String> {
        let old = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
        std::fs::write(path, v).map_err(|e| format!("{path}: {e}"))?;
        Ok(Knob {
            path,
            old: old.trim().to_string(),
        })
    }
}

impl Drop for Knob {
    fn drop(&mut self) {
        let _ = std::fs::write(self.path, &self.old);
    }
}

/// Background load, killed on drop.
struct Load(Vec<Child>);

impl Drop for Load {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// One datagram as the receiver logged it: send and receive time (CLOCK_MONOTONIC, the
/// trace's clock), and the latency (-1: never arrived).
pub(crate) struct Packet {
    pub(crate) send: u64,
    pub(crate) latency: i64,
}

pub(crate) fn read_udpping_log(p: &Path) -> Vec<Packet> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Vec<&str> = l.split_whitespace().collect();
            Packet {
                send: v[1].parse().unwrap(),
                latency: v[3].parse().unwrap(),
            }
        })
        .collect()
}

/// Records the scenario: the hog (nice -19 in an autogroup of its own, so ksoftirqd at
/// nice 0 really waits behind it) and bursts of a filtered UDP flood steered to CPU1, 900
/// datagrams every 30 ms: more than one softirq run drains (10 restarts of 64), so each
/// burst's rest is deferred to ksoftirqd; the receive backlog made deep enough that no
/// datagram of the probe is dropped (a drop would leave its request without reply). How
/// long ksoftirqd then waits varies from run to run with where the scheduler places it
/// (4 ms to tens of ms): the test checks whylate against what the probe measured, not a
/// count. Returns the trace and the probe's log.
fn record_deferral(dir: &Path) -> Result<(PathBuf, Vec<Packet>), String> {
    let (hog, flood, ping) = (
        build_lab("hog", dir)?,
        build_lab("udpflood", dir)?,
        build_lab("udpping", dir)?,
    );
    let _rps = Knob::set(LO_RPS, "2")?;
    let _backlog = Knob::set(BACKLOG, "10000")?;
    let quiet = || Stdio::null();
    let spawn = |c: &mut Command| c.stdout(quiet()).spawn().map_err(|e| e.to_string());
    let _load = Load(vec![
        spawn(Command::new(&hog).args([
            "--cpu",
            "1",
            "--seconds",
            "10",
            "--nice",
            "-19",
            "--own-session",
            "--name",
            "cruncher",
        ]))?,
        spawn(Command::new(&flood).args([
            "--cpu",
            "0",
            "--seconds",
            "10",
            "--size",
            "1000",
            "--filter-insns",
            "1000",
            "--burst-us",
            "10000",
            "--burst-packets",
            "900",
            "--every-us",
            "30000",
            "--batch",
            "64",
        ]))?,
    ]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (trace, log) = (dir.join("udp.dat"), dir.join("udpping.log"));
    let st = Command::new(whylate())
        .args([
            "record",
            "-e",
            "sched,irq,syscalls:sys_enter_sendto,syscalls:sys_exit_recvfrom",
            "-o",
        ])
        .arg(&trace)
        .arg("--")
        .arg(&ping)
        .args([
            "--tx-cpu",
            "0",
            "--rx-cpu",
            "1",
            "--rx-fifo",
            "50",
            "--every-us",
            "2300",
        ])
        .args(["--count", &PACKETS.to_string(), "--log"])
        .arg(&log)
        .stdout(quiet())
        .stderr(quiet())
        .status()
        .map_err(|e| e.to_string())?;
    if !st.success() {
        return Err(format!("whylate record of udpping failed: {st}"));
    }
    Ok((trace, read_udpping_log(&log)))
}

/// whylate's misses against the receiver's clock, packet by packet: a request cut from
/// the trace starts after the program read its send time (and before the next one's: a
/// sender that fell behind its schedule sends the next datagram at once), and its reply
/// ends before the program read its receive time, so a packet whylate counts late is late
/// by the program's clock; one only the program counts late must be within 50 us of the
/// deadline (the time between the syscalls and the program's clock reads), or be one
/// whose recvfrom() returned in time but whose receiver was then kept in interrupt and
/// softirq work before it could read its clock (`clock_read_held`).
pub(crate) fn misses_match_packets(
    ex: &serde_json::Value,
    truth: &[Packet],
    trace: &Path,
) -> Result<(), String> {
    let starts: Vec<u64> = (ex["misses"].as_array().unwrap().iter())
        .map(|m| m["start_ns"].as_u64().unwrap())
        .collect();
    // The datagram whose send time the program read last before the traced sendto().
    let of = |start: u64| {
        let i = truth.partition_point(|p| p.send <= start).checked_sub(1)?;
        (start - truth[i].send < 300_000).then_some(i)
    };
    for &s in &starts {
        let i = of(s).ok_or(format!("miss at {s} is no datagram of the log"))?;
        if truth[i].latency <= DEADLINE_NS as i64 {
            return Err(format!(
                "datagram {i}: whylate counts it late, its own clock says {} ns",
                truth[i].latency
            ));
        }
    }
    let ours: Vec<usize> = starts.iter().filter_map(|&s| of(s)).collect();
    for (i, p) in truth.iter().enumerate() {
        let late = p.latency > DEADLINE_NS as i64;
        if !late || ours.contains(&i) {
            continue;
        }
        if p.latency > (DEADLINE_NS + 50_000) as i64 && !clock_read_held(trace, p) {
            return Err(format!(
                "datagram {i} was {} ns late by its own clock; whylate did not count it",
                p.latency
            ));
        }
        eprintln!(
            "datagram {i}: {} ns by its own clock, within the clock reads' margin of the deadline",
            p.latency
        );
    }
    Ok(())
}

/// True when the trace shows why the receiver read its clock late for datagram `p`: its
/// recvfrom() returned within the deadline, and from then until the program's receive
/// time its CPU ran only interrupt and softirq work (a NET_RX run at the interrupt exit
/// over it, on the flood's backlog), no switch and no other syscall of the receiver.
fn clock_read_held(trace: &Path, p: &Packet) -> bool {
    let out = Command::new("trace-cmd").arg("report").arg(trace).output();
    let Some(out) = out.ok().filter(|o| o.status.success()) else {
        return false;
    };
    let recv = p.send + p.latency as u64;
    let text = String::from_utf8_lossy(&out.stdout);
    let rx: Vec<(u64, &str)> = (text.lines())
        .filter(|l| l.trim_start().starts_with("udpping-rx-") || l.contains("[001]"))
        .filter_map(|l| Some((line_ns(l)?, l)))
        .filter(|&(ts, _)| ts >= p.send && ts <= recv)
        .collect();
    let Some(exit) = rx.iter().position(|(ts, l)| {
        l.trim_start().starts_with("udpping-rx-")
            && l.contains("sys_exit_recvfrom")
            && *ts <= p.send + DEADLINE_NS
    }) else {
        return false;
    };
    rx[exit + 1..].iter().all(|(_, l)| {
        [
            "softirq_raise:",
            "softirq_entry:",
            "softirq_exit:",
            "irq_handler_entry:",
            "irq_handler_exit:",
        ]
        .iter()
        .any(|k| l.contains(k))
            || l.contains("sched_waking:")
            || l.contains("sched_wakeup:")
    })
}

/// The late datagrams are counted as the receiver counted them, one by one, with
/// overlapping requests paired in order; the chains reach the reply through the
/// deferred NET_RX, and the task that kept ksoftirqd off CPU1 is the first cause.
#[test]
fn a_deferred_net_rx_is_blamed_on_the_task_that_starved_ksoftirqd() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() && skip("not root: the test records and steers loopback packets") {
        return;
    }
    if !have("cc") && skip("no C compiler for the lab programs") {
        return;
    }
    if !Path::new(LO_RPS).exists() && skip("no receive packet steering on lo") {
        return;
    }
    let before = tracefs_state();
    let tmp = tmpdir("udp");
    // WHYLATE_LIVE_KEEP=DIR keeps the recording and the probe's log to look at.
    let dir = match std::env::var_os("WHYLATE_LIVE_KEEP") {
        Some(d) => PathBuf::from(d),
        None => tmp.path().to_path_buf(),
    };
    let (trace, truth) = record_deferral(&dir).unwrap();
    assert_eq!(tracefs_state(), before, "tracefs restored after recording");
    assert_eq!(truth.len(), PACKETS);
    let lost = truth.iter().filter(|p| p.latency < 0).count();
    assert_eq!(lost, 0, "the probe lost datagrams despite the deep backlog");
    let late = truth
        .iter()
        .filter(|p| p.latency > DEADLINE_NS as i64)
        .count();
    let max = truth.iter().map(|p| p.latency).max().unwrap();
    assert!(late >= 5, "the flood must make datagrams late ({late})");
    let out = Command::new(whylate())
        .arg("explain")
        .arg(&trace)
        .args(["--from", "sys_enter_sendto[comm=udpping-tx]"])
        .args(["--to", "sys_exit_recvfrom[comm=udpping-rx]"])
        .args(["--same", "any", "--deadline", "1ms", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ex: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &ex["cycles"];
    eprintln!(
        "udp deferral: program {late} of {PACKETS} late (max {max} ns), whylate {} of {}, {} overlapped",
        c["misses"], c["count"], c["pairing"]["overlapped"]
    );
    assert_eq!(c["count"].as_u64(), Some(PACKETS as u64));
    assert_eq!(c["no_reply"].as_u64(), Some(0));
    assert_eq!(c["pairing"]["mode"], "fifo");
    misses_match_packets(&ex, &truth, &trace).unwrap();
    let first = &ex["causes"][0];
    assert_eq!(
        first["category"], "deferred-to-ksoftirqd",
        "{}",
        ex["causes"]
    );
    assert_eq!(first["culprit"]["comm"], "cruncher", "{first}");
    assert_eq!(first["culprit"]["cpu"], 1, "{first}");
    // Every late datagram's chain reaches its reply through the softirq that carried it.
    for m in ex["misses"].as_array().unwrap() {
        let chain = m["chain"].as_array().unwrap();
        assert!(
            chain.iter().any(|l| l["kind"] == "softirq"
                && l["cpu"] == 1
                && l["what"].as_str().unwrap().contains("NET_RX")),
            "no NET_RX hand-off in {m}"
        );
    }
    assert!(
        !(ex["causes"].as_array().unwrap().iter())
            .any(|c| c["category"] == "device/external" && c["share"].as_f64().unwrap() > 0.05),
        "{}",
        ex["causes"]
    );
}
