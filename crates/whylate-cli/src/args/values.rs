//! Option values checked while parsing: durations with units, time windows, measures,
//! softirq vectors, rates, streams.

use whylate::measure::{Bound, Measure};
use whylate::selector::Selector;

/// `--window A..B`: each side absolute, relative to the first event, or open.
pub type Window = (Option<Bound>, Option<Bound>);

/// One `--measure` name.
pub(super) fn measure(s: &str) -> Result<Measure, String> {
    Measure::parse(s.trim()).ok_or_else(|| {
        let all = Measure::names();
        let close = whylate::suggest::closest(s, all.iter().copied(), 3);
        format!(
            "unknown measure{}; known: {}",
            whylate::suggest::did_you_mean(&close),
            all.join(", ")
        )
    })
}

/// `--softirq`: a vector's name or number, checked here so a typo is a usage error.
pub(super) fn softirq_arg(s: &str) -> Result<String, String> {
    whylate::event::softirq_vector(s).map(|_| s.trim().to_string())
}

/// `--deadline`.
pub(super) fn deadline(s: &str) -> Result<u64, String> {
    duration(
        s,
        "a zero deadline makes every cycle a miss; give the longest time that is still on time, e.g. 3.5ms",
    )
}

/// `--interval`.
pub(super) fn interval(s: &str) -> Result<u64, String> {
    duration(s, "an interval must be longer than 0")
}

/// `--func`.
pub(super) fn func_glob(s: &str) -> Result<whylate::glob::Glob, String> {
    whylate::glob::Glob::new(s)
}

/// `--event`: a selector, checked here so a typo is a usage error.
pub(super) fn stream(s: &str) -> Result<String, String> {
    Selector::parse(s)
        .map(|_| s.to_string())
        .map_err(|e| e.to_string())
}

/// `--expect`: events (or units of the summed field) per second, or a serial line speed
/// in baud, 8N1 (a start bit, 8 data bits, a stop bit: 10 bits a byte).
pub(super) fn expected_rate(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, per_bit) = match t.strip_suffix("baud").or_else(|| t.strip_suffix("bd")) {
        Some(n) => (n.trim(), true),
        None => (t.strip_suffix("/s").unwrap_or(t).trim(), false),
    };
    let v: f64 = num.parse().map_err(|_| {
        format!(
            "expected a rate per second (11520, 11520/s) or a line speed (115200baud), found {s:?}"
        )
    })?;
    if !(v.is_finite() && v > 0.0) {
        return Err(format!("a rate must be above 0, found {s:?}"));
    }
    Ok(if per_bit { v / 10.0 } else { v })
}

/// `record --duration`.
pub(super) fn record_duration(s: &str) -> Result<u64, String> {
    duration(
        s,
        "a recording must last longer than 0 (or leave --duration out: until Ctrl-C)",
    )
}

/// Seconds as a trace prints them (`93115.324019`) to ns, exactly.
pub fn parse_secs(s: &str) -> Option<u64> {
    let (i, f) = s.split_once('.').unwrap_or((s, ""));
    if f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let i: u64 = if i.is_empty() { 0 } else { i.parse().ok()? };
    let mut frac: u64 = if f.is_empty() { 0 } else { f.parse().ok()? };
    for _ in f.len()..9 {
        frac *= 10;
    }
    i.checked_mul(1_000_000_000)?.checked_add(frac)
}

fn bound(s: &str) -> Result<Option<Bound>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    let (rel, body) = match s.strip_prefix('+') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let ns = parse_duration(body)
        .filter(|_| body.ends_with('s'))
        .or_else(|| parse_secs(body))
        .ok_or_else(|| format!("{s:?} is not a time in seconds (e.g. 93115.3240 or +1.5)"))?;
    Ok(Some(if rel { Bound::Rel(ns) } else { Bound::Abs(ns) }))
}

/// `--window A..B`; a window that ends before it starts is refused (sides of different
/// kinds, absolute and `+S`, are compared once the trace's start is known).
pub fn window(s: &str) -> Result<Window, String> {
    let (a, b) = s.split_once("..").ok_or("expected A..B")?;
    let (a, b) = (bound(a)?, bound(b)?);
    if let (Some(x), Some(y)) = (a, b) {
        let reversed = match (x, y) {
            (Bound::Abs(x), Bound::Abs(y)) | (Bound::Rel(x), Bound::Rel(y)) => x > y,
            _ => false,
        };
        if reversed {
            return Err(format!(
                "{s:?} ends before it starts: expected A..B with A <= B"
            ));
        }
    }
    Ok((a, b))
}

/// `1s`, `100ms`, `500us`, `250ns`, `1.5ms`.
pub fn parse_duration(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mul) = if let Some(n) = s.strip_suffix("ns") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix("us") {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix("µs") {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e9)
    } else {
        return None;
    };
    let v: f64 = num.trim().parse().ok()?;
    (v.is_finite() && v >= 0.0).then(|| (v * mul).round() as u64)
}

/// The longest duration accepted: beyond it a value is a typo (a unit forgotten), and
/// cutting it to fit would hide that.
const MAX_DURATION_NS: u64 = 365 * 86_400 * 1_000_000_000;

/// A duration with its unit, refusing what cannot be meant: no unit, a negative or absurd
/// value, and 0 (`zero` says why 0 is no use there).
fn duration(s: &str, zero: &str) -> Result<u64, String> {
    let number = s
        .trim()
        .trim_end_matches(|c: char| c.is_alphabetic() || c == 'µ');
    if number.trim().parse::<f64>() == Ok(0.0) {
        return Err(zero.to_string());
    }
    let Some(ns) = parse_duration(s) else {
        return Err(
            "expected a number and a unit (ns, us, ms, s), e.g. 3.5ms or 500us".to_string(),
        );
    };
    if ns >= MAX_DURATION_NS {
        return Err("longer than a year; refused rather than cut to fit (a unit missing?)".into());
    }
    if ns == 0 {
        return Err("shorter than a nanosecond".into());
    }
    Ok(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_windows() {
        assert_eq!(parse_duration("1.5ms"), Some(1_500_000));
        assert_eq!(parse_duration("3"), None);
        assert_eq!(parse_secs("93115.324019"), Some(93_115_324_019_000));
        assert_eq!(
            window("+1.5..").unwrap(),
            (Some(Bound::Rel(1_500_000_000)), None)
        );
        assert_eq!(
            window("10.5..11").unwrap(),
            (
                Some(Bound::Abs(10_500_000_000)),
                Some(Bound::Abs(11_000_000_000))
            )
        );
        assert!(window("x..y").is_err());
        assert!(deadline("0").unwrap_err().contains("zero deadline"));
        assert!(deadline("3").unwrap_err().contains("a number and a unit"));
        assert!(measure("runqeue")
            .unwrap_err()
            .contains("did you mean runqueue"));
    }

    #[test]
    fn a_reversed_window_is_refused_at_parse_time() {
        assert!(window("+2..+1")
            .unwrap_err()
            .contains("ends before it starts"));
        assert!(window("11..10.5")
            .unwrap_err()
            .contains("ends before it starts"));
        assert!(window("5..5").is_ok());
        // Absolute against relative waits for the trace's start.
        assert!(window("100..+1").is_ok());
    }
}
