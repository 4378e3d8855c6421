//! Pictures of an explained trace: the latency histogram, the per-cycle raster of kernel
//! events (`report::raster`), and a per-CPU swimlane of each explained miss with its chain
//! and the blamed time.
//!
//! [`build`] turns a report and the timeline it came from into [`Plots`], plain data with
//! every coordinate decided; `report::svg` draws them as standalone SVG and `report::html`
//! assembles the single-file report.

use super::labels::Labels;
use super::raster::{raster, Raster};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use whylate::event::{Interner, SOFTIRQ_NAMES};
use whylate::explain::{ExplainReport, Hold};
use whylate::timeline::{SpanKind, Timeline};
use whylate::units::dur;

/// Misses drawn one by one unless asked otherwise: every miss of a usual trace, and a
/// page that still opens at once when a trace has thousands.
pub const DEFAULT_LANES: usize = 50;

/// What the plots need besides the report.
#[derive(Clone, Debug)]
pub struct PlotOptions {
    /// Misses that get a swimlane (worst first).
    pub lanes: usize,
}

impl Default for PlotOptions {
    fn default() -> Self {
        PlotOptions {
            lanes: DEFAULT_LANES,
        }
    }
}

/// Everything drawn.
#[derive(Clone, Debug)]
pub struct Plots {
    /// Latency histogram.
    pub hist: Histogram,
    /// Per-cycle raster.
    pub raster: Raster,
    /// One per explained miss, worst first.
    pub lanes: Vec<Swimlane>,
}

/// A linear histogram of the measured durations.
#[derive(Clone, Debug)]
pub struct Histogram {
    /// What was measured (x axis).
    pub what: String,
    /// Bin width.
    pub step_ns: u64,
    /// Counts from 0 in steps of `step_ns`.
    pub counts: Vec<u64>,
    /// Samples at or beyond the last bin (drawn as one bar past the axis's last tick).
    pub over: u64,
    /// The largest sample (the off-scale bar says how far it goes).
    pub max_ns: u64,
    /// The deadline.
    pub deadline_ns: Option<u64>,
    /// Samples.
    pub total: u64,
    /// Where some replies were read later than they were ready (the samples are the ready
    /// times): when those were read.
    pub read: Option<ReadSeries>,
}

/// The read times of the cycles whose reply was read later than it was ready, on the
/// histogram's bins. The axis stays scaled to the ready times, as the raster's does: a
/// reader that gave up reads long after, off any useful scale.
#[derive(Clone, Debug)]
pub struct ReadSeries {
    /// Cycles whose reply was read later than it was ready.
    pub later: u64,
    /// Their read times, counted as [`Histogram::counts`].
    pub counts: Vec<u64>,
    /// Read times at or beyond the last bin: counted in the bar past the axis's last tick.
    pub over: u64,
    /// The latest read time.
    pub max_ns: u64,
}

/// Which part of a CPU a swimlane row shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RowKind {
    /// The explained chain's links that ran or waited there.
    Chain,
    /// Tasks running.
    Tasks,
    /// Hard interrupts.
    Irq,
    /// Softirqs.
    Softirq,
    /// Work items.
    Work,
}

impl RowKind {
    /// Row label.
    pub fn name(self) -> &'static str {
        match self {
            RowKind::Chain => "chain",
            RowKind::Tasks => "tasks",
            RowKind::Irq => "irq",
            RowKind::Softirq => "softirq",
            RowKind::Work => "work",
        }
    }
}

/// A row of a swimlane.
#[derive(Clone, Debug)]
pub struct Row {
    /// CPU.
    pub cpu: u32,
    /// What it shows.
    pub kind: RowKind,
}

/// A bar of a swimlane.
#[derive(Clone, Debug)]
pub struct Bar {
    /// Row index.
    pub row: u32,
    /// Start (clipped to the window).
    pub start_ns: u64,
    /// End.
    pub end_ns: u64,
    /// Text inside, when it fits.
    pub label: String,
    /// Hover text.
    pub title: String,
    /// Colour key: the same key, the same colour.
    pub color: u32,
    /// A chain link with time above its usual.
    pub late: bool,
}

