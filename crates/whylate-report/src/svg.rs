//! The plots as standalone SVG: the same drawings the HTML report embeds, so a paper or a bug
//! report gets exactly what the page shows.

use super::plot::{Histogram, ReadSeries, RowKind, Swimlane};
use super::raster::{Raster, KINDS, RASTER_H, RASTER_W};
use std::fmt::Write as _;
use whylate::explain::Windows;
use whylate::units::dur;

pub(crate) const LEFT: f64 = 64.0;
pub(crate) const TOP: f64 = 28.0;
const FONT: &str = "font-family=\"sans-serif\" font-size=\"12\"";

/// Marker colour and shape of each raster kind (index as [`KINDS`]).
pub const STYLE: [(&str, Shape); KINDS.len()] = [
    ("#a9b4bf", Shape::Dot),
    ("#1f77b4", Shape::Square),
    ("#2ca02c", Shape::Triangle),
    ("#d62728", Shape::Diamond),
    ("#ff7f0e", Shape::Cross),
    ("#9467bd", Shape::Plus),
    ("#8c564b", Shape::Square),
    ("#17becf", Shape::Circle),
    ("#000000", Shape::Bar),
    ("#333333", Shape::Dash),
    ("#e377c2", Shape::Chevron),
];

/// A marker shape.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// Small filled dot.
    Dot,
    /// Filled square.
    Square,
    /// Filled triangle.
    Triangle,
    /// Filled diamond.
    Diamond,
    /// Stroked x.
    Cross,
    /// Stroked +.
    Plus,
    /// Filled circle.
    Circle,
    /// Vertical bar.
    Bar,
    /// Horizontal dash (a cycle's end).
    Dash,
    /// Stroked ^ (a reply read later than it was ready; on the top edge: above the axis).
    Chevron,
}

impl Shape {
    fn stroked(self) -> bool {
        matches!(
            self,
            Shape::Cross | Shape::Plus | Shape::Bar | Shape::Dash | Shape::Chevron
        )
    }
    /// Path commands for one marker centred on (x, y).
    fn path(self, o: &mut String, x: f64, y: f64) {
        let _ = match self {
            Shape::Dot => write!(o, "M{:.1} {:.1}h1v1h-1z", x - 0.5, y - 0.5),
            Shape::Square => write!(o, "M{:.1} {:.1}h3v3h-3z", x - 1.5, y - 1.5),
            Shape::Triangle => write!(o, "M{:.1} {:.1}l2 3.5h-4z", x, y - 2.0),
            Shape::Diamond => write!(o, "M{:.1} {:.1}l2 2l-2 2l-2 -2z", x, y - 2.0),
            Shape::Cross => write!(o, "M{:.1} {:.1}l4 4m0 -4l-4 4", x - 2.0, y - 2.0),
            Shape::Plus => write!(o, "M{:.1} {:.1}h5m-2.5 -2.5v5", x - 2.5, y),
            Shape::Circle => write!(o, "M{:.1} {:.1}a1.8 1.8 0 1 0 0.01 0z", x - 1.8, y),
            Shape::Bar => write!(o, "M{:.1} {:.1}v6", x, y - 3.0),
            Shape::Dash => write!(o, "M{:.1} {:.1}h5", x - 2.5, y),
            Shape::Chevron => write!(o, "M{:.1} {:.1}l3 -3l3 3", x - 3.0, y + 1.5),
        };
    }
}

/// Escapes text for XML.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            c => o.push(c),
        }
    }
    o
}

/// Axis ticks: about `want` nice steps from 0 to `max`.
fn ticks(max: f64, want: f64) -> Vec<f64> {
    if max <= 0.0 {
        return vec![0.0];
    }
    let raw = max / want;
    let p = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p);
    (0..)
        .map(|i| i as f64 * step)
        .take_while(|v| *v <= max * 1.0001)
        .collect()
}

