//! The fleet report: the queries of [`crate::query`] run by the engine, gathered into one
//! result (JSON schema in docs/fleet.md) and rendered for the terminal and as HTML.

use crate::engine::{Engine, FleetError, Rows};
use crate::query::{self, FleetOptions};
use serde::Serialize;
use std::collections::BTreeMap;

/// A cause across the fleet.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FleetCause {
    /// Category (`runqueue-wait`, `softirq`, ...).
    pub category: String,
    /// Culprit keyed without pid or CPU (`hog`, `softirq NET_RX`; empty: a CPU only).
    pub culprit: String,
    /// Excess over the usual it accounts for, all hosts.
    pub excess_ns: u64,
    /// The time it held, counted once in each trace where misses overlapped (what
    /// `explain` ranks a trace's causes by), all hosts: what causes rank by.
    pub once_ns: u64,
    /// Misses it contributed to.
    pub misses: u64,
    /// Hosts where it appeared.
    pub hosts: u64,
    /// Share of all blamed time counted once (`once_ns`).
    pub share: f64,
}

/// One group of `--by`.
#[derive(Clone, Debug, Serialize)]
pub struct GroupRow {
    /// The host, kernel or label value.
    pub group: String,
    /// Hosts.
    pub hosts: u64,
    /// Traces.
    pub traces: u64,
    /// Samples judged.
    pub samples: u64,
    /// Misses.
    pub misses: u64,
}

/// A cause that appeared in one group, or grew there, against the others.
#[derive(Clone, Debug, Serialize)]
pub struct Change {
    /// Category.
    pub category: String,
    /// Culprit.
    pub culprit: String,
    /// Where.
    pub group: String,
    /// `appeared` (absent in the baseline group) or `grew` (at least twice its rate).
    pub kind: String,
    /// Misses it contributed to there, per 1000 samples.
    pub per_1000: f64,
    /// Its rate in the baseline: the other group where it was rarest.
    pub baseline_per_1000: f64,
    /// That group.
    pub baseline: String,
    /// Misses it contributed to there.
    pub misses: u64,
}

/// A host with its miss rate and top cause.
#[derive(Clone, Debug, Serialize)]
pub struct HostRow {
    /// Host.
    pub host: String,
    /// Kernel (the latest name seen, when several).
    pub kernel: String,
    /// Traces.
    pub traces: u64,
    /// Samples.
    pub samples: u64,
    /// Misses.
    pub misses: u64,
    /// Misses per sample (null without samples).
    pub miss_rate: Option<f64>,
    /// Its largest cause, `category: culprit`.
    pub top_cause: Option<String>,
}

/// One query as run.
#[derive(Clone, Debug, Serialize)]
pub struct Query {
    /// What it answers.
    pub name: String,
    /// The SQL.
    pub sql: String,
}

/// The fleet report.
#[derive(Clone, Debug, Serialize)]
pub struct FleetReport {
    /// Hosts.
    pub hosts: u64,
    /// Traces (analyses).
    pub traces: u64,
    /// Kernel releases.
    pub kernels: u64,
    /// Traces whose samples were judged against a deadline (the counts below; without
    /// `--mode`, the automatic mode and latency are not).
    pub judged_traces: u64,
    /// Samples judged.
    pub samples: u64,
    /// Misses.
    pub misses: u64,
    /// Traces per analysis mode.
    pub modes: Vec<(String, u64)>,
    /// The deadline samples were judged against (null: each trace's own).
    pub deadline_ns: Option<u64>,
    /// Causes, largest excess first.
    pub causes: Vec<FleetCause>,
    /// What `--by` grouped on.
    pub by: Option<String>,
    /// The groups.
    pub groups: Vec<GroupRow>,
    /// Causes that appeared or grew in a group.
    pub changes: Vec<Change>,
    /// Hosts with the highest miss rate.
    pub worst_hosts: Vec<HostRow>,
    /// What the data cannot say.
    pub notes: Vec<String>,
    /// The queries run, in order.
    pub sql: Vec<Query>,
}

fn u(v: Option<i64>) -> u64 {
    v.map_or(0, |x| u64::try_from(x).unwrap_or(0))
}

fn s(v: Option<String>) -> String {
    v.unwrap_or_default()
}

