//! One trace's findings as tables (docs/parquet.md): the explain report, or the latency
//! report, cut into rows that any query engine can group across hosts. Culprits are keyed
//! without pids (a pid means nothing on another host): by task name, irq name, softirq
//! vector, code, and the system call a task sat in.

use crate::meta::TraceMeta;
use crate::table::{col, Col, Table, Val};
use arrow::datatypes::SchemaRef;
use std::collections::{HashMap, HashSet};
use whylate::explain::{CauseRow, Culprit, ExplainReport, Link, Miss};
use whylate::latency::LatencyReport;

/// The version of the tables' layout, written into every file's metadata and the
/// `traces` table. Bumped when a column changes meaning or goes away (adding one does not).
pub const SCHEMA_VERSION: u32 = 1;

/// Every table, in the order they are written.
pub const TABLES: [&str; 9] = [
    "traces", "samples", "misses", "links", "blame", "causes", "cpus", "irqs", "labels",
];

/// The columns every row starts with (host and date are the partition directories).
fn common(cols: &[Col]) -> Vec<Col> {
    let mut v = vec![
        col("trace_id", 's'),
        col("kernel", 's'),
        col("labels", 's'),
        col("mode", 's'),
    ];
    v.extend_from_slice(cols);
    v
}

/// The culprit's key columns: task name, pid (kept for reading one trace, never a
/// fleet key), irq number and name, softirq vector, code, system call, CPU.
const CULPRIT: [Col; 8] = [
    col("comm", 's'),
    col("pid", 'i'),
    col("irq", 'i'),
    col("irq_name", 's'),
    col("vector", 's'),
    col("caller", 's'),
    col("syscall", 's'),
    col("cpu", 'u'),
];

/// One trace's tables.
pub struct Findings {
    /// Whose.
    pub meta: TraceMeta,
    /// The tables, in [`TABLES`] order; empty ones are not written.
    pub tables: Vec<Table>,
}

impl Findings {
    /// Empty tables for `meta`.
    pub fn new(meta: TraceMeta) -> Findings {
        let tables = vec![
            Table::new("traces", common(&TRACES)),
            Table::new(
                "samples",
                common(&[
                    col("measure", 's'),
                    col("grp", 's'),
                    col("start_ns", 'u'),
                    col("duration_ns", 'u'),
                    col("miss", 'b'),
                    col("deadline_ns", 'u'),
                    col("tid", 'i'),
                    col("cpu", 'u'),
                ]),
            ),
            Table::new("misses", common(&MISSES)),
            Table::new("links", common(&links_cols())),
            Table::new("blame", common(&blame_cols())),
            Table::new("causes", common(&causes_cols())),
            Table::new(
                "cpus",
                common(&[
                    col("cpu", 'u'),
                    col("busy", 'f'),
                    col("holder", 's'),
                    col("kind", 's'),
                    col("share", 'f'),
                    col("count", 'u'),
                ]),
            ),
            Table::new(
                "irqs",
                common(&[
                    col("irq", 'i'),
                    col("name", 's'),
                    col("affinity", 's'),
                    col("effective", 's'),
                ]),
            ),
            Table::new("labels", common(&[col("key", 's'), col("value", 's')])),
        ];
        let mut f = Findings { meta, tables };
        // One row per label: what `fleet --by label:KEY` joins on, in any engine.
        for (k, v) in f.meta.labels.clone() {
            f.push("labels", vec![k.into(), v.into()]);
        }
        f
    }

    /// Every table's name and schema, in [`TABLES`] order: what an engine registers.
    pub fn schemas() -> Vec<(&'static str, SchemaRef)> {
        let blank = TraceMeta {
            host: String::new(),
            date: String::new(),
            trace_id: String::new(),
            kernel: String::new(),
            labels: Vec::new(),
            mode: String::new(),
        };
        let f = Findings::new(blank);
        f.tables.iter().map(|t| (t.name, t.schema())).collect()
    }

    /// The table called `name`.
    pub fn table(&mut self, name: &str) -> &mut Table {
        let i = TABLES
            .iter()
            .position(|t| *t == name)
            .expect("a known table");
        &mut self.tables[i]
    }

    /// Appends a row to `name`, after the common columns.
    pub(crate) fn push(&mut self, name: &str, row: Vec<Val>) {
        let m = &self.meta;
        let mut full: Vec<Val> = vec![
            m.trace_id.as_str().into(),
            m.kernel.as_str().into(),
            m.labels_text().into(),
            m.mode.as_str().into(),
        ];
        full.extend(row);
        self.table(name).push(full);
    }

