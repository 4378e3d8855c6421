//! Issue 68 item 1: the ready time of a reply, whatever way its reader waits. lab/frob's
//! client in each shape real clients have (seed 000's VMIN=0 raw tty, a non-blocking read
//! loop, a blocking read with VTIME, ppoll, pselect, epoll_wait, a UNIX socket with
//! SO_RCVTIMEO) asks a device that answers after 12 ms; past its 3.5 ms timeout it
//! complains, sleeps 20 ms and then reads. Each is recorded with seed 000's events
//! (raw_syscalls, sched, irq, workqueue: no timer events, so the wakeup out of the sleep
//! is a hardirq with no handler) and with named syscalls and hrtimer events. Cycle by
//! cycle, whylate's ready time must lie after the device's own write() call and no later
//! than the client's read; where the client had given up and slept while the reply was
//! there, whylate must say it read later than the reply was ready, and only there.

use super::frob::{record_frob_with, FROB_CYCLE};
use super::*;

/// The client's shapes of waiting (lab/frob's --reader).
const READERS: [&str; 7] = [
    "raw0", "nonblock", "vtime", "poll", "select", "epoll", "socket",
];

/// Seed 000's recording: syscalls as raw numbers, no timer events. The busy-polling
/// readers call read() millions of times: its entries, and exits without data, are
/// filtered out in the kernel (x86_64: read is 0).
const SEED_EVENTS: [&str; 6] = [
    "sched/sched_switch",
    "sched/sched_waking",
    "sched/sched_wakeup",
    "irq",
    "workqueue",
    "raw_syscalls",
];

/// Named syscalls and the hrtimer events, as the other frob tests record.
const NAMED_EVENTS: [&str; 12] = [
    "sched/sched_switch",
    "sched/sched_waking",
    "sched/sched_wakeup",
    "timer/hrtimer_start",
    "timer/hrtimer_expire_entry",
    "timer/hrtimer_expire_exit",
    "irq",
    "workqueue",
    "syscalls/sys_enter_write",
    "syscalls/sys_exit_write",
    "syscalls/sys_exit_read",
    "syscalls/sys_enter_clock_nanosleep",
];

#[test]
fn the_ready_time_follows_the_device_whatever_way_the_reader_waits() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() && skip("not root: tracefs needs root") {
        return;
    }
    if !Path::new(frob::WQ_MASK).exists()
        && skip("no unbound workqueue cpumask to pin the tty work")
    {
        return;
    }
    let tmp = tmpdir("reader-shapes");
    let dir = tmp.path();
    let frob = match build_lab("frob", dir) {
        Ok(p) => p,
        Err(e) => {
            skip(&e);
            return;
        }
    };
    let seed_filters = [
        ("raw_syscalls/sys_enter", "id != 0"),
        ("raw_syscalls/sys_exit", "id != 0 || ret > 0"),
    ];
    let named_filters = [("syscalls/sys_exit_read", "ret > 0")];
    let mut summary = Vec::new();
    for reader in READERS {
        for (set, events, filters) in [
            ("seed", &SEED_EVENTS[..], &seed_filters[..]),
            ("named", &NAMED_EVENTS[..], &named_filters[..]),
        ] {
            let args = [
                "--cycles",
                "16",
                "--client-cpu",
                "0",
                "--device-cpu",
                "1",
                "--hog-cpu",
                "-1",
                "--reply-us",
                "12000",
                "--give-up-sleep-us",
                "20000",
                "--reader",
                reader,
            ];
            let name = format!("{reader}-{set}.txt");
            let trace = match record_frob_with(dir, &frob, &name, &args, events, filters) {
                Ok((t, ..)) => t,
                Err(e) => {
                    skip(&e);
                    return;
                }
            };
            let log = read_log(&dir.join("frob.log"));
            let (slept, later) = check(&trace, &log, &format!("{reader}, {set} events"));
            summary.push(format!(
                "{reader}/{set}: slept through {slept}, read later {later}"
            ));
        }
    }
    eprintln!("reader shapes: {}", summary.join(", "));
}

/// Per cycle: (client wrote, client read, device called write, device's write returned),
/// on the trace's clock.
fn read_log(path: &Path) -> Vec<[u64; 4]> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Vec<u64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
            [v[1], v[2], v[5], v[6]]
        })
        .collect()
}

/// Checks each cycle's ready and read times against the client's and the device's own
/// clocks; returns (cycles the client slept through with the reply there, cycles whylate
/// says were read later than ready).
fn check(trace: &Path, log: &[[u64; 4]], what: &str) -> (usize, u64) {
    let out = Command::new(whylate())
        .args(["explain", "--json", "--top", "100"])
        .args(FROB_CYCLE)
        .args(["--deadline", "3.5ms"])
        .arg(trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let fail = |msg: String| -> ! {
        let k = keep_for_failure("reader-shapes", &[trace]);
        panic!("{what}: {msg}; {k}")
    };
    if j["cycles"]["count"].as_u64() != Some(log.len() as u64) {
        fail(format!(
            "{} cycles, the client made {}",
            j["cycles"],
            log.len()
        ));
    }
    // Every reply came after 12 ms: every cycle is a miss, listed by start.
    let mut misses: Vec<&serde_json::Value> = j["misses"].as_array().unwrap().iter().collect();
    if misses.len() != log.len() {
        fail(format!("{} misses of {} cycles", misses.len(), log.len()));
    }
    misses.sort_by_key(|m| m["start_ns"].as_u64());
    // ftrace text prints microseconds rounded to the nearest: compare at that resolution.
    const HALF_US: u64 = 500;
    let mut slept = 0;
    for (m, &[w, read, call, _]) in misses.iter().zip(log) {
        let start = m["start_ns"].as_u64().unwrap();
        let ready = start + m["duration_ns"].as_u64().unwrap();
        let read_at = start + m["read_ns"].as_u64().unwrap_or(ready - start);
        // The client reads its clock before its write() enters the kernel, the device
        // calls write() before the reply is ready.
        let ok = start + HALF_US >= w
            && start < call
            && ready + HALF_US > call
            && ready <= read_at
            && read_at <= read + HALF_US;
        if !ok {
            fail(format!("cycle at {start}: client wrote {w}, device called write {call}, whylate's ready {ready}, read {read_at}, client read {read}"));
        }
        // The client gave up and slept when it read more than 20 ms after its request
        // (its sleep is 20 ms; a reply at 12 ms is otherwise read when it comes). Where
        // the device wrote more than 1 ms before that read, the reply waited for the
        // sleeping reader, and whylate must say when it was ready; and whylate says so
        // only of a reader that had given up.
        let gave_up = read > w + 20_000_000;
        if gave_up && call + 1_000_000 < read {
            slept += 1;
            if m["read_ns"].is_null() {
                fail(format!("cycle at {start}: the client read at {read}, the device wrote at {call}, but whylate has no ready time before the read"));
            }
        }
        if !m["read_ns"].is_null() && !gave_up {
            fail(format!("cycle at {start}: whylate says read later than ready, but the client read at {read}, {} ns after its request, without sleeping", read - w));
        }
    }
    let later = j["cycles"]["read"]["later"].as_u64().unwrap_or(0);
    (slept, later)
}