/// A hand-off from one link to the next.
#[derive(Clone, Copy, Debug)]
pub struct Arrow {
    /// From (time, row).
    pub from: (u64, u32),
    /// To.
    pub to: (u64, u32),
}

/// One explained miss on a per-CPU time axis.
#[derive(Clone, Debug)]
pub struct Swimlane {
    /// Index into the report's misses.
    pub miss: usize,
    /// Heading.
    pub title: String,
    /// Time zero (the miss's start).
    pub t0_ns: u64,
    /// Window shown.
    pub from_ns: u64,
    /// See `from_ns`.
    pub to_ns: u64,
    /// Deadline, from t0.
    pub deadline_ns: Option<u64>,
    /// Rows, top to bottom.
    pub rows: Vec<Row>,
    /// Bars.
    pub bars: Vec<Bar>,
    /// Blamed time, drawn over the bars.
    pub blame: Vec<Bar>,
    /// The chain's hand-offs.
    pub arrows: Vec<Arrow>,
    /// Spans too narrow to draw at this scale.
    pub hidden: u64,
}

/// Builds the plots of `r`, explained from `tl`.
pub fn build(r: &ExplainReport, tl: &Timeline, s: &Interner, o: &PlotOptions) -> Plots {
    let ymax = y_range(r);
    let idx = (o.lanes > 0 && !r.misses.is_empty()).then(|| ByCpu::new(tl));
    Plots {
        hist: histogram(r, ymax),
        raster: raster(r, tl, s, ymax),
        lanes: match &idx {
            Some(idx) => (0..r.misses.len().min(o.lanes))
                .map(|i| swimlane(r, tl, s, idx, i))
                .collect(),
            None => Vec::new(),
        },
    }
}

/// Per CPU, the spans a swimlane draws (task runs, irqs, softirqs, work), by start.
struct ByCpu(Vec<Vec<u32>>);

impl ByCpu {
    fn new(tl: &Timeline) -> ByCpu {
        let sp = &tl.spans;
        let mut v: Vec<Vec<u32>> = vec![Vec::new(); tl.cpus as usize];
        for i in 0..sp.len() {
            let keep = match sp.kind[i] {
                SpanKind::Run => sp.tid[i] > 0,
                SpanKind::Hardirq | SpanKind::Softirq | SpanKind::Work => true,
                _ => false,
            };
            if let Some(l) = v.get_mut(sp.cpu[i] as usize).filter(|_| keep) {
                l.push(i as u32);
            }
        }
        for l in &mut v {
            l.sort_unstable_by_key(|&i| sp.start[i as usize]);
        }
        ByCpu(v)
    }

    /// Spans on `cpu` overlapping `[a, b]`. Runs on a CPU do not overlap each other and
    /// interrupts nest only a few deep, so a few spans back from `a` cover every span
    /// that began before it.
    fn overlapping(&self, tl: &Timeline, cpu: u32, a: u64, b: u64) -> Vec<usize> {
        let sp = &tl.spans;
        let Some(l) = self.0.get(cpu as usize) else {
            return Vec::new();
        };
        let first = l.partition_point(|&i| sp.start[i as usize] < a);
        let back = first.saturating_sub(16);
        l[back..]
            .iter()
            .map(|&i| i as usize)
            .take_while(|&i| sp.start[i] <= b)
            .filter(|&i| sp.end[i] > a)
            .collect()
    }
}

/// The measured durations of the windows that ended, in window order.
fn durations(r: &ExplainReport) -> impl Iterator<Item = u64> + Clone + '_ {
    (r.windows.iter()).filter_map(|w| w.end_ns().map(|e| e - w.start_ns))
}

