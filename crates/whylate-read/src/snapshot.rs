//! What the system looked like when a recording started: names that the trace's event
//! stream alone cannot give (which file fd 7 is, which device IRQ 16 serves and where it
//! may run). `whylate record` takes it, adds tasks and descriptors that appear while it
//! records (timed rescans of /proc), and stores it inside the trace.dat; the trace.dat
//! reader gives it back.

use serde::{Deserialize, Serialize};
use std::fs;
use std::path::Path;

/// The trace.dat option id whylate stores its snapshot under. trace-cmd skips option ids
/// it does not know.
pub const OPTION_ID: u16 = 0x5759; // "WY"

/// A task alive at the start.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Task {
    /// Thread id.
    pub tid: i32,
    /// Thread group (process) id.
    pub tgid: i32,
    /// Thread name.
    pub comm: String,
}

/// An open file descriptor.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Fd {
    /// Owning process.
    pub tgid: i32,
    /// Descriptor number.
    pub fd: i32,
    /// What it points at (`/dev/ttyUSB2`, `socket:[1234]`, `pipe:[99]`).
    pub path: String,
    /// CLOCK_MONOTONIC (the recording's `mono` trace clock) when a scan saw it; 0 in
    /// snapshots written before scans were timed.
    #[serde(default)]
    pub seen_ns: u64,
}

/// A hardware interrupt line.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Irq {
    /// IRQ number.
    pub irq: i32,
    /// Chip and device names as /proc/interrupts shows them (`IO-APIC 16-fasteoi ehci_hcd:usb1`).
    pub name: String,
    /// The device action names only (`ehci_hcd:usb1`).
    pub actions: String,
    /// `smp_affinity_list` (`0-1`), when readable.
    pub affinity: Option<String>,
    /// Where the kernel last routed it (`effective_affinity_list`), when readable.
    pub effective: Option<String>,
    /// Interrupt counts per CPU at the start.
    pub counts: Vec<u64>,
}

/// The snapshot.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Snapshot {
    /// `uname -r`.
    pub kernel: String,
    /// `/sys/devices/system/cpu/online`.
    pub online_cpus: String,
    /// An irqbalance daemon was running (it moves IRQs while you measure).
    pub irqbalance: bool,
    /// Tasks.
    pub tasks: Vec<Task>,
    /// File descriptors.
    pub fds: Vec<Fd>,
    /// IRQ lines.
    pub irqs: Vec<Irq>,
    /// The recorder's own process id: its threads show up in the trace too.
    #[serde(default)]
    pub recorder: Option<i32>,
    /// The machine's host name (`/proc/sys/kernel/hostname`): fleet findings are keyed
    /// by it. Empty in snapshots written before it was taken.
    #[serde(default)]
    pub hostname: String,
    /// The boot the recording was made in (`/proc/sys/kernel/random/boot_id`): where it is
    /// this machine's current boot, the trace's PIDs name the same tasks here. Empty in
    /// snapshots written before it was taken.
    #[serde(default)]
    pub boot_id: String,
    /// Wall-clock time the recording started, seconds since the Unix epoch (0 when not
    /// known): the date fleet findings are filed under.
    #[serde(default)]
    pub started_unix_s: u64,
    /// The serial consoles the kernel command line names (`console=ttyS0,115200n8`), with
    /// their line speed: empty when it names none, or in snapshots written before.
    #[serde(default)]
    pub consoles: Vec<ConsoleSpeed>,
}

/// A serial console and its line speed, from the kernel command line.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ConsoleSpeed {
    /// The device (`ttyS0`).
    pub name: String,
    /// Bits per second.
    pub baud: u32,
    /// True when `console=` gave the speed; false when it gave none and this is the
    /// kernel's default for a serial console (9600), which a later `stty` on the port may
    /// have changed.
    pub stated: bool,
}

impl ConsoleSpeed {
    /// Bytes per second the line carries: 10 bits per byte (8N1: a start and a stop bit).
    pub fn bytes_per_s(&self) -> u64 {
        u64::from(self.baud) / 10
    }
}

/// The serial consoles in a kernel command line: each `console=ttyS<n>` (or another
/// `tty*` UART name) with the speed its options give, else 9600 (the kernel's default).
/// Virtual consoles (`tty0`), `hvc`, `netcon` and the like have no line speed and are
/// left out.
pub fn parse_consoles(cmdline: &str) -> Vec<ConsoleSpeed> {
    let mut out: Vec<ConsoleSpeed> = Vec::new();
    for arg in cmdline.split_whitespace() {
        let Some(v) = arg.strip_prefix("console=") else {
            continue;
        };
        let (name, opts) = v.split_once(',').unwrap_or((v, ""));
        // UARTs: ttyS (8250), ttyAMA (PL011), ttyO, ttySAC, ttymxc, ttyLP, ttyPS...;
        // tty0..tty63 are virtual terminals.
        let uart = name.starts_with("tty")
            && name[3..].starts_with(|c: char| c.is_ascii_uppercase() || c.is_ascii_lowercase());
        if !uart {
            continue;
        }
        let digits: String = opts.chars().take_while(|c| c.is_ascii_digit()).collect();
        let (baud, stated) = match digits.parse::<u32>() {
            Ok(b) if b > 0 => (b, true),
            _ => (9600, false),
        };
        out.retain(|c| c.name != name);
        out.push(ConsoleSpeed {
            name: name.to_string(),
            baud,
            stated,
        });
    }
    out
}