/// Runs the fleet queries on `eng`.
pub fn fleet(eng: &Engine, o: &FleetOptions) -> Result<FleetReport, FleetError> {
    eng.load(&query::read_again(o))?;
    let mut sql = Vec::new();
    let mut run = |name: &str, q: String| -> Result<Rows, FleetError> {
        let rows = eng.query(&q)?;
        sql.push(Query {
            name: name.into(),
            sql: q,
        });
        Ok(rows)
    };
    let ov = run("overview", query::overview(o))?;
    let jd = run("judged", query::judged(o))?;
    let modes_rows = run("modes", query::modes())?;
    let c = run("causes", query::causes(o))?;
    let causes = causes_of(&c);
    let mut r = FleetReport {
        hosts: u(ov.int("hosts").first().copied().flatten()),
        traces: u(ov.int("traces").first().copied().flatten()),
        kernels: u(ov.int("kernels").first().copied().flatten()),
        judged_traces: u(jd.int("traces").first().copied().flatten()),
        samples: u(jd.int("samples").first().copied().flatten()),
        misses: u(jd.int("misses").first().copied().flatten()),
        modes: modes_rows
            .text("mode")
            .into_iter()
            .zip(modes_rows.int("traces"))
            .map(|(m, n)| (s(m), u(n)))
            .collect(),
        deadline_ns: o.deadline_ns,
        causes,
        by: o.by.as_ref().map(|b| b.noun().to_string()),
        groups: Vec::new(),
        changes: Vec::new(),
        worst_hosts: Vec::new(),
        notes: Vec::new(),
        sql: Vec::new(),
    };
    if let Some(by) = &o.by {
        let g = run("groups", query::groups(o, by))?;
        let gc = run("group causes", query::group_causes(o, by))?;
        r.groups = groups_of(&g);
        r.changes = changes(&r.groups, &group_causes_of(&gc));
    }
    let h = run("worst hosts", query::hosts(o))?;
    r.worst_hosts = hosts_of(&h);
    let names: Vec<String> = r.worst_hosts.iter().map(|h| h.host.clone()).collect();
    let hc = run("host causes", query::host_causes(o, &names))?;
    top_causes(&mut r.worst_hosts, &hc);
    if let Some(d) = o.deadline_ns {
        let j = run("rejudged", query::rejudged(o, d))?;
        notes_for_deadline(&mut r, &j, d);
    }
    notes(&mut r, o);
    r.notes.extend(eng.notes().iter().cloned());
    r.sql = sql;
    Ok(r)
}

fn causes_of(c: &Rows) -> Vec<FleetCause> {
    let (cat, who, ex, once, mi, ho, sh) = (
        c.text("category"),
        c.text("culprit"),
        c.int("excess_ns"),
        c.int("once_ns"),
        c.int("misses"),
        c.int("hosts"),
        c.float("share"),
    );
    (0..c.len())
        .map(|i| FleetCause {
            category: s(cat[i].clone()),
            culprit: s(who[i].clone()),
            excess_ns: u(ex[i]),
            once_ns: u(once[i]),
            misses: u(mi[i]),
            hosts: u(ho[i]),
            share: sh[i].unwrap_or(0.0),
        })
        .collect()
}

fn groups_of(g: &Rows) -> Vec<GroupRow> {
    let (name, ho, tr, sa, mi) = (
        g.text("grp"),
        g.int("hosts"),
        g.int("traces"),
        g.int("samples"),
        g.int("misses"),
    );
    (0..g.len())
        .map(|i| GroupRow {
            group: s(name[i].clone()),
            hosts: u(ho[i]),
            traces: u(tr[i]),
            samples: u(sa[i]),
            misses: u(mi[i]),
        })
        .collect()
}

/// Least misses a cause needs in a group to be called new or grown there: fewer could be
/// chance.
const MIN_MISSES: u64 = 3;

/// One cause in one group: (group, category, culprit, misses, excess ns).
type GroupCause = (String, String, String, u64, u64);

fn group_causes_of(gc: &Rows) -> Vec<GroupCause> {
    let (g, cat, who, mi, ex) = (
        gc.text("grp"),
        gc.text("category"),
        gc.text("culprit"),
        gc.int("misses"),
        gc.int("excess_ns"),
    );
    (0..gc.len())
        .map(|i| {
            let (grp, c, w) = (s(g[i].clone()), s(cat[i].clone()), s(who[i].clone()));
            (grp, c, w, u(mi[i]), u(ex[i]))
        })
        .collect()
}

