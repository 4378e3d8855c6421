//! The single-file HTML report: verdict and causes on top, then the histogram, the raster
//! (filter by kind, hover for the event), one swimlane per explained miss with its chain,
//! the advice and the context tables. No network at view time: styles, script and data are
//! inline, the plots are the SVG of [`super::svg`].

use super::plot::Plots;
use super::raster::{Raster, KINDS, RASTER_H, RASTER_W};
use super::svg::{self, esc, LEFT, TOP};
use crate::ExplainText;
use std::fmt::Write as _;
use std::io;
use whylate::explain::{ExplainReport, Windows};
use whylate::units::dur;

const STYLE: &str = r#"
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1120px;padding:0 16px 40px;color:#222}
h1{font-size:22px;margin:18px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:20px 0 6px}
.verdict{font-size:16px;background:#fff4e5;border-left:4px solid #f28e2b;padding:8px 12px;margin:10px 0}
.verdict.ok{background:#eef7ee;border-color:#2ca02c}
table{border-collapse:collapse;margin:6px 0}td,th{padding:2px 8px;text-align:left;border-bottom:1px solid #eee;vertical-align:top}
th{background:#f6f6f6}td.n{text-align:right;font-variant-numeric:tabular-nums}
.share{display:inline-block;height:9px;background:#f28e2b;vertical-align:middle;margin-right:4px}
.sub{color:#666}.late{color:#c0392b}.blind{color:#b36b00;font-weight:normal}code,pre{font:12px ui-monospace,monospace}
pre{background:#f8f8f8;padding:8px;overflow:auto}
#legend label{margin-right:12px;white-space:nowrap;cursor:pointer}
#tip{position:fixed;pointer-events:none;background:#222;color:#fff;font-size:12px;padding:4px 7px;border-radius:3px;display:none;white-space:pre;z-index:9;max-width:640px}
svg{max-width:100%;height:auto;display:block}
.advice li{margin-bottom:6px}
"#;

/// Early: every script error from here on is counted in `data-errors` on the body, so a
/// test (and a user) sees a broken page as broken.
const GUARD: &str = r#"window.__errors=[];window.addEventListener('error',function(e){window.__errors.push(String(e.message));document.documentElement.setAttribute('data-errors',window.__errors.join(' | '));});"#;

/// Filter by kind and hover over the raster. Geometry comes from the data block.
const SCRIPT: &str = r#"
(function(){
var D=JSON.parse(document.getElementById('raster-data').textContent);
var svgEl=document.getElementById('raster');
var n=D.cycles.length/4, nm=D.marks.length/5;
svgEl.setAttribute('data-js-cycles',n);svgEl.setAttribute('data-js-marks',nm);
var hidden={};
document.querySelectorAll('#legend input').forEach(function(cb){
  cb.addEventListener('change',function(){
    var k=cb.getAttribute('data-kind');hidden[k]=!cb.checked;
    svgEl.querySelectorAll('g.kind[data-kind="'+k+'"]').forEach(function(g){g.style.display=cb.checked?'':'none';});
    var shown=0;svgEl.querySelectorAll('g.kind').forEach(function(g){if(g.style.display!=='none')shown+=+g.getAttribute('data-points');});
    svgEl.setAttribute('data-shown',shown);
  });
});
// Marks by cycle: start offsets into an index array (counting sort).
var start=new Int32Array(n+1),order=new Int32Array(nm);
for(var i=0;i<nm;i++)start[D.marks[5*i]+1]++;
for(var c=0;c<n;c++)start[c+1]+=start[c];
var fill=start.slice(0,n);
for(var i=0;i<nm;i++)order[fill[D.marks[5*i]]++]=i;
var tip=document.getElementById('tip');
function ms(ns){return (ns/1e6).toFixed(3)+' ms';}
svgEl.addEventListener('mousemove',function(ev){
  var m=svgEl.getScreenCTM();if(!m||!n){return;}
  var p=new DOMPoint(ev.clientX,ev.clientY).matrixTransform(m.inverse());
  var pw=D.pw,ph=D.ph;
  if(p.x<D.left||p.x>D.left+pw||p.y<D.top||p.y>D.top+ph){tip.style.display='none';return;}
  var fc=(p.x-D.left)/pw*n, span=Math.max(1,Math.ceil(n/pw*3));
  var c0=Math.max(0,Math.floor(fc)-span),c1=Math.min(n-1,Math.floor(fc)+span);
  var best=-1,bd=1e9;
  for(var c=c0;c<=c1;c++){for(var j=start[c];j<start[c+1];j++){var i=order[j];
    if(hidden[D.kinds[D.marks[5*i+2]]])continue;
    var x=D.left+(c+0.5)*pw/n,y=D.top+ph-Math.min(D.marks[5*i+1],D.ymax)/D.ymax*ph;
    var d=Math.abs(x-p.x)+Math.abs(y-p.y);if(d<bd){bd=d;best=i;}}}
  var c=Math.min(n-1,Math.max(0,Math.floor(fc)));
  var cy=D.cycles,s='cycle '+c+' at '+(cy[4*c]/1e9).toFixed(6)+' s: '+(cy[4*c+1]<0?'no reply':'took '+ms(cy[4*c+1]))+(cy[4*c+2]?'  MISSED':'')+(cy[4*c+3]>=0?'  (tid '+cy[4*c+3]+')':'');
  if(best>=0&&bd<14){var b=best;s+='\n'+D.kinds[D.marks[5*b+2]]+' +'+ms(D.marks[5*b+1])+': '+D.labels[D.marks[5*b+3]]+(D.marks[5*b+4]>1?'  (and '+(D.marks[5*b+4]-1)+' more here)':'');
    if(D.marks[5*b]!==c){s='cycle '+D.marks[5*b]+'\n'+s.split('\n')[1];}}
  tip.textContent=s;tip.style.display='block';tip.style.left=(ev.clientX+14)+'px';tip.style.top=(ev.clientY+12)+'px';
});
svgEl.addEventListener('mouseleave',function(){tip.style.display='none';});
document.documentElement.setAttribute('data-ready','1');
})();
"#;

/// How the hover names a cycle's duration, in [`SCRIPT`].
const TOOK: &str = "'took '+ms(cy[4*c+1])";
/// The same where some replies were read later than they were ready (the hover data then
/// has `reads`, each cycle's read time or -1): both times.
const TOOK_OR_READ: &str = "(D.reads[c]>=0?'ready after '+ms(cy[4*c+1])+', read after '+ms(D.reads[c]):'took '+ms(cy[4*c+1]))";

/// The page script for `ra`: with read times in the hover only where there are any, so a
/// page without them carries no code for them.
fn script(ra: &Raster) -> std::borrow::Cow<'static, str> {
    if ra.read_later() > 0 {
        SCRIPT.replacen(TOOK, TOOK_OR_READ, 1).into()
    } else {
        SCRIPT.into()
    }
}

/// Passes bytes on with every `</` written `<\/`: inside a script block `</` would end
/// it (in JSON the two spell the same string). Streams, so the data is never held whole.
struct ScriptSafe<'a, 'w> {
    page: &'a mut Page<'w>,
    /// The last byte passed on was `<`.
    after_lt: bool,
}

impl io::Write for ScriptSafe<'_, '_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut from = 0;
        for at in memchr::memchr_iter(b'/', buf) {
            let lt = if at == 0 {
                self.after_lt
            } else {
                buf[at - 1] == b'<'
            };
            if lt {
                self.page.bytes(&buf[from..at]);
                self.page.bytes(b"\\");
                from = at;
            }
        }
        self.page.bytes(&buf[from..]);
        if let Some(&last) = buf.last() {
            self.after_lt = last == b'<';
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Where the page goes as it is composed: any byte sink (a file, a `Vec`), so a page of a
/// million cycles is never held whole. The first write error is kept and the rest skipped.
struct Page<'w> {
    w: &'w mut dyn io::Write,
    len: u64,
    err: Option<io::Error>,
}

impl Page<'_> {
    fn bytes(&mut self, b: &[u8]) {
        if self.err.is_none() {
            match self.w.write_all(b) {
                Ok(()) => self.len += b.len() as u64,
                Err(e) => self.err = Some(e),
            }
        }
    }

    fn push_str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }
}

impl std::fmt::Write for Page<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.push_str(s);
        Ok(())
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// The report page. `title` names the trace(s).
pub fn render(r: &ExplainReport, p: &Plots, title: &str) -> String {
    let mut v = Vec::with_capacity(1 << 20);
    // Writing to a Vec cannot fail, and every piece written is a str.
    let _ = write(r, p, title, &mut v);
    String::from_utf8(v).unwrap_or_default()
}

/// Writes the report page to `w` as it is composed; returns the bytes written.
pub fn write(r: &ExplainReport, p: &Plots, title: &str, w: &mut dyn io::Write) -> io::Result<u64> {
    let mut page = Page {
        w,
        len: 0,
        err: None,
    };
    let o = &mut page;
    head(o, r, title);
    causes(o, r);
    histogram(o, r, p);
    raster(o, r, p);
    lanes(o, r, p);
    advice_notes_inputs(o, r, &script(&p.raster));
    match page.err {
        Some(e) => Err(e),
        None => Ok(page.len),
    }
}

/// The page head, the title and the verdict with the first cause.
fn head(o: &mut Page<'_>, r: &ExplainReport, title: &str) {
    let c = &r.cycles;
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"generator\" content=\"whylate {}\"><title>whylate: {}</title><style>{STYLE}</style><script>{GUARD}</script></head><body>\n",
        env!("CARGO_PKG_VERSION"),
        esc(title)
    );
    let _ = writeln!(o, "<h1>whylate: {}</h1>", esc(title));
    let headline = r
        .render_text(&crate::Paint::plain())
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    let cls = if c.misses == 0 {
        "verdict ok"
    } else {
        "verdict"
    };
    let _ = write!(
        o,
        "<div class=\"{cls}\" id=\"verdict\"><b>{}</b>",
        esc(&headline)
    );
    if let Some(top) = r.causes.first() {
        let mut who = top.culprit.label();
        if let Some(cpu) = top.culprit.cpu {
            let _ = write!(who, " on CPU{cpu}");
        }
        let _ = write!(
            o,
            "<br>first cause: <b>{} {}</b>, in {} of {} misses, {} of excess{} ({})",
            esc(top.category.id()),
            esc(&who),
            top.count,
            c.misses,
            dur(top.once_ns),
            if top.once_ns < top.total_excess_ns {
                format!(
                    " (each wait once; {} summed over the misses it delayed)",
                    dur(top.total_excess_ns)
                )
            } else {
                String::new()
            },
            pct(top.share)
        );
    }
    // Where the trace is blind (unread input, a CPU cut short, no reply at all): under
    // the verdict, as the terminal says it, before any cause.
    for b in &r.blind {
        let _ = write!(o, "<br><span class=\"blind\">blind: {}</span>", esc(b));
    }
    o.push_str("</div>\n");
    let what = if r.to.is_empty() {
        esc(&r.deadline_source)
    } else {
        format!(
            "{}: {} → {}; deadline {} ({})",
            esc(r.noun),
            esc(&r.from),
            esc(&r.to.join(" | ")),
            r.deadline_ns.map_or("none".into(), dur),
            esc(&r.deadline_source)
        )
    };
    let _ = writeln!(o, "<p class=\"sub\">{what}. {} events read.</p>", r.events);
}

/// The ranked causes over all misses: where misses overlapped in time, `total` counts
/// each wait once and `summed` once per miss it delayed (as the terminal table does).
fn causes(o: &mut Page<'_>, r: &ExplainReport) {
    if r.causes.is_empty() {
        return;
    }
    let repeated = r.causes.iter().any(|c| c.once_ns < c.total_excess_ns);
    let _ = writeln!(
        o,
        "<h2>Causes, over all misses</h2>\n<table id=\"causes\"><tr><th>category</th><th>culprit</th><th>misses</th><th>total excess</th>{}<th>mean</th><th>share</th></tr>",
        if repeated { "<th>summed</th>" } else { "" }
    );
    for row in &r.causes {
        let mut who = row.culprit.label();
        if let Some(cpu) = row.culprit.cpu {
            let _ = write!(who, " on CPU{cpu}");
        }
        let summed = if repeated {
            format!("<td class=\"n\">{}</td>", dur(row.total_excess_ns))
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>{summed}<td class=\"n\">{}</td><td><span class=\"share\" style=\"width:{:.0}px\"></span>{}</td></tr>",
            esc(row.category.id()),
            esc(&who),
            row.count,
            dur(row.once_ns),
            dur(row.mean_excess_ns),
            row.share * 120.0,
            pct(row.share)
        );
    }
    o.push_str("</table>\n");
    if repeated {
        o.push_str("<p class=\"sub\">Misses overlapped in time: total excess counts each wait once; summed counts it once per miss it delayed, as mean does.</p>\n");
    }
}

/// The duration histogram.
fn histogram(o: &mut Page<'_>, r: &ExplainReport, p: &Plots) {
    let c = &r.cycles;
    let _ = write!(
        o,
        "<h2>Histogram</h2>\n<p class=\"sub\">p50 {}, p90 {}, p99 {}, max {}; red bars are over the deadline.",
        dur(c.p50_ns),
        dur(c.p90_ns),
        dur(c.p99_ns),
        dur(c.max_ns)
    );
    // Where some readers were not waiting, the bars are of the ready times: the read
    // times' own quantiles beside them.
    if let Some(rd) = &c.read {
        let _ = write!(
            o,
            " The bars are of the time until the reply was ready for its reader. Until read: p50 {}, p90 {}, p99 {}, max {} ({} {} read later than {} ready, outlined at {} read times: the reader was not waiting).",
            dur(rd.p50_ns),
            dur(rd.p90_ns),
            dur(rd.p99_ns),
            dur(rd.max_ns),
            rd.later,
            if rd.later == 1 { "reply" } else { "replies" },
            if rd.later == 1 { "it was" } else { "they were" },
            if rd.later == 1 { "its" } else { "their" },
        );
    }
    o.push_str("</p>\n");
    o.push_str(&svg::histogram(&p.hist));
}

/// The per-cycle raster of kernel events, its legend and its hover data.
fn raster(o: &mut Page<'_>, r: &ExplainReport, p: &Plots) {
    let _ = writeln!(
        o,
        "<h2>Every {} and its kernel events</h2>\n<p class=\"sub\">One column per {}, in order; each marker is a kernel event at its time since the start (events on the same pixel merged, hover to see them). Missed ones have a red band. Untick a kind to hide it.</p>\n<div id=\"legend\">",
        esc(r.noun.trim_end_matches('s')),
        esc(r.noun.trim_end_matches('s'))
    );
    for (k, name) in KINDS.iter().enumerate() {
        if p.raster.events[k] == 0 {
            continue;
        }
        let (color, _) = svg::STYLE[k];
        let _ = write!(
            o,
            "<label><input type=\"checkbox\" checked data-kind=\"{name}\"><span style=\"color:{color}\">■</span> {name} ({})</label>",
            p.raster.events[k]
        );
    }
    o.push_str("</div>\n");
    o.push_str(&svg::raster(&p.raster, &r.windows));
    // Hover data: flat arrays keep it small. Serialised straight from the raster: a
    // `serde_json::Value` per number cost 32 bytes each, 227 MB for a million cycles.
    o.push_str("<script type=\"application/json\" id=\"raster-data\">");
    let mut safe = ScriptSafe {
        page: o,
        after_lt: false,
    };
    // Serialising numbers and strings into a sink that does not fail cannot fail.
    let _ = serde_json::to_writer(&mut safe, &RasterData(&p.raster, &r.windows));
    o.push_str("</script>\n");
}

/// The raster's hover data as the page script reads it: keys in sorted order, each cycle
/// as four numbers (start, duration or -1, missed, thread), each mark as five (cycle,
/// offset, kind, label, merged events); where some reply was read later than it was
/// ready, `reads`: each cycle's read time since its start, or -1.
struct RasterData<'a>(&'a Raster, &'a Windows);

impl serde::Serialize for RasterData<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let ra = self.0;
        let cycles = Flat(|| {
            self.1.iter().flat_map(|cy| {
                [
                    cy.start_ns as i64,
                    cy.end_ns().map_or(-1, |e| (e - cy.start_ns) as i64),
                    i64::from(cy.miss),
                    cy.tid as i64,
                ]
            })
        });
        let marks = Flat(|| {
            ra.marks.iter().flat_map(|m| {
                [
                    m.cycle as u64,
                    m.off_ns,
                    m.kind as u64,
                    m.label as u64,
                    m.n as u64,
                ]
            })
        });
        let reads = Flat(|| {
            (self.1.iter()).map(|cy| cy.read_ns.map_or(-1, |rd| (rd - cy.start_ns) as i64))
        });
        let with_reads = ra.read_later() > 0;
        let mut m = s.serialize_map(Some(9 + usize::from(with_reads)))?;
        m.serialize_entry("cycles", &cycles)?;
        m.serialize_entry("kinds", &KINDS)?;
        m.serialize_entry("labels", &ra.labels)?;
        m.serialize_entry("left", &LEFT)?;
        m.serialize_entry("marks", &marks)?;
        m.serialize_entry("ph", &RASTER_H)?;
        m.serialize_entry("pw", &RASTER_W)?;
        if with_reads {
            m.serialize_entry("reads", &reads)?;
        }
        m.serialize_entry("top", &TOP)?;
        m.serialize_entry("ymax", &ra.ymax_ns)?;
        m.end()
    }
}

/// A JSON array of the numbers an iterator yields, written without collecting them.
struct Flat<F>(F);

impl<F, I, T> serde::Serialize for Flat<F>
where
    F: Fn() -> I,
    I: Iterator<Item = T>,
    T: serde::Serialize,
{
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq((self.0)())
    }
}