fn ms(ns: f64) -> String {
    let v = ns / 1e6;
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 10.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn open(o: &mut String, id: &str, w: f64, h: f64, attrs: &str) {
    let _ = writeln!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"{id}\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" {FONT}{attrs}>\n<rect width=\"{w}\" height=\"{h}\" fill=\"#fff\"/>"
    );
}

/// The latency histogram, the deadline marked.
pub fn histogram(h: &Histogram) -> String {
    let (pw, ph) = (RASTER_W as f64, 220.0);
    let read = h.read.as_ref();
    // A line more under the axis for the read times' legend.
    let legend = if read.is_some() { 16.0 } else { 0.0 };
    let (w, hh) = (LEFT + pw + 24.0, TOP + ph + 44.0 + legend);
    let mut o = String::new();
    let over = h.over > 0 || read.is_some_and(|r| r.over > 0);
    let bins = h.counts.len() + usize::from(over);
    let mut attrs = format!(
        " data-samples=\"{}\" data-bins=\"{}\" data-over=\"{}\"",
        h.total, bins, h.over
    );
    if let Some(r) = read {
        let _ = write!(
            attrs,
            " data-read-later=\"{}\" data-read-over=\"{}\"",
            r.later, r.over
        );
    }
    open(&mut o, "histogram", w, hh, &attrs);
    let _ = writeln!(
        o,
        "<text x=\"{LEFT}\" y=\"16\" font-weight=\"bold\">{} — {} samples</text>",
        esc(&h.what),
        h.total
    );
    // The read times' outlines are on the same count scale: none is cut off.
    let read_counts = read
        .into_iter()
        .flat_map(|r| r.counts.iter().copied().chain([r.over]));
    let max = (h.counts.iter().copied().chain([h.over]))
        .chain(read_counts)
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let bw = pw / bins.max(1) as f64;
    let y0 = TOP + ph;
    for t in ticks(max, 5.0) {
        let y = y0 - t / max * ph;
        let _ = writeln!(
            o,
            "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#eee\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{t}</text>",
            LEFT + pw,
            LEFT - 6.0,
            y + 4.0
        );
    }
    let _ = writeln!(o, "<g class=\"bars\">");
    let bar = |o: &mut String, i: usize, n: u64, late: bool, what: String| {
        if n == 0 {
            return;
        }
        let _ = writeln!(
            o,
            "<rect {} fill=\"{}\"><title>{what}: {n}</title></rect>",
            bar_box(i, n, max, (bw, y0, ph)),
            if late { "#d62728" } else { "#4c78a8" }
        );
    };
    for (i, &n) in h.counts.iter().enumerate() {
        let lo = i as u64 * h.step_ns;
        let late = h.deadline_ns.is_some_and(|d| lo >= d);
        bar(
            &mut o,
            i,
            n,
            late,
            format!("[{}, {})", dur(lo), dur(lo + h.step_ns)),
        );
    }
    let end = h.counts.len() as u64 * h.step_ns;
    bar(
        &mut o,
        h.counts.len(),
        h.over,
        h.deadline_ns.is_some_and(|d| end >= d),
        format!("≥ {}", dur(end)),
    );
    let _ = writeln!(o, "</g>");
    if let Some(r) = read {
        read_outlines(&mut o, h, r, max, (bw, y0, ph));
    }
    // x axis in ms.
    let xmax = bins as f64 * h.step_ns as f64;
    for t in ticks(xmax, 10.0) {
        let x = LEFT + t / xmax.max(1.0) * pw;
        let _ = writeln!(
            o,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{y0}\" y2=\"{:.1}\" stroke=\"#333\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            y0 + 4.0,
            y0 + 17.0,
            ms(t)
        );
    }
    // The last bar holds every sample past the axis: the axis says so, and how far the
    // largest goes (a 12.3 ms maximum must not look like it stopped at 10 ms).
    if h.over > 0 {
        let _ = writeln!(
            o,
            "<text class=\"off-scale\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#d62728\">{} off-scale: ≥ {}, max {} →</text>",
            LEFT + pw,
            y0 + 34.0,
            h.over,
            dur(end),
            dur(h.max_ns)
        );
    }
    let _ = writeln!(
        o,
        "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{y0}\" y2=\"{y0}\" stroke=\"#333\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">ms</text>",
        LEFT + pw,
        LEFT + pw / 2.0,
        y0 + 34.0
    );
    if let Some(d) = h.deadline_ns {
        let x = LEFT + (d as f64 / xmax.max(1.0)).min(1.0) * pw;
        let _ = writeln!(
            o,
            "<line class=\"deadline\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{TOP}\" y2=\"{y0}\" stroke=\"#d62728\" stroke-dasharray=\"5 3\"/><text x=\"{:.1}\" y=\"{:.1}\" fill=\"#d62728\" stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\">deadline {}</text>",
            x + 4.0,
            TOP + 10.0,
            dur(d)
        );
    }
    if let Some(r) = read {
        read_legend(&mut o, h, r, y0 + 50.0);
    }
    o.push_str("</svg>\n");
    o
}

