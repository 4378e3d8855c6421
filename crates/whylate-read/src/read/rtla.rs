//! The events of the kernel's real-time latency tracers, decoded from their fields:
//! timerlat samples, osnoise noise events (`irq_noise`, `softirq_noise`, `thread_noise`,
//! `nmi_noise`), `sample_threshold` hits and the osnoise tracer's period summaries.
//!
//! Every reader gives them as generic events ([`crate::event::Kind::Other`]); their
//! fields come as the kernel's print format (`local_timer:236 start 54.029328123
//! duration 932 ns`, ftrace text) or as `key=value` pairs (a trace.dat's raw fields):
//! [`parse`] reads both. The timeline keeps them (`timeline::rtla`).

use crate::event::fields;

/// The context of a timerlat sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LatCtx {
    /// The timer's IRQ handler ran: its latency from the timer's expiry.
    Irq,
    /// The timerlat thread ran: its latency from the same expiry.
    Thread,
    /// User-space timerlat: the thread returned to user space.
    UserRet,
}

impl LatCtx {
    /// `irq`, `thread`, `user-ret` (as the tracer prints them).
    pub fn name(self) -> &'static str {
        match self {
            LatCtx::Irq => "irq",
            LatCtx::Thread => "thread",
            LatCtx::UserRet => "user-ret",
        }
    }

    /// From the tracer's word or its number (`context=1` in a trace.dat).
    pub fn parse(s: &str) -> Option<LatCtx> {
        match s {
            "irq" | "0" => Some(LatCtx::Irq),
            "thread" | "1" => Some(LatCtx::Thread),
            "user-ret" | "2" => Some(LatCtx::UserRet),
            _ => None,
        }
    }
}

/// What kind of noise an osnoise event reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NoiseKind {
    /// `irq_noise`: a hard IRQ handler.
    Irq,
    /// `softirq_noise`.
    Softirq,
    /// `thread_noise`: another thread ran.
    Thread,
    /// `nmi_noise`.
    Nmi,
}

impl NoiseKind {
    /// The event's name.
    pub fn event(self) -> &'static str {
        match self {
            NoiseKind::Irq => "irq_noise",
            NoiseKind::Softirq => "softirq_noise",
            NoiseKind::Thread => "thread_noise",
            NoiseKind::Nmi => "nmi_noise",
        }
    }
}

/// One period summary of the osnoise tracer (its times are microseconds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Period {
    /// When it was printed (the period's end).
    pub ts: u64,
    /// The CPU.
    pub cpu: u32,
    /// The period's runtime, us.
    pub runtime_us: u64,
    /// Noise in it, us.
    pub noise_us: u64,
    /// The largest single noise, us.
    pub max_us: u64,
    /// Interference counts: hardware, NMI, IRQ, softirq, thread.
    pub counts: [u64; 5],
}

/// One parsed real-time tracer event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// A timerlat sample: activation id, context, latency ns.
    Lat(u64, LatCtx, u64),
    /// A noise interval: kind, name, id, start, duration.
    Noise(NoiseKind, &'a str, i32, u64, u64),
    /// A `sample_threshold` hit: start, duration, interference.
    Threshold(u64, u64, u64),
    /// An osnoise period summary.
    Period(Period),
}

/// The largest duration a value may hold, ns (about 104 days): no latency or noise of a
/// real trace comes near it, and sums and shares of values below it stay exact. A
/// duration above it (`u64::MAX`, a corrupted field) is not understood. Start times are
/// times since boot and only refused when they overflow.
pub const MAX_NS: u64 = 1 << 53;

/// True for the names of these tracers' events: one that [`parse`] cannot read is not
/// understood, never another event.
pub fn is_rtla_event(name: &str) -> bool {
    matches!(
        name,
        "timerlat"
            | "osnoise"
            | "sample_threshold"
            | "irq_noise"
            | "softirq_noise"
            | "thread_noise"
            | "nmi_noise"
    )
}

/// A duration in ns, when it is a number a trace can hold (see [`MAX_NS`]).
fn ns(s: &str) -> Option<u64> {
    s.parse::<u64>().ok().filter(|&v| v <= MAX_NS)
}

