//! `whylate stats`: what is in a trace — format, span, counts by event, CPU and task, where
//! events were lost and which lines were not understood. One streaming pass; memory grows
//! with distinct names, CPUs and tasks only.

use crate::event::{Event, EventName, Interner, Kind, STATIC_NAMES};
use crate::read::inputs::{describe_inputs, InputInfo, Inputs, Unparsed};
use crate::read::{self, Merged, OpenOptions, Opened, ReadError};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One window in which a CPU lost events.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LostWindow {
    /// The CPU.
    pub cpu: u32,
    /// Events lost, when the trace says.
    pub count: Option<u64>,
    /// Last event seen on that CPU before the loss (None: the loss precedes everything).
    pub from_ns: Option<u64>,
    /// First event on that CPU after the loss (None: nothing followed).
    pub to_ns: Option<u64>,
}

/// Lost events overall.
#[derive(Clone, Debug, Serialize, Default)]
pub struct Lost {
    /// Sum of the counts the trace gave.
    pub events: u64,
    /// Markers (a buffer restart has no count).
    pub markers: u64,
    /// The windows, in time order.
    pub windows: Vec<LostWindow>,
}

/// A task with its event count.
#[derive(Clone, Debug, Serialize)]
pub struct TaskCount {
    /// Thread id.
    pub tid: i32,
    /// Best known name (a real name wins over `<...>`).
    pub comm: String,
    /// Events recorded in its context.
    pub events: u64,
}

/// The result of `whylate stats`.
#[derive(Clone, Debug, Serialize)]
pub struct StatsReport {
    /// The format of the inputs (`mixed` when they differ).
    pub format: String,
    /// Per input.
    pub inputs: Vec<InputInfo>,
    /// Events in total (lost-event markers included, see `lost`).
    pub events: u64,
    /// First timestamp (ns).
    pub first_ns: Option<u64>,
    /// Last timestamp (ns).
    pub last_ns: Option<u64>,
    /// `last_ns - first_ns`.
    pub span_ns: Option<u64>,
    /// Events per bare event name.
    pub by_name: BTreeMap<String, u64>,
    /// Events per CPU (`unknown` when the format has no CPU column).
    pub by_cpu: BTreeMap<String, u64>,
    /// The busiest tasks by event count.
    pub top_tasks: Vec<TaskCount>,
    /// Tasks seen.
    pub tasks: usize,
    /// Lost events.
    pub lost: Lost,
    /// Lines not understood, all inputs.
    pub unparsed: u64,
    /// The first of them.
    pub unparsed_samples: Vec<Unparsed>,
    /// Lines that are not trace data, skipped.
    pub skipped: u64,
    /// Where the analysis is blind or approximate, in words.
    pub notes: Vec<String>,
}

/// Arrays this long have no derived `Default`.
struct StaticCounts([u64; STATIC_NAMES.len()]);

impl Default for StaticCounts {
    fn default() -> Self {
        StaticCounts([0; STATIC_NAMES.len()])
    }
}

#[derive(Default)]
struct Acc {
    events: u64,
    first: Option<u64>,
    last: Option<u64>,
    /// Names fixed by the kind, indexed like [`STATIC_NAMES`]; the rest by name.
    by_static: StaticCounts,
    by_name: FxHashMap<EventName, u64>,
    /// Indexed by CPU (dense and small); events without a CPU are counted apart.
    by_cpu: Vec<u64>,
    no_cpu: u64,
    cpu_last: Vec<Option<u64>>,
    tasks: FxHashMap<i32, (crate::event::Sym, u64)>,
    /// Events of one thread in a row are counted here and added to `tasks` when the thread
    /// changes: one map update per run instead of per event.
    run: Option<(i32, crate::event::Sym, u64)>,
    names: FxHashMap<i32, crate::event::Sym>,
    /// What `names` holds for recently learnt threads, one slot per tid: a busy trace
    /// names the same few threads in every sched event, and a hit skips the map.
    learnt: Learnt,
    lost: Lost,
    open_lost: FxHashMap<u32, Vec<usize>>,
}

const LEARNT: usize = 64;

struct Learnt([Option<(i32, crate::event::Sym)>; LEARNT]);