/// The box of bin `i`'s bar of count `n`, as SVG attributes: `max` is the count at the
/// top, `(bw, y0, ph)` the bar width, the axis's y and the plot's height. A bar is at
/// least 2 px high, so a count of one stays visible.
fn bar_box(i: usize, n: u64, max: f64, (bw, y0, ph): (f64, f64, f64)) -> String {
    let bh = (n as f64 / max * ph).max(2.0);
    format!(
        "x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bh:.1}\"",
        LEFT + i as f64 * bw + 0.5,
        y0 - bh,
        (bw - 1.0).max(1.0),
    )
}

/// Colour of read times, in the histogram as in the raster's `read` marks.
const READ_COLOR: &str = STYLE[KINDS.len() - 1].0;

/// The read times of the cycles read later than ready, as outlined bars over the filled
/// ones: `max` is the count at the top, `(bw, y0, ph)` the bar width, the axis's y and the
/// plot's height.
fn read_outlines(o: &mut String, h: &Histogram, r: &ReadSeries, max: f64, g: (f64, f64, f64)) {
    let end = h.counts.len() as u64 * h.step_ns;
    let bars = (r.counts.iter().copied().enumerate()).chain([(r.counts.len(), r.over)]);
    let _ = writeln!(o, "<g class=\"read\">");
    for (i, n) in bars.filter(|&(_, n)| n > 0) {
        let lo = i as u64 * h.step_ns;
        let what = if i < r.counts.len() {
            format!("[{}, {})", dur(lo), dur(lo + h.step_ns))
        } else {
            format!("≥ {}", dur(end))
        };
        let _ = writeln!(
            o,
            "<rect {} fill=\"none\" stroke=\"{READ_COLOR}\" stroke-width=\"1.5\"><title>read {what}: {n}</title></rect>",
            bar_box(i, n, max, g),
        );
    }
    let _ = writeln!(o, "</g>");
}

/// What the outlines are, at `y`: how many cycles were read later than ready, and where
/// those read past the axis went.
fn read_legend(o: &mut String, h: &Histogram, r: &ReadSeries, y: f64) {
    let end = h.counts.len() as u64 * h.step_ns;
    let (n, s) = (r.later, if r.later == 1 { "" } else { "s" });
    let mut text = format!(
        "outlined: when the reply was read, for the {n} cycle{s} whose reply was read later than it was ready"
    );
    if r.over > 0 {
        let _ = write!(
            text,
            " ({} at or past {}, counted in the last bar; the latest {})",
            r.over,
            dur(end),
            dur(r.max_ns)
        );
    }
    let _ = writeln!(
        o,
        "<rect x=\"{LEFT}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"none\" stroke=\"{READ_COLOR}\" stroke-width=\"1.5\"/><text class=\"read-legend\" x=\"{:.1}\" y=\"{y:.1}\">{text}</text>",
        y - 9.0,
        LEFT + 16.0
    );
}

