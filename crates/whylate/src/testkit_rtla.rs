//! Generated timerlat and osnoise traces, written the way the kernel prints them
//! (kernel/trace/trace_output.c: `#%-5u context %6s timer_latency %9llu ns`;
//! include/trace/events/osnoise.h: `%s:%d start %llu.%09u duration %llu ns`; the osnoise
//! tracer's `%llu %10llu %3llu.%05llu %7llu` and six `%6u` counts), with late
//! activations whose parts are planted. Self-contained (no crate imports), so the
//! command-line tests include it too.
#![allow(dead_code)]

/// What a late activation is made of, ns: the parts of its thread latency.
#[derive(Clone, Debug, Default)]
pub struct Plant {
    /// CPU.
    pub cpu: u32,
    /// Which activation of that CPU (0-based; its id is this + 1).
    pub index: u64,
    /// The timer IRQ's own latency.
    pub irq_lat: u64,
    /// IRQ handlers: (desc, vector, ns).
    pub irqs: Vec<(&'static str, u32, u64)>,
    /// Softirqs: (name, vector, ns).
    pub softirqs: Vec<(&'static str, u32, u64)>,
    /// NMIs, ns.
    pub nmis: Vec<u64>,
    /// Threads: (comm, pid, ns).
    pub threads: Vec<(&'static str, i32, u64)>,
    /// What is left: scheduling and entry/exit.
    pub rest: u64,
    /// A stack saved at the IRQ (innermost first), printed after its IRQ sample as the
    /// `stacktrace` option does.
    pub stack: Vec<&'static str>,
    /// Told by sched and irq tracepoints instead of osnoise events: the IRQ lands in
    /// the first thread, the handlers run on top of it one after the other from 1 us
    /// after the IRQ, then it runs (its time counting from the IRQ, handlers out) until
    /// it switches to the timerlat thread `rest` before the thread's sample. Times are
    /// whole microseconds (the `trace` file's resolution).
    pub tracepoints: bool,
}

impl Plant {
    /// The thread latency these parts add up to.
    pub fn total(&self) -> u64 {
        self.irq_lat
            + self.irqs.iter().map(|x| x.2).sum::<u64>()
            + self.softirqs.iter().map(|x| x.2).sum::<u64>()
            + self.nmis.iter().sum::<u64>()
            + self.threads.iter().map(|x| x.2).sum::<u64>()
            + self.rest
    }
}

/// Trace start, ns.
pub const BASE_NS: u64 = 100_000_000_000;
/// Timer period, ns.
pub const PERIOD_NS: u64 = 1_000_000;
/// The timerlat thread's pid on CPU c is this + c.
pub const THREAD_PID: i32 = 900;

/// The usual IRQ latency of activation `k`: 800..1000 ns.
pub fn usual_irq(k: u64) -> u64 {
    800 + (k % 5) * 50
}

/// The usual thread latency of activation `k`: 3800..4800 ns.
pub fn usual_thread(k: u64) -> u64 {
    usual_irq(k) + 3000 + (k % 7) * 100
}

/// One line at `ns` (printed at microseconds, as the `trace` file does).
fn line(ns: u64, cpu: u32, who: &str, flags: &str, body: &str) -> (u64, String) {
    let us = ns / 1000;
    let l = format!(
        "{who:>16} [{cpu:03}] {flags} {:>5}.{:06}: {body}\n",
        us / 1_000_000,
        us % 1_000_000
    );
    (ns, l)
}

/// `s.nnnnnnnnn`.
fn secs9(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// A timerlat trace: `cpus` CPUs, `n` activations each, every one on time but `late`.
/// With `noise`, the osnoise events of the late ones are in it (what `rtla timerlat -a`
/// enables). Returns the text.
pub fn timerlat_trace(cpus: u32, n: u64, late: &[Plant], noise: bool) -> String {
    let mut out: Vec<(u64, String)> = Vec::new();
    for c in 0..cpus {
        let me = format!("timerlat/{c}-{}", THREAD_PID + c as i32);
        for k in 0..n {
            let expiry = BASE_NS + k * PERIOD_NS + u64::from(c) * 7_000;
            let seq = k + 1;
            let p = late.iter().find(|p| p.cpu == c && p.index == k);
            let (irq_lat, thread_lat) = match p {
                Some(p) => (p.irq_lat, p.total()),
                None => (usual_irq(k), usual_thread(k)),
            };
            let irq_body = format!(
                "#{seq:<5} context {:>6} timer_latency {irq_lat:>9} ns",
                "irq"
            );
            let who = match p {
                Some(p) if p.tracepoints => format!("{}-{}", p.threads[0].0, p.threads[0].1),
                _ => "<idle>-0".into(),
            };
            let mut irq = line(expiry + irq_lat, c, &who, "d.h.", &irq_body);
            if let Some(p) = p.filter(|p| !p.stack.is_empty()) {
                irq.1 += &stack_block(irq.0, c, &p.stack);
            }
            out.push(irq);
            let th_body = format!(
                "#{seq:<5} context {:>6} timer_latency {thread_lat:>9} ns",
                "thread"
            );
            out.push(line(expiry + thread_lat, c, &me, "....", &th_body));
            match p {
                Some(p) if p.tracepoints => {
                    out.extend(tracepoint_lines(p, expiry + irq_lat, expiry + thread_lat))
                }
                Some(p) if noise => out.extend(noise_lines(p, expiry + irq_lat)),
                _ => {}
            }
        }
    }
    out.sort_by_key(|x| x.0);
    let mut s = String::from("# tracer: timerlat\n#\n");
    for (_, l) in out {
        s.push_str(&l);
    }
    s
}

/// A `<stack trace>` block at `ns` (kernel/trace/trace_output.c, `trace_stack_print`:
/// the header as an event of its own, then ` => function` lines).
fn stack_block(ns: u64, cpu: u32, frames: &[&str]) -> String {
    let mut s = line(ns, cpu, "<idle>-0", "d.h.", "<stack trace>").1;
    for f in frames {
        s += &format!(" => {f}\n");
    }
    s
}

/// The sched and irq tracepoints of a late activation whose IRQ was entered at `from`
/// and whose thread ran at `to` (see [`Plant::tracepoints`]): the timer IRQ wakes the
/// timerlat thread (FIFO 95: prio 4) while the first thread (FIFO 97: prio 2) runs.
fn tracepoint_lines(p: &Plant, from: u64, to: u64) -> Vec<(u64, String)> {
    let (comm, pid, _) = p.threads[0];
    let me = format!("{comm}-{pid}");
    let th = THREAD_PID + p.cpu as i32;
    let mut v = vec![line(
        from,
        p.cpu,
        &me,
        "d.h.",
        &format!(
            "sched_wakeup: comm=timerlat/{} pid={th} prio=4 target_cpu={:03}",
            p.cpu, p.cpu
        ),
    )];
    let mut at = from + 1_000;
    for &(desc, vec, d) in &p.irqs {
        v.push(line(
            at,
            p.cpu,
            &me,
            "d.h.",
            &format!("irq_handler_entry: irq={vec} name={desc}"),
        ));
        at += d;
        v.push(line(
            at,
            p.cpu,
            &me,
            "d.h.",
            &format!("irq_handler_exit: irq={vec} ret=handled"),
        ));
    }
    for &(name, vec, d) in &p.softirqs {
        v.push(line(
            at,
            p.cpu,
            &me,
            "..s.",
            &format!("softirq_entry: vec={vec} [action={name}]"),
        ));
        at += d;
        v.push(line(
            at,
            p.cpu,
            &me,
            "..s.",
            &format!("softirq_exit: vec={vec} [action={name}]"),
        ));
    }
    let sw = format!(
        "sched_switch: prev_comm={comm} prev_pid={pid} prev_prio=2 prev_state=R+ ==> next_comm=timerlat/{} next_pid={th} next_prio=4",
        p.cpu
    );
    v.push(line(to - p.rest, p.cpu, &me, "d...", &sw));
    v
}

/// The osnoise events of a late activation whose IRQ was entered at `from`: each part
/// one after the other, starting 500 ns after it.
fn noise_lines(p: &Plant, from: u64) -> Vec<(u64, String)> {
    let mut v = Vec::new();
    let mut at = from + 500;
    let mut ev = |cpu: u32, who: &str, flags: &str, body: String, dur: u64| {
        let start = at;
        at += dur + 200;
        v.push(line(
            start + dur,
            cpu,
            who,
            flags,
            &body.replace("@S", &secs9(start)),
        ));
    };
    for &(desc, vec, d) in &p.irqs {
        let b = format!("irq_noise: {desc}:{vec} start @S duration {d} ns");
        ev(p.cpu, "<idle>-0", "d.h.", b, d);
    }
    for &(name, vec, d) in &p.softirqs {
        let b = format!("softirq_noise: {name:>8}:{vec} start @S duration {d} ns");
        ev(p.cpu, "<idle>-0", "..s.", b, d);
    }
    for &d in &p.nmis {
        let b = format!("nmi_noise: start @S duration {d} ns");
        ev(p.cpu, "<idle>-0", "d.Z.", b, d);
    }
    for &(comm, pid, d) in &p.threads {
        let b = format!("thread_noise: {comm:>8}:{pid} start @S duration {d} ns");
        ev(p.cpu, &format!("{comm}-{pid}"), "....", b, d);
    }
    v
}

/// An osnoise trace: `cpus` CPUs, `n` periods of 1 s each; period `k` of CPU `c` has
/// `noise(c, k)` us of noise in `k % 4 + 1` IRQs, and one `sample_threshold` hit of 20 us
/// per CPU in its first period.
pub fn osnoise_trace(cpus: u32, n: u64) -> String {
    let mut out: Vec<(u64, String)> = Vec::new();
    for c in 0..cpus {
        for k in 0..n {
            let end = BASE_NS + (k + 1) * 1_000_000_000 + u64::from(c) * 1000;
            let noise = osnoise_noise(c, k);
            let runtime = 1_000_000u64;
            let ratio = (runtime - noise) * 10_000_000 / runtime;
            let irq = k % 4 + 1;
            let body = format!(
                "{runtime} {noise:>10} {:>3}.{:05} {:>7} {:>6} {:>6} {:>6} {:>6} {:>6}",
                ratio / 100_000,
                ratio % 100_000,
                noise,
                0,
                0,
                irq,
                1,
                0
            );
            out.push(line(
                end,
                c,
                &format!("osnoise/{c}-{}", 800 + c),
                "....",
                &body,
            ));
        }
        let start = BASE_NS + 500_000_000;
        let b = format!(
            "sample_threshold: start {} duration 20000 ns interference 2",
            secs9(start)
        );
        out.push(line(
            start + 20_000,
            c,
            &format!("osnoise/{c}-{}", 800 + c),
            "....",
            &b,
        ));
    }
    out.sort_by_key(|x| x.0);
    let mut s = String::from("# tracer: osnoise\n#\n");
    for (_, l) in out {
        s.push_str(&l);
    }
    s
}

/// The noise of period `k` on CPU `c`, us: 10..59 and, on CPU 0's period 3, 500.
pub fn osnoise_noise(c: u32, k: u64) -> u64 {
    if c == 0 && k == 3 {
        500
    } else {
        10 + (k * 7 + u64::from(c) * 3) % 50
    }
}

/// Six late activations over four CPUs, each made of different parts.
pub fn planted() -> Vec<Plant> {
    vec![
        Plant {
            cpu: 0,
            index: 10,
            irq_lat: 1_000,
            irqs: vec![("eth0", 33, 60_000)],
            rest: 4_000,
            ..Default::default()
        },
        Plant {
            cpu: 1,
            index: 50,
            irq_lat: 60_000,
            rest: 5_000,
            stack: vec![
                "timerlat_irq",
                "__hrtimer_run_queues",
                "hrtimer_interrupt",
                "__sysvec_apic_timer_interrupt",
                "sysvec_apic_timer_interrupt",
                "asm_sysvec_apic_timer_interrupt",
                "_raw_spin_unlock_irqrestore",
                "frob_poll",
                "frob_ioctl",
                "__x64_sys_ioctl",
            ],
            ..Default::default()
        },
        Plant {
            cpu: 2,
            index: 77,
            irq_lat: 900,
            softirqs: vec![("NET_RX", 3, 30_000)],
            irqs: vec![("eth0", 33, 12_000)],
            rest: 8_100,
            ..Default::default()
        },
        Plant {
            cpu: 3,
            index: 120,
            irq_lat: 850,
            threads: vec![("hog", 4242, 90_000)],
            rest: 3_150,
            ..Default::default()
        },
        Plant {
            cpu: 0,
            index: 200,
            irq_lat: 1_200,
            nmis: vec![55_000],
            threads: vec![("kworker/0:1", 42, 7_000)],
            rest: 2_800,
            ..Default::default()
        },
        Plant {
            cpu: 3,
            index: 240,
            irq_lat: 950,
            threads: vec![("hog", 4242, 120_000)],
            rest: 4_050,
            ..Default::default()
        },
    ]
}