impl Default for Learnt {
    fn default() -> Self {
        Learnt([None; LEARNT])
    }
}

/// CPUs beyond this are counted as "unknown" rather than growing the vectors.
const MAX_CPU: u32 = 1 << 16;

impl Acc {
    fn add(&mut self, e: &Event, strings: &Interner) {
        self.events += 1;
        if e.ts != 0 || self.first.is_some() {
            self.first = Some(self.first.map_or(e.ts, |f| f.min(e.ts)));
            self.last = Some(self.last.map_or(e.ts, |l| l.max(e.ts)));
        }
        match EventName::static_index(&e.kind) {
            Some(i) => self.by_static.0[i] += 1,
            None => *self.by_name.entry(e.name()).or_default() += 1,
        }
        let cpu = (e.cpu < MAX_CPU).then_some(e.cpu as usize);
        match cpu {
            Some(c) => {
                if c >= self.by_cpu.len() {
                    self.by_cpu.resize(c + 1, 0);
                    self.cpu_last.resize(c + 1, None);
                }
                self.by_cpu[c] += 1;
            }
            None => self.no_cpu += 1,
        }
        if let Kind::Lost { count } = e.kind {
            self.lost.events += count.unwrap_or(0);
            self.lost.markers += 1;
            self.lost.windows.push(LostWindow {
                cpu: e.cpu,
                count,
                from_ns: cpu.and_then(|c| self.cpu_last[c]),
                to_ns: None,
            });
            self.open_lost
                .entry(e.cpu)
                .or_default()
                .push(self.lost.windows.len() - 1);
            return;
        }
        if !self.open_lost.is_empty() {
            if let Some(open) = self.open_lost.remove(&e.cpu) {
                for i in open {
                    self.lost.windows[i].to_ns = Some(e.ts);
                }
            }
        }
        if let Some(c) = cpu {
            self.cpu_last[c] = Some(e.ts);
        }
        if e.tid >= 0 {
            match &mut self.run {
                Some((tid, _, n)) if *tid == e.tid => *n += 1,
                run => {
                    if let Some((tid, comm, n)) = run.replace((e.tid, e.comm, 1)) {
                        self.tasks.entry(tid).or_insert((comm, 0)).1 += n;
                    }
                }
            }
            self.learn(e.tid, e.comm, strings);
        }
        match e.kind {
            Kind::SchedSwitch {
                prev_comm,
                prev_pid,
                next_comm,
                next_pid,
                ..
            } => {
                self.learn(prev_pid, prev_comm, strings);
                self.learn(next_pid, next_comm, strings);
            }
            Kind::SchedWaking { comm, pid, .. } | Kind::SchedWakeup { comm, pid, .. } => {
                self.learn(pid, comm, strings)
            }
            _ => {}
        }
    }

    /// Adds the pending run of events to the per-thread counts.
    fn flush_run(&mut self) {
        if let Some((tid, comm, n)) = self.run.take() {
            self.tasks.entry(tid).or_insert((comm, 0)).1 += n;
        }
    }

    /// The latest real name of a thread wins (exec renames it); `<...>` means the kernel
    /// did not know the name then, so it never replaces one.
    fn learn(&mut self, tid: i32, comm: crate::event::Sym, strings: &Interner) {
        let slot = &mut self.learnt.0[tid as usize % LEARNT];
        if *slot == Some((tid, comm)) {
            return;
        }
        let c = strings.get(comm);
        if tid > 0 && !c.is_empty() && c != "<...>" {
            self.names.insert(tid, comm);
            // Every insert for `tid` passes here and overwrites its slot, so a slot
            // always agrees with the map.
            *slot = Some((tid, comm));
        }
    }
}

/// Reads the inputs (merged by time when several) and counts.
pub fn stats(inputs: Opened, opts: &OpenOptions, top: usize) -> Result<StatsReport, ReadError> {
    let (paths, sources) = inputs.into_parts();
    let paths = &paths[..];
    let mut acc = Acc::default();
    let mut per_input = vec![0u64; paths.len()];
    let mut n = 0u64;
    // Read as `explain` reads: a binary input on two threads.
    let mut feed = |i: usize, e: &Event, strings: &Interner| {
        per_input[i] += 1;
        n += 1;
        read::Progress::tick(&opts.progress, n);
        acc.add(e, strings);
    };
    let (merged, strings) = crate::read::each_event(Merged::new(sources), &mut feed)?;
    Ok(finish(
        acc,
        merged.sources(),
        paths,
        &per_input,
        &strings,
        top,
    ))
}

