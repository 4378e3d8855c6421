//! The per-cycle raster of kernel events (x = cycle, y = time since its start, one marker
//! per event kind, as in seed 000): every coordinate decided here, drawn by
//! `report::svg::raster`, hovered through `report::html`'s data block. It is bounded by its
//! pixels, not by the trace: events that land on the same pixel of the same kind become
//! one marker with a count, so a trace of millions of events still gives a page that opens
//! at once.

use super::labels::Labels;
use super::sweep::{by_start, partition_near, CallsAhead};
use rustc_hash::FxHashMap;
use whylate::event::Interner;
use whylate::explain::ExplainReport;
use whylate::timeline::{span, EdgeKind, SpanKind, Timeline};
use whylate::units::dur;

/// Raster plot area, pixels: markers are merged per pixel of this grid.
pub const RASTER_W: u32 = 1000;
/// See [`RASTER_W`].
pub const RASTER_H: u32 = 440;

/// Marker kinds of the raster, in legend order.
pub const KINDS: [&str; 11] = [
    "syscall",
    "switch-in",
    "wakeup",
    "hardirq",
    "softirq",
    "work-queued",
    "work",
    "hrtimer",
    "lost",
    "reply",
    "read",
];

const K_SYSCALL: u8 = 0;
const K_SWITCH: u8 = 1;
const K_WAKEUP: u8 = 2;
const K_HARDIRQ: u8 = 3;
const K_SOFTIRQ: u8 = 4;
const K_QUEUED: u8 = 5;
const K_WORK: u8 = 6;
const K_TIMER: u8 = 7;
const K_LOST: u8 = 8;
const K_REPLY: u8 = 9;
/// A reply read later than it was ready (the `reply` marker is the ready time).
const K_READ: u8 = 10;

/// One marker: the first event of its kind on its pixel, and how many more fell there.
#[derive(Clone, Copy, Debug)]
pub struct Mark {
    /// Cycle index.
    pub cycle: u32,
    /// Time since the cycle start.
    pub off_ns: u64,
    /// Index into [`KINDS`].
    pub kind: u8,
    /// Index into [`Raster::labels`].
    pub label: u32,
    /// Events merged into it.
    pub n: u32,
}

/// The per-cycle raster. Its columns are the report's windows
/// ([`ExplainReport::windows`]), in start order, read where drawn rather than copied.
#[derive(Clone, Debug)]
pub struct Raster {
    /// Top of the y axis.
    pub ymax_ns: u64,
    /// The deadline line.
    pub deadline_ns: Option<u64>,
    /// Events per kind (index as [`KINDS`]).
    pub events: [u64; KINDS.len()],
    /// Markers.
    pub marks: Vec<Mark>,
    /// What each marker was.
    pub labels: Vec<String>,
    /// Events later than `ymax_ns` into their cycle (not drawn).
    pub clipped: u64,
    /// Read marks later than `ymax_ns` (drawn on the top edge, their time in the label):
    /// a reader that gave up reads long after the reply was ready, off any useful scale.
    pub pinned: u64,
    /// What a cycle is (`cycles`, `timer periods`).
    pub noun: String,
}

impl Raster {
    /// Columns whose reply was read later than it was ready (each has one `read` event).
    pub fn read_later(&self) -> u64 {
        self.events[K_READ as usize]
    }
}

