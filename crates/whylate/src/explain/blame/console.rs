//! Kernel messages printed to a console inside a stretch in which a CPU took no interrupt
//! (seeds 001 and 004): printk prints each message from the context that logged it, with
//! interrupts off, until every console has it. When the trace holds printk:console
//! events there, the stretch is that mechanism: how many lines and bytes, at what rate,
//! against the line speed when the recording says it.

use crate::snapshot::ConsoleSpeed;
use crate::timeline::Timeline;
use crate::units::dur;

/// The messages one task logged on one CPU in a stretch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::explain) struct Logged {
    /// How many.
    pub lines: u32,
    /// Their bytes, each with the newline the console adds.
    pub bytes: u64,
    /// When the first was logged.
    pub first: u64,
}

/// The messages `tid` logged on `cpu` in `[a, b]` (printk:console), if any.
pub(in crate::explain) fn logged(
    tl: &Timeline,
    cpu: u32,
    tid: i32,
    a: u64,
    b: u64,
) -> Option<Logged> {
    let from = tl.console.partition_point(|l| l.ts < a);
    let mut out: Option<Logged> = None;
    for l in tl.console[from..].iter().take_while(|l| l.ts <= b) {
        if l.cpu != cpu || l.tid != tid {
            continue;
        }
        let o = out.get_or_insert(Logged {
            lines: 0,
            bytes: 0,
            first: l.ts,
        });
        o.lines += 1;
        o.bytes += u64::from(l.bytes);
    }
    out
}

/// Bytes per second, as `45.2 kB/s` / `960 B/s`.
fn rate(bytes_per_s: f64) -> String {
    if bytes_per_s >= 10_000.0 {
        format!("{:.1} kB/s", bytes_per_s / 1000.0)
    } else {
        format!("{bytes_per_s:.0} B/s")
    }
}

/// What the stretch says about the console: the lines and bytes, the rate over `ns` (from
/// the first line to the end of the stretch), and that rate against the serial consoles'
/// line speed, or that the trace does not give it. One clause, starting lower case.
pub(in crate::explain) fn words(l: &Logged, ns: u64, consoles: &[ConsoleSpeed]) -> String {
    let s = if l.lines == 1 { "" } else { "s" };
    let got = l.bytes as f64 * 1e9 / ns.max(1) as f64;
    let head = format!(
        "it logged {} kernel message{s} ({} bytes, printk:console) and printk printed to the console from its own context with interrupts off: {} bytes in {} is {}",
        l.lines,
        l.bytes,
        l.bytes,
        dur(ns),
        rate(got)
    );
    if consoles.is_empty() {
        return format!(
            "{head}; the trace does not give the console's line speed (a `whylate record` trace.dat reads it from console=; at 115200 baud 8N1 a line carries 11.5 kB/s)"
        );
    }
    // Every console gets every message, one after the other.
    let wire_ns: u64 = consoles
        .iter()
        .map(|c| l.bytes * 1_000_000_000 / c.bytes_per_s().max(1))
        .sum();
    let names: Vec<String> = consoles
        .iter()
        .map(|c| {
            let how = if c.stated {
                "from console="
            } else {
                "assumed: console= gives none and 9600 is the kernel's default"
            };
            format!("{} at {} baud ({how})", c.name, c.baud)
        })
        .collect();
    let verdict = if ns * 2 < wire_ns {
        "faster than the line could carry them, so its speed did not pace the output: the port is emulated (a VM's UART, each byte a trapped port write) or the speed was changed after boot"
    } else if ns > wire_ns * 2 {
        "slower than the line allows: the driver spends more than the wire time per byte (an 8250 driver can wait for the transmitter to empty after every byte)"
    } else {
        "about what the line carries: its speed paced the output"
    };
    format!(
        "{head}; on the wire of {} the bytes take {}: {verdict}",
        names.join(", "),
        dur(wire_ns)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::ConsoleLine;

    fn tl(lines: &[(u64, u32, i32, u32)]) -> Timeline {
        Timeline {
            console: lines
                .iter()
                .map(|&(ts, cpu, tid, bytes)| ConsoleLine {
                    ts,
                    cpu,
                    tid,
                    bytes,
                })
                .collect(),
            ..Timeline::default()
        }
    }

    #[test]
    fn only_the_tasks_lines_on_its_cpu_in_the_stretch_count() {
        let t = tl(&[
            (900, 1, 9, 50),
            (1_000, 1, 9, 119),
            (1_500, 0, 9, 30),
            (2_000, 1, 7, 40),
            (2_500, 1, 9, 121),
            (9_000, 1, 9, 10),
        ]);
        let l = logged(&t, 1, 9, 1_000, 3_000).unwrap();
        assert_eq!(
            l,
            Logged {
                lines: 2,
                bytes: 240,
                first: 1_000
            }
        );
        assert_eq!(logged(&t, 1, 9, 3_000, 8_000), None);
    }

    #[test]
    fn the_rate_is_weighed_against_the_line_speed_or_said_unknown() {
        let l = Logged {
            lines: 1,
            bytes: 120,
            first: 0,
        };
        // 120 bytes in 1.3 ms: 92.3 kB/s.
        let w = words(&l, 1_300_000, &[]);
        assert!(w.starts_with("it logged 1 kernel message (120 bytes, printk:console) and printk printed to the console from its own context with interrupts off: 120 bytes in 1.300 ms is 92.3 kB/s; the trace does not give the console's line speed"), "{w}");
        // At the 9600-baud default the line needs 125 ms for them: emulated.
        let slow = ConsoleSpeed {
            name: "ttyS0".into(),
            baud: 9600,
            stated: false,
        };
        let w = words(&l, 1_300_000, std::slice::from_ref(&slow));
        assert!(w.contains("on the wire of ttyS0 at 9600 baud (assumed: console= gives none and 9600 is the kernel's default) the bytes take 125.000 ms: faster than the line could carry them"), "{w}");
        // Seed 001: 115200 baud, about 2500 B/s measured: 120 bytes in 48 ms.
        let fast = ConsoleSpeed {
            name: "ttyS0".into(),
            baud: 115_200,
            stated: true,
        };
        let w = words(&l, 48_000_000, std::slice::from_ref(&fast));
        assert!(w.contains("is 2500 B/s; on the wire of ttyS0 at 115200 baud (from console=) the bytes take 10.417 ms: slower than the line allows"), "{w}");
        let w = words(&l, 11_000_000, &[fast]);
        assert!(w.contains("about what the line carries"), "{w}");
    }
}