fn finish(
    mut acc: Acc,
    sources: &[read::Input],
    paths: &[PathBuf],
    per_input: &[u64],
    strings: &Interner,
    top: usize,
) -> StatsReport {
    let Inputs {
        inputs,
        unparsed,
        skipped,
        samples,
        mut notes,
    } = describe_inputs(sources, paths, per_input);
    notes.extend(strings.cap_note());
    if acc.lost.markers > 0 {
        notes.push(format!(
            "events were lost in {} window(s) ({} events counted): measurements crossing them are uncertain",
            acc.lost.markers, acc.lost.events
        ));
    }
    let format = if inputs.iter().all(|i| i.format == inputs[0].format) {
        inputs[0].format.name().to_string()
    } else {
        "mixed".to_string()
    };
    acc.flush_run();
    let mut by_name: BTreeMap<String, u64> = BTreeMap::new();
    for (i, n) in acc.by_static.0.iter().enumerate() {
        if *n > 0 {
            *by_name.entry(STATIC_NAMES[i].to_string()).or_default() += n;
        }
    }
    for (k, v) in &acc.by_name {
        *by_name.entry(k.render(strings)).or_default() += v;
    }
    let mut by_cpu: BTreeMap<String, u64> = acc
        .by_cpu
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(c, n)| (c.to_string(), *n))
        .collect();
    if acc.no_cpu > 0 {
        by_cpu.insert("unknown".to_string(), acc.no_cpu);
    }
    let mut tasks: Vec<_> = acc
        .tasks
        .iter()
        .map(|(tid, (comm, n))| TaskCount {
            tid: *tid,
            comm: strings
                .get(acc.names.get(tid).copied().unwrap_or(*comm))
                .to_string(),
            events: *n,
        })
        .collect();
    let ntasks = tasks.len();
    tasks.sort_by(|a, b| b.events.cmp(&a.events).then(a.tid.cmp(&b.tid)));
    tasks.truncate(top);
    StatsReport {
        format,
        inputs,
        events: acc.events,
        first_ns: acc.first,
        last_ns: acc.last,
        span_ns: acc.first.zip(acc.last).map(|(f, l)| l - f),
        by_name,
        by_cpu,
        top_tasks: tasks,
        tasks: ntasks,
        lost: acc.lost,
        unparsed,
        unparsed_samples: samples,
        skipped,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use crate::read::OpenOptions;
    use crate::testkit;

    #[test]
    fn a_cancelled_read_stops_with_its_own_error() {
        let p =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/frob.dat.zst");
        let progress = std::sync::Arc::new(crate::read::Progress::default());
        (progress.cancel).store(true, std::sync::atomic::Ordering::Relaxed);
        let opts = OpenOptions {
            progress: Some(progress),
            ..Default::default()
        };
        let at = crate::read::Opened::files(std::slice::from_ref(&p), &opts).unwrap();
        let r = super::stats(at, &opts, 3);
        assert!(matches!(r, Err(crate::read::ReadError::Cancelled)));
    }

    #[test]
    fn counts_by_name_cpu_and_task() {
        // Two quiet cycles: 9 lines each (write, queue, waking, switch, start, end,
        // switch, read on CPU0/1; getpid on CPU2), and the bystander's switch-in.
        let r = super::stats(
            crate::testkit::opened(&testkit::three_cpu_chain(2, &[], 0)),
            &OpenOptions::default(),
            10,
        )
        .unwrap();
        assert_eq!(r.events, 19);
        assert_eq!(r.by_name["sched_switch"], 5);
        assert_eq!(r.by_name["workqueue_queue_work"], 2);
        let cpus: Vec<(&str, u64)> = r.by_cpu.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(cpus, [("0", 8), ("1", 8), ("2", 3)]);
        assert_eq!(r.span_ns, Some(1_001_100_000 - 999_000_000));
        assert_eq!(r.unparsed, 0);
        assert_eq!(r.top_tasks[0].comm, "c");
    }
}
