//! What every row of one trace's findings carries: the host, the date it is filed under,
//! the trace's id, the kernel release, the user's labels and the analysis mode.

use std::fmt::Write as _;

/// Every mode a trace's findings are filed under: an explain mode's name
/// ([`whylate::explain::Mode::NAMES`]) or `latency`.
pub fn modes() -> Vec<&'static str> {
    let mut m = whylate::explain::Mode::NAMES.to_vec();
    m.push("latency");
    m
}

/// Who and what a trace's findings belong to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceMeta {
    /// Host name (a partition: `host=...`).
    pub host: String,
    /// `YYYY-MM-DD`, UTC (a partition: `date=...`).
    pub date: String,
    /// Stable id of the trace and analysis: re-running the same analysis of the same trace
    /// rewrites the same files instead of adding a copy.
    pub trace_id: String,
    /// Kernel release, empty when unknown.
    pub kernel: String,
    /// User labels, sorted by key.
    pub labels: Vec<(String, String)>,
    /// `cycles`, `timer`, `softirq`, `expect`, `function`, `auto`, `latency`, `watch-...`.
    pub mode: String,
}

/// What the user said about the trace (`--host`, `--kernel`, `--date`, `--label`); the
/// rest comes from the trace's own snapshot when it has one.
#[derive(Clone, Debug, Default)]
pub struct MetaArgs {
    /// Host name.
    pub host: Option<String>,
    /// Kernel release.
    pub kernel: Option<String>,
    /// `YYYY-MM-DD`.
    pub date: Option<String>,
    /// `key=value` labels.
    pub labels: Vec<(String, String)>,
}

/// What the trace itself says: from `whylate record`'s snapshot, and the inputs.
#[derive(Clone, Debug, Default)]
pub struct TraceFacts {
    /// Host name the recorder saw.
    pub hostname: Option<String>,
    /// Kernel release the recorder saw.
    pub kernel: Option<String>,
    /// Recording start, seconds since the epoch.
    pub started_unix_s: Option<u64>,
    /// The inputs' modification time, seconds since the epoch (the date's fallback).
    pub mtime_unix_s: Option<u64>,
    /// Per input: file name (no directory), bytes, events: the trace's identity.
    pub inputs: Vec<(String, u64, u64)>,
}

impl TraceMeta {
    /// The user's words first, then the trace's own; a host nobody names is `unknown`.
    /// `key` tells analyses of the same trace apart (mode and selectors).
    pub fn resolve(args: &MetaArgs, facts: &TraceFacts, mode: &str, key: &str) -> TraceMeta {
        let host = args
            .host
            .clone()
            .or_else(|| facts.hostname.clone())
            .unwrap_or_else(|| "unknown".into());
        let date = args.date.clone().unwrap_or_else(|| {
            facts
                .started_unix_s
                .or(facts.mtime_unix_s)
                .map_or_else(|| "unknown".into(), date_of)
        });
        let mut labels = args.labels.clone();
        labels.sort();
        let mut id = Fnv::default();
        id.add(host.as_bytes());
        for (name, bytes, events) in &facts.inputs {
            id.add(name.as_bytes());
            id.add(&bytes.to_le_bytes());
            id.add(&events.to_le_bytes());
        }
        id.add(mode.as_bytes());
        id.add(key.as_bytes());
        TraceMeta {
            host,
            date,
            trace_id: format!("{:016x}", id.0),
            kernel: args
                .kernel
                .clone()
                .or_else(|| facts.kernel.clone())
                .unwrap_or_default(),
            labels,
            mode: mode.into(),
        }
    }

    /// The labels as one text: `k=v,k2=v2` (empty without labels).
    pub fn labels_text(&self) -> String {
        let mut s = String::new();
        for (i, (k, v)) in self.labels.iter().enumerate() {
            let _ = write!(s, "{}{k}={v}", if i > 0 { "," } else { "" });
        }
        s
    }
}