/// Reads a generic event named `name` with `text` as one of these tracers' events, in
/// either form its fields come in; None for any other event, and for one whose values
/// are not numbers a trace can hold (a negative duration, one past 64 bits or
/// [`MAX_NS`]).
pub fn parse<'a>(name: &str, text: &'a str) -> Option<Parsed<'a>> {
    let kind = match name {
        "timerlat" => return timerlat(text),
        "osnoise" => return period(text),
        "sample_threshold" => {
            let (start, dur, rest) = start_duration(text)?;
            // The kernel prints `interference N` in some versions and `interferences N`
            // in others (the osnoise documentation shows the latter).
            let word = rest.trim();
            let counted =
                (word.strip_prefix("interferences")).or_else(|| word.strip_prefix("interference"));
            let intf = match counted {
                Some(n) => n.trim().parse().ok()?,
                None => kv(text, "interference").or_else(|| kv(text, "interferences"))?,
            };
            return Some(Parsed::Threshold(start, dur, intf));
        }
        "irq_noise" => NoiseKind::Irq,
        "softirq_noise" => NoiseKind::Softirq,
        "thread_noise" => NoiseKind::Thread,
        "nmi_noise" => NoiseKind::Nmi,
        _ => return None,
    };
    let (start, dur, _) = start_duration(text)?;
    if kind == NoiseKind::Nmi {
        return Some(Parsed::Noise(kind, "", -1, start, dur));
    }
    // `desc:vector start ...` (text) or `desc=X vector=N ...` / `comm=X pid=N ...`.
    let (who, id) = match text.find(" start ") {
        Some(p) if !text[..p].contains('=') => {
            let w = text[..p].trim();
            let c = w.rfind(':')?;
            (w[..c].trim(), w[c + 1..].trim().parse().ok()?)
        }
        _ => {
            let (nk, ik) = match kind {
                NoiseKind::Irq => ("desc", "vector"),
                NoiseKind::Softirq => ("", "vector"),
                _ => ("comm", "pid"),
            };
            let who = fields(text).find(|(k, _)| *k == nk).map_or("", |x| x.1);
            (who, kv(text, ik)? as i32)
        }
    };
    Some(Parsed::Noise(kind, who, id, start, dur))
}

/// A numeric `key=value` field.
fn kv(text: &str, key: &str) -> Option<u64> {
    fields(text).find(|(k, _)| *k == key)?.1.parse().ok()
}

/// A `key=value` field that holds ns.
fn kv_ns(text: &str, key: &str) -> Option<u64> {
    kv(text, key).filter(|&v| v <= MAX_NS)
}

/// `start S.NNNNNNNNN duration D ns` (text) or `start=NS duration=D` (raw), and what
/// follows in the text form.
fn start_duration(text: &str) -> Option<(u64, u64, &str)> {
    if let Some(p) = text.find("start ") {
        let r = &text[p + 6..];
        let (s, r) = r.trim_start().split_once(' ')?;
        let (sec, frac) = s.split_once('.')?;
        if frac.len() != 9 {
            return None;
        }
        // A start is a time since boot (or cycles, on x86-tsc): only overflow is
        // refused; MAX_NS bounds durations.
        let start = (sec.parse::<u64>().ok()?)
            .checked_mul(1_000_000_000)?
            .checked_add(frac.parse::<u64>().ok()?)?;
        let r = r.trim_start().strip_prefix("duration")?.trim_start();
        let (d, rest) = r.split_once(' ')?;
        let rest = rest.trim_start().strip_prefix("ns")?;
        return Some((start, ns(d)?, rest));
    }
    Some((kv(text, "start")?, kv_ns(text, "duration")?, ""))
}

/// `#seq context C timer_latency N ns`, or `seqnum=N context=C timer_latency=N`.
fn timerlat(text: &str) -> Option<Parsed<'_>> {
    if let Some(r) = text.trim_start().strip_prefix('#') {
        let mut w = r.split_whitespace();
        let seq = w.next()?.parse().ok()?;
        (w.next()? == "context").then_some(())?;
        let ctx = LatCtx::parse(w.next()?)?;
        (w.next()? == "timer_latency").then_some(())?;
        let lat = ns(w.next()?)?;
        (w.next()? == "ns").then_some(())?;
        return Some(Parsed::Lat(seq, ctx, lat));
    }
    let ctx = LatCtx::parse(fields(text).find(|(k, _)| *k == "context")?.1)?;
    Some(Parsed::Lat(
        kv(text, "seqnum")?,
        ctx,
        kv_ns(text, "timer_latency")?,
    ))
}