/// Each drawn miss: its chain as a table and its swimlane.
fn lanes(o: &mut Page<'_>, r: &ExplainReport, p: &Plots) {
    if !p.lanes.is_empty() {
        let _ = writeln!(
            o,
            "<h2>The misses, one by one</h2>\n<p class=\"sub\">{} of {} misses, worst first{}. Per CPU: the chain's links (orange: over their usual time), the tasks, interrupts, softirqs and work items that ran; red outline: the time blamed; arrows: the hand-offs.</p>",
            p.lanes.len(),
            r.misses.len(),
            if p.lanes.len() < r.misses.len() {
                " (--lanes N draws more; --json has every chain)"
            } else {
                ""
            }
        );
    }
    for l in &p.lanes {
        let m = &r.misses[l.miss];
        let _ = writeln!(
            o,
            "<section class=\"miss\" id=\"miss-{}\"><h3>{}</h3>",
            l.miss + 1,
            esc(&l.title)
        );
        chain_table(o, m);
        o.push_str(&svg::swimlane(l, &format!("lane-{}", l.miss + 1)));
        if l.hidden > 0 {
            let _ = writeln!(
                o,
                "<p class=\"sub\">{} task runs too short to draw at this scale.</p>",
                l.hidden
            );
        }
        o.push_str("</section>\n");
    }
}