/// The per-cycle raster: x = cycle (`cycles`, the report's windows), y = time since its
/// start, one marker per event kind; missed cycles on a red band, the deadline as a
/// dashed line.
pub fn raster(r: &Raster, cycles: &Windows) -> String {
    let (pw, ph) = (RASTER_W as f64, RASTER_H as f64);
    let (w, h) = (LEFT + pw + 24.0, TOP + ph + 48.0);
    let n = cycles.len().max(1) as f64;
    let misses = cycles.iter().filter(|c| c.miss).count();
    let mut o = String::new();
    open(
        &mut o,
        "raster",
        w,
        h,
        &format!(
            " data-cycles=\"{}\" data-misses=\"{misses}\" data-marks=\"{}\" data-ymax-ns=\"{}\"",
            cycles.len(),
            r.marks.len(),
            r.ymax_ns
        ),
    );
    let _ = writeln!(
        o,
        "<text x=\"{LEFT}\" y=\"16\" font-weight=\"bold\">every {} (x) and its kernel events by time since its start (y); {} missed</text>",
        esc(r.noun.trim_end_matches('s')),
        misses
    );
    let y0 = TOP + ph;
    let y = |ns: u64| y0 - ns as f64 / r.ymax_ns.max(1) as f64 * ph;
    let x = |i: u32| LEFT + (i as f64 + 0.5) * pw / n;
    let cw = (pw / n).max(1.0);
    let _ = writeln!(o, "<g class=\"missbands\">");
    // When every column is a miss (the automatic mode's outliers), bands say nothing.
    let bands = misses < cycles.len();
    for (i, c) in cycles.iter().enumerate().filter(|(_, c)| c.miss && bands) {
        let _ = writeln!(
            o,
            "<rect class=\"missband\" x=\"{:.1}\" y=\"{TOP}\" width=\"{cw:.1}\" height=\"{ph}\" fill=\"#fde0dd\"><title>cycle {i}: {}</title></rect>",
            x(i as u32) - cw / 2.0,
            band_title(&c)
        );
    }
    let _ = writeln!(o, "</g>");
    for t in ticks(r.ymax_ns as f64, 8.0) {
        let yy = y(t as u64);
        let _ = writeln!(
            o,
            "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#eee\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT + pw,
            LEFT - 6.0,
            yy + 4.0,
            ms(t)
        );
    }
    for t in ticks(n - 1.0, 10.0) {
        let xx = x(t as u32);
        let _ = writeln!(
            o,
            "<line x1=\"{xx:.1}\" x2=\"{xx:.1}\" y1=\"{y0}\" y2=\"{:.1}\" stroke=\"#333\"/><text x=\"{xx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{t}</text>",
            y0 + 4.0,
            y0 + 17.0
        );
    }
    let _ = writeln!(
        o,
        "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{y0}\" y2=\"{y0}\" stroke=\"#333\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{} number</text><text transform=\"translate(14 {:.1}) rotate(-90)\" text-anchor=\"middle\">ms since the start</text>",
        LEFT + pw,
        LEFT + pw / 2.0,
        y0 + 34.0,
        esc(r.noun.trim_end_matches('s')),
        TOP + ph / 2.0
    );
    for (k, name) in KINDS.iter().enumerate() {
        let (color, shape) = STYLE[k];
        let mut d = String::new();
        let mut points = 0;
        for m in r.marks.iter().filter(|m| m.kind as usize == k) {
            // Only read marks go above the axis (see `Raster::pinned`): on its top edge.
            shape.path(&mut d, x(m.cycle), y(m.off_ns.min(r.ymax_ns)));
            points += 1;
        }
        let paint = paint(shape, color);
        let _ = writeln!(
            o,
            "<g class=\"kind\" data-kind=\"{name}\" data-points=\"{points}\" data-events=\"{}\"><title>{name}: {} events</title><path {paint} d=\"{d}\"/></g>",
            r.events[k], r.events[k]
        );
    }
    if let Some(d) = r.deadline_ns.filter(|&d| d <= r.ymax_ns) {
        let yy = y(d);
        let _ = writeln!(
            o,
            "<line class=\"deadline\" x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#d62728\" stroke-dasharray=\"6 3\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#d62728\">deadline {}</text>",
            LEFT + pw,
            LEFT + pw - 4.0,
            yy - 4.0,
            dur(d)
        );
    }
    // Legend, one line under the axis title.
    let ly = y0 + 44.0;
    raster_legend(&mut o, r, ly);
    let mut above = Vec::new();
    if r.clipped > 0 {
        above.push(format!(
            "{} events above {} not drawn",
            r.clipped,
            dur(r.ymax_ns)
        ));
    }
    if r.pinned > 0 {
        above.push(format!(
            "{} read times above {} drawn on the top edge",
            r.pinned,
            dur(r.ymax_ns)
        ));
    }
    if !above.is_empty() {
        let _ = writeln!(
            o,
            "<text class=\"above\" x=\"{:.1}\" y=\"{ly:.1}\" text-anchor=\"end\" fill=\"#666\">{}</text>",
            LEFT + pw,
            above.join("; ")
        );
    }
    o.push_str("</svg>\n");
    o
}

