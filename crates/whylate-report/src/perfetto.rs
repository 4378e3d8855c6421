//! `whylate export --perfetto`: the timeline as a Chrome trace-event JSON file that
//! ui.perfetto.dev and chrome://tracing open.
//!
//! One process per CPU, with a thread track each for the tasks that ran, hard interrupts,
//! softirqs, work items, hrtimer callbacks, lost-event windows and the links of the explained
//! misses' chains. Each chain is one flow (trace-event flow v2: `bind_id`, `flow_out`,
//! `flow_in` on the slices), so the UI draws the hand-offs as arrows across CPUs.
//!
//! Slices on a track never overlap: a span that would (a preempted worker's work item
//! under the next one's) goes to a second track of the same kind, so no importer has to
//! guess at nesting. Timestamps are written as exact decimal microseconds.

use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{self, Write};
use whylate::event::{Interner, Sym, SOFTIRQ_NAMES};
use whylate::explain::ExplainReport;
use whylate::timeline::{span, SpanKind, Timeline};

/// Track kinds of a CPU, in display order.
pub const TRACKS: [&str; 7] = [
    "chain", "tasks", "hardirq", "softirq", "work", "hrtimer", "lost",
];
const T_CHAIN: usize = 0;
const T_TASKS: usize = 1;
const T_IRQ: usize = 2;
const T_SOFTIRQ: usize = 3;
const T_WORK: usize = 4;
const T_TIMER: usize = 5;
const T_LOST: usize = 6;
/// Parallel tracks per kind before slices are clipped instead.
const SUBS: usize = 8;
const PID_BASE: u64 = 1_000_000;
const TID_BASE: u64 = 2_000_000;

/// What was written.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ExportStats {
    /// Complete (`X`) events per track kind.
    pub slices: BTreeMap<String, u64>,
    /// All `X` events.
    pub total_slices: u64,
    /// Flows (one per explained miss with two or more placed links).
    pub flows: u64,
    /// Slices clipped because more than `SUBS` overlapped.
    pub clipped: u64,
    /// Bytes written.
    pub bytes: u64,
}

struct Counting<W> {
    w: W,
    n: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        let k = self.w.write(b)?;
        self.n += k as u64;
        Ok(k)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

/// Exact microseconds from ns, as a JSON number.
fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

fn tid_of(cpu: u32, track: usize, sub: usize) -> u64 {
    TID_BASE + cpu as u64 * 64 + (track * SUBS + sub) as u64
}

/// Places slices on non-overlapping sub-tracks, per (cpu, kind).
#[derive(Default)]
struct Lanes {
    ends: BTreeMap<(u32, usize), [u64; SUBS]>,
    used: BTreeMap<(u32, usize), usize>,
}

impl Lanes {
    /// Sub-track for `[a, b)`; when all are busy, the start moves to the earliest free time.
    fn place(&mut self, cpu: u32, track: usize, a: u64, b: u64) -> (usize, u64, bool) {
        let ends = self.ends.entry((cpu, track)).or_insert([0; SUBS]);
        let (sub, clipped_start) = match ends.iter().position(|&e| e <= a) {
            Some(i) => (i, a),
            None => {
                let (i, &e) = ends
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, e)| **e)
                    .expect("SUBS > 0");
                (i, e.min(b))
            }
        };
        ends[sub] = b.max(clipped_start);
        let u = self.used.entry((cpu, track)).or_default();
        *u = (*u).max(sub + 1);
        (sub, clipped_start, clipped_start != a)
    }
}

struct Slice {
    cpu: u32,
    track: usize,
    start: u64,
    end: u64,
    name: String,
    args: serde_json::Value,
    /// Flow id and direction (out, in).
    flow: Option<(u64, bool, bool)>,
}

/// Writes the trace-event JSON of `tl`, with the chains of `r`'s misses as flows.
pub fn write<W: Write>(
    out: W,
    r: &ExplainReport,
    tl: &Timeline,
    s: &Interner,
) -> io::Result<ExportStats> {
    let mut slices: Vec<Slice> = Vec::with_capacity(tl.spans.len() / 2);
    slices.extend((0..tl.spans.len()).filter_map(|i| span_slice(tl, s, i)));
    lost_slices(tl, &mut slices);
    let flows = chain_slices(r, &mut slices);
    slices.sort_by_key(|x| (x.start, x.track, x.cpu));
    let mut w = Events {
        w: Counting { w: out, n: 0 },
        first: true,
    };
    let mut st = ExportStats::default();
    let mut lanes = Lanes::default();
    w.w.write_all(b"{\"displayTimeUnit\":\"ns\",\"otherData\":")?;
    serde_json::to_writer(
        &mut w.w,
        &serde_json::json!({
            "generator": concat!("whylate ", env!("CARGO_PKG_VERSION")),
            "explained": r.from,
            "misses": r.misses.len(),
        }),
    )?;
    w.w.write_all(b",\n\"traceEvents\":[\n")?;
    for x in &slices {
        w.slice(x, &mut lanes, &mut st)?;
    }
    w.track_names(&lanes)?;
    w.w.write_all(b"\n]}\n")?;
    w.w.flush()?;
    st.flows = flows;
    st.bytes = w.w.n;
    Ok(st)
}

