//! `trace-cmd report -R` lines and the same records read by whylate's trace.dat reader,
//! in one shape so tests can compare them. Shared by the corpus and live tests.
#![allow(dead_code)]
use std::path::Path;

/// One line of `trace-cmd report -R`: (cpu, pid, ts in µs, event name, raw fields).
pub type ReportLine = (u32, i32, u64, String, String);

/// Parses `trace-cmd report -R` output (`comm-pid [cpu] s.us: name: fields`); lost-event
/// lines and headers are skipped.
pub fn report_r_lines(text: &str) -> Vec<ReportLine> {
    let mut v = Vec::new();
    for line in text.lines() {
        let Some(lb) = line.find(" [") else { continue };
        let Some(rb) = line[lb..].find("] ").map(|x| x + lb) else {
            continue;
        };
        let Ok(cpu) = line[lb + 2..rb].trim().parse::<u32>() else {
            continue;
        };
        let who = line[..lb].trim();
        let Some(dash) = who.rfind('-') else { continue };
        let Ok(pid) = who[dash + 1..].parse::<i32>() else {
            continue;
        };
        let rest = &line[rb + 1..];
        let Some(c1) = rest.find(": ") else { continue };
        let tsf = rest[..c1].trim();
        let Some((sec, us)) = tsf.split_once('.') else {
            continue;
        };
        let (Ok(sec), Ok(us)) = (sec.parse::<u64>(), us.parse::<u64>()) else {
            continue;
        };
        let rest = &rest[c1 + 2..];
        let Some(c2) = rest.find(':') else { continue };
        let name = rest[..c2].trim().to_string();
        let fields = rest[c2 + 1..].trim().to_string();
        v.push((cpu, pid, sec * 1_000_000 + us, name, fields));
    }
    v
}

/// The records of a trace.dat rendered like `trace-cmd report -R`.
pub fn dat_raw_lines(path: &Path) -> Vec<ReportLine> {
    use whylate::read::tracedat::{Raw, TraceDat};
    let f = std::fs::File::open(path).unwrap();
    let mut d = TraceDat::open(path, f).unwrap_or_else(|e| panic!("{e}"));
    let mut v = Vec::new();
    loop {
        let (ts, cpu, data) = match d.next_raw().unwrap() {
            None => break,
            Some(Raw::Lost { .. }) => continue,
            Some(Raw::Record { ts, cpu, data }) => (ts, cpu, data.to_vec()),
        };
        let fm = d.formats();
        let c = whylate::read::tep::common(&data, fm.endian).unwrap();
        let Some(f) = fm.get(c.id) else { continue };
        let mut text = String::new();
        fm.render_raw(f, &data, &mut text);
        // trace-cmd rounds ns to the nearest µs.
        // A print ends in a newline; the report line is cut there.
        v.push((
            cpu,
            c.pid,
            (ts + 500) / 1000,
            f.name.to_string(),
            text.trim_end().to_string(),
        ));
    }
    v
}
