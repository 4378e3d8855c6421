//! The SQL `whylate fleet` runs, as text: plain SQL (GROUP BY, JOIN, CASE, one window
//! sum) that DataFusion, DuckDB, Spark and Trino all accept over the same tables, so
//! `--sql` prints queries a team can run on its own engine (docs/fleet.md).

/// What the fleet report is asked for.
#[derive(Clone, Debug, Default)]
pub struct FleetOptions {
    /// Compare groups: by host, kernel or a label's value.
    pub by: Option<By>,
    /// Judge samples against this deadline instead of each trace's own.
    pub deadline_ns: Option<u64>,
    /// Only traces analysed in this mode (`cycles`, `timer`, ...).
    pub mode: Option<String>,
    /// Causes and hosts listed.
    pub top: usize,
}

/// What `--by` groups on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum By {
    /// The host.
    Host,
    /// The kernel release.
    Kernel,
    /// The value of one label.
    Label(String),
}

impl By {
    /// Parses `host`, `kernel` or `label:KEY`.
    pub fn parse(s: &str) -> Result<By, String> {
        match s {
            "host" => Ok(By::Host),
            "kernel" => Ok(By::Kernel),
            _ => match s.strip_prefix("label:") {
                Some(k) if crate::meta::parse_label(&format!("{k}=x")).is_ok() => {
                    Ok(By::Label(k.into()))
                }
                _ => Err(format!("expected host, kernel or label:KEY, found {s:?}")),
            },
        }
    }

    /// What a group is called (`kernel`, `team`).
    pub fn noun(&self) -> &str {
        match self {
            By::Host => "host",
            By::Kernel => "kernel",
            By::Label(k) => k,
        }
    }

    /// The grouping expression over `t`, and the join it needs.
    fn expr(&self) -> (String, String) {
        match self {
            By::Host => ("t.host".into(), String::new()),
            By::Kernel => ("t.kernel".into(), String::new()),
            By::Label(k) => (
                format!("COALESCE(l.value, '(no {k})')"),
                format!(
                    " LEFT JOIN labels l ON l.host = t.host AND l.trace_id = t.trace_id AND l.key = {}",
                    lit(k)
                ),
            ),
        }
    }
}