/// What a missed cycle's band says when hovered.
fn band_title(c: &whylate::explain::Window) -> String {
    match (c.end_ns(), c.read_ns) {
        (None, _) => "no reply".to_string(),
        (Some(e), None) => format!("took {}", dur(e - c.start_ns)),
        (Some(e), Some(rd)) => format!(
            "ready after {}, read after {}",
            dur(e - c.start_ns),
            dur(rd - c.start_ns)
        ),
    }
}

/// How a raster marker of `shape` is painted in `color`.
fn paint(shape: Shape, color: &str) -> String {
    if shape.stroked() {
        format!("fill=\"none\" stroke=\"{color}\" stroke-width=\"1.2\"")
    } else {
        format!("fill=\"{color}\"")
    }
}

/// The raster's legend at height `ly`: a marker and a name per kind of event drawn.
fn raster_legend(o: &mut String, r: &Raster, ly: f64) {
    let mut lx = LEFT;
    for (k, name) in KINDS.iter().enumerate() {
        if r.events[k] == 0 {
            continue;
        }
        let (color, shape) = STYLE[k];
        let mut d = String::new();
        shape.path(&mut d, lx + 4.0, ly - 4.0);
        let paint = paint(shape, color);
        let _ = writeln!(
            o,
            "<path {paint} d=\"{d}\"/><text x=\"{:.1}\" y=\"{ly:.1}\">{name}</text>",
            lx + 10.0
        );
        lx += 20.0 + 7.0 * name.len() as f64;
    }
}

/// Bar fill for a colour key.
fn fill(color: u32) -> String {
    format!("hsl({},55%,68%)", color % 360)
}