/// One miss's chain as a table.
fn chain_table(o: &mut Page<'_>, m: &whylate::explain::Miss) {
    o.push_str("<table class=\"chain\"><tr><th>at</th><th>CPU</th><th>link</th><th>what</th><th>took</th><th>over usual</th><th>held by</th></tr>\n");
    for k in &m.chain {
        let held: Vec<String> = k
            .held_by
            .iter()
            .take(3)
            .map(|h| format!("{} {} {}", h.category, h.culprit.label(), dur(h.ns)))
            .collect();
        let _ = writeln!(
            o,
            "<tr><td class=\"n\">+{}</td><td>{}</td><td>{}</td><td>{}{}</td><td class=\"n\">{}</td><td class=\"n{}\">{}</td><td>{}</td></tr>",
            dur(k.offset_ns),
            k.cpu.map_or(String::new(), |c| c.to_string()),
            esc(&k.kind),
            esc(&k.what),
            if k.pending_at_deadline {
                " <i>(pending at the deadline)</i>"
            } else {
                ""
            },
            if k.duration_ns > 0 {
                dur(k.duration_ns)
            } else {
                String::new()
            },
            if k.excess_ns > 0 { " late" } else { "" },
            if k.excess_ns > 0 {
                dur(k.excess_ns)
            } else {
                String::new()
            },
            esc(&held.join("; "))
        );
    }
    o.push_str("</table>\n");
}