/// The tables the report's queries read more than once whose rows are per trace or per
/// cause, not per sample, each with the columns the queries read: `traces` (the overview,
/// the modes and, without a deadline, every per-trace total), `causes` without a deadline
/// (the ranking, the groups', the worst hosts'), `labels` when grouping by one. The engine
/// reads each of them once per report ([`crate::engine::Engine::load`]): the cost of a
/// fleet is opening its files, not their rows. Only these columns: the others stay on disk,
/// and a file is held only to the columns the report reads, as when it streamed.
pub fn read_again(o: &FleetOptions) -> Vec<(&'static str, &'static [&'static str])> {
    const TRACE: &[&str] = &[
        "host",
        "trace_id",
        "mode",
        "kernel",
        "samples",
        "misses",
        "blamed_ns",
    ];
    const CAUSE: &[&str] = &[
        "host",
        "trace_id",
        "mode",
        "kernel",
        "category",
        "culprit",
        "key_misses",
        "misses",
        "total_excess_ns",
        "once_ns",
    ];
    const LABEL: &[&str] = &["host", "trace_id", "key", "value"];
    let mut t = vec![("traces", TRACE)];
    if o.deadline_ns.is_none() {
        t.push(("causes", CAUSE));
    }
    if matches!(o.by, Some(By::Label(_))) {
        t.push(("labels", LABEL));
    }
    t
}

/// A SQL string literal.
pub fn lit(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The rows of analyses that judge samples against a deadline: the automatic mode lists
/// outliers, latency measures; neither has misses to re-judge.
const JUDGED: &str = "t.mode NOT IN ('auto', 'latency')";

/// The traces a query reads: the mode asked for; for miss counts (`judged`) without a
/// mode, and for anything with `--deadline`, only analyses that judge a deadline.
fn mode_filter(o: &FleetOptions, judged: bool) -> String {
    let mut w = Vec::new();
    if let Some(m) = &o.mode {
        w.push(format!("t.mode = {}", lit(m)));
    }
    if o.deadline_ns.is_some() || (judged && o.mode.is_none()) {
        w.push(JUDGED.to_string());
    }
    w.join(" AND ")
}

fn and_where(base: &str, more: &str) -> String {
    match (base.is_empty(), more.is_empty()) {
        (true, true) => String::new(),
        (false, true) => format!(" WHERE {base}"),
        (true, false) => format!(" WHERE {more}"),
        (false, false) => format!(" WHERE {base} AND {more}"),
    }
}

/// Per trace: host, trace_id, mode, kernel, samples, misses, blamed_ns. From `traces`,
/// or with a deadline from `samples` judged against it. Without `--mode`, only analyses
/// that judge a deadline: the automatic mode's outliers and latency samples are no misses.
pub fn totals(o: &FleetOptions) -> String {
    let w = and_where(&mode_filter(o, true), "");
    match o.deadline_ns {
        None => format!(
            "(SELECT t.host, t.trace_id, t.mode, t.kernel, t.samples, t.misses, t.blamed_ns FROM traces t{w})"
        ),
        Some(d) => format!(
            "(SELECT t.host, t.trace_id, t.mode, t.kernel, COUNT(*) AS samples, \
             SUM(CASE WHEN t.duration_ns > {d} OR (t.duration_ns IS NULL AND t.miss) THEN 1 ELSE 0 END) AS misses, \
             0 AS blamed_ns \
             FROM samples t{} GROUP BY t.host, t.trace_id, t.mode, t.kernel)",
            and_where(&mode_filter(o, true), "t.measure IS NULL")
        ),
    }
}

/// Per trace and cause: host, trace_id, mode, kernel, category, culprit, misses,
/// total_excess_ns, once_ns (the time it held counted once where misses overlapped;
/// findings written before that column, and a rejudged miss's blame, give the excess). A culprit is keyed without its pid, so one cause may be several rows of
/// a trace's `causes` (`hog[1]`, `hog[2]`) that a miss shares: its misses are the distinct
/// misses its key was blamed for (`key_misses`), and no fewer than one row counted
/// (findings written before that column, or whose blame lists only some misses). With a
/// deadline, from each miss's blame, keeping the misses still over it: a miss counts on
/// its key's first row (`key_first`).
pub fn causes_rel(o: &FleetOptions) -> String {
    match o.deadline_ns {
        None => format!(
            "(SELECT t.host, t.trace_id, t.mode, t.kernel, t.category, t.culprit, \
             GREATEST(COALESCE(MAX(t.key_misses), 0), MAX(t.misses)) AS misses, \
             SUM(t.total_excess_ns) AS total_excess_ns, \
             SUM(COALESCE(t.once_ns, t.total_excess_ns)) AS once_ns FROM causes t{} \
             GROUP BY t.host, t.trace_id, t.mode, t.kernel, t.category, t.culprit)",
            and_where(&mode_filter(o, false), "")
        ),
        Some(d) => format!(
            "(SELECT t.host, t.trace_id, t.mode, t.kernel, t.category, t.culprit, \
             CASE WHEN COALESCE(t.key_first, TRUE) THEN 1 ELSE 0 END AS misses, t.excess_ns AS total_excess_ns, \
             t.excess_ns AS once_ns \
             FROM blame t JOIN misses m ON m.host = t.host AND m.trace_id = t.trace_id AND m.miss = t.miss{})",
            and_where(
                &mode_filter(o, false),
                &format!("(m.duration_ns IS NULL OR m.duration_ns > {d})")
            )
        ),
    }
}

/// The fleet in one row: hosts, traces and kernels of every analysis asked for.
pub fn overview(o: &FleetOptions) -> String {
    format!(
        "SELECT COUNT(DISTINCT t.host) AS hosts, COUNT(*) AS traces, COUNT(DISTINCT t.kernel) AS kernels \
         FROM traces t{}",
        and_where(&mode_filter(o, false), "")
    )
}

/// Samples judged and misses, in one row.
pub fn judged(o: &FleetOptions) -> String {
    format!(
        "SELECT COUNT(*) AS traces, SUM(t.samples) AS samples, SUM(t.misses) AS misses FROM {} t",
        totals(o)
    )
}

/// Traces per analysis mode (every trace, whatever the filter).
pub fn modes() -> String {
    "SELECT t.mode, COUNT(*) AS traces FROM traces t GROUP BY t.mode ORDER BY traces DESC, t.mode"
        .into()
}

/// Causes ranked across the fleet by the time each held, counted once per trace where
/// misses overlapped (as explain ranks a trace's causes; with `--deadline`, from each
/// miss's blame, its excess): excess, misses, hosts affected, share of that time; the
/// blind spots (where traces could not see) after every cause.
pub fn causes(o: &FleetOptions) -> String {
    let blind: Vec<String> = whylate::explain::BLIND_SPOTS
        .iter()
        .map(|c| lit(c.id()))
        .collect();
    format!(
        "SELECT t.category, t.culprit, SUM(t.total_excess_ns) AS excess_ns, \
         SUM(t.once_ns) AS once_ns, SUM(t.misses) AS misses, COUNT(DISTINCT t.host) AS hosts, \
         CAST(SUM(t.once_ns) AS DOUBLE) / NULLIF(SUM(SUM(t.once_ns)) OVER (), 0) AS share \
         FROM {} t GROUP BY t.category, t.culprit \
         ORDER BY CASE WHEN t.category IN ({}) THEN 1 ELSE 0 END, \
         once_ns DESC, excess_ns DESC, misses DESC, t.category, t.culprit LIMIT {}",
        causes_rel(o),
        blind.join(", "),
        o.top
    )
}

/// Per group: hosts, traces, samples, misses.
pub fn groups(o: &FleetOptions, by: &By) -> String {
    let (g, join) = by.expr();
    format!(
        "SELECT {g} AS grp, COUNT(DISTINCT t.host) AS hosts, COUNT(*) AS traces, \
         SUM(t.samples) AS samples, SUM(t.misses) AS misses \
         FROM {} t{join} GROUP BY {g} ORDER BY grp",
        totals(o)
    )
}

/// Per group and cause: excess, misses, hosts.
pub fn group_causes(o: &FleetOptions, by: &By) -> String {
    let (g, join) = by.expr();
    format!(
        "SELECT {g} AS grp, t.category, t.culprit, SUM(t.total_excess_ns) AS excess_ns, \
         SUM(t.misses) AS misses, COUNT(DISTINCT t.host) AS hosts \
         FROM {} t{join} GROUP BY {g}, t.category, t.culprit",
        causes_rel(o)
    )
}

/// The hosts with the highest miss rate.
pub fn hosts(o: &FleetOptions) -> String {
    format!(
        "SELECT t.host, MAX(t.kernel) AS kernel, COUNT(*) AS traces, SUM(t.samples) AS samples, \
         SUM(t.misses) AS misses, CAST(SUM(t.misses) AS DOUBLE) / NULLIF(SUM(t.samples), 0) AS miss_rate \
         FROM {} t GROUP BY t.host \
         ORDER BY miss_rate DESC NULLS LAST, misses DESC, t.host LIMIT {}",
        totals(o),
        o.top
    )
}

/// Each listed host's causes (its largest is its top cause).
pub fn host_causes(o: &FleetOptions, hosts: &[String]) -> String {
    let list: Vec<String> = hosts.iter().map(|h| lit(h)).collect();
    format!(
        "SELECT t.host, t.category, t.culprit, SUM(t.once_ns) AS once_ns \
         FROM {} t WHERE t.host IN ({}) GROUP BY t.host, t.category, t.culprit",
        causes_rel(o),
        if list.is_empty() {
            "NULL".to_string()
        } else {
            list.join(", ")
        }
    )
}

/// With a deadline: samples that now miss but were not explained (their trace's own
/// deadline was longer), and misses the new deadline excuses.
pub fn rejudged(o: &FleetOptions, d: u64) -> String {
    format!(
        "SELECT SUM(CASE WHEN t.duration_ns > {d} AND NOT t.miss THEN 1 ELSE 0 END) AS unexplained, \
         SUM(CASE WHEN t.miss AND t.duration_ns <= {d} THEN 1 ELSE 0 END) AS excused \
         FROM samples t{}",
        and_where(&mode_filter(o, true), "t.measure IS NULL")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_parses_and_quotes() {
        assert_eq!(By::parse("kernel").unwrap(), By::Kernel);
        assert_eq!(By::parse("label:team").unwrap(), By::Label("team".into()));
        assert!(By::parse("label:a b").is_err());
        assert!(By::parse("rack").unwrap_err().contains("label:KEY"));
        assert_eq!(lit("it's"), "'it''s'");
    }

    #[test]
    fn a_deadline_judges_samples_and_keeps_misses_over_it() {
        let o = FleetOptions {
            deadline_ns: Some(5),
            top: 3,
            ..FleetOptions::default()
        };
        let c = causes(&o);
        assert!(c.contains("m.duration_ns > 5"), "{c}");
        assert!(c.contains("NOT IN ('auto', 'latency')"), "{c}");
        assert!(totals(&o).contains("FROM samples"));
        assert!(totals(&FleetOptions::default()).contains("FROM traces"));
    }
}