    /// An explain report's findings.
    pub fn of_explain(meta: TraceMeta, r: &ExplainReport) -> Findings {
        let mut f = Findings::new(meta);
        f.push("traces", trace_row(r));
        for w in &r.windows {
            f.push(
                "samples",
                vec![
                    Val::S(None),
                    Val::S(None),
                    w.start_ns.into(),
                    w.end_ns().map(|e| e - w.start_ns).into(),
                    w.miss.into(),
                    r.deadline_ns.into(),
                    w.tid.into(),
                    w.cpu.into(),
                ],
            );
        }
        for (i, m) in r.misses.iter().enumerate() {
            f.add_miss(i as u64 + 1, m);
        }
        f.add_causes(&r.causes, &r.misses);
        f.add_cpus(r);
        f
    }

    /// The ranked causes, each with the misses its fleet key (no pid) was blamed for:
    /// `hog[1]` and `hog[2]` blamed for one miss are one miss of `hog`, where summing
    /// their rows' counts made two.
    pub(crate) fn add_causes(&mut self, causes: &[CauseRow], misses: &[Miss]) {
        let mut per_key: HashMap<(&str, String), u64> = HashMap::new();
        for m in misses {
            let keys: HashSet<(&str, String)> = (m.blame.iter())
                .map(|((category, who), _)| (category.id(), key_of(who)))
                .collect();
            for k in keys {
                *per_key.entry(k).or_default() += 1;
            }
        }
        for (rank, c) in causes.iter().enumerate() {
            let key = key_of(&c.culprit);
            let key_misses = per_key.get(&(c.category.id(), key.clone())).copied();
            let mut row = vec![Val::from(rank as u64 + 1), c.category.id().into()];
            row.extend(culprit(&c.culprit));
            row.push(key.into());
            row.extend([
                c.count.into(),
                c.total_excess_ns.into(),
                c.mean_excess_ns.into(),
                c.share.into(),
                key_misses.into(),
                c.once_ns.into(),
            ]);
            self.push("causes", row);
        }
    }

    /// One miss: its row, its links and holds, its blame per cause.
    pub(crate) fn add_miss(&mut self, n: u64, m: &Miss) {
        let top = m.blame.first();
        self.push(
            "misses",
            vec![
                n.into(),
                m.start_ns.into(),
                m.duration_ns.into(),
                m.late_ns.into(),
                m.blamed_ns.into(),
                m.tid.into(),
                m.cpu.into(),
                top.map(|((c, _), _)| c.id()).into(),
                top.map(|((_, who), _)| key_of(who)).into(),
            ],
        );
        for (i, l) in m.chain.iter().enumerate() {
            self.add_link(n, i as u64 + 1, l);
        }
        // The first row of each fleet key (a culprit without its pid) marks the miss:
        // counting those counts it once however many pids shared the blame.
        let mut keys = HashSet::new();
        for ((category, who), ns) in &m.blame {
            let key = key_of(who);
            let first = keys.insert((category.id(), key.clone()));
            let mut row = vec![Val::from(n), category.id().into()];
            row.extend(culprit(who));
            row.extend([key.into(), (*ns).into(), first.into()]);
            self.push("blame", row);
        }
    }

    /// A link: one row per hold, or one with no hold.
    fn add_link(&mut self, miss: u64, n: u64, l: &Link) {
        let head = vec![
            Val::from(miss),
            n.into(),
            l.kind.as_str().into(),
            l.what.as_str().into(),
            l.cpu.map(u64::from).into(),
            l.offset_ns.into(),
            l.duration_ns.into(),
            l.usual_ns.into(),
            l.excess_ns.into(),
            l.pending_at_deadline.into(),
            l.after_deadline.into(),
        ];
        if l.held_by.is_empty() {
            let mut row = head.clone();
            row.extend([Val::U(None), Val::S(None)]);
            row.extend(culprit(&Culprit::default()));
            row.extend([Val::S(None), Val::U(None)]);
            self.push("links", row);
        }
        for (j, h) in l.held_by.iter().enumerate() {
            let mut row = head.clone();
            row.extend([Val::from(j as u64 + 1), h.category.id().into()]);
            row.extend(culprit(&h.culprit));
            row.extend([key_of(&h.culprit).into(), h.ns.into()]);
            self.push("links", row);
        }
    }