/// For each group and cause, its rate (misses it contributed to per 1000 samples) against
/// the other group where it was rarest. Largest excess first; blind spots left out.
fn changes(groups: &[GroupRow], gc: &[GroupCause]) -> Vec<Change> {
    if groups.len() < 2 {
        return Vec::new();
    }
    // cause -> group -> (misses, excess)
    let mut by_cause: BTreeMap<(String, String), BTreeMap<String, (u64, u64)>> = BTreeMap::new();
    for (g, cat, who, mi, ex) in gc {
        by_cause
            .entry((cat.clone(), who.clone()))
            .or_default()
            .insert(g.clone(), (*mi, *ex));
    }
    let rate = |misses: u64, g: &GroupRow| {
        if g.samples == 0 {
            None
        } else {
            Some(misses as f64 * 1000.0 / g.samples as f64)
        }
    };
    let mut out: Vec<(u64, Change)> = Vec::new();
    for ((category, culprit), per) in &by_cause {
        // Where traces were blind is not a cause that appeared.
        if whylate::explain::is_blind_id(category) {
            continue;
        }
        // The two groups where the cause is rarest: each group's baseline is the rarest
        // other one (linear in groups: `--by host` may have thousands).
        let mut rarest: Vec<(f64, usize)> = groups
            .iter()
            .enumerate()
            .filter_map(|(i, o)| Some((rate(per.get(&o.group).map_or(0, |x| x.0), o)?, i)))
            .collect();
        let k = rarest.len().min(2);
        if k > 0 {
            rarest.select_nth_unstable_by(k - 1, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        }
        rarest.truncate(k);
        rarest.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for (gi, grp) in groups.iter().enumerate() {
            let (m, ex) = per.get(&grp.group).copied().unwrap_or((0, 0));
            let Some(r) = rate(m, grp) else { continue };
            if m < MIN_MISSES {
                continue;
            }
            let base = rarest.iter().find(|(_, i)| *i != gi);
            let Some(&(b, bi)) = base else { continue };
            let bg = &groups[bi];
            let kind = if b == 0.0 {
                "appeared"
            } else if r >= 2.0 * b {
                "grew"
            } else {
                continue;
            };
            out.push((
                ex,
                Change {
                    category: category.clone(),
                    culprit: culprit.clone(),
                    group: grp.group.clone(),
                    kind: kind.into(),
                    per_1000: r,
                    baseline_per_1000: b,
                    baseline: bg.group.clone(),
                    misses: m,
                },
            ));
        }
    }
    out.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.group.cmp(&b.1.group)));
    out.into_iter().map(|(_, c)| c).collect()
}

fn hosts_of(h: &Rows) -> Vec<HostRow> {
    let (host, k, tr, sa, mi, ra) = (
        h.text("host"),
        h.text("kernel"),
        h.int("traces"),
        h.int("samples"),
        h.int("misses"),
        h.float("miss_rate"),
    );
    (0..h.len())
        .map(|i| HostRow {
            host: s(host[i].clone()),
            kernel: s(k[i].clone()),
            traces: u(tr[i]),
            samples: u(sa[i]),
            misses: u(mi[i]),
            miss_rate: ra[i],
            top_cause: None,
        })
        .collect()
}

/// Each host's top cause: its largest by time counted once, blind spots left out.
fn top_causes(hosts: &mut [HostRow], hc: &Rows) {
    let (h, cat, who, ex) = (
        hc.text("host"),
        hc.text("category"),
        hc.text("culprit"),
        hc.int("once_ns"),
    );
    let mut best: BTreeMap<String, (u64, String)> = BTreeMap::new();
    for i in 0..hc.len() {
        let category = s(cat[i].clone());
        if whylate::explain::is_blind_id(&category) {
            continue;
        }
        let label = cause_label(&category, &s(who[i].clone()));
        let e = best.entry(s(h[i].clone())).or_insert((0, String::new()));
        let n = u(ex[i]);
        if n > e.0 || (n == e.0 && (e.1.is_empty() || label < e.1)) {
            *e = (n, label);
        }
    }
    for row in hosts {
        row.top_cause = best.remove(&row.host).map(|(_, l)| l);
    }
}

