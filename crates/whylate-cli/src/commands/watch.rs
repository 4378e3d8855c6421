//! `whylate watch`: misses explained as they happen; a redrawn view on a terminal, plain
//! blocks otherwise, JSON lines with --json; the whole run's report at the end.

use crate::args::WatchArgs;
use crate::output::{usage, Out, EXIT_INTERRUPTED};
use crate::paths::{self, Paths};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use whylate::explain::ExplainReport;
use whylate::units::dur;
use whylate_live::watch::{self, KeepOptions, LiveMiss, Status, WatchOptions, Watcher};
use whylate_report::{ExplainText, Paint};

/// Watches until the command ends, --duration, --until or Ctrl-C.
pub fn run(a: WatchArgs, out: &Out) -> anyhow::Result<ExitCode> {
    let mode = match a.mode.mode() {
        Ok(m) => m,
        Err(e) => return usage(&e),
    };
    let timerlat = a.timerlat.tracer();
    if let Err(e) = watch::check_mode(&mode, timerlat.is_some()) {
        return usage(&e);
    }
    if timerlat.is_some() {
        // Before any tracefs change: a kernel without the tracer gets one line.
        if let Err(e) = whylate_live::record::check_timerlat() {
            return usage(&e.to_string());
        }
    }
    let checked = Paths::default()
        .dir("--keep", a.keep.as_deref(), paths::no_inputs)
        .dir(
            "--parquet",
            a.findings.parquet.as_deref(),
            paths::parquet_files,
        )
        .check();
    if let Err(e) = checked {
        return usage(&e);
    }
    let events = if a.events.is_empty() {
        watch::default_events(&mode)
    } else {
        a.events
    };
    let o = WatchOptions {
        mode,
        timerlat,
        events,
        buffer_kb: a.buffer_kb,
        duration: a.duration.map(std::time::Duration::from_nanos),
        until: a.until,
        command: a.command,
        command_stdout_to_stderr: a.json,
        before_ns: a.before,
        after_ns: a.after,
        keep: a.keep.map(|dir| KeepOptions {
            dir,
            max_files: a.keep_files,
            max_bytes: a.keep_mb << 20,
        }),
        on_miss: a.on_miss,
        ring_bytes: a.ring_mb.max(16) << 20,
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let interrupted = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, interrupted.clone())?;
    let tty = !a.json && std::io::stdout().is_terminal();
    let mut view = View {
        paint: out.paint(),
        json: a.json,
        tty,
        last: None,
        announced: a.json,
        collected: a.findings.parquet.is_some().then(Vec::new),
        uncollected: 0,
    };
    let started = std::time::SystemTime::now();
    let r = match watch::watch(&o, stop, &mut view) {
        Ok(r) => r,
        Err(e) => return usage(&e.to_string()),
    };
    if let (Some(rep), Some(misses)) = (&r.report, view.collected.take()) {
        a.findings
            .write_watch(rep, misses, view.uncollected, o.mode.name(), started)?;
    }
    if a.json {
        let mut so = std::io::stdout().lock();
        serde_json::to_writer(&mut so, &serde_json::json!({ "summary": &r }))?;
        writeln!(so)?;
    } else {
        if tty {
            print!("\x1b[H\x1b[2J");
        }
        for s in &r.stale_instances {
            eprintln!("whylate: tracefs instance {s} was left by a killed run; `whylate record --reset` removes it");
        }
        match &r.report {
            Some(rep) => out.text(&rep.render_text(&view.paint))?,
            None => println!("no sample was measured: nothing to report"),
        }
        println!(
            "\nwatched {}: {} windows explained, recorder {:.1}% of a CPU, kernel lost {} events{}",
            dur(r.status.elapsed_ns),
            r.status.windows,
            r.status.recorder_cpu * 100.0,
            r.status.lost.iter().sum::<u64>(),
            match r.kept.len() {
                0 => String::new(),
                n => format!(", {n} windows kept ({} dropped)", r.dropped),
            }
        );
    }
    let ctrl_c = interrupted.load(Ordering::Acquire);
    Ok(match r.exit_code {
        Some(_) if ctrl_c => ExitCode::from(EXIT_INTERRUPTED),
        Some(c) => ExitCode::from(c.clamp(0, 255) as u8),
        None => ExitCode::SUCCESS,
    })
}