    /// The per-CPU profile and the machine's IRQ lines.
    fn add_cpus(&mut self, r: &ExplainReport) {
        for p in &r.cpus {
            for s in &p.shares {
                let row = vec![
                    p.cpu.into(),
                    p.busy.into(),
                    s.what.as_str().into(),
                    s.kind.into(),
                    s.share.into(),
                    Val::U(None),
                ];
                self.push("cpus", row);
            }
            for i in &p.irqs {
                let name = if i.name.is_empty() {
                    format!("irq {}", i.irq)
                } else {
                    format!("irq {} {}", i.irq, i.name)
                };
                let row = vec![
                    p.cpu.into(),
                    p.busy.into(),
                    name.into(),
                    "irq-count".into(),
                    Val::F(None),
                    i.count.into(),
                ];
                self.push("cpus", row);
            }
        }
        let irqs = r.machine.iter().flat_map(|m| &m.irqs);
        let rows: Vec<Vec<Val>> = irqs
            .map(|i| {
                vec![
                    i.irq.into(),
                    i.name.as_str().into(),
                    i.affinity.clone().into(),
                    i.effective.clone().into(),
                ]
            })
            .collect();
        for row in rows {
            self.push("irqs", row);
        }
    }

    /// A latency report's findings: one trace row, every sample of every measure.
    pub fn of_latency(meta: TraceMeta, r: &LatencyReport) -> Findings {
        let mut f = Findings::new(meta);
        let n: u64 = r
            .measures
            .iter()
            .flat_map(|m| &m.groups)
            .map(|g| g.count)
            .sum();
        let inputs: Vec<&str> = r.inputs.iter().map(|i| i.path.as_str()).collect();
        let mut row = vec![
            env!("CARGO_PKG_VERSION").into(),
            u64::from(SCHEMA_VERSION).into(),
            inputs.join(",").into(),
            r.events.into(),
        ];
        row.extend([Val::S(None), Val::S(None), Val::U(None), Val::S(None)]);
        row.extend([n.into(), Val::U(None), Val::U(None), Val::U(None)]);
        row.extend([Val::U(None), Val::U(None), Val::U(None), Val::U(None)]);
        row.extend([Val::S(None), Val::B(None), r.notes.join("\n").into()]);
        f.push("traces", row);
        for m in &r.measures {
            for g in &m.groups {
                for [ts, v] in g.samples.iter().flatten() {
                    let row = vec![
                        m.measure.name().into(),
                        g.key.as_str().into(),
                        (*ts).into(),
                        (*v).into(),
                        Val::B(None),
                        Val::U(None),
                        Val::I(None),
                        Val::U(None),
                    ];
                    f.push("samples", row);
                }
            }
        }
        f
    }
}

const TRACES: [Col; 19] = [
    col("whylate_version", 's'),
    col("schema_version", 'u'),
    col("inputs", 's'),
    col("events", 'u'),
    col("from_sel", 's'),
    col("to_sel", 's'),
    col("deadline_ns", 'u'),
    col("deadline_source", 's'),
    col("samples", 'u'),
    col("replied", 'u'),
    col("misses", 'u'),
    col("p50_ns", 'u'),
    col("p99_ns", 'u'),
    col("max_ns", 'u'),
    col("blamed_ns", 'u'),
    col("excess_ns", 'u'),
    col("online_cpus", 's'),
    col("irqbalance", 'b'),
    col("notes", 's'),
];

fn trace_row(r: &ExplainReport) -> Vec<Val> {
    let c = &r.cycles;
    let inputs: Vec<&str> = r.inputs.iter().map(|i| i.path.as_str()).collect();
    let blamed: u64 = r.causes.iter().map(|c| c.total_excess_ns).sum();
    let late: u64 = r.misses.iter().map(|m| m.late_ns).sum();
    let mut notes = r.blind.clone();
    notes.extend(r.notes.iter().cloned());
    vec![
        env!("CARGO_PKG_VERSION").into(),
        u64::from(SCHEMA_VERSION).into(),
        inputs.join(",").into(),
        r.events.into(),
        r.from.as_str().into(),
        r.to.join(",").into(),
        r.deadline_ns.into(),
        r.deadline_source.as_str().into(),
        c.count.into(),
        c.replied.into(),
        c.misses.into(),
        c.p50_ns.into(),
        c.p99_ns.into(),
        c.max_ns.into(),
        blamed.into(),
        late.into(),
        r.machine.as_ref().map(|m| m.online_cpus.clone()).into(),
        Val::B(r.machine.as_ref().map(|m| m.irqbalance)),
        notes.join("\n").into(),
    ]
}

const MISSES: [Col; 9] = [
    col("miss", 'u'),
    col("start_ns", 'u'),
    col("duration_ns", 'u'),
    col("late_ns", 'u'),
    col("blamed_ns", 'u'),
    col("tid", 'i'),
    col("cpu", 'u'),
    col("top_category", 's'),
    col("top_culprit", 's'),
];