/// `category: culprit` with no word said twice (`softirq: NET_RX`), or the category
/// alone for a culprit that is only a CPU.
pub fn cause_label(category: &str, culprit: &str) -> String {
    let who = culprit
        .strip_prefix(category)
        .and_then(|r| r.strip_prefix(' '))
        .unwrap_or(culprit);
    if who.is_empty() {
        category.to_string()
    } else {
        format!("{category}: {who}")
    }
}

fn notes_for_deadline(r: &mut FleetReport, j: &Rows, d: u64) {
    let unexplained = u(j.int("unexplained").first().copied().flatten());
    let excused = u(j.int("excused").first().copied().flatten());
    if unexplained > 0 {
        r.notes.push(format!(
            "{unexplained} samples miss {} but were within their trace's own deadline, so explain left them unexplained: their causes are not counted (re-run explain with --deadline {})",
            whylate::units::dur(d),
            whylate::units::dur(d)
        ));
    }
    if excused > 0 {
        r.notes.push(format!(
            "{excused} misses at their trace's own deadline are within {} and no longer count",
            whylate::units::dur(d)
        ));
    }
    r.notes.push(
        "with --deadline, causes come from each miss's own blame; traces of the automatic mode and of latency are left out (they judge no deadline)".into(),
    );
}

fn notes(r: &mut FleetReport, o: &FleetOptions) {
    if r.traces == 0 {
        r.notes.push("no findings matched".into());
    }
    if r.judged_traces < r.traces {
        r.notes.push(format!(
            "{} of {} traces judge no deadline (the automatic mode lists outliers, latency measures): their causes are ranked, their samples are not counted as misses",
            r.traces - r.judged_traces,
            r.traces
        ));
    }
    if o.mode.is_none() && r.modes.len() > 1 {
        let m: Vec<String> = r.modes.iter().map(|(m, n)| format!("{m} {n}")).collect();
        r.notes.push(format!(
            "traces of several analyses are ranked together ({}): --mode picks one",
            m.join(", ")
        ));
    }
    if let Some(by) = &o.by {
        if r.groups.len() < 2 {
            r.notes
                .push(format!("one {} only: nothing to compare", by.noun()));
        } else {
            r.notes.push(format!(
                "a cause is said to appear or grow in a {} with at least {MIN_MISSES} misses there: against the {} where it was rarest, absent (appeared) or at half the rate or less (grew), per 1000 samples",
                by.noun(),
                by.noun()
            ));
        }
    }
}