/// The largest duration and the one at index `n * 99 / 100` of them sorted (the last
/// when fewer than 100), from the 1% above it: a copy of all of them cost 8 bytes each.
fn p99_and_max(d: impl Iterator<Item = u64> + Clone) -> (u64, u64) {
    let n = d.clone().count();
    if n == 0 {
        return (0, 0);
    }
    let above = n - (n * 99 / 100).min(n - 1);
    let mut top: BinaryHeap<Reverse<u64>> = BinaryHeap::with_capacity(above + 1);
    let mut max = 0;
    for d in d {
        max = max.max(d);
        if top.len() < above {
            top.push(Reverse(d));
        } else if top.peek().is_some_and(|m| d > m.0) {
            top.pop();
            top.push(Reverse(d));
        }
    }
    (top.peek().map_or(0, |m| m.0), max)
}

/// Top of the raster's y axis: the deadline and the slow tail in view, a single huge
/// outlier not flattening the rest.
fn y_range(r: &ExplainReport) -> u64 {
    let (p99, max) = p99_and_max(durations(r));
    let want = (p99 + p99 / 4).max(r.deadline_ns.map_or(0, |x| x * 2));
    let y = if max > 0 {
        want.min(max + max / 20)
    } else {
        want
    };
    nice_ceil(y.max(r.deadline_ns.map_or(0, |x| x + x / 4)).max(1_000))
}

/// The next 1, 2, 2.5, 5 x 10^k at or above `x`.
pub fn nice_ceil(x: u64) -> u64 {
    let mut p = 1u64;
    while p.saturating_mul(10) <= x {
        p *= 10;
    }
    for m in [1, 2, 5, 10] {
        if p.saturating_mul(m) >= x {
            return p * m;
        }
    }
    p * 10
}

/// The histogram of the windows' durations (ready times), with the read times of those
/// read later on the same bins.
fn histogram(r: &ExplainReport, ymax: u64) -> Histogram {
    let bins = 80u64;
    let step = nice_ceil(ymax.div_ceil(bins)).max(1);
    let n = ymax.div_ceil(step) as usize;
    let count =
        |counts: &mut [u64], over: &mut u64, x: u64| match counts.get_mut((x / step) as usize) {
            Some(c) => *c += 1,
            None => *over += 1,
        };
    let mut counts = vec![0u64; n];
    let (mut over, mut total, mut max_ns) = (0, 0, 0);
    let mut read = ReadSeries {
        later: 0,
        counts: vec![0u64; n],
        over: 0,
        max_ns: 0,
    };
    for w in r.windows.iter() {
        let Some(e) = w.end_ns() else { continue };
        let x = e - w.start_ns;
        total += 1;
        max_ns = max_ns.max(x);
        count(&mut counts, &mut over, x);
        if let Some(rd) = w.read_ns {
            let x = rd - w.start_ns;
            read.later += 1;
            read.max_ns = read.max_ns.max(x);
            count(&mut read.counts, &mut read.over, x);
        }
    }
    let read = (read.later > 0).then_some(read);
    Histogram {
        what: match r.noun {
            "timer periods" => "timer lateness (requested expiry to the woken task running)",
            "softirq services" => "softirq raise to entry",
            "outliers" => "outlier duration",
            // Where the two differ, the bars are of the ready times.
            _ if read.is_some() => "cycle duration (from to the reply ready for its reader)",
            _ => "cycle duration (from to the reply)",
        }
        .into(),
        step_ns: step,
        counts,
        over,
        max_ns,
        deadline_ns: r.deadline_ns,
        total,
        read,
    }
}

/// Bar colour key for a task, an irq line, a vector or a function.
fn color_of(kind: RowKind, key: i64) -> u32 {
    let h = (key as u64)
        .wrapping_add(kind as u64 * 0x9e37_79b9)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> 40) as u32
}