/// One miss on per-CPU rows: the chain's links, what ran, the blamed time outlined in red,
/// arrows for the hand-offs.
pub fn swimlane(l: &Swimlane, id: &str) -> String {
    let label_w = 110.0;
    let pw = RASTER_W as f64 - label_w + LEFT;
    let rh = 20.0;
    let left = label_w + 8.0;
    let top = TOP + 6.0;
    let w = left + pw + 24.0;
    let h = top + rh * l.rows.len() as f64 + 40.0;
    let g = LaneGeo { left, pw, top, rh };
    let x = |t: u64| g.x(l, t);
    let mut o = String::new();
    open(
        &mut o,
        id,
        w,
        h,
        &format!(
            " class=\"swimlane\" data-rows=\"{}\" data-bars=\"{}\" data-blamed=\"{}\" data-arrows=\"{}\"",
            l.rows.len(),
            l.bars.len(),
            l.blame.len(),
            l.arrows.len()
        ),
    );
    let _ = writeln!(
        o,
        "<defs><marker id=\"{id}-head\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\"><path d=\"M0 0L10 5L0 10z\" fill=\"#222\"/></marker></defs>"
    );
    let _ = writeln!(
        o,
        "<text x=\"8\" y=\"16\" font-weight=\"bold\">{}</text>",
        esc(&l.title)
    );
    let row_y = |r: u32| g.row_y(r);
    let mut last_cpu = u32::MAX;
    for (i, r) in l.rows.iter().enumerate() {
        let y = row_y(i as u32);
        if r.cpu != last_cpu {
            let _ = writeln!(
                o,
                "<line x1=\"4\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#bbb\"/>",
                left + pw
            );
            last_cpu = r.cpu;
        }
        let bg = if r.kind == RowKind::Chain {
            "#f4f4f4"
        } else {
            "#fff"
        };
        // A chain's extra rows (overlapping links) carry no label of their own.
        let again = i > 0 && l.rows[i - 1].cpu == r.cpu && l.rows[i - 1].kind == r.kind;
        let _ = writeln!(
            o,
            "<rect x=\"{left}\" y=\"{y:.1}\" width=\"{pw:.1}\" height=\"{rh}\" fill=\"{bg}\"/><text x=\"8\" y=\"{:.1}\">{}</text>",
            y + 14.0,
            if again {
                String::new()
            } else {
                format!("CPU{} {}", r.cpu, r.kind.name())
            }
        );
    }
    lane_bars(&mut o, l, &g);
    for b in &l.blame {
        let (x0, x1) = (x(b.start_ns), x(b.end_ns));
        let y = row_y(b.row) + 1.0;
        let _ = writeln!(
            o,
            "<rect class=\"blame\" x=\"{x0:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#d62728\" fill-opacity=\"0.18\" stroke=\"#d62728\" stroke-width=\"2\"><title>{}</title></rect>",
            (x1 - x0).max(2.0),
            rh - 2.0,
            esc(&b.title)
        );
    }
    for a in &l.arrows {
        let (x0, y0) = (x(a.from.0), row_y(a.from.1) + rh / 2.0);
        let (x1, y1) = (x(a.to.0), row_y(a.to.1) + rh / 2.0);
        let mx = (x0 + x1) / 2.0 + 12.0;
        let _ = writeln!(
            o,
            "<path class=\"handoff\" d=\"M{x0:.1} {y0:.1}C{mx:.1} {y0:.1} {mx:.1} {y1:.1} {x1:.1} {y1:.1}\" fill=\"none\" stroke=\"#222\" stroke-width=\"1.2\" marker-end=\"url(#{id}-head)\"/>"
        );
    }
    lane_axis(&mut o, l, &g);
    o.push_str("</svg>\n");
    o
}

/// Where a swimlane's plot area is: its left edge and width, its top, the row height.
struct LaneGeo {
    left: f64,
    pw: f64,
    top: f64,
    rh: f64,
}

impl LaneGeo {
    /// The x of time `t`.
    fn x(&self, l: &Swimlane, t: u64) -> f64 {
        let span = (l.to_ns - l.from_ns).max(1) as f64;
        self.left + (t.saturating_sub(l.from_ns)) as f64 / span * self.pw
    }

    /// The top of row `r`.
    fn row_y(&self, r: u32) -> f64 {
        self.top + r as f64 * self.rh
    }
}