impl FleetReport {
    /// The largest cause that is not a blind spot, if any: where every trace was blind,
    /// the fleet has no first cause to name (the causes table still lists the blindness).
    pub fn first_cause(&self) -> Option<&FleetCause> {
        (self.causes.iter()).find(|c| !whylate::explain::is_blind_id(&c.category))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cause(category: &str, share: f64) -> FleetCause {
        FleetCause {
            category: category.into(),
            culprit: String::new(),
            excess_ns: 1,
            once_ns: 1,
            misses: 1,
            hosts: 1,
            share,
        }
    }

    #[test]
    fn the_first_cause_is_never_a_blind_spot() {
        let mut r = FleetReport {
            hosts: 1,
            traces: 1,
            kernels: 1,
            judged_traces: 1,
            samples: 10,
            misses: 2,
            modes: Vec::new(),
            deadline_ns: None,
            causes: vec![cause("switch-in-untraced", 0.9)],
            by: None,
            groups: Vec::new(),
            changes: Vec::new(),
            worst_hosts: Vec::new(),
            notes: Vec::new(),
            sql: Vec::new(),
        };
        assert!(r.first_cause().is_none());
        r.causes.push(cause("cpu-idle", 0.1));
        assert_eq!(
            r.first_cause().map(|c| c.category.as_str()),
            Some("cpu-idle")
        );
    }

    fn group(name: &str, samples: u64) -> GroupRow {
        GroupRow {
            group: name.into(),
            hosts: 1,
            traces: 1,
            samples,
            misses: 0,
        }
    }

    #[test]
    fn causes_appear_or_grow_against_the_group_where_they_are_rarest() {
        let groups = [group("old", 1000), group("new", 2000), group("mid", 1000)];
        let c = |g: &str, cat: &str, m: u64, ex: u64| (g.into(), cat.into(), "x".into(), m, ex);
        let gc = vec![
            // absent on old: appeared on new (10 per 1000) and on mid (5 per 1000)
            c("new", "softirq", 20, 900),
            c("mid", "softirq", 5, 100),
            // 2 per 1000 on old, 4 on mid (grew), 2.5 on new (not twice)
            c("old", "runqueue-wait", 2, 10),
            c("mid", "runqueue-wait", 4, 50),
            c("new", "runqueue-wait", 5, 20),
            // too few to say: 2 misses
            c("new", "hardirq", 2, 5000),
            // where traces were blind is not a cause, however much it appeared
            c("new", "switch-in-untraced", 40, 9000),
        ];
        let ch = changes(&groups, &gc);
        let got: Vec<(&str, &str, &str, f64, &str)> = ch
            .iter()
            .map(|c| {
                (
                    c.category.as_str(),
                    c.group.as_str(),
                    c.kind.as_str(),
                    c.per_1000,
                    c.baseline.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("softirq", "new", "appeared", 10.0, "old"),
                ("softirq", "mid", "appeared", 5.0, "old"),
                ("runqueue-wait", "mid", "grew", 4.0, "old"),
            ]
        );
        assert!(
            changes(&groups[..1], &gc).is_empty(),
            "one group: nothing to compare"
        );
    }

    #[test]
    fn labels_say_no_word_twice() {
        assert_eq!(cause_label("softirq", "softirq NET_RX"), "softirq: NET_RX");
        assert_eq!(cause_label("cpu-idle", ""), "cpu-idle");
        assert_eq!(cause_label("runqueue-wait", "hog"), "runqueue-wait: hog");
    }

    /// One miss of host `h1`, held up by two tasks named `hog` (pids 1 and 2) on its
    /// runqueue: explain lists one cause per pid, each with that miss.
    fn two_hogs_one_miss(dir: &std::path::Path) {
        use crate::findings::Findings;
        use crate::meta::TraceMeta;
        use whylate::explain::{CauseRow, Culprit, Miss};
        let meta = TraceMeta {
            host: "h1".into(),
            date: "2026-11-25".into(),
            trace_id: "00000000000000aa".into(),
            kernel: "6.18".into(),
            labels: Vec::new(),
            mode: "cycles".into(),
        };
        let hog = |pid: i32| Culprit {
            comm: Some("hog".into()),
            pid: Some(pid),
            cpu: Some(1),
            ..Culprit::default()
        };
        let blamed = [(1, 300u64), (2, 200)];
        let miss = Miss {
            cpus: Vec::new(),
            read_ns: None,
            not_reading: false,
            uncertain: false,
            start_ns: 1_000,
            duration_ns: Some(5_000_000),
            tid: 7,
            cpu: 0,
            late_ns: 1_500_000,
            blamed_ns: 500,
            chain: Vec::new(),
            blame: (blamed.iter())
                .map(|&(pid, ns)| ((whylate::explain::causes::RUNQUEUE_WAIT, hog(pid)), ns))
                .collect(),
        };
        let causes: Vec<CauseRow> = (blamed.iter())
            .map(|&(pid, ns)| CauseRow {
                category: whylate::explain::causes::RUNQUEUE_WAIT,
                culprit: hog(pid),
                count: 1,
                total_excess_ns: ns,
                once_ns: ns,
                mean_excess_ns: ns,
                share: ns as f64 / 500.0,
            })
            .collect();
        let mut f = Findings::new(meta);
        f.add_miss(1, &miss);
        f.add_causes(&causes, std::slice::from_ref(&miss));
        crate::write(dir, &f).unwrap();
    }

    #[test]
    fn a_cause_counts_each_miss_once_whatever_pids_its_culprit_had() {
        let tmp = tempfile::tempdir().unwrap();
        two_hogs_one_miss(tmp.path());
        let eng = Engine::open(&[tmp.path().to_path_buf()]).unwrap();
        for deadline_ns in [None, Some(3_500_000)] {
            let o = FleetOptions {
                top: 10,
                deadline_ns,
                ..FleetOptions::default()
            };
            let r = fleet(&eng, &o).unwrap();
            let c = &r.causes[0];
            assert_eq!(
                (c.culprit.as_str(), c.misses, c.excess_ns, c.hosts),
                ("hog", 1, 500, 1),
                "deadline {deadline_ns:?}"
            );
        }
    }
}