/// Advice, the CPU context, blind spots, the inputs, the terminal report and the page's
/// `script`.
fn advice_notes_inputs(o: &mut Page<'_>, r: &ExplainReport, script: &str) {
    if !r.advice.is_empty() {
        o.push_str("<h2>What to do</h2>\n<ul class=\"advice\">\n");
        for a in &r.advice {
            let _ = writeln!(
                o,
                "<li><b>{}</b><br><code>{}</code><br><span class=\"sub\">cost: {}</span></li>",
                esc(&a.action),
                esc(&a.command),
                esc(&a.cost)
            );
        }
        o.push_str("</ul>\n");
    }
    context(o, r);
    if !r.notes.is_empty() {
        o.push_str("<h2>Where the analysis is blind</h2>\n<ul>\n");
        for n in &r.notes {
            let _ = writeln!(o, "<li>{}</li>", esc(n));
        }
        o.push_str("</ul>\n");
    }
    o.push_str("<h2>Inputs</h2>\n<table><tr><th>file</th><th>format</th><th>events</th><th>bytes</th></tr>\n");
    for i in &r.inputs {
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            esc(&i.path),
            i.format,
            i.events,
            i.bytes
        );
    }
    o.push_str("</table>\n<details><summary>The terminal report</summary><pre>");
    o.push_str(&esc(&r.render_text(&crate::Paint::plain())));
    let _ = write!(
        o,
        "</pre></details>\n<div id=\"tip\"></div>\n<script>{script}</script>\n</body></html>\n"
    );
}

