//! The pictures: the HTML report rendered by a real browser (headless Chromium), the SVG
//! files, the Perfetto export checked against the trace-event schema and against counts
//! taken from the trace text without whylate, and the terminal colour switches.
//!
//! Chromium and python3-jsonschema are installed by `scripts/test`; without them these tests
//! skip with a reason, and with WHYLATE_REQUIRE_LIVE=1 (CI) a skip is a failure.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

mod common;
use common::{repo, skip, whylate, FROB};

/// frob's own log: (cycles, misses) — `cycle write reply latency missed`.
fn frob_truth() -> (u64, u64) {
    let t = std::fs::read_to_string(repo().join("examples/frob.truth")).unwrap();
    let rows: Vec<&str> = t
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    let missed = rows
        .iter()
        .filter(|l| l.split_whitespace().nth(4) == Some("1"))
        .count();
    (rows.len() as u64, missed as u64)
}

/// An attribute of the first element whose start tag contains `marker`.
fn attr(dom: &str, marker: &str, name: &str) -> Option<String> {
    let at = dom.find(marker)?;
    let tag_start = dom[..=at].rfind('<')?;
    let tag = &dom[tag_start..tag_start + dom[tag_start..].find('>')?];
    let k = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    Some(tag[k..k + tag[k..].find('"')?].to_string())
}

fn num(dom: &str, marker: &str, name: &str) -> u64 {
    attr(dom, marker, name)
        .unwrap_or_else(|| panic!("no {name} on {marker}"))
        .parse()
        .unwrap()
}

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// Loads `page` in headless Chromium: the DOM after the scripts ran, and the console
/// messages Chromium logged.
fn render(browser: &str, page: &Path, shot: Option<&Path>) -> (String, String) {
    let mut c = Command::new(browser);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=5000",
        "--window-size=1200,2400",
    ]);
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    match shot {
        Some(p) => c.arg(format!("--screenshot={}", p.display())),
        None => c.arg("--dump-dom"),
    };
    let o = c.arg(url).output().unwrap();
    assert!(o.status.success(), "{browser} failed");
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Console errors in Chromium's log, and errors the page's own guard counted.
fn page_errors(dom: &str, log: &str) -> Vec<String> {
    let mut errs: Vec<String> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") && (l.contains("Error") || l.contains("Uncaught")))
        .map(str::to_string)
        .collect();
    if let Some(e) = attr(dom, "<html", "data-errors") {
        errs.push(e);
    }
    errs
}

