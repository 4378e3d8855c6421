//! What the readers said about each input (format, compression, bytes, diagnostics,
//! ordering, symbols), and the notes that follow from it: shared by every command's
//! report.

use crate::read::{self, Diag, EventSource, OrderStats};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// A line not understood, with its file.
#[derive(Clone, Debug, Serialize)]
pub struct Unparsed {
    /// The input.
    pub file: String,
    /// 1-based line.
    pub line: u64,
    /// What was expected.
    pub why: String,
    /// The line.
    pub text: String,
}

impl Unparsed {
    /// Where it is: `file:line` for text; for a binary record (line 0) the file alone,
    /// its text then says where (byte offset, or time and CPU).
    pub fn at(&self) -> String {
        match self.line {
            0 => format!("{}: {}", self.file, self.text),
            n => format!("{}:{n}", self.file),
        }
    }
}

/// Per-input facts.
#[derive(Clone, Debug, Serialize)]
pub struct InputInfo {
    /// Path as given.
    pub path: String,
    /// Detected format.
    pub format: read::Format,
    /// Detected compression.
    pub compression: read::Compression,
    /// Decompressed bytes read.
    pub bytes: u64,
    /// Events read from this input.
    pub events: u64,
    /// Reader diagnostics.
    #[serde(flatten)]
    pub diag: Diag,
    /// Reordering.
    pub order: OrderStats,
    /// Binary inputs: where the kernel symbols naming code addresses came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbols: Option<read::ksyms::SymbolSource>,
}

/// What the readers said about each input, and the notes that follow from it.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    /// Per input.
    pub inputs: Vec<InputInfo>,
    /// Lines not understood, all inputs.
    pub unparsed: u64,
    /// Lines skipped (headers, comments), all inputs.
    pub skipped: u64,
    /// The first lines not understood.
    pub samples: Vec<Unparsed>,
    /// Where the analysis is blind or approximate, per input.
    pub notes: Vec<String>,
}

/// Describes the merged `sources` (opened from `paths`, `per_input` events each).
pub fn describe_inputs(sources: &[read::Input], paths: &[PathBuf], per_input: &[u64]) -> Inputs {
    let mut inputs = Vec::new();
    let mut unparsed = 0;
    let mut skipped = 0;
    let mut samples = Vec::new();
    let mut notes = Vec::new();
    for (i, s) in sources.iter().enumerate() {
        let r = s;
        let d = s.diag().clone();
        let path = display(&paths[i]);
        unparsed += d.unparsed;
        skipped += d.skipped_lines;
        for b in &d.unparsed_samples {
            samples.push(Unparsed {
                file: path.clone(),
                line: b.line,
                why: b.why.to_string(),
                text: b.text.clone(),
            });
        }
        let order = s.order();
        if order.reordered > 0 {
            notes.push(format!(
                "{path}: {} events were out of timestamp order and were sorted (window {} events)",
                order.reordered, order.window
            ));
        }
        if order.unsorted > 0 {
            let fix = late_advice(s.format(), &order);
            notes.push(format!(
                "{path}: {} events arrived too late for the {}-event reorder window: analyses leave them out; {fix}",
                order.unsorted, order.window
            ));
        }
        if let Some(first) = d.damaged.first() {
            let at = match first.in_chunk {
                true => format!("in the compressed chunk at byte {}", first.offset),
                false => format!("at byte {}", first.offset),
            };
            notes.push(format!(
                "{path}: {} damaged record(s) in the data; the first {at} (CPU {}): {}. The rest of each such page was skipped ({} bytes the first time): the analysis is blind on that CPU until its next page, as where events were lost",
                d.damaged_total, first.cpu, first.why, first.skipped
            ));
        }
        if d.raw_clock {
            notes.push(format!(
                "{path}: timestamps are raw counter ticks (counter/x86-tsc clock), not ns"
            ));
        }
        if d.relative_time {
            notes.push(format!(
                "{path}: timestamps are relative to the trace start"
            ));
        }
        if d.no_timestamps {
            notes.push(format!(
                "{path}: function_graph without the time column: times are rebuilt by adding up the printed durations (durations are the tracer's own; gaps between calls are unknown)"
            ));
        }
        if d.line_order_time {
            notes.push(format!(
                "{path}: the log has no time prefixes: its messages keep their order, their times are not known"
            ));
        }
        if d.elided_lines > 0 {
            notes.push(format!(
                "{path}: {} lines are elisions (`...`): the calls they left out count in their callers' self time",
                d.elided_lines
            ));
        }
        if let (Some(b), Some(w)) = (d.header.entries_in_buffer, d.header.entries_written) {
            if b < w {
                notes.push(format!(
                    "{path}: the ring buffer overran: {} of {w} entries were overwritten before the trace was read",
                    w - b
                ));
            }
        }
        if let Some(t) = &d.truncated {
            notes.push(format!(
                "{path}: {t}; the analysis is blind after that point"
            ));
        }
        // A reader that already told the cut in its own words (Perfetto's, where it fell
        // inside a packet) is not told twice.
        let told = |c: &&str| d.truncated.as_deref().is_some_and(|t| t.contains(*c));
        if let Some(c) = r.binary_cut().filter(|c| !told(c)) {
            notes.push(format!(
                "{path}: {c}; the trace is read up to there and the analysis is blind after it"
            ));
        }
        if let Some(n) = r.symbol_note() {
            notes.push(format!("{path}: {n}"));
        }
        notes.extend(r.notes().into_iter().map(|n| format!("{path}: {n}")));
        if d.untyped_known > 0 {
            notes.push(format!(
                "{path}: {} known events had an unexpected layout and are kept untyped",
                d.untyped_known
            ));
        }
        inputs.push(InputInfo {
            path,
            format: r.format(),
            compression: r.compression(),
            bytes: r.bytes_read(),
            events: per_input[i],
            diag: d,
            order,
            symbols: r.symbols(),
        });
    }
    Inputs {
        inputs,
        unparsed,
        skipped,
        samples,
        notes,
    }
}