/// How misses and status are shown.
struct View {
    paint: Paint,
    json: bool,
    tty: bool,
    /// The last miss, rendered (the terminal view keeps it on screen).
    last: Option<String>,
    /// Said once tracing runs (not before: set-up can still fail).
    announced: bool,
    /// With --parquet: every miss, for the findings written at the end (the first
    /// [`MAX_FINDINGS_MISSES`]; the causes cover all).
    collected: Option<Vec<whylate::explain::Miss>>,
    /// Misses beyond that.
    uncollected: u64,
}

/// Misses kept in memory for the findings of a long watch.
const MAX_FINDINGS_MISSES: usize = 10_000;

impl Watcher for View {
    fn miss(&mut self, m: &LiveMiss, framing: &ExplainReport) {
        if let Some(c) = &mut self.collected {
            if c.len() < MAX_FINDINGS_MISSES {
                c.push(m.miss.clone());
            } else {
                self.uncollected += 1;
            }
        }
        if let Some(e) = &m.on_miss_error {
            eprintln!("whylate: {e}");
        }
        if self.json {
            let mut so = std::io::stdout().lock();
            let _ = serde_json::to_writer(&mut so, &serde_json::json!({ "miss": m }));
            let _ = writeln!(so);
            let _ = so.flush();
            return;
        }
        let text = framing.render_miss(&m.miss, &self.paint);
        let mut text = format!("\n#{} {}", m.n, text.trim_start_matches('\n'));
        if !m.lost.is_empty() {
            text += "  (uncertain: the kernel lost events meanwhile; the chain may lack them)\n";
        }
        if let Some(p) = &m.kept {
            text += &format!("  kept: {}\n", p.display());
        }
        if self.tty {
            self.last = Some(text);
        } else {
            print!("{text}");
            let _ = std::io::stdout().flush();
        }
    }

    fn status(&mut self, s: &Status) {
        if !self.announced {
            self.announced = true;
            eprintln!("whylate: watching until Ctrl-C, the command's end, --duration or --until");
        }
        if !self.tty {
            return;
        }
        let mut o = String::from("\x1b[H\x1b[2J");
        o += &headline(s);
        if let Some(r) = &s.report {
            for (i, c) in r.causes.iter().take(3).enumerate() {
                o += &format!(
                    "  {}. {} {}  {:.0}% of the excess, {} misses\n",
                    i + 1,
                    c.category,
                    c.culprit.label_in(c.category),
                    c.share * 100.0,
                    c.count
                );
            }
        }
        if let Some(l) = &self.last {
            o += "\nlast:";
            o += l;
        }
        let mut so = std::io::stdout().lock();
        let _ = so.write_all(o.as_bytes());
        let _ = so.flush();
    }
}

/// The view's first lines: elapsed, rate, misses, quantiles, the recorder's cost.
fn headline(s: &Status) -> String {
    let secs = s.elapsed_ns as f64 / 1e9;
    let dl = s.deadline_ns.map_or("deadline being learnt".into(), |d| {
        format!("deadline {}", dur(d))
    });
    let mut o = format!("whylate watch  {:.0} s  {dl}\n", secs);
    if let Some(r) = &s.report {
        let c = &r.cycles;
        o += &format!(
            "{} {} ({:.1}/s), {} misses ({:.2}/s); p50 {}, p99 {}, max {}\n",
            c.count,
            r.noun,
            c.count as f64 / secs.max(1e-9),
            c.misses,
            c.misses as f64 / secs.max(1e-9),
            dur(c.p50_ns),
            dur(c.p99_ns),
            dur(c.max_ns)
        );
    }
    o += &format!(
        "recorder {:.1}% CPU, {:.1} MiB of pages held, {} events lost\n",
        s.recorder_cpu * 100.0,
        s.ring_bytes as f64 / 1048576.0,
        s.lost.iter().sum::<u64>()
    );
    o
}