fn swimlane(r: &ExplainReport, tl: &Timeline, s: &Interner, idx: &ByCpu, mi: usize) -> Swimlane {
    let m = &r.misses[mi];
    let t0 = m.start_ns;
    let mut end = t0
        + m.duration_ns
            .unwrap_or(m.late_ns + r.deadline_ns.unwrap_or(0));
    for l in &m.chain {
        end = end.max(l.ts_ns + l.duration_ns);
    }
    let len = (end - t0).max(10_000);
    let (from, to) = (t0.saturating_sub(len / 20), end + len / 20);
    let mut lane = Lane {
        tl,
        idx,
        lab: Labels { tl, s },
        from,
        to,
        rows: Vec::new(),
        bars: Vec::new(),
        hidden: 0,
        link_row: vec![None; m.chain.len()],
    };
    for cpu in lane_cpus(m) {
        lane.chain_rows(m, cpu);
        lane.occupant_rows(cpu);
    }
    let arrows = hand_offs(m, &lane.link_row);
    let blame = lane.blame(m);
    let Lane {
        rows, bars, hidden, ..
    } = lane;
    Swimlane {
        miss: mi,
        title: format!(
            "miss {}: at {} (tid {}, CPU{}), {}, {} blamed",
            mi + 1,
            whylate::units::secs(m.start_ns),
            m.tid,
            m.cpu,
            m.duration_ns
                .map_or("no reply".to_string(), |d| format!("took {}", dur(d))),
            dur(m.blamed_ns)
        ),
        t0_ns: t0,
        from_ns: from,
        to_ns: to,
        deadline_ns: r.deadline_ns,
        rows,
        bars,
        blame,
        arrows,
        hidden,
    }
}

/// A swimlane while it is laid out: its window, rows and bars so far.
struct Lane<'a> {
    tl: &'a Timeline,
    idx: &'a ByCpu,
    lab: Labels<'a>,
    from: u64,
    to: u64,
    rows: Vec<Row>,
    bars: Vec<Bar>,
    /// Task runs too short to draw.
    hidden: u64,
    /// The row of each chain link.
    link_row: Vec<Option<u32>>,
}