/// The bars: chain links (orange when late) and what ran on each CPU.
fn lane_bars(o: &mut String, l: &Swimlane, g: &LaneGeo) {
    let rh = g.rh;
    let x = |t: u64| g.x(l, t);
    let row_y = |r: u32| g.row_y(r);
    for b in &l.bars {
        let (x0, x1) = (x(b.start_ns), x(b.end_ns));
        let bw = (x1 - x0).max(1.0);
        let y = row_y(b.row) + 2.0;
        let color = if l.rows[b.row as usize].kind == RowKind::Chain {
            if b.late {
                "#f28e2b".to_string()
            } else {
                "#9db9d3".to_string()
            }
        } else {
            fill(b.color)
        };
        let _ = write!(
            o,
            "<g class=\"bar\"><title>{}</title><rect x=\"{x0:.1}\" y=\"{y:.1}\" width=\"{bw:.1}\" height=\"{:.1}\" fill=\"{color}\" stroke=\"#fff\" stroke-width=\"0.5\"/>",
            esc(&b.title),
            rh - 4.0
        );
        if bw > 7.0 * b.label.chars().count() as f64 + 4.0 && !b.label.is_empty() {
            let _ = write!(
                o,
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\">{}</text>",
                x0 + 2.0,
                y + 12.0,
                esc(&b.label)
            );
        }
        o.push_str("</g>\n");
    }
}

/// The time axis (ms since the miss's start), the start line and the deadline.
fn lane_axis(o: &mut String, l: &Swimlane, g: &LaneGeo) {
    let (left, pw, top) = (g.left, g.pw, g.top);
    let span = (l.to_ns - l.from_ns).max(1) as f64;
    let x = |t: u64| g.x(l, t);
    let row_y = |r: u32| g.row_y(r);
    let y_end = row_y(l.rows.len() as u32);
    // Time axis relative to the miss's start.
    let lo = l.from_ns as f64 - l.t0_ns as f64;
    let hi = l.to_ns as f64 - l.t0_ns as f64;
    for t in ticks(hi, 10.0) {
        let xx = left + (t - lo) / span * pw;
        let _ = writeln!(
            o,
            "<line x1=\"{xx:.1}\" x2=\"{xx:.1}\" y1=\"{top}\" y2=\"{:.1}\" stroke=\"#ddd\" stroke-width=\"0.5\"/><text x=\"{xx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            y_end + 4.0,
            y_end + 17.0,
            ms(t)
        );
    }
    let _ = writeln!(
        o,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">ms since the start</text>",
        left + pw / 2.0,
        y_end + 33.0
    );
    let t0x = x(l.t0_ns);
    let _ = writeln!(
        o,
        "<line x1=\"{t0x:.1}\" x2=\"{t0x:.1}\" y1=\"{top}\" y2=\"{y_end:.1}\" stroke=\"#333\"/>"
    );
    if let Some(d) = l.deadline_ns {
        let dx = x(l.t0_ns + d);
        if dx <= left + pw {
            let _ = writeln!(
                o,
                "<line class=\"deadline\" x1=\"{dx:.1}\" x2=\"{dx:.1}\" y1=\"{:.1}\" y2=\"{y_end:.1}\" stroke=\"#d62728\" stroke-dasharray=\"5 3\"/><text x=\"{:.1}\" y=\"{:.1}\" fill=\"#d62728\">deadline</text>",
                top - 4.0,
                dx + 3.0,
                top - 2.0
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::histogram;
    use crate::plot::Histogram;

    #[test]
    fn the_histogram_axis_says_what_is_off_scale_and_how_far() {
        let mut h = Histogram {
            what: "cycle duration".into(),
            step_ns: 1_000_000,
            counts: vec![5; 10],
            over: 2,
            max_ns: 12_335_000,
            deadline_ns: Some(3_500_000),
            total: 52,
            read: None,
        };
        let svg = histogram(&h);
        assert!(
            svg.contains(">2 off-scale: ≥ 10.000 ms, max 12.335 ms →</text>"),
            "{svg}"
        );
        h.over = 0;
        assert!(!histogram(&h).contains("off-scale"));
    }
}