/// The event array as it is written: a separator before every event but the first.
struct Events<W: Write> {
    w: Counting<W>,
    first: bool,
}

impl<W: Write> Events<W> {
    fn sep(&mut self) -> io::Result<()> {
        if !self.first {
            self.w.write_all(b",\n")?;
        }
        self.first = false;
        Ok(())
    }

    /// One slice, on the first free sub-track of its CPU and track.
    fn slice(&mut self, x: &Slice, lanes: &mut Lanes, st: &mut ExportStats) -> io::Result<()> {
        let (sub, start, clipped) = lanes.place(x.cpu, x.track, x.start, x.end);
        st.clipped += u64::from(clipped);
        self.sep()?;
        let mut ev = serde_json::json!({
            "ph": "X",
            "name": x.name,
            "cat": TRACKS[x.track],
            "pid": PID_BASE + x.cpu as u64,
            "tid": tid_of(x.cpu, x.track, sub),
            "args": x.args,
        });
        if let Some((id, out, inn)) = x.flow {
            ev["bind_id"] = id.into();
            if out {
                ev["flow_out"] = true.into();
            }
            if inn {
                ev["flow_in"] = true.into();
            }
        }
        // ts/dur as exact decimals: serde_json would round through f64.
        let body = ev.to_string();
        write!(
            self.w,
            "{{\"ts\":{},\"dur\":{},{}",
            us(start),
            us(x.end.saturating_sub(start)),
            &body[1..]
        )?;
        *st.slices.entry(TRACKS[x.track].to_string()).or_default() += 1;
        st.total_slices += 1;
        Ok(())
    }

    /// Names and order of the tracks that were used.
    fn track_names(&mut self, lanes: &Lanes) -> io::Result<()> {
        let mut named = std::collections::BTreeSet::new();
        for (&(cpu, track), &n) in &lanes.used {
            if named.insert(cpu) {
                self.sep()?;
                serde_json::to_writer(
                    &mut self.w,
                    &serde_json::json!({"ph": "M", "name": "process_name", "pid": PID_BASE + cpu as u64, "args": {"name": format!("CPU {cpu}")}}),
                )?;
                self.sep()?;
                serde_json::to_writer(
                    &mut self.w,
                    &serde_json::json!({"ph": "M", "name": "process_sort_index", "pid": PID_BASE + cpu as u64, "args": {"sort_index": cpu}}),
                )?;
            }
            for sub in 0..n {
                let tid = tid_of(cpu, track, sub);
                let name = if sub == 0 {
                    TRACKS[track].to_string()
                } else {
                    format!("{} ({})", TRACKS[track], sub + 1)
                };
                self.sep()?;
                serde_json::to_writer(
                    &mut self.w,
                    &serde_json::json!({"ph": "M", "name": "thread_name", "pid": PID_BASE + cpu as u64, "tid": tid, "args": {"name": name}}),
                )?;
                self.sep()?;
                serde_json::to_writer(
                    &mut self.w,
                    &serde_json::json!({"ph": "M", "name": "thread_sort_index", "pid": PID_BASE + cpu as u64, "tid": tid, "args": {"sort_index": track * SUBS + sub}}),
                )?;
            }
        }
        Ok(())
    }
}