impl Snapshot {
    /// The path behind `fd` of process `tgid`.
    pub fn fd_path(&self, tgid: i32, fd: i32) -> Option<&str> {
        self.fds
            .iter()
            .find(|f| f.tgid == tgid && f.fd == fd)
            .map(|f| f.path.as_str())
    }
    /// The thread group of `tid`.
    pub fn tgid(&self, tid: i32) -> Option<i32> {
        self.tasks.iter().find(|t| t.tid == tid).map(|t| t.tgid)
    }
    /// IRQ `n`.
    pub fn irq(&self, n: i32) -> Option<&Irq> {
        self.irqs.iter().find(|i| i.irq == n)
    }

    /// Takes the snapshot from /proc and /sys. Unreadable entries (tasks that exit while
    /// we look) are skipped, never fatal.
    pub fn take() -> Snapshot {
        let read = |p: &str| {
            fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        let mut s = Snapshot {
            kernel: read("/proc/sys/kernel/osrelease"),
            online_cpus: read("/sys/devices/system/cpu/online"),
            hostname: read("/proc/sys/kernel/hostname"),
            boot_id: read(BOOT_ID),
            started_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            ..Snapshot::default()
        };
        Rescan::default().scan(&mut s);
        s.irqbalance = s
            .tasks
            .iter()
            .any(|t| t.tid == t.tgid && t.comm == "irqbalance");
        s.tasks.sort_by_key(|t| t.tid);
        s.fds.sort_by_key(|f| (f.tgid, f.fd));
        s.irqs = parse_interrupts(&fs::read_to_string("/proc/interrupts").unwrap_or_default());
        s.consoles = parse_consoles(&read("/proc/cmdline"));
        for irq in &mut s.irqs {
            let dir = Path::new("/proc/irq").join(irq.irq.to_string());
            irq.affinity = fs::read_to_string(dir.join("smp_affinity_list"))
                .ok()
                .map(|a| a.trim().to_string());
            irq.effective = fs::read_to_string(dir.join("effective_affinity_list"))
                .ok()
                .map(|a| a.trim().to_string());
        }
        s
    }
}

/// Where the kernel says which boot this is (a random UUID made at boot).
pub const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

/// True when `snap` was taken in this machine's current boot: the trace's PIDs are the
/// tasks running here (or exited, never reused by another boot's numbering).
pub fn this_boot(snap: &Snapshot) -> bool {
    let now = fs::read_to_string(BOOT_ID).unwrap_or_default();
    !snap.boot_id.is_empty() && snap.boot_id == now.trim()
}

/// CLOCK_MONOTONIC in ns: what the `mono` trace clock counts.
pub fn mono_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Rescans /proc while a recording runs, adding tasks and descriptors that appeared or
/// changed since the last look (a traced command opens its files after the start).
#[derive(Debug, Default)]
pub struct Rescan {
    tasks: std::collections::HashSet<i32>,
    fds: std::collections::HashMap<(i32, i32), String>,
}

impl Rescan {
    /// Remembers what `s` already holds.
    pub fn new(s: &Snapshot) -> Rescan {
        Rescan {
            tasks: s.tasks.iter().map(|t| t.tid).collect(),
            fds: s
                .fds
                .iter()
                .map(|f| ((f.tgid, f.fd), f.path.clone()))
                .collect(),
        }
    }

    /// One pass over /proc; new tasks and new or renamed descriptors go into `s`.
    pub fn scan(&mut self, s: &mut Snapshot) {
        self.scan_with(s, || {});
    }