/// CPUs the chain or its blame touched, and the cycle's own.
fn lane_cpus(m: &whylate::explain::Miss) -> Vec<u32> {
    let mut cpus: Vec<u32> = vec![m.cpu];
    for l in &m.chain {
        cpus.extend(l.cpu);
        cpus.extend(l.held_by.iter().filter_map(|h| h.culprit.cpu));
    }
    cpus.retain(|&c| c != u32::MAX);
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// The hand-offs: each placed link to the next, in the chain's order.
fn hand_offs(m: &whylate::explain::Miss, link_row: &[Option<u32>]) -> Vec<Arrow> {
    let placed: Vec<(u64, u32)> = m
        .chain
        .iter()
        .zip(link_row)
        .filter_map(|(l, r)| r.map(|r| (l.ts_ns, r)))
        .collect();
    placed
        .windows(2)
        .filter(|w| w[0] != w[1])
        .map(|w| Arrow {
            from: w[0],
            to: w[1],
        })
        .collect()
}

impl Lane<'_> {
    /// The chain's links on `cpu`: links that overlap go on rows of their own (four at
    /// most; then the least busy row takes one).
    fn chain_rows(&mut self, m: &whylate::explain::Miss, cpu: u32) {
        let (from, to) = (self.from, self.to);
        let mut ends: Vec<u64> = Vec::new();
        let first_row = self.rows.len() as u32;
        for (li, l) in m
            .chain
            .iter()
            .enumerate()
            .filter(|(_, l)| l.cpu == Some(cpu))
        {
            let (a, b) = (l.ts_ns, l.ts_ns + l.duration_ns);
            let sub = match ends.iter().position(|&e| e <= a) {
                Some(k) => k,
                None if ends.len() < 4 => {
                    ends.push(0);
                    self.rows.push(Row {
                        cpu,
                        kind: RowKind::Chain,
                    });
                    ends.len() - 1
                }
                // More than four overlapping: the least busy row takes it.
                None => (0..ends.len()).min_by_key(|&k| ends[k]).unwrap_or(0),
            };
            ends[sub] = ends[sub].max(b);
            let row = first_row + sub as u32;
            self.link_row[li] = Some(row);
            self.bars.push(Bar {
                row,
                start_ns: a.max(from),
                end_ns: b.min(to).max(a.max(from)),
                label: l.kind.clone(),
                title: format!(
                    "+{} {}: {} ({}{})",
                    dur(l.offset_ns),
                    l.kind,
                    l.what,
                    dur(l.duration_ns),
                    if l.excess_ns > 0 {
                        format!(", {} over usual", dur(l.excess_ns))
                    } else {
                        String::new()
                    }
                ),
                color: 0,
                late: l.excess_ns > 0,
            });
        }
    }

    /// What ran on `cpu` in the window: tasks, irq handlers, softirqs, work items, one
    /// row each (the task row always).
    fn occupant_rows(&mut self, cpu: u32) {
        let (tl, from, to) = (self.tl, self.from, self.to);
        let sp = &tl.spans;
        let px_ns = (to - from) as f64 / 1000.0;
        for kind in [
            RowKind::Tasks,
            RowKind::Irq,
            RowKind::Softirq,
            RowKind::Work,
        ] {
            let row = self.rows.len() as u32;
            let before = self.bars.len();
            for i in self.idx.overlapping(tl, cpu, from, to) {
                let key: i64 = match (kind, sp.kind[i]) {
                    (RowKind::Tasks, SpanKind::Run) if sp.tid[i] > 0 => sp.tid[i] as i64,
                    (RowKind::Irq, SpanKind::Hardirq) => sp.key[i] as i64,
                    (RowKind::Softirq, SpanKind::Softirq) => sp.key[i] as i64,
                    (RowKind::Work, SpanKind::Work) => sp.key[i] as i64,
                    _ => continue,
                };
                let (a, b) = (sp.start[i].max(from), sp.end[i].min(to));
                // Interrupts are short and matter: always drawn. Task runs under a tenth
                // of a pixel are not.
                if kind == RowKind::Tasks && ((b - a) as f64) < px_ns / 10.0 {
                    self.hidden += 1;
                    continue;
                }
                let (title, label) = self.lab.span(i);
                self.bars.push(Bar {
                    row,
                    start_ns: a,
                    end_ns: b,
                    label,
                    title: format!("{title}: {}", dur(sp.end[i] - sp.start[i])),
                    color: color_of(kind, key),
                    late: false,
                });
            }
            if self.bars.len() > before || kind == RowKind::Tasks {
                self.rows.push(Row { cpu, kind });
            }
        }
    }

    /// Blamed time: the culprit's own spans inside the link's late part, else the late
    /// part itself.
    fn blame(&self, m: &whylate::explain::Miss) -> Vec<Bar> {
        let (tl, idx, from, to, rows) = (self.tl, self.idx, self.from, self.to, &self.rows);
        let mut blame = Vec::new();
        for l in &m.chain {
            if l.excess_ns == 0 {
                continue;
            }
            let (la, lb) = (
                l.ts_ns + l.duration_ns - l.excess_ns,
                l.ts_ns + l.duration_ns,
            );
            for h in &l.held_by {
                let cpu = h.culprit.cpu.or(l.cpu);
                let found = blamed_spans(tl, idx, h, cpu, la, lb);
                let title = format!(
                    "blamed: {} {} {} (of {}'s {} over usual)",
                    h.category,
                    h.culprit.label(),
                    dur(h.ns),
                    l.kind,
                    dur(l.excess_ns)
                );
                let target = |kind: RowKind| {
                    rows.iter()
                        .position(|r| Some(r.cpu) == cpu && r.kind == kind)
                        .map(|r| r as u32)
                };
                if found.is_empty() {
                    if let Some(row) = target(RowKind::Chain).or_else(|| target(RowKind::Tasks)) {
                        blame.push(Bar {
                            row,
                            start_ns: la.max(from),
                            end_ns: lb.min(to),
                            label: String::new(),
                            title,
                            color: 0,
                            late: true,
                        });
                    }
                    continue;
                }
                for (a, b, kind) in found {
                    if let Some(row) = target(kind) {
                        blame.push(Bar {
                            row,
                            start_ns: a.max(from),
                            end_ns: b.min(to),
                            label: String::new(),
                            title: title.clone(),
                            color: 0,
                            late: true,
                        });
                    }
                }
            }
        }
        blame
    }
}