/// What the readers could not understand, summed over the inputs: what every report
/// that rests on the events carries, so a result built on half a trace says so.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Unread {
    /// Lines (text) or records (binary) not understood.
    pub count: u64,
    /// `lines` or `records`.
    pub unit: &'static str,
    /// Their share of everything the readers met (events read plus these), 0..1.
    pub share: f64,
    /// The first few, located (file and 1-based line; for binary inputs the byte offset
    /// is in `why`).
    pub first: Vec<Unparsed>,
}

/// Above this share of the input not understood, a report says so under its verdict.
pub const UNREAD_WARN: f64 = 0.01;

impl Unread {
    /// The unread part of `inputs`, which gave `events` events; None when all was read.
    pub fn of(inputs: &Inputs, events: u64) -> Option<Unread> {
        if inputs.unparsed == 0 {
            return None;
        }
        let binary = inputs.inputs.iter().all(|i| i.format.is_binary());
        Some(Unread {
            count: inputs.unparsed,
            unit: if binary { "records" } else { "lines" },
            share: inputs.unparsed as f64 / (inputs.unparsed + events) as f64,
            first: inputs.samples.iter().take(3).cloned().collect(),
        })
    }

    /// One line for the report: how much, and where the first one is.
    pub fn line(&self) -> String {
        let first = self.first.first().map_or(String::new(), |u| {
            match u.line {
                // A binary reader's `why` says what the record should have been.
                0 => format!("; first at {}: expected {}", u.at(), u.why),
                _ => format!("; first at {}: {}", u.at(), u.why),
            }
        });
        format!(
            "{} {} ({:.1}% of the input) were not understood and are left out{first}",
            self.count,
            self.unit,
            self.share * 100.0
        )
    }

    /// The error when nothing at all could be read from `inputs` (which gave `events`).
    pub fn nothing_read(inputs: &Inputs, events: u64) -> Result<(), read::ReadError> {
        match Unread::of(inputs, events) {
            Some(u) if events == 0 => Err(read::ReadError::Unreadable {
                what: format!(
                    "no event could be read: {}",
                    u.line().replace(" (100.0% of the input)", "")
                ),
            }),
            _ => Ok(()),
        }
    }

    /// Large enough that a verdict must say it rests on part of the trace.
    pub fn matters(&self) -> bool {
        self.share >= UNREAD_WARN
    }
}

/// Lines that are not trace data, said under the verdict when they are a real part of
/// the input (at least 100 and 5% of it: headers and a pasted excerpt's prose are not,
/// interleaved garbage is). The analysis is blind where they stood.
pub fn skipped_line(inputs: &Inputs, events: u64) -> Option<String> {
    let n = inputs.skipped;
    let share = n as f64 / (n + events).max(1) as f64;
    (n >= 100 && share >= 0.05).then(|| {
        format!(
            "{n} lines ({:.1}% of the input) are not trace data and were skipped: the analysis is blind where they stood",
            share * 100.0
        )
    })
}

fn display(p: &Path) -> String {
    p.display().to_string()
}

/// A latency-tracer dump header, as a sample source.
#[derive(Clone, Debug)]
pub struct TracerSample {
    /// `irqsoff`, `preemptoff`, `preemptirqsoff`, `wakeup`, `wakeup_rt`...
    pub tracer: String,
    /// The measured latency, ns.
    pub latency_ns: u64,
    /// CPU.
    pub cpu: Option<u32>,
    /// `comm-pid` of the task.
    pub task: Option<String>,
    /// Pid.
    pub pid: Option<i32>,
    /// `started at` function.
    pub started_at: Option<String>,
    /// `ended at` function.
    pub ended_at: Option<String>,
    /// The file.
    pub file: String,
}

/// What to do about events that came too late for the reorder window. A Perfetto file's
/// bundles are put in time order by an index ([`crate::read::perfetto::index`]), so a late
/// event there is one earlier than its bundle said (damage), which no window fixes; a
/// stream read in file order ([`crate::read::perfetto::Perfetto::from_reader`]) needs a
/// window holding a drain period of every CPU.
fn late_advice(format: read::Format, order: &read::OrderStats) -> &'static str {
    match (format == read::Format::Perfetto, order.full > 0, order.window) {
        (true, _, 0) => "they came earlier than the bundle that holds them starts (an overlapping or damaged bundle); no reorder window changes that",
        (true, true, _) => "raise --reorder above the events all CPUs write in one drain period",
        (true, false, _) => "a CPU's events came over 2 s after the others had gone past them (a CPU quiet that long, one the trace's system_info and ftrace_stats do not count, or a timestamp far ahead of the others); no reorder window changes that",
        (false, _, _) => "pass per-CPU captures as separate files to merge them",
    }
}

#[cfg(test)]
mod late_tests {
    use super::*;

    #[test]
    fn late_events_are_advised_by_what_made_them_late() {
        let order = |full| read::OrderStats {
            unsorted: 5,
            full,
            window: 524_288,
            ..Default::default()
        };
        let pf = read::Format::Perfetto;
        assert!(late_advice(pf, &order(3)).contains("raise --reorder"));
        assert!(late_advice(pf, &order(0)).contains("no reorder window"));
        let indexed = read::OrderStats {
            window: 0,
            ..order(0)
        };
        assert!(late_advice(pf, &indexed).contains("damaged bundle"));
        let text = read::Format::Ftrace;
        assert!(late_advice(text, &order(0)).contains("per-CPU captures"));
    }
}