/// Span `i` as a slice, if it is drawn (task runs, irq handlers, softirqs, work items,
/// timer callbacks).
fn span_slice(tl: &Timeline, s: &Interner, i: usize) -> Option<Slice> {
    let sp = &tl.spans;
    let task = |tid: i32| tl.task_name(s, tid);
    let track = match sp.kind[i] {
        SpanKind::Run if sp.tid[i] > 0 => T_TASKS,
        SpanKind::Hardirq => T_IRQ,
        SpanKind::Softirq => T_SOFTIRQ,
        SpanKind::Work => T_WORK,
        SpanKind::TimerCb => T_TIMER,
        _ => return None,
    };
    if sp.cpu[i] == u32::MAX {
        return None;
    }
    let (name, args) = match track {
        T_TASKS => (
            task(sp.tid[i]),
            serde_json::json!({"tid": sp.tid[i], "prio": sp.key[i] % 1000}),
        ),
        T_IRQ => {
            let irq = sp.key[i];
            let n = tl.irq_names.get(&irq).map(|x| s.get(*x)).unwrap_or("");
            (
                if irq == u32::MAX {
                    "irq (no handler event)".to_string()
                } else if n.is_empty() {
                    format!("irq {irq}")
                } else {
                    format!("irq {irq} {n}")
                },
                serde_json::json!({"interrupted": task(sp.tid[i])}),
            )
        }
        T_SOFTIRQ => (
            SOFTIRQ_NAMES
                .get(sp.key[i] as usize)
                .copied()
                .unwrap_or("softirq")
                .to_string(),
            serde_json::json!({
                "in_ksoftirqd": sp.flags[i] & span::KSOFTIRQD != 0,
                "in_task": sp.flags[i] & span::IN_TASK != 0,
            }),
        ),
        _ => (
            s.get(Sym(sp.key[i])).to_string(),
            serde_json::json!({"task": task(sp.tid[i])}),
        ),
    };
    let mut args = args;
    // Say where the timeline guessed: the UI shows args on selection.
    for (bit, what) in [
        (span::START_UNKNOWN, "start_unknown"),
        (span::END_UNKNOWN, "end_unknown"),
        (span::UNCERTAIN, "crosses_lost_events"),
        (span::INFERRED, "inferred"),
    ] {
        if sp.flags[i] & bit != 0 {
            args[what] = serde_json::Value::Bool(true);
        }
    }
    Some(Slice {
        cpu: sp.cpu[i],
        track,
        start: sp.start[i],
        end: sp.end[i],
        name,
        args,
        flow: None,
    })
}

/// Lost-event windows, on their CPU (or on every CPU when the trace does not say which).
fn lost_slices(tl: &Timeline, slices: &mut Vec<Slice>) {
    for l in &tl.lost {
        let cpus: Vec<u32> = if l.cpu == u32::MAX {
            (0..tl.cpus).collect()
        } else {
            vec![l.cpu]
        };
        for cpu in cpus {
            slices.push(Slice {
                cpu,
                track: T_LOST,
                start: l.from,
                end: l.to.max(l.from),
                name: "events lost".into(),
                args: serde_json::json!({"count": l.count}),
                flow: None,
            });
        }
    }
}

/// The explained misses' chains, one flow per miss that has two placed links or more.
/// Returns the flows.
fn chain_slices(r: &ExplainReport, slices: &mut Vec<Slice>) -> u64 {
    let mut flows = 0;
    for (k, m) in r.misses.iter().enumerate() {
        let placed: Vec<_> = m.chain.iter().filter(|l| l.cpu.is_some()).collect();
        let id = k as u64 + 1;
        if placed.len() >= 2 {
            flows += 1;
        }
        for (j, l) in placed.iter().enumerate() {
            let flow = (placed.len() >= 2).then_some((id, j + 1 < placed.len(), j > 0));
            slices.push(Slice {
                cpu: l.cpu.unwrap_or(0),
                track: T_CHAIN,
                start: l.ts_ns,
                end: l.ts_ns + l.duration_ns,
                name: format!("miss {}: {}", k + 1, l.kind),
                args: serde_json::json!({
                    "what": l.what,
                    "excess_ns": l.excess_ns,
                    "usual_ns": l.usual_ns,
                    "held_by": l.held_by.iter().map(|h| format!("{} {} {} ns", h.category, h.culprit.label(), h.ns)).collect::<Vec<_>>(),
                }),
                flow,
            });
        }
    }
    flows
}

#[cfg(test)]
mod tests {
    use whylate::explain::{run, Mode};
    use whylate::read::OpenOptions;
    use whylate::testkit;

    #[test]
    fn slices_per_track_and_one_flow_per_explained_miss() {
        let mode = Mode::Auto {
            top: 3,
            deadline_ns: None,
        };
        let x = run(
            whylate::testkit::opened(&testkit::three_cpu_chain(6, &[4], 3_000)),
            &OpenOptions::default(),
            &mode,
        )
        .unwrap();
        let mut buf = Vec::new();
        let st = super::write(&mut buf, &x.report, &x.timeline, &x.strings).unwrap();
        let (r, out) = (x.report, (st, buf));
        let (st, buf) = out;
        let j: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        let events = j["traceEvents"].as_array().unwrap();
        let slices = events.iter().filter(|e| e["ph"] == "X").count() as u64;
        assert_eq!(slices, st.total_slices);
        assert_eq!(st.bytes, buf.len() as u64);
        // Six worker runs, the hog's run and the bystander's on the task tracks; six work
        // items; the two outliers each one link on the chain track (one link: no flow).
        assert_eq!(st.slices["work"], 6);
        assert_eq!(st.slices["chain"], r.misses.len() as u64);
        assert_eq!(st.flows, 0);
        // Times are exact decimals of microseconds.
        let text = String::from_utf8(buf).unwrap();
        assert!(
            text.contains("{\"ts\":1004092.000,\"dur\":3000.000,"),
            "{text}"
        );
    }
}