/// The raster of `r`'s windows on a y axis up to `ymax` (see `plot::y_range`).
pub(super) fn raster(r: &ExplainReport, tl: &Timeline, s: &Interner, ymax: u64) -> Raster {
    let sp = &tl.spans;
    let lab = Labels { tl, s };
    let n = r.windows.len().max(1) as u64;
    // Everything that starts in some cycle, by start time.
    let mut spans: Vec<u32> = (0..sp.len() as u32)
        .filter(|&i| match sp.kind[i as usize] {
            SpanKind::Run => sp.tid[i as usize] > 0,
            SpanKind::Hardirq | SpanKind::Softirq | SpanKind::Work | SpanKind::TimerCb => {
                sp.flags[i as usize] & span::START_UNKNOWN == 0
            }
            _ => false,
        })
        .collect();
    spans.sort_unstable_by_key(|&i| (sp.start[i as usize], i));
    let mut calls = CallsAhead::new(tl);
    let mut edges: Vec<u32> = (0..tl.edges.len() as u32)
        .filter(|&i| matches!(tl.edges[i as usize].kind, EdgeKind::Wakeup | EdgeKind::Work))
        .collect();
    edges.sort_unstable_by_key(|&i| tl.edges[i as usize].ts);
    let mut out = Raster {
        ymax_ns: ymax,
        deadline_ns: r.deadline_ns,
        events: [0; KINDS.len()],
        marks: Vec::new(),
        labels: Vec::new(),
        clipped: 0,
        pinned: 0,
        noun: r.noun.to_string(),
    };
    let mut cells: FxHashMap<u64, u32> = FxHashMap::default();
    let mut label_ids: FxHashMap<String, u32> = FxHashMap::default();
    let mut add = |out: &mut Raster, ci: usize, off: u64, kind: u8, label: &dyn Fn() -> String| {
        out.events[kind as usize] += 1;
        if off > ymax && kind != K_READ {
            out.clipped += 1;
            return;
        }
        // A read mark above the axis is pinned to its top edge; its offset stays true.
        out.pinned += u64::from(off > ymax);
        let px = ci as u64 * RASTER_W as u64 / n;
        let py = off.min(ymax) * RASTER_H as u64 / ymax.max(1);
        let key = (px << 32) | (py << 8) | kind as u64;
        if let Some(&m) = cells.get(&key) {
            out.marks[m as usize].n += 1;
            return;
        }
        let text = label();
        let next = label_ids.len() as u32;
        let id = *label_ids.entry(text).or_insert_with_key(|t| {
            out.labels.push(t.clone());
            next
        });
        cells.insert(key, out.marks.len() as u32);
        out.marks.push(Mark {
            cycle: ci as u32,
            off_ns: off,
            kind,
            label: id,
            n: 1,
        });
    };
    // Where the last window's spans and edges began.
    let (mut s_at, mut e_at) = (0, 0);
    for (ci, w) in by_start(&r.windows) {
        let end = w.stop_ns();
        let (a, b) = (w.start_ns, end.min(w.start_ns + ymax));
        s_at = partition_near(&spans, s_at, |&i| sp.start[i as usize] < a);
        let mut spans_in = (spans[s_at..].iter())
            .map(|&i| (sp.start[i as usize], i))
            .take_while(|x| x.0 <= b)
            .peekable();
        let mut calls_in = calls.starting_in(a, b).peekable();
        // The two in start order; at the same start, spans before calls.
        loop {
            let call_first = match (spans_in.peek(), calls_in.peek()) {
                (None, None) => break,
                (Some(s), Some(c)) => c.0 < s.0,
                (s, _) => s.is_none(),
            };
            if call_first {
                let &(ts, i) = calls_in.next().expect("peeked");
                add(&mut out, ci, ts - a, K_SYSCALL, &|| lab.call(i));
                continue;
            }
            let (ts, i) = spans_in.next().expect("peeked");
            let kind = match sp.kind[i as usize] {
                SpanKind::Run => K_SWITCH,
                SpanKind::Hardirq => K_HARDIRQ,
                SpanKind::Softirq => K_SOFTIRQ,
                SpanKind::Work => K_WORK,
                _ => K_TIMER,
            };
            add(&mut out, ci, ts - a, kind, &|| lab.span(i as usize).0);
        }
        e_at = partition_near(&edges, e_at, |&i| tl.edges[i as usize].ts < a);
        for &i in &edges[e_at..] {
            let e = &tl.edges[i as usize];
            if e.ts > b {
                break;
            }
            let kind = if e.kind == EdgeKind::Wakeup {
                K_WAKEUP
            } else {
                K_QUEUED
            };
            add(&mut out, ci, e.ts - a, kind, &|| lab.edge(i as usize));
        }
        for l in tl.lost.iter().filter(|l| l.to >= a && l.from <= b) {
            add(&mut out, ci, l.from.max(a) - a, K_LOST, &|| {
                format!(
                    "events lost on {}",
                    if l.cpu == u32::MAX {
                        "some CPU".to_string()
                    } else {
                        format!("CPU{}", l.cpu)
                    }
                )
            });
        }
        if let Some(e) = w.end_ns() {
            let d = e - w.start_ns;
            let missed = if w.miss { " (missed)" } else { "" };
            // A reply read later than it was ready: both, the ready one measured.
            let word = if w.read_ns.is_some() { "ready" } else { "end" };
            add(&mut out, ci, d, K_REPLY, &|| {
                format!("{word} after {}{missed}", dur(d))
            });
            if let Some(rd) = w.read_ns {
                let d2 = rd - w.start_ns;
                let above = if d2 > ymax { ", above the axis" } else { "" };
                add(&mut out, ci, d2, K_READ, &|| {
                    format!("read after {} (ready after {}){above}", dur(d2), dur(d))
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::tests::plotted;
    use whylate::testkit;

    /// A reader that gave up reads its reply ~15 ms after it was ready: the read marks
    /// lie far above the axis (scaled to the ready times) and are pinned to its top
    /// edge with their true time, not dropped.
    #[test]
    fn read_times_above_the_axis_are_pinned_to_its_top_edge() {
        let (r, p) = plotted(&testkit::giving_up_client(8, &[2, 5]), 3_500_000, 0);
        let ra = &p.raster;
        assert_eq!(r.windows.len(), 8);
        // Ready after 8.030 ms at worst: p99 x 1.25 capped at max x 1.05, rounded up.
        assert_eq!(ra.ymax_ns, 10_000_000);
        assert_eq!((ra.events[K_READ as usize], ra.pinned), (2, 2));
        let reads: Vec<(u32, u64, &str)> = (ra.marks.iter())
            .filter(|m| m.kind == K_READ)
            .map(|m| (m.cycle, m.off_ns, ra.labels[m.label as usize].as_str()))
            .collect();
        assert_eq!(
            reads,
            [
                (
                    2,
                    23_526_000,
                    "read after 23.526 ms (ready after 8.030 ms), above the axis"
                ),
                (
                    5,
                    23_538_000,
                    "read after 23.538 ms (ready after 8.030 ms), above the axis"
                ),
            ]
        );
        // The ready marks are the measured ends, inside the axis.
        let ready: Vec<(u32, u64)> = (ra.marks.iter())
            .filter(|m| m.kind == K_REPLY && m.off_ns > 1_000_000)
            .map(|m| (m.cycle, m.off_ns))
            .collect();
        assert_eq!(ready, [(2, 8_030_000), (5, 8_030_000)]);
        // Drawn on the top edge (y = TOP), and said so under the plot.
        let svg = crate::svg::raster(ra, &r.windows);
        let g = svg.split("data-kind=\"read\"").nth(1).unwrap();
        assert!(g.starts_with(" data-points=\"2\" data-events=\"2\""), "{g}");
        let path = g.split(" d=\"").nth(1).unwrap();
        // Cycle 2 of 8 on a 1000 px axis from x = 64: x = 64 + 2.5 x 125; the top is y = 28.
        assert!(path.starts_with("M373.5 29.5l3 -3l3 3M"), "{path}");
        assert!(
            svg.contains(">2 read times above 10.000 ms drawn on the top edge<"),
            "{svg}"
        );
    }
}