/// The osnoise tracer's period line: `RUNTIME NOISE PCT MAX HW NMI IRQ SIRQ THREAD`, or
/// its raw fields.
fn period(text: &str) -> Option<Parsed<'_>> {
    if text.contains('=') {
        let k = |n| kv(text, n);
        return Some(Parsed::Period(Period {
            ts: 0,
            cpu: 0,
            runtime_us: k("runtime")?,
            noise_us: k("noise")?,
            max_us: k("max_sample")?,
            counts: [
                k("hw_count")?,
                k("nmi_count")?,
                k("irq_count")?,
                k("softirq_count")?,
                k("thread_count")?,
            ],
        }));
    }
    let w: Vec<&str> = text.split_whitespace().collect();
    let [rt, noise, pct, max, hw, nmi, irq, sirq, th] = w.as_slice() else {
        return None;
    };
    pct.split_once('.')?;
    let n = |s: &str| s.parse::<u64>().ok();
    Some(Parsed::Period(Period {
        ts: 0,
        cpu: 0,
        runtime_us: n(rt)?,
        noise_us: n(noise)?,
        max_us: n(max)?,
        counts: [n(hw)?, n(nmi)?, n(irq)?, n(sirq)?, n(th)?],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timerlat_lines_in_both_forms() {
        let t = "#1     context    irq timer_latency       932 ns";
        assert_eq!(parse("timerlat", t), Some(Parsed::Lat(1, LatCtx::Irq, 932)));
        let t = "#12345 context thread timer_latency     11700 ns";
        assert_eq!(
            parse("timerlat", t),
            Some(Parsed::Lat(12345, LatCtx::Thread, 11700))
        );
        let t = "#7     context user-ret timer_latency     20000 ns";
        assert_eq!(
            parse("timerlat", t),
            Some(Parsed::Lat(7, LatCtx::UserRet, 20000))
        );
        let raw = "seqnum=3 context=1 timer_latency=5000";
        assert_eq!(
            parse("timerlat", raw),
            Some(Parsed::Lat(3, LatCtx::Thread, 5000))
        );
        assert_eq!(
            parse("timerlat", "#1 context bogus timer_latency 1 ns"),
            None
        );
    }

    #[test]
    fn noise_events_in_both_forms() {
        let t = "local_timer:236 start 54.029328123 duration 932 ns";
        assert_eq!(
            parse("irq_noise", t),
            Some(Parsed::Noise(
                NoiseKind::Irq,
                "local_timer",
                236,
                54_029_328_123,
                932
            ))
        );
        let t = "     TIMER:1 start 54.000000100 duration 2500 ns";
        assert_eq!(
            parse("softirq_noise", t),
            Some(Parsed::Noise(
                NoiseKind::Softirq,
                "TIMER",
                1,
                54_000_000_100,
                2500
            ))
        );
        let t = "kworker/0:1:42 start 1.000000000 duration 7000 ns";
        assert_eq!(
            parse("thread_noise", t),
            Some(Parsed::Noise(
                NoiseKind::Thread,
                "kworker/0:1",
                42,
                1_000_000_000,
                7000
            ))
        );
        let t = "start 2.000000005 duration 300 ns";
        assert_eq!(
            parse("nmi_noise", t),
            Some(Parsed::Noise(NoiseKind::Nmi, "", -1, 2_000_000_005, 300))
        );
        let raw = "desc=eth0 vector=33 start=77 duration=5";
        assert_eq!(
            parse("irq_noise", raw),
            Some(Parsed::Noise(NoiseKind::Irq, "eth0", 33, 77, 5))
        );
        let t = "start 3.000000000 duration 40000 ns interference 3";
        assert_eq!(
            parse("sample_threshold", t),
            Some(Parsed::Threshold(3_000_000_000, 40000, 3))
        );
        let t = "start 5789.858404555 duration 8812 ns interferences 2";
        assert_eq!(
            parse("sample_threshold", t),
            Some(Parsed::Threshold(5_789_858_404_555, 8812, 2))
        );
        assert_eq!(
            parse("sample_threshold", "start=1 duration=2 interference=4"),
            Some(Parsed::Threshold(1, 2, 4))
        );
    }

    #[test]
    fn values_no_trace_can_hold_are_not_read() {
        for bad in [
            "local_timer:236 start 54.029328123 duration -40000 ns",
            "local_timer:236 start 54.029328123 duration 99999999999999999999999 ns",
            "local_timer:236 start 54.029328123 duration 18446744073709551615 ns",
            "local_timer:236 start 99999999999999.029328123 duration 5 ns",
        ] {
            assert_eq!(parse("irq_noise", bad), None, "{bad}");
        }
        let t = "#1 context thread timer_latency 18446744073709551615 ns";
        assert_eq!(parse("timerlat", t), None);
        assert!(is_rtla_event("irq_noise") && !is_rtla_event("sched_switch"));
        // A start past 2^53 ns (a host up 200 days) is a time, and reads.
        let t = "local_timer:236 start 17280000.000000001 duration 932 ns";
        assert!(parse("irq_noise", t).is_some());
    }

    #[test]
    fn period_lines() {
        let t = "1000000        190  99.98100       9     18      0   1007     18      1";
        let Some(Parsed::Period(p)) = parse("osnoise", t) else {
            panic!("not a period")
        };
        assert_eq!((p.runtime_us, p.noise_us, p.max_us), (1_000_000, 190, 9));
        assert_eq!(p.counts, [18, 0, 1007, 18, 1]);
    }
}
