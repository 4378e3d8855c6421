//! How times and durations are written everywhere: seconds the way ftrace prints them,
//! durations in the most readable unit.

/// Formats ns as seconds with 6 decimals (the way ftrace prints them).
pub fn secs(ns: u64) -> String {
    format!("{}.{:06}", ns / 1_000_000_000, (ns % 1_000_000_000) / 1000)
}

/// Formats a duration in the most readable unit.
pub fn dur(ns: u64) -> String {
    if ns >= 10_000_000_000 {
        format!("{:.1} s", ns as f64 / 1e9)
    } else if ns >= 1_000_000_000 {
        format!("{:.3} s", ns as f64 / 1e9)
    } else if ns >= 1_000_000 {
        format!("{:.3} ms", ns as f64 / 1e6)
    } else if ns >= 1_000 {
        format!("{:.1} us", ns as f64 / 1e3)
    } else {
        format!("{ns} ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_read_as_ftrace_and_people_do() {
        assert_eq!(secs(1_234_567_891_234), "1234.567891");
        assert_eq!(dur(999), "999 ns");
        assert_eq!(dur(3_500_000), "3.500 ms");
        assert_eq!(dur(469_000), "469.0 us");
        assert_eq!(dur(12_000_000_000), "12.0 s");
    }
}