#[test]
fn html_report_renders_in_chromium_with_every_cycle_drawn() {
    let Some(browser) = chromium() else {
        skip("no chromium (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("frob.html");
    let svg = dir.path().join("svg");
    let mut args = vec!["explain", "examples/frob.dat.zst"];
    args.extend(FROB);
    let json: Value =
        serde_json::from_str(&whylate(&[args.clone(), vec!["--json"]].concat()).0).unwrap();
    let (_, err) = whylate(
        &[
            args,
            vec![
                "--html",
                page.to_str().unwrap(),
                "--svg",
                svg.to_str().unwrap(),
                "--lanes",
                "4",
            ],
        ]
        .concat(),
    );
    assert!(err.contains("wrote"), "{err}");
    let (dom, log) = render(browser, &page, None);
    let errs = page_errors(&dom, &log);
    assert!(errs.is_empty(), "the page has errors: {errs:?}");
    assert_eq!(
        attr(&dom, "<html", "data-ready").as_deref(),
        Some("1"),
        "the page's script did not finish"
    );
    // Cycles and misses: the lab program's own log, the JSON report, the DOM.
    // (The program reads its clock after the switch-in whylate sees: one cycle near the
    // deadline may land on the other side, as in tests/examples.rs.)
    let (cycles, truth_misses) = frob_truth();
    assert_eq!(json["cycles"]["count"].as_u64(), Some(cycles));
    let misses = json["cycles"]["misses"].as_u64().unwrap();
    assert!(
        misses.abs_diff(truth_misses) <= 1,
        "{misses} vs {truth_misses}"
    );
    assert_eq!(num(&dom, "id=\"raster\"", "data-cycles"), cycles);
    assert_eq!(num(&dom, "id=\"raster\"", "data-js-cycles"), cycles);
    assert_eq!(num(&dom, "id=\"raster\"", "data-misses"), misses);
    assert_eq!(dom.matches("class=\"missband\"").count() as u64, misses);
    // Markers: the SVG groups, the hover data the script read, and the events behind them.
    let marks = num(&dom, "id=\"raster\"", "data-marks");
    assert_eq!(num(&dom, "id=\"raster\"", "data-js-marks"), marks);
    let mut points = 0;
    let mut kinds = BTreeMap::new();
    for g in dom
        .match_indices("<g class=\"kind\"")
        .map(|(i, _)| &dom[i..])
    {
        let kind = attr(g, "class=\"kind\"", "data-kind").unwrap();
        let p = num(g, "class=\"kind\"", "data-points");
        let e = num(g, "class=\"kind\"", "data-events");
        assert!(p <= e, "{kind}: {p} markers for {e} events");
        points += p;
        kinds.insert(kind, e);
    }
    assert_eq!(points, marks);
    assert!(marks > cycles, "{marks} markers for {cycles} cycles");
    // Every replied cycle ends with one `reply` marker.
    assert_eq!(kinds["reply"], json["cycles"]["replied"].as_u64().unwrap());
    // Each of the 4 worst misses has its chain table and swimlane, with blamed time drawn.
    assert_eq!(dom.matches("<section class=\"miss\"").count(), 4);
    assert_eq!(dom.matches("class=\"swimlane\"").count(), 4);
    assert!(num(&dom, "id=\"lane-1\"", "data-blamed") > 0);
    assert!(num(&dom, "id=\"lane-1\"", "data-arrows") > 0);
    // The histogram counts every replied cycle.
    assert_eq!(
        num(&dom, "id=\"histogram\"", "data-samples"),
        json["cycles"]["replied"].as_u64().unwrap()
    );
    // Filtering by kind hides its markers: untick one box and the shown count drops.
    // (Checked through the script's own attribute after a synthetic click.)
    let filtered = dir.path().join("filtered.html");
    let html = std::fs::read_to_string(&page).unwrap().replace(
        "</body>",
        "<script>var b=document.querySelector('#legend input[data-kind=\"reply\"]');b.click();</script></body>",
    );
    std::fs::write(&filtered, html).unwrap();
    let (dom2, log2) = render(browser, &filtered, None);
    assert!(page_errors(&dom2, &log2).is_empty());
    let shown = num(&dom2, "id=\"raster\"", "data-shown");
    let reply_points = num(&dom2, "class=\"kind\" data-kind=\"reply\"", "data-points");
    assert_eq!(shown, marks - reply_points);
    // Hover: a mouse over a marker shows its cycle and its event.
    let hovered = dir.path().join("hovered.html");
    let probe = r#"<script>
var s=document.getElementById('raster'),D=JSON.parse(document.getElementById('raster-data').textContent);
var n=D.cycles.length/4,i=D.marks.length/5-1,c=D.marks[5*i],off=D.marks[5*i+1];
var p=new DOMPoint(D.left+(c+0.5)*D.pw/n,D.top+D.ph-off/D.ymax*D.ph).matrixTransform(s.getScreenCTM());
s.dispatchEvent(new MouseEvent('mousemove',{clientX:p.x,clientY:p.y,bubbles:true}));
document.documentElement.setAttribute('data-tip',document.getElementById('tip').textContent);
var at=[];for(var j=0;j<D.marks.length/5;j++){if(D.marks[5*j]==c&&Math.abs(D.marks[5*j+1]-off)/D.ymax*D.ph<1)at.push(D.labels[D.marks[5*j+3]]);}
document.documentElement.setAttribute('data-want','cycle '+c+'|'+at.join('|'));
</script></body>"#;
    let html = std::fs::read_to_string(&page)
        .unwrap()
        .replace("</body>", probe);
    std::fs::write(&hovered, html).unwrap();
    let (dom3, log3) = render(browser, &hovered, None);
    assert!(page_errors(&dom3, &log3).is_empty());
    let tip = attr(&dom3, "<html", "data-tip").expect("no tooltip");
    let want = attr(&dom3, "<html", "data-want").unwrap();
    let unescape = |x: &str| {
        x.replace("&gt;", ">")
            .replace("&lt;", "<")
            .replace("&amp;", "&")
    };
    let (tip, want) = (unescape(&tip), unescape(&want));
    let mut parts = want.split('|');
    let cycle = parts.next().unwrap();
    assert!(tip.contains(cycle), "tooltip {tip:?} lacks {cycle}");
    // One of the markers on that pixel (several kinds can share it) is named.
    let labels: Vec<&str> = parts.collect();
    assert!(
        labels.iter().any(|l| tip.contains(l)),
        "tooltip {tip:?} names none of {labels:?}"
    );
    // A screenshot, as a user would see it.
    let shot = dir.path().join("frob.png");
    render(browser, &page, Some(&shot));
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG") && png.len() > 20_000);
    // The SVG files: one per plot and per drawn miss, each renders without error.
    let mut names: Vec<String> = std::fs::read_dir(&svg)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "histogram.svg",
            "miss-1.svg",
            "miss-2.svg",
            "miss-3.svg",
            "miss-4.svg",
            "raster.svg"
        ]
    );
    let (sdom, slog) = render(browser, &svg.join("raster.svg"), None);
    assert!(page_errors(&sdom, &slog).is_empty());
    assert_eq!(num(&sdom, "id=\"raster\"", "data-cycles"), cycles);
}