/// The spans of a hold's culprit on `cpu` within `[a, b]`, clipped, with the row they are
/// drawn in.
fn blamed_spans(
    tl: &Timeline,
    idx: &ByCpu,
    h: &Hold,
    cpu: Option<u32>,
    a: u64,
    b: u64,
) -> Vec<(u64, u64, RowKind)> {
    let sp = &tl.spans;
    let Some(cpu) = cpu else {
        return Vec::new();
    };
    let c = &h.culprit;
    let vec_no = c
        .vector
        .as_deref()
        .and_then(|v| SOFTIRQ_NAMES.iter().position(|n| *n == v))
        .map(|v| v as u32);
    let mut out = Vec::new();
    for i in idx.overlapping(tl, cpu, a, b) {
        let row = match sp.kind[i] {
            SpanKind::Run if c.pid == Some(sp.tid[i]) => RowKind::Tasks,
            SpanKind::Hardirq if c.irq.is_some_and(|q| q == sp.key[i]) => RowKind::Irq,
            SpanKind::Softirq if vec_no == Some(sp.key[i]) => RowKind::Softirq,
            _ => continue,
        };
        out.push((sp.start[i].max(a), sp.end[i].min(b), row));
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use whylate::explain::{run, Mode};
    use whylate::read::OpenOptions;
    use whylate::testkit;

    /// The giving-up client of [`testkit::giving_up_client`] (8 cycles, 2 and 5 hogged:
    /// ready after 8.030 ms, read after 23.526 and 23.538 ms), explained with `deadline`
    /// and plotted.
    fn giving_up(deadline_ns: u64) -> (ExplainReport, Plots) {
        plotted(&testkit::giving_up_client(8, &[2, 5]), deadline_ns, 0)
    }

    /// The trace `t` explained in cycle mode (the chain's selectors, `deadline_ns`) and
    /// plotted with `lanes` misses drawn one by one.
    pub(crate) fn plotted(t: &str, deadline_ns: u64, lanes: usize) -> (ExplainReport, Plots) {
        let mode = Mode::Cycles(testkit::chain_options(Some(deadline_ns)));
        let x = run(whylate::testkit::opened(t), &OpenOptions::default(), &mode).unwrap();
        let p = build(&x.report, &x.timeline, &x.strings, &PlotOptions { lanes });
        (x.report, p)
    }

    /// The bars stay the ready times on an axis scaled to them; the two replies read
    /// ~15 ms after they were ready are outlined past the axis, in the last bar, and the
    /// picture says so.
    #[test]
    fn read_times_past_the_histogram_axis_are_counted_in_its_last_bar() {
        let (r, p) = giving_up(3_500_000);
        let h = &p.hist;
        // 10 ms axis (as the raster's), 200 us bins: 6 replies at 70 us, 2 at 8.030 ms.
        assert_eq!(
            (h.step_ns, h.counts.len(), h.total, h.over),
            (200_000, 50, 8, 0)
        );
        let bars: Vec<(usize, u64)> = (h.counts.iter().copied().enumerate())
            .filter(|b| b.1 > 0)
            .collect();
        assert_eq!(bars, [(0, 6), (40, 2)]);
        let rd = h.read.as_ref().expect("read times");
        assert_eq!((rd.later, rd.over, rd.max_ns), (2, 2, 23_538_000));
        assert!(rd.counts.iter().all(|&n| n == 0), "{:?}", rd.counts);
        // As many as the report's own count of replies read later.
        assert_eq!(r.cycles.read.as_ref().map(|x| x.later), Some(2));
        // Drawn: one outline past the axis's 50 bins (x = 64 + 50 x 1000/51 + 0.5), as
        // tall as 2 of the 6 at the top (220 px plot, axis at y = 248).
        let svg = crate::svg::histogram(h);
        assert!(
            svg.contains(
                " data-bins=\"51\" data-over=\"0\" data-read-later=\"2\" data-read-over=\"2\">"
            ),
            "{svg}"
        );
        let g = svg.split("<g class=\"read\">\n").nth(1).unwrap();
        assert!(
            g.starts_with("<rect x=\"1044.9\" y=\"174.7\" width=\"18.6\" height=\"73.3\" fill=\"none\" stroke=\"#e377c2\" stroke-width=\"1.5\"><title>read ≥ 10.000 ms: 2</title></rect>\n</g>"),
            "{g}"
        );
        assert!(
            svg.contains(">outlined: when the reply was read, for the 2 cycles whose reply was read later than it was ready (2 at or past 10.000 ms, counted in the last bar; the latest 23.538 ms)</text>"),
            "{svg}"
        );
        // The bars' title says what they are of, now that the two differ.
        assert!(
            svg.contains(">cycle duration (from to the reply ready for its reader) — 8 samples<")
        );
    }

    /// With a deadline of 20 ms the axis reaches the read times: they are outlined in
    /// their own bin.
    #[test]
    fn read_times_inside_the_histogram_axis_are_outlined_in_their_bin() {
        let (_, p) = giving_up(20_000_000);
        let h = &p.hist;
        assert_eq!((h.step_ns, h.counts.len(), h.over), (1_000_000, 50, 0));
        let rd = h.read.as_ref().expect("read times");
        let bins: Vec<(usize, u64)> = (rd.counts.iter().copied().enumerate())
            .filter(|b| b.1 > 0)
            .collect();
        assert_eq!((rd.later, rd.over, bins), (2, 0, vec![(23, 2)]));
        let svg = crate::svg::histogram(h);
        // No bar past the axis: 50 bins of 20 px, the outline at x = 64 + 23 x 20 + 0.5.
        assert!(svg.contains(" data-bins=\"50\" "), "{svg}");
        assert!(
            svg.contains(
                "<rect x=\"524.5\" y=\"174.7\" width=\"19.0\" height=\"73.3\" fill=\"none\""
            ),
            "{svg}"
        );
        assert!(
            svg.contains(">read [23.000 ms, 24.000 ms): 2</title>"),
            "{svg}"
        );
        assert!(
            svg.contains("for the 2 cycles whose reply was read later than it was ready</text>"),
            "{svg}"
        );
    }

    /// Where every reader waited, the histogram has no read times.
    #[test]
    fn a_histogram_without_late_reads_has_no_outlines() {
        let (_, p) = plotted(&testkit::three_cpu_chain(6, &[4], 3_000), 1_000_000, 0);
        assert!(p.hist.read.is_none());
        let svg = crate::svg::histogram(&p.hist);
        assert!(
            !svg.contains("read")
                && svg.contains(">cycle duration (from to the reply) — 6 samples<")
        );
    }

    /// The p99 from the top 1% is the sorted one's, for few and many durations.
    #[test]
    fn the_p99_from_the_top_percent_is_the_sorted_ones() {
        for n in [0u64, 1, 7, 99, 100, 101, 1_234, 20_000] {
            let d: Vec<u64> = (0..n).map(|i| (i * 7_919) % 1_000 + i / 3).collect();
            let mut s = d.clone();
            s.sort_unstable();
            let want = match s.len() {
                0 => (0, 0),
                l => (s[(l * 99 / 100).min(l - 1)], s[l - 1]),
            };
            assert_eq!(p99_and_max(d.iter().copied()), want, "{n}");
        }
    }

    #[test]
    fn the_missed_cycle_is_drawn_with_its_blame_on_the_hogged_cpu() {
        let (r, p) = plotted(&testkit::three_cpu_chain(6, &[4], 3_000), 1_000_000, 5);
        // Every cycle has its raster column; one is missed.
        assert_eq!(r.windows.len(), 6);
        assert_eq!(r.windows.iter().filter(|c| c.miss).count(), 1);
        // One lane: the chain's CPUs 0 and 1 (CPU2's bystander is not part of it).
        assert_eq!(p.lanes.len(), 1);
        let l = &p.lanes[0];
        let cpus: std::collections::BTreeSet<u32> = l.rows.iter().map(|r| r.cpu).collect();
        assert_eq!(cpus.into_iter().collect::<Vec<_>>(), [0, 1]);
        // The blame outline sits on CPU1's task row, over hog's run.
        assert!(!l.blame.is_empty());
        assert!(l.blame.iter().all(|b| l.rows[b.row as usize].cpu == 1));
        assert!(l.blame[0].title.contains("hog[60]"), "{}", l.blame[0].title);
    }
}