/// Parses `key=value`: keys of letters, digits, `_`, `-`, `.`; values without `,` (the
/// separator of the labels column).
pub fn parse_label(s: &str) -> Result<(String, String), String> {
    let Some((k, v)) = s.split_once('=') else {
        return Err(format!("expected key=value, found {s:?}"));
    };
    if k.is_empty()
        || !k
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
    {
        return Err(format!(
            "label key {k:?}: expected letters, digits, '_', '-' or '.'"
        ));
    }
    if v.contains(',') {
        return Err(format!("label value {v:?}: ',' separates labels"));
    }
    if let Some(c) = v.chars().find(|c| c.is_control()) {
        return Err(format!(
            "label value {v:?}: a control character ({c:?}) would break the tables that show it"
        ));
    }
    if v.starts_with('(') && v.ends_with(')') {
        return Err(format!(
            "label value {v:?}: values in parentheses are reserved (`fleet --by label:{k}` writes `(no {k})` for traces without the label)"
        ));
    }
    Ok((k.into(), v.into()))
}

/// The longest host or date: `host=` and it must fit a file name (255 bytes).
pub const MAX_PART: usize = 200;

/// Checks a partition value (host, date): it becomes a directory name, so it may hold
/// letters, digits, `_`, `-`, `.` and `:` only, and must not be `.` or `..`.
pub fn check_part(what: &str, s: &str) -> Result<(), String> {
    if s.len() > MAX_PART {
        return Err(format!(
            "{what} of {} characters: at most {MAX_PART} (it names a directory, `{what}=...`, and a file name holds 255 bytes)",
            s.len()
        ));
    }
    let ok = !s.is_empty()
        && s != "."
        && s != ".."
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.:".contains(c));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{what} {s:?}: expected letters, digits, '_', '-', '.' or ':' (it names a directory)"
        ))
    }
}

/// `YYYY-MM-DD` (UTC) of seconds since the epoch.
pub fn date_of(unix_s: u64) -> String {
    // Days to civil date (the proleptic Gregorian calendar), after H. Hinnant's algorithm.
    let z = (unix_s / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// FNV-1a, 64 bits: a hash whose value is the same on every build and machine.
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn add(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
        // A separator, so ("ab","c") and ("a","bc") differ.
        self.0 ^= 0xff;
        self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(date_of(0), "1970-01-01");
        assert_eq!(date_of(951_782_400), "2000-02-29");
        assert_eq!(date_of(1_795_564_800 + 86_399), "2026-11-25");
    }

    #[test]
    fn the_user_wins_then_the_trace_then_unknown() {
        let facts = TraceFacts {
            hostname: Some("rec".into()),
            kernel: Some("6.18.0".into()),
            started_unix_s: Some(0),
            mtime_unix_s: Some(86_400),
            inputs: vec![("a.dat".into(), 10, 5)],
        };
        let m = TraceMeta::resolve(&MetaArgs::default(), &facts, "cycles", "");
        assert_eq!((m.host.as_str(), m.date.as_str()), ("rec", "1970-01-01"));
        let args = MetaArgs {
            host: Some("h1".into()),
            labels: vec![("z".into(), "1".into()), ("a".into(), "2".into())],
            ..MetaArgs::default()
        };
        let u = TraceMeta::resolve(&args, &TraceFacts::default(), "timer", "");
        assert_eq!((u.host.as_str(), u.date.as_str()), ("h1", "unknown"));
        assert_eq!(u.labels_text(), "a=2,z=1");
        // Same trace and analysis, same id; another mode, another id.
        let again = TraceMeta::resolve(&MetaArgs::default(), &facts, "cycles", "");
        let other = TraceMeta::resolve(&MetaArgs::default(), &facts, "timer", "");
        assert_eq!(m.trace_id, again.trace_id);
        assert_ne!(m.trace_id, other.trace_id);
    }

    #[test]
    fn labels_and_partitions_are_checked() {
        assert_eq!(
            parse_label("team=net").unwrap(),
            ("team".into(), "net".into())
        );
        assert!(parse_label("team").unwrap_err().contains("key=value"));
        assert!(parse_label("a b=1").is_err());
        assert!(parse_label("a=1,2").is_err());
        // Reserved for unlabelled traces, and control characters that break tables.
        assert!(parse_label("k=(no k)").unwrap_err().contains("reserved"));
        assert!(parse_label("k=a\nb")
            .unwrap_err()
            .contains("control character"));
        assert!(check_part("host", &"h".repeat(300))
            .unwrap_err()
            .contains("at most 200"));
        assert!(check_part("host", &"h".repeat(200)).is_ok());
        assert!(check_part("host", "web-01.dc1").is_ok());
        assert!(check_part("host", "../x").is_err());
        assert!(check_part("host", "..").is_err());
    }
}