    /// `scan`, calling `between` before each /proc entry, task and descriptor: a
    /// recorder pauses there once it has worked a while.
    pub fn scan_with(&mut self, s: &mut Snapshot, mut between: impl FnMut()) {
        let Ok(procs) = fs::read_dir("/proc") else {
            return;
        };
        for p in procs.flatten() {
            between();
            let Some(tgid) = p.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let base = p.path();
            if let Ok(tasks) = fs::read_dir(base.join("task")) {
                for t in tasks.flatten() {
                    between();
                    let Some(tid) = t.file_name().to_str().and_then(|n| n.parse::<i32>().ok())
                    else {
                        continue;
                    };
                    if self.tasks.insert(tid) {
                        let comm = fs::read_to_string(t.path().join("comm"))
                            .map(|c| c.trim_end_matches('\n').to_string())
                            .unwrap_or_default();
                        s.tasks.push(Task { tid, tgid, comm });
                    }
                }
            }
            let now = mono_ns();
            if let Ok(fds) = fs::read_dir(base.join("fd")) {
                for f in fds.flatten() {
                    between();
                    let Some(fd) = f.file_name().to_str().and_then(|n| n.parse::<i32>().ok())
                    else {
                        continue;
                    };
                    let Ok(target) = fs::read_link(f.path()) else {
                        continue;
                    };
                    let path = target.display().to_string();
                    if self.fds.get(&(tgid, fd)) != Some(&path) {
                        self.fds.insert((tgid, fd), path.clone());
                        s.fds.push(Fd {
                            tgid,
                            fd,
                            path,
                            seen_ns: now,
                        });
                    }
                }
            }
        }
    }
}

/// Parses /proc/interrupts: a header of CPU names, then `N: counts... chip hwirq-type actions`.
pub fn parse_interrupts(text: &str) -> Vec<Irq> {
    let mut lines = text.lines();
    let ncpu = lines
        .next()
        .map(|h| {
            h.split_whitespace()
                .filter(|w| w.starts_with("CPU"))
                .count()
        })
        .unwrap_or(0);
    let mut out = Vec::new();
    for line in lines {
        let Some((num, rest)) = line.split_once(':') else {
            continue;
        };
        let Ok(irq) = num.trim().parse::<i32>() else {
            continue; // NMI, LOC, ERR...: not numbered lines.
        };
        let mut words = rest.split_whitespace().peekable();
        let mut counts = Vec::new();
        while counts.len() < ncpu {
            match words.peek().and_then(|w| w.parse::<u64>().ok()) {
                Some(c) => {
                    counts.push(c);
                    words.next();
                }
                None => break,
            }
        }
        let tail: Vec<&str> = words.collect();
        // chip, hwirq-type, then the actions (comma separated, may contain spaces).
        let actions = if tail.len() > 2 {
            tail[2..].join(" ")
        } else {
            String::new()
        };
        out.push(Irq {
            irq,
            name: tail.join(" "),
            actions,
            affinity: None,
            effective: None,
            counts,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    /// PIDs are this machine's only in the boot the snapshot was taken in: another boot's
    /// id, or none (a snapshot written before the id was kept), is not this boot.
    #[test]
    fn this_boot_is_the_snapshots_own_boot_id() {
        let mut s = super::Snapshot::default();
        assert!(!super::this_boot(&s));
        s.boot_id = "00000000-0000-4000-8000-000000000000".into();
        assert!(!super::this_boot(&s));
        let now = std::fs::read_to_string(super::BOOT_ID).unwrap_or_default();
        s.boot_id = now.trim().into();
        // Where /proc says which boot this is (Linux), its own id is this boot.
        assert_eq!(super::this_boot(&s), !s.boot_id.is_empty());
    }

    use super::*;

    #[test]
    fn serial_consoles_and_their_speed_come_from_the_command_line() {
        let c = parse_consoles("BOOT_IMAGE=/vmlinuz console=tty0 console=ttyS0 quiet");
        assert_eq!(
            c,
            vec![ConsoleSpeed {
                name: "ttyS0".into(),
                baud: 9600,
                stated: false
            }]
        );
        assert_eq!(c[0].bytes_per_s(), 960);
        let c = parse_consoles("console=ttyAMA0,115200n8 console=hvc0 console=ttyS1,921600");
        assert_eq!(c.len(), 2);
        assert_eq!(
            (c[0].name.as_str(), c[0].baud, c[0].stated),
            ("ttyAMA0", 115200, true)
        );
        assert_eq!(c[0].bytes_per_s(), 11520);
        assert_eq!((c[1].name.as_str(), c[1].baud), ("ttyS1", 921600));
        assert!(parse_consoles("root=/dev/vda console=tty1 console=netcon0").is_empty());
    }

    #[test]
    fn parses_proc_interrupts() {
        let t = "           CPU0       CPU1       \n  0:         44          0   IO-APIC   2-edge      timer\n 16:       1234         56   IO-APIC  16-fasteoi   ehci_hcd:usb1, uhci_hcd:usb2\nNMI:          0          0   Non-maskable interrupts\n";
        let v = parse_interrupts(t);
        assert_eq!(v.len(), 2);
        assert_eq!(v[1].irq, 16);
        assert_eq!(v[1].counts, vec![1234, 56]);
        assert_eq!(v[1].actions, "ehci_hcd:usb1, uhci_hcd:usb2");
    }

    #[test]
    fn a_live_snapshot_sees_this_process() {
        let s = Snapshot::take();
        let me = std::process::id() as i32;
        assert_eq!(s.tgid(me), Some(me));
        assert!(s.fds.iter().any(|f| f.tgid == me));
        let j = serde_json::to_string(&s).unwrap();
        let back: Snapshot = serde_json::from_str(&j).unwrap();
        assert_eq!(back, s);
    }
}