/// CPU busy shares, interrupt placement and the machine.
fn context(o: &mut Page<'_>, r: &ExplainReport) {
    if r.cpus.is_empty() && r.context.is_empty() && r.machine.is_none() {
        return;
    }
    o.push_str("<h2>Context</h2>\n");
    if !r.cpus.is_empty() {
        o.push_str("<h3>CPU time, whole trace</h3>\n<table id=\"cpu-shares\"><tr><th>CPU</th><th>busy</th><th>held by (share of the trace)</th><th>interrupts handled</th></tr>\n");
        for c in &r.cpus {
            let shares: Vec<String> = c
                .shares
                .iter()
                .take(6)
                .map(|s| format!("{} {}", s.what, pct(s.share)))
                .collect();
            let irqs: Vec<String> = c
                .irqs
                .iter()
                .take(6)
                .map(|i| {
                    if i.name.is_empty() {
                        format!("{} ×{}", i.irq, i.count)
                    } else {
                        format!("{} {} ×{}", i.irq, i.name, i.count)
                    }
                })
                .collect();
            let _ = writeln!(
                o,
                "<tr><td>CPU{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td></tr>",
                c.cpu,
                pct(c.busy),
                esc(&shares.join(", ")),
                esc(&irqs.join(", "))
            );
        }
        o.push_str("</table>\n");
    }
    if !r.context.is_empty() {
        o.push_str("<h3>CPUs the causes point at</h3>\n<table><tr><th>CPU</th><th>role</th><th>busy</th><th>irqs</th></tr>\n");
        for cx in &r.context {
            let busy: Vec<String> = cx
                .busy
                .iter()
                .map(|(t, f)| format!("{t} {}", pct(*f)))
                .collect();
            let irqs: Vec<String> = cx.irqs.iter().map(|(i, n)| format!("{i} ×{n}")).collect();
            let _ = writeln!(
                o,
                "<tr><td>CPU{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                cx.cpu,
                esc(&cx.role),
                esc(&busy.join(", ")),
                esc(&irqs.join(", "))
            );
        }
        o.push_str("</table>\n");
    }
    if let Some(m) = &r.machine {
        let _ = writeln!(
            o,
            "<h3>Machine at record time</h3>\n<p>kernel {}, CPUs {}, irqbalance {}</p>",
            esc(&m.kernel),
            esc(&m.online_cpus),
            if m.irqbalance {
                "running"
            } else {
                "not running"
            }
        );
        if !m.irqs.is_empty() {
            o.push_str("<table id=\"irq-placement\"><tr><th>IRQ</th><th>name</th><th>allowed CPUs</th><th>effective</th></tr>\n");
            for i in &m.irqs {
                let _ = writeln!(
                    o,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    i.irq,
                    esc(&i.name),
                    esc(i.affinity.as_deref().unwrap_or("?")),
                    esc(i.effective.as_deref().unwrap_or("?"))
                );
            }
            o.push_str("</table>\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raster::Mark;
    use whylate::explain::Window;

    /// What `write` puts through a `ScriptSafe` onto a page.
    fn through_safe(write: impl FnOnce(&mut ScriptSafe<'_, '_>)) -> String {
        let mut v = Vec::new();
        let mut page = Page {
            w: &mut v,
            len: 0,
            err: None,
        };
        write(&mut ScriptSafe {
            page: &mut page,
            after_lt: false,
        });
        assert_eq!(page.len as usize, v.len());
        String::from_utf8(v).unwrap()
    }

    fn safe(pieces: &[&str]) -> String {
        through_safe(|s| {
            for p in pieces {
                io::Write::write_all(s, p.as_bytes()).unwrap();
            }
        })
    }

    #[test]
    fn script_safe_escapes_a_closing_tag_split_across_writes() {
        assert_eq!(safe(&["a</b"]), r"a<\/b");
        assert_eq!(safe(&["a<", "/b"]), r"a<\/b");
        assert_eq!(safe(&["<", "<", "/"]), r"<<\/");
        assert_eq!(safe(&["x/y", "<", "z/"]), "x/y<z/");
        assert_eq!(safe(&["", "</", "", "/"]), r"<\//");
    }

    #[test]
    fn raster_hover_data_is_the_flat_arrays_the_page_reads() {
        let cycles: Windows = vec![
            Window::new(1_000, Some(1_250), 1_250, 7, 0, false),
            Window::new(2_000, None, 2_600, 8, 1, true),
        ]
        .into();
        let ra = Raster {
            ymax_ns: 900,
            deadline_ns: Some(300),
            events: [0; KINDS.len()],
            marks: vec![Mark {
                cycle: 1,
                off_ns: 40,
                kind: 2,
                label: 0,
                n: 3,
            }],
            labels: vec!["write </script>".into()],
            clipped: 0,
            pinned: 0,
            noun: "cycles".into(),
        };
        let got = through_safe(|s| serde_json::to_writer(s, &RasterData(&ra, &cycles)).unwrap());
        let want = format!(
            r#"{{"cycles":[1000,250,0,7,2000,-1,1,8],"kinds":{},"labels":["write <\/script>"],"left":{},"marks":[1,40,2,0,3],"ph":{RASTER_H},"pw":{RASTER_W},"top":{},"ymax":900}}"#,
            serde_json::to_string(&KINDS).unwrap(),
            serde_json::to_string(&LEFT).unwrap(),
            serde_json::to_string(&TOP).unwrap(),
        );
        assert_eq!(got, want);
    }

    /// Where a reply was read later than it was ready, the hover data carries each
    /// cycle's read time (-1: read when ready), and the page script says both times.
    #[test]
    fn the_hover_has_the_read_time_beside_the_ready_time() {
        let cycles: Windows = vec![
            Window::new(1_000, Some(1_250), 1_250, 7, 0, false),
            Window::new(2_000, Some(2_400), 2_400, 7, 0, true).read_at(Some(27_000)),
        ]
        .into();
        let mut ra = Raster {
            ymax_ns: 900,
            deadline_ns: Some(300),
            events: [0; KINDS.len()],
            marks: Vec::new(),
            labels: Vec::new(),
            clipped: 0,
            pinned: 1,
            noun: "cycles".into(),
        };
        let read = KINDS.iter().position(|k| *k == "read").unwrap();
        ra.events[read] = 1;
        let got = through_safe(|s| serde_json::to_writer(s, &RasterData(&ra, &cycles)).unwrap());
        assert!(
            got.contains(r#""pw":1000,"reads":[-1,25000],"top":"#),
            "{got}"
        );
        // The cycle's line in the hover: the one expression, replaced once.
        assert_eq!(SCRIPT.matches(TOOK).count(), 1);
        let js = script(&ra);
        assert!(js.contains(TOOK_OR_READ));
        assert_eq!(js.len(), SCRIPT.len() - TOOK.len() + TOOK_OR_READ.len());
        // Without read times, neither the data nor the script mention them.
        ra.events[read] = 0;
        let got = through_safe(|s| serde_json::to_writer(s, &RasterData(&ra, &cycles)).unwrap());
        assert!(!got.contains("reads"), "{got}");
        assert_eq!(script(&ra), SCRIPT);
    }

    #[test]
    fn the_html_report_says_where_the_trace_is_blind_under_its_verdict() {
        // Every third line garbled, as in whylate's terminal test of it (explain/tests):
        // the page says it at the top.
        use whylate::explain::{run, Mode};
        use whylate::testkit;
        let t: String = testkit::garbled_every_third(&testkit::three_cpu_chain(6, &[4], 3_000));
        let mode = Mode::Cycles(testkit::chain_options(Some(1_000_000)));
        let x = run(whylate::testkit::opened(&t), &Default::default(), &mode).unwrap();
        let plots = crate::plot::build(&x.report, &x.timeline, &x.strings, &Default::default());
        let page = render(&x.report, &plots, "t");
        let verdict = &page[page.find("id=\"verdict\"").unwrap()..];
        let verdict = &verdict[..verdict.find("</div>").unwrap()];
        assert!(
            verdict.contains("blind: ") && verdict.contains("were not understood"),
            "{verdict}"
        );
    }
}
