//! One tool call on the library, the functions the CLI's commands call, on the thread it
//! is given: a result (a one-line summary and the JSON) or the error in the CLI's words.

use super::argv;
use super::page;
use super::tools::RECORD_MAX_NS;
use crate::args::{Cmd, InputArgs};
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::sync::Arc;
use whylate::read::{Held, OpenOptions, Progress};
use whylate_report::{ExplainText, LatencyText, Paint, StatsText};

/// A tool's answer: the summary a model reads first, and the JSON.
pub struct Answer {
    /// One or two lines: the verdict, and how the result was cut.
    pub summary: String,
    /// The documented JSON (docs/json.md), sized as the summary says.
    pub json: Value,
}

/// Runs `tool` as `cmd` says, reading the files `held` holds for its paths; `progress`
/// is where the read reports, and its `cancel` stops it.
pub fn run(
    tool: &str,
    parsed: argv::Parsed,
    local: &Map<String, Value>,
    progress: Arc<Progress>,
) -> Result<Answer, String> {
    let plain = Paint::new(false);
    let argv::Parsed {
        cmd,
        held,
        dirs,
        output,
    } = parsed;
    #[cfg(not(feature = "fleet"))]
    let _ = dirs;
    let held = Arc::new(held);
    let opened = |input: &InputArgs| opened(input, &progress, &held);
    match (tool, cmd) {
        ("list_events", Cmd::Stats(a)) => {
            let open = opened(&a.input)?;
            let inputs = whylate::read::Opened::files(&a.files, &open).map_err(said)?;
            let c = whylate::selector::catalog::catalog(inputs, &open).map_err(said)?;
            let summary = format!("{} events of {} names", c.events, c.names);
            Ok(Answer {
                summary,
                json: to_json(&c)?,
            })
        }
        ("stats", Cmd::Stats(a)) => {
            let open = opened(&a.input)?;
            let inputs = whylate::read::Opened::files(&a.files, &open).map_err(said)?;
            let r = whylate::stats::stats(inputs, &open, a.top).map_err(said)?;
            let summary = first_line(&r.render_text(&plain));
            Ok(Answer {
                summary,
                json: to_json(&r)?,
            })
        }
        ("latency", Cmd::Latency(a)) => {
            let (opts, tput) = crate::commands::latency::options(&a, false)?;
            let open = opened(&a.input)?;
            let inputs = whylate::read::Opened::files(&a.files, &open).map_err(said)?;
            let w = whylate::pipeline::Windowing {
                events: a.window_events,
                ..whylate::latency::WINDOWING
            };
            let r = whylate::latency::latency_in(inputs, &open, &opts, tput, w);
            let mut r = r.map_err(said)?;
            if let Some(e) = r.void_filter.take() {
                return Err(e);
            }
            crate::commands::latency::drop_samples(&mut r);
            let summary = first_line(&r.render_text(a.top, &plain));
            Ok(Answer {
                summary,
                json: to_json(&r)?,
            })
        }
        ("explain", Cmd::Explain(a)) => {
            let top = a.mode.top;
            let (summary, mut json) = explained(&a.files, a.mode, opened(&a.input)?)?;
            let offset = argv::local_u64(local, "offset")?.unwrap_or(0) as usize;
            let limit = argv::local_u64(local, "limit")?.map_or(top, |l| l as usize);
            page::misses(&mut json, offset, limit);
            let p = &json["page"];
            let summary = format!(
                "{summary}\nmisses {}..{} of {} in full below, worst first{}",
                offset,
                offset + p["returned"].as_u64().unwrap_or(0) as usize,
                p["total"],
                match p["next_offset"].as_u64() {
                    Some(n) => format!("; the next page: offset {n} (or explain_miss for one)"),
                    None => String::new(),
                }
            );
            Ok(Answer { summary, json })
        }
        ("explain_miss", Cmd::Explain(a)) => {
            let (summary, json) = explained(&a.files, a.mode, opened(&a.input)?)?;
            one_miss(summary, json, local)
        }
        ("diff", Cmd::Diff(a)) => {
            let mode = a.mode.mode()?;
            let open = opened(&a.input)?;
            let (x, y) = crate::commands::diff::open_both(&a.a, &a.b, &open).map_err(said)?;
            let r = whylate::diff::diff(x, y, &open, &mode).map_err(said)?;
            let json = to_json(&r)?;
            let summary = json["verdict"].as_str().unwrap_or_default().to_string();
            Ok(Answer { summary, json })
        }
        #[cfg(feature = "fleet")]
        ("fleet", Cmd::Fleet(mut a)) => {
            let copies = (dirs.into_iter())
                .map(|(real, fd)| super::private::copy(&real, fd))
                .collect::<Result<Vec<_>, _>>()?;
            a.paths = copies
                .iter()
                .map(|c| c.copy.display().to_string())
                .collect();
            let r = crate::commands::fleet::report(&a).map_err(|e| as_real(e, &copies))?;
            let json = to_json(&r)?;
            // The report names the directories the caller gave, not the private copies.
            let json = serde_json::from_str(&as_real(json.to_string(), &copies))
                .map_err(|e| format!("fleet: {e}"))?;
            let summary = first_line(&r.render_text(&plain));
            Ok(Answer { summary, json })
        }
        ("record", Cmd::Record(a)) => recorded(a, output, &progress),
        (t, _) => Err(format!("`{t}`: its arguments parsed as another command")),
    }
}