/// A reader that gave up (issue 54; `give-up-client.txt`, hand-built: cycles 2 and 5 ready
/// after 8.030 ms, read after 23.526 and 23.538 ms): hovering anywhere in such a cycle's
/// column names both times, a cycle read when ready keeps its one; the histogram outlines
/// the two read times past its 10 ms axis.
#[test]
fn html_report_shows_when_a_late_reply_was_read() {
    let Some(browser) = chromium() else {
        skip("no chromium (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("give-up.html");
    whylate(&[
        "explain",
        "crates/whylate/tests/data/give-up-client.txt",
        "--from",
        "sys_enter_write[comm=c,count=7]",
        "--to",
        "sys_exit_read[comm=c,ret>0]",
        "--deadline",
        "3.5ms",
        "--html",
        page.to_str().unwrap(),
    ]);
    // The mouse at 5 ms into cycles 2 and 3, away from any marker: the cycle's own line.
    let probe = r#"<script>
var s=document.getElementById('raster'),D=JSON.parse(document.getElementById('raster-data').textContent);
var n=D.cycles.length/4,tips=[];
[2,3].forEach(function(c){
var p=new DOMPoint(D.left+(c+0.5)*D.pw/n,D.top+D.ph-5e6/D.ymax*D.ph).matrixTransform(s.getScreenCTM());
s.dispatchEvent(new MouseEvent('mousemove',{clientX:p.x,clientY:p.y,bubbles:true}));
tips.push(document.getElementById('tip').textContent);});
document.documentElement.setAttribute('data-tips',tips.join('|'));
</script></body>"#;
    let html = std::fs::read_to_string(&page).unwrap();
    std::fs::write(&page, html.replace("</body>", probe)).unwrap();
    let (dom, log) = render(browser, &page, None);
    let errs = page_errors(&dom, &log);
    assert!(errs.is_empty(), "the page has errors: {errs:?}");
    let tips = attr(&dom, "<html", "data-tips").expect("no tooltips");
    assert_eq!(
        tips,
        "cycle 2 at 1.020000 s: ready after 8.030 ms, read after 23.526 ms  MISSED  (tid 5)|cycle 3 at 1.053516 s: took 0.070 ms  (tid 5)"
    );
    assert_eq!(num(&dom, "id=\"histogram\"", "data-read-later"), 2);
    assert_eq!(num(&dom, "id=\"histogram\"", "data-read-over"), 2);
    assert_eq!(num(&dom, "id=\"raster\"", "data-js-cycles"), 8);
}

#[test]
fn the_harness_sees_a_broken_page() {
    // The check above must be able to fail: a page whose script throws is caught.
    let Some(browser) = chromium() else {
        skip("no chromium (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("r.html");
    whylate(&[
        "report",
        "examples/pty-poll.ftrace.gz",
        "-o",
        page.to_str().unwrap(),
    ]);
    let broken = std::fs::read_to_string(&page)
        .unwrap()
        .replace("</body>", "<script>undefinedFunction();</script></body>");
    std::fs::write(&page, broken).unwrap();
    let (dom, log) = render(browser, &page, None);
    assert!(!page_errors(&dom, &log).is_empty());
}

#[test]
fn report_writes_the_automatic_mode_page() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("auto.html");
    let (out, err) = whylate(&[
        "report",
        "examples/softirq.dat.zst",
        "-o",
        page.to_str().unwrap(),
    ]);
    assert!(out.contains("outliers across the measures"), "{out}");
    assert!(err.contains("wrote"), "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    // Self-contained: nothing fetched at view time.
    for bad in ["src=\"http", "href=\"http", "@import", "url(http"] {
        assert!(!html.contains(bad), "the page loads {bad}");
    }
    assert!(html.contains("softirq NET_RX on CPU1"));
}

/// Counts of what the export must hold, from the trace text alone (no whylate): task
/// runs (switches away from a task, plus each CPU's last task still running), softirq
/// runs and work items.
fn text_counts(path: &Path) -> BTreeMap<&'static str, u64> {
    let o = Command::new("zcat").arg(path).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let mut c = BTreeMap::new();
    let mut last_next: BTreeMap<String, bool> = BTreeMap::new();
    for l in text.lines() {
        let cpu = l
            .find('[')
            .map(|i| l[i + 1..i + 4].to_string())
            .unwrap_or_default();
        if l.contains(" sched_switch: ") {
            let field = |k: &str| {
                l.split_whitespace()
                    .find_map(|w| w.strip_prefix(k))
                    .unwrap_or("0")
                    .to_string()
            };
            if field("prev_pid=") != "0" {
                *c.entry("tasks").or_default() += 1;
            }
            last_next.insert(cpu, field("next_pid=") != "0");
        } else if l.contains(" softirq_entry: ") {
            *c.entry("softirq").or_default() += 1;
        } else if l.contains(" workqueue_execute_start: ") {
            *c.entry("work").or_default() += 1;
        }
    }
    *c.entry("tasks").or_default() += last_next.values().filter(|v| **v).count() as u64;
    c
}

#[test]
fn perfetto_export_matches_the_schema_and_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("pty.json");
    let mut args = vec![
        "export",
        "examples/pty-poll.ftrace.gz",
        "--perfetto",
        out.to_str().unwrap(),
        "--json",
    ];
    args.extend(FROB);
    let (stdout, _) = whylate(&args);
    let st: Value = serde_json::from_str(&stdout).unwrap();
    let doc: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    // Round trip: the slices in the file are the slices whylate says it wrote, and the
    // trace's own lines say how many there must be.
    let mut by_cat: BTreeMap<String, u64> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        *by_cat
            .entry(e["cat"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    let total: u64 = by_cat.values().sum();
    assert_eq!(Some(total), st["total_slices"].as_u64());
    let want = text_counts(&repo().join("examples/pty-poll.ftrace.gz"));
    assert_eq!(by_cat.get("softirq"), want.get("softirq"), "softirq slices");
    assert_eq!(by_cat.get("work"), want.get("work"), "work slices");
    // Task runs: the timeline also infers runs the trace implies without a switch line
    // (marked `inferred` in the slice's args) and drops switches that contradict the
    // running task, so these agree to 1%, not exactly.
    let (got, text) = (by_cat["tasks"] as f64, want["tasks"] as f64);
    assert!(
        (got - text).abs() <= text * 0.01,
        "{got} task slices, {text} task runs in the text"
    );
    // Slices on one track never overlap, timestamps are exact microseconds.
    let mut tracks: BTreeMap<(u64, u64), Vec<(f64, f64)>> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        tracks
            .entry((e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()))
            .or_default()
            .push((ts, ts + dur));
    }
    for (k, mut v) in tracks {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        for w in v.windows(2) {
            assert!(w[1].0 >= w[0].1 - 1e-6, "overlap on track {k:?}: {w:?}");
        }
    }
    // Every explained miss with two placed links is one flow: starts once, ends once.
    let flows = st["flows"].as_u64().unwrap();
    assert!(flows > 0);
    let outs = events
        .iter()
        .filter(|e| e["flow_out"] == true && e["flow_in"] != true);
    let ins = events
        .iter()
        .filter(|e| e["flow_in"] == true && e["flow_out"] != true);
    assert_eq!(outs.count() as u64, flows);
    assert_eq!(ins.count() as u64, flows);
    // The trace-event schema (docs/trace-event.schema.json), by an independent validator.
    let py = Command::new("python3")
        .args(["-c", "import jsonschema"])
        .output();
    if !py.is_ok_and(|o| o.status.success()) {
        skip("no python3 jsonschema (apt-get install python3-jsonschema)");
        return;
    }
    let script = r#"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
v = jsonschema.Draft202012Validator(schema)
doc = json.load(open(sys.argv[2]))
errs = list(v.iter_errors(doc))
for e in errs[:5]:
    print(list(e.absolute_path), e.message)
bad = {"traceEvents": [{"ph": "X", "pid": 1, "tid": 1, "name": "x", "cat": "c", "ts": -1, "dur": 1}]}
if not list(v.iter_errors(bad)):
    print("the schema accepts a negative timestamp")
    sys.exit(1)
sys.exit(1 if errs else 0)
"#;
    let o = Command::new("python3")
        .args(["-c", script])
        .arg(repo().join("docs/trace-event.schema.json"))
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "schema: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn colour_follows_the_switch_and_no_color() {
    let mut args = vec!["explain", "examples/frob.dat.zst"];
    args.extend(FROB);
    let plain = whylate(&args).0;
    assert!(!plain.contains('\x1b'), "colour on a pipe");
    let always = whylate(&[args.clone(), vec!["--color", "always"]].concat()).0;
    assert!(always.contains("\x1b[1m") && always.contains("\x1b[31m"));
    // Stripped of colour, the same text.
    let mut stripped = String::new();
    let mut it = always.chars();
    while let Some(c) = it.next() {
        if c == '\x1b' {
            for d in it.by_ref() {
                if d == 'm' {
                    break;
                }
            }
        } else {
            stripped.push(c);
        }
    }
    assert_eq!(stripped, plain);
    let o = Command::new(env!("CARGO_BIN_EXE_whylate"))
        .args(&args)
        .args(["--color", "never"])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&o.stdout).contains('\x1b'));
    // --quiet, and a stderr that is not a terminal: no progress output at all.
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The progress bar shows on a terminal once a read takes over a second, and `--quiet`
/// silences it. The input is a FIFO fed in two halves a while apart, so the read is slow
/// however fast the machine; `script` gives whylate a terminal for stderr.
#[test]
fn progress_bar_on_a_terminal_for_a_slow_read() {
    if Command::new("script").arg("--version").output().is_err() {
        skip("no script(1) (util-linux) to give whylate a terminal");
        return;
    }
    let text = Command::new("zcat")
        .arg(repo().join("examples/pty-poll.ftrace.gz"))
        .output()
        .unwrap()
        .stdout;
    let run = |quiet: bool| -> String {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("trace.fifo");
        assert!(Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let typescript = dir.path().join("typescript");
        let cmd = format!(
            "{} stats {}{} > /dev/null",
            env!("CARGO_BIN_EXE_whylate"),
            if quiet { "--quiet " } else { "" },
            fifo.display()
        );
        let mut child = Command::new("script")
            .args(["-qec", &cmd])
            .arg(&typescript)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
            let half = text.len() / 2;
            w.write_all(&text[..half]).unwrap();
            w.flush().unwrap();
            std::thread::sleep(std::time::Duration::from_millis(1800));
            w.write_all(&text[half..]).unwrap();
        }
        assert!(child.wait().unwrap().success());
        String::from_utf8_lossy(&std::fs::read(&typescript).unwrap()).into_owned()
    };
    let shown = run(false);
    assert!(shown.contains("reading:"), "no progress bar in {shown:?}");
    let quiet = run(true);
    assert!(!quiet.contains("reading:"), "--quiet still drew: {quiet:?}");
}

#[test]
fn an_unwritable_output_is_a_clear_error() {
    // A file's directory is never created: one under a file, or missing, is refused
    // (running as root, permissions would not stop a write).
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let under = |name: &str| file.join(name).display().to_string();
    let (html, json) = (under("r.html"), under("t.json"));
    for args in [
        vec!["explain", "examples/frob.dat.zst", "--html", &html],
        vec!["report", "examples/frob.dat.zst", "-o", &html],
        vec!["export", "examples/frob.dat.zst", "--perfetto", &json],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_whylate"))
            .args(&args)
            .current_dir(repo())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("is not a directory"), "{err}");
        assert!(err.contains(&file.display().to_string()), "{err}");
    }
}
