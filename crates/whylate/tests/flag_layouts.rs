//! One real recording in every flag layout the kernel prints: the same events, the same
//! meaning of each column, the same explanation.
//!
//! `examples/pty-poll.ftrace.gz` is raw tracefs text from a 6.18 kernel (5 columns:
//! irqs-off, need-resched, hardirq/softirq, preempt depth, migrate-disable). Each line's
//! column is rewritten as a kernel of another build prints it: no column (`irq-info` off),
//! 4 columns (before 5.13: no migrate-disable), and PREEMPT_RT's 6 and 7 columns (a
//! need-resched-lazy column before the context, a preempt-lazy depth after the preempt
//! depth, migrate-disable last on 7).

mod common;
use common::read_all;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use whylate::event::flags;
use whylate::explain::{explain, explain_auto, Options};
use whylate::read::OpenOptions;
use whylate::selector::Selector;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Layout {
    None,
    Four,
    Five,
    RtSix,
    RtSeven,
}

/// `f` (a 5-column mainline flags word) as `layout` prints it; None drops the column.
fn rewrite(f: &str, layout: Layout) -> Option<String> {
    let c: Vec<char> = f.chars().collect();
    assert_eq!(c.len(), 5, "{f}");
    // RT kernels print a lazy request in its own column; mainline's combined letters
    // (`L`, `B`, ...) split into need-resched and that column.
    let (nr, lazy) = match c[1] {
        'L' | 'l' => ('.', 'L'),
        'B' => ('N', 'L'),
        'b' => ('n', 'L'),
        x => (x, '.'),
    };
    let s: String = match layout {
        Layout::None => return None,
        Layout::Four => c[..4].iter().collect(),
        Layout::Five => f.to_string(),
        Layout::RtSix => [c[0], nr, lazy, c[2], c[3], '.'].iter().collect(),
        Layout::RtSeven => [c[0], nr, lazy, c[2], c[3], '.', c[4]].iter().collect(),
    };
    Some(s)
}

/// The example rewritten in `layout` into `dir`; the header lines are kept as they are
/// (the reader does not need them).
fn write_layout(dir: &Path, layout: Layout) -> PathBuf {
    let src = repo().join("examples/pty-poll.ftrace.gz");
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(src).unwrap());
    let path = dir.join(format!("{layout:?}.txt"));
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for line in std::io::BufReader::new(gz).lines() {
        let line = line.unwrap();
        // `comm-pid ( tgid) [cpu] flags time: ...`: the flags are the word after `] `.
        let at = match (line.starts_with('#'), line.find(") [")) {
            (false, Some(p)) => line[p..].find("] ").map(|q| p + q + 2),
            _ => None,
        };
        let Some(a) = at else {
            writeln!(out, "{line}").unwrap();
            continue;
        };
        let e = a + line[a..].find(' ').unwrap();
        match rewrite(&line[a..e], layout) {
            Some(f) => writeln!(out, "{}{f}{}", &line[..a], &line[e..]).unwrap(),
            None => writeln!(out, "{}{}", &line[..a - 1], &line[e..]).unwrap(),
        }
    }
    out.flush().unwrap();
    path
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// What a layout's columns say: the context bits and the depths it prints.
fn meaning(fl: u16, layout: Layout) -> u16 {
    let ctx = flags::IRQS_OFF | flags::BH_OFF | flags::HARDIRQ | flags::SOFTIRQ | flags::NMI;
    let preempt = 0xf << flags::PREEMPT_SHIFT;
    let migrate = flags::MIGRATE_MASK << flags::MIGRATE_SHIFT;
    match layout {
        Layout::None => 0,
        Layout::Four | Layout::RtSix => fl & (ctx | preempt | flags::KNOWN),
        Layout::Five | Layout::RtSeven => fl & (ctx | preempt | migrate | flags::KNOWN),
    }
}