fn links_cols() -> Vec<Col> {
    let mut v = vec![
        col("miss", 'u'),
        col("link", 'u'),
        col("kind", 's'),
        col("what", 's'),
        col("link_cpu", 'u'),
        col("offset_ns", 'u'),
        col("duration_ns", 'u'),
        col("usual_ns", 'u'),
        col("excess_ns", 'u'),
        col("pending_at_deadline", 'b'),
        col("after_deadline", 'b'),
        col("hold", 'u'),
        col("category", 's'),
    ];
    v.extend(CULPRIT);
    v.extend([col("culprit", 's'), col("held_ns", 'u')]);
    v
}

fn blame_cols() -> Vec<Col> {
    let mut v = vec![col("miss", 'u'), col("category", 's')];
    v.extend(CULPRIT);
    // `key_first`: added after the first layout (crate::schema::LATER).
    v.extend([
        col("culprit", 's'),
        col("excess_ns", 'u'),
        col("key_first", 'b'),
    ]);
    v
}

fn causes_cols() -> Vec<Col> {
    let mut v = vec![col("rank", 'u'), col("category", 's')];
    v.extend(CULPRIT);
    v.extend([
        col("culprit", 's'),
        col("misses", 'u'),
        col("total_excess_ns", 'u'),
        col("mean_excess_ns", 'u'),
        col("share", 'f'),
        // Added after the first layout: see crate::schema::LATER.
        col("key_misses", 'u'),
        col("once_ns", 'u'),
    ]);
    v
}

/// The culprit's columns, in [`CULPRIT`] order.
fn culprit(c: &Culprit) -> Vec<Val> {
    vec![
        c.comm.clone().into(),
        c.pid.into(),
        c.irq
            .map(i64::from)
            .map_or(Val::I(None), |i| Val::I(Some(i))),
        c.irq_name.clone().into(),
        c.vector.clone().into(),
        c.caller.clone().into(),
        syscall(c).into(),
        c.cpu.into(),
    ]
}

/// The system call a task sat in (`inside read()` names `read`).
fn syscall(c: &Culprit) -> Option<String> {
    let inner = c.caller.as_deref()?.strip_prefix("inside ")?;
    Some(inner.strip_suffix("()")?.to_string())
}

/// The culprit as the fleet keys it: its label with no pid and no CPU (`hog`, `irq
/// virtio0-input.0`, `softirq NET_RX`, `console_unlock`, `hog inside read()`), empty for
/// a culprit that names nothing but a CPU.
pub fn key_of(c: &Culprit) -> String {
    let mut k = if let Some(comm) = &c.comm {
        comm.clone()
    } else if let Some(n) = &c.irq_name {
        format!("irq {n}")
    } else if let Some(i) = c.irq {
        format!("irq {i}")
    } else if let Some(v) = &c.vector {
        format!("softirq {v}")
    } else {
        String::new()
    };
    if let Some(code) = &c.caller {
        if !k.is_empty() {
            k.push(' ');
        }
        k.push_str(&without_pids(code));
    }
    k
}

/// `while kdamond.0[78] ran` -> `while kdamond.0 ran`: a pid in words is still a pid.
fn without_pids(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('[') {
        let tail = &rest[i + 1..];
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        out.push_str(&rest[..i]);
        if digits > 0 && tail[digits..].starts_with(']') {
            rest = &tail[digits + 1..];
        } else {
            out.push('[');
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use whylate::explain::Culprit;

    #[test]
    fn culprits_are_keyed_without_pids_or_cpus() {
        let task = Culprit {
            comm: Some("hog".into()),
            pid: Some(42),
            cpu: Some(1),
            ..Culprit::default()
        };
        assert_eq!(key_of(&task), "hog");
        let irq = Culprit {
            irq: Some(16),
            irq_name: Some("ehci_hcd:usb1".into()),
            ..Culprit::default()
        };
        assert_eq!(key_of(&irq), "irq ehci_hcd:usb1");
        let code = Culprit {
            caller: Some("non-preemptible kernel code while kdamond.0[78] ran [x]".into()),
            ..Culprit::default()
        };
        assert_eq!(
            key_of(&code),
            "non-preemptible kernel code while kdamond.0 ran [x]"
        );
        let sys = Culprit {
            caller: Some("inside read()".into()),
            ..task.clone()
        };
        assert_eq!(key_of(&sys), "hog inside read()");
        assert_eq!(syscall(&sys).as_deref(), Some("read"));
        assert_eq!(
            key_of(&Culprit {
                cpu: Some(0),
                ..Culprit::default()
            }),
            ""
        );
    }
}