/// Explains as `whylate explain --json` does: the verdict line and the report's JSON.
fn explained(
    files: &[PathBuf],
    mode: crate::args::ModeArgs,
    open: OpenOptions,
) -> Result<(String, Value), String> {
    let mode = mode.mode()?;
    let inputs = whylate::read::Opened::files(files, &open).map_err(said)?;
    let r = whylate::explain::explain_mode(inputs, &open, &mode).map_err(said)?;
    let summary = first_line(&r.render_text(&Paint::new(false)));
    Ok((summary, to_json(&r)?))
}

/// Records as `whylate record --json` does, for at most [`RECORD_MAX_NS`]; the client's
/// cancellation stops it early (the trace holds what was recorded until then).
fn recorded(
    a: crate::args::RecordArgs,
    output: Option<super::roots::NewFile>,
    progress: &Arc<Progress>,
) -> Result<Answer, String> {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    use whylate_live::record::{self, RecordOptions};
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        return Err(format!(
            "record: recording needs root (tracefs, perf_event_open); this server runs as uid {euid}"
        ));
    }
    let duration = a.duration.filter(|&d| d <= RECORD_MAX_NS).ok_or_else(|| {
        format!(
            "record: `duration` is required and at most {}",
            whylate::units::dur(RECORD_MAX_NS)
        )
    })?;
    let opts = RecordOptions {
        events: a.events,
        duration: Some(std::time::Duration::from_nanos(duration)),
        buffer_kb: a.buffer_kb,
        output: a.output,
        command: Vec::new(),
        command_stdout: None,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    // The recorder polls its own flag: mirror the call's cancellation into it.
    let mirror = {
        let (stop, done, p) = (stop.clone(), done.clone(), progress.clone());
        std::thread::spawn(move || {
            while !done.load(Relaxed) {
                if p.cancel.load(Relaxed) {
                    stop.store(true, Relaxed);
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        })
    };
    let r = record::record(&opts, stop);
    done.store(true, Relaxed);
    let _ = mirror.join();
    // The recorder wrote through the directory's descriptor: name the real path.
    let real = |t: String| match &output {
        Some(n) => t.replace(
            &n.write_to.display().to_string(),
            &n.real.display().to_string(),
        ),
        None => t,
    };
    let mut r = r.map_err(|e| real(e.to_string()))?;
    if let Some(n) = &output {
        r.output = n.real.clone();
    }
    let summary = format!(
        "{}: {} events in {}, {} lost ({} clock)",
        r.output.display(),
        r.events,
        whylate::units::dur(r.duration_ns),
        r.lost,
        r.clock
    );
    Ok(Answer {
        summary,
        json: to_json(&r)?,
    })
}

/// The miss `local` names, whole, under the verdict.
fn one_miss(
    summary: String,
    mut json: Value,
    local: &Map<String, Value>,
) -> Result<Answer, String> {
    let index = argv::local_u64(local, "index")?;
    let at_ns = argv::local_u64(local, "at_ns")?;
    let misses = match json.get_mut("misses").map(Value::take) {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    };
    let i = page::pick(&misses, index, at_ns)?;
    let total = misses.len();
    let miss = misses.into_iter().nth(i).unwrap_or_default();
    let out = serde_json::json!({
        "verdict": summary,
        "index": i,
        "total": total,
        "deadline_ns": json["deadline_ns"],
        "miss": miss,
    });
    Ok(Answer {
        summary: format!("{summary}\nmiss {i} of {total} (0 = the worst)"),
        json: out,
    })
}

/// `text` with each private copy's path replaced by the directory it copies.
#[cfg(feature = "fleet")]
fn as_real(text: String, copies: &[super::private::Copied]) -> String {
    copies.iter().fold(text, |t, c| {
        t.replace(&c.copy.display().to_string(), &c.real.display().to_string())
    })
}

/// The reader options of `input`, reading the files `held` holds, reporting to
/// `progress`.
fn opened(
    input: &InputArgs,
    progress: &Arc<Progress>,
    held: &Arc<Held>,
) -> Result<OpenOptions, String> {
    let mut open = input.open_held(Some(held.clone())).map_err(said)?;
    open.progress = Some(progress.clone());
    Ok(open)
}

/// A read error as `whylate` prints it after `whylate: `.
fn said(e: whylate::read::ReadError) -> String {
    e.to_string()
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<Value, String> {
    serde_json::to_value(v).map_err(|e| format!("the result did not serialize: {e}"))
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().to_string()
}