/// Explain's JSON, both ways the bundled examples are explained.
fn explanations(path: &Path) -> (serde_json::Value, serde_json::Value) {
    let p = [path.to_path_buf()];
    let open = OpenOptions::default();
    let auto = explain_auto(whylate::read::Opened::files(&p, &open).unwrap(), &open, 5).unwrap();
    let o = Options {
        from: Selector::parse("sys_enter_write[comm=frobnicator,count=7]").unwrap(),
        to: vec![Selector::parse("sys_exit_read[comm=frobnicator,ret>0]").unwrap()],
        deadline_ns: Some(3_500_000),
        same: Default::default(),
        pairing: Default::default(),
        arch: None,
        top: 3,
        learned: Default::default(),
    };
    let cycles = explain(whylate::read::Opened::files(&p, &open).unwrap(), &open, &o).unwrap();
    // The input's own description (path, bytes) differs by layout; the answer may not.
    let answer = |r| {
        let mut v = serde_json::to_value(r).unwrap();
        v.as_object_mut().unwrap().remove("inputs");
        v
    };
    (answer(&auto), answer(&cycles))
}

/// The first key whose value differs, for a readable failure.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value) -> String {
    match (a, b) {
        (serde_json::Value::Object(x), serde_json::Value::Object(y)) => (x.iter())
            .find(|(k, v)| y.get(*k) != Some(v))
            .map(|(k, v)| format!("{k}: {}", first_difference(v, &y[k])))
            .unwrap_or_else(|| "keys differ".into()),
        (serde_json::Value::Array(x), serde_json::Value::Array(y)) if x.len() == y.len() => {
            (x.iter().zip(y).enumerate())
                .find(|(_, (p, q))| p != q)
                .map(|(i, (p, q))| format!("[{i}] {}", first_difference(p, q)))
                .unwrap_or_default()
        }
        _ => format!("{a} vs {b}"),
    }
}

#[test]
fn a_real_trace_in_every_flag_layout_reads_and_explains_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let base = write_layout(dir.path(), Layout::Five);
    let want = read_all(&base);
    assert_eq!(want.diag.unparsed, 0, "{:?}", want.diag.unparsed_samples);
    // The recording holds hardirq, softirq, irqs-off and nested preempt depths to compare.
    let seen = |bit: u16| want.events.iter().any(|e| e.flags & bit != 0);
    assert!(seen(flags::HARDIRQ) && seen(flags::SOFTIRQ) && seen(flags::IRQS_OFF));
    assert!(want.events.iter().any(|e| e.preempt_depth() == Some(5)));
    let (want_auto, want_cycles) = explanations(&base);
    assert!(want_cycles["cycles"]["count"].as_u64().unwrap() >= 80);
    for layout in [Layout::None, Layout::Four, Layout::RtSix, Layout::RtSeven] {
        let path = write_layout(dir.path(), layout);
        let got = read_all(&path);
        assert_eq!(got.diag.unparsed, 0, "{layout:?}");
        assert_eq!(got.events.len(), want.events.len(), "{layout:?}");
        for (g, w) in got.events.iter().zip(&want.events) {
            let key = |e: &whylate::event::Event| (e.ts, e.cpu, e.tid, e.tgid, e.comm);
            assert_eq!(key(g), key(w), "{layout:?}");
            assert_eq!(
                format!("{:?}", g.kind),
                format!("{:?}", w.kind),
                "{layout:?}"
            );
            assert_eq!(
                meaning(g.flags, layout),
                meaning(w.flags, layout),
                "{layout:?} at {}",
                w.ts
            );
        }
        let (auto, cycles) = explanations(&path);
        assert!(
            auto == want_auto,
            "{layout:?}: automatic explain differs at {}",
            first_difference(&auto, &want_auto)
        );
        if layout == Layout::None {
            // Without the column nothing says an event ran in a hardirq: the chains may
            // then read a context differently (here one unblamed link after a deadline
            // names the tick), but the cycles, misses, blame and causes are the same.
            for k in ["cycles", "causes", "advice"] {
                assert_eq!(cycles[k], want_cycles[k], "{layout:?}: {k}");
            }
            let blamed = |v: &serde_json::Value| -> Vec<(u64, u64)> {
                (v["misses"].as_array().unwrap().iter())
                    .map(|m| {
                        (
                            m["start_ns"].as_u64().unwrap(),
                            m["blamed_ns"].as_u64().unwrap(),
                        )
                    })
                    .collect()
            };
            assert_eq!(blamed(&cycles), blamed(&want_cycles), "{layout:?}");
            continue;
        }
        assert!(
            cycles == want_cycles,
            "{layout:?}: cycles explain differs at {}",
            first_difference(&cycles, &want_cycles)
        );
    }
}
