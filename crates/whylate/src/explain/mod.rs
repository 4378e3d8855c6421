//! `whylate explain`: request/response cycles, their deadline misses, and why.
//!
//! 1. **Cycles** are cut from the event stream while it is read: a `--from` match opens one
//!    for its thread (or thread group, or anyone), the first later `--to` match by the same
//!    closes it. A new `from` or the trace's end before any `to` = no reply.
//! 2. **Chain**: from the cycle's thread, follow the causal edges the timeline built, in time
//!    order: work it queued (and the worker that ran it), tasks it woke, timers it armed and
//!    the tasks they woke, and so on. Every hand-off is a *link* with a wait: a runnable task
//!    waiting for its CPU, a work item waiting for its worker, a timer firing late.
//! 3. **Template**: the same links in the good cycles (matched by kind, name and order) give
//!    each link its usual duration. A link's *excess* in a miss is its duration above that.
//!    Busy-polling readers and device interrupts leave no explicit edge; they need no edge
//!    here either: the read's return is the cycle's end and the links before it carry the
//!    time.
//! 4. **Blame**: each excess is split over what held the waiting link's CPU meanwhile
//!    (tasks, irq handlers, softirqs, irqs-off sections), each with a category
//!    (`runqueue-wait`, `preempted-by`, `hardirq`, `softirq`, `irqs-off`, `cpu-idle`,
//!    `unknown-lost-events`). A cycle with no reply is explained by where its chain stood
//!    at the deadline: the links still pending then.
//! 5. **Causes** rank the culprits over all misses; **advice** turns the top ones into
//!    commands for this machine, with what each costs.
//!
//! The files live in rooms that say what they are: `modes/` (one file per mode: what it
//! takes as late), `chain/` (steps 1-3), `blame/` (step 4 and the driver that ranks the
//! causes, step 5), `advice/` (what to do); the catalogue of causes (`causes.rs`) and the
//! report (`report.rs`) stand beside them.

use crate::event::Interner;
use crate::pipeline::{self, Pass};
use crate::read::inputs::Inputs;
use crate::read::{OpenOptions, Opened, ReadError};
use crate::timeline::Timeline;
mod advice;
mod blame;
pub mod causes;
mod chain;
mod modes;
pub(crate) use advice::{machine, rt_advice};
pub(crate) use blame::{console, driver, irq_stack, once};
pub(crate) use chain::{cutter, cycle, engine, learned, queues, ready, template};
pub(crate) use modes::{
    auto, auto_inversion, cycle_miss, cycles, expect, function, kernlog, softirq, timer, timerlat,
    timerlat_join,
};
mod merge;
mod report;
#[cfg(test)]
mod tests;
mod windowed;

pub use auto::*;
pub use causes::{is_blind_id, is_blind_spot, Category, BLIND_SPOTS};
pub use cutter::*;
pub use cycle::{Cycle, CycleStore};
pub use cycles::*;
pub use expect::*;
pub use function::*;
pub use kernlog::*;
pub use learned::{Learned, TemplateMemory};
use machine::add_machine;
pub use merge::RunSummary;
pub use modes::Mode;
pub use report::*;
pub use softirq::*;
pub use timer::*;
pub use timerlat::{analyze_timerlat, is_rtla};
pub use windowed::{report, windows_for, KEEP_MISSES};

/// Explains the inputs in the given mode, a long trace in windows where the mode allows
/// ([`report`] with [`Windowing::DEFAULT`](crate::pipeline::Windowing::DEFAULT)).
pub fn explain_mode(
    inputs: Opened,
    open: &OpenOptions,
    mode: &Mode,
) -> Result<ExplainReport, ReadError> {
    report(inputs, open, mode, crate::pipeline::Windowing::DEFAULT)
}

/// A finished explanation with the timeline it was computed on: plots and exports draw
/// from both after the analysis has returned.
pub struct Explained {
    /// The report.
    pub report: ExplainReport,
    /// The timeline the report was computed on.
    pub timeline: Timeline,
    /// The timeline's strings.
    pub strings: Interner,
}

/// Explains the inputs (files, bytes, or a `watch` window held in memory) in the given
/// mode and keeps the timeline for whoever draws the report: one pass over the inputs
/// with the mode watching (`modes::Watch`), then the mode's explanation of the timeline.
pub fn run(inputs: Opened, open: &OpenOptions, mode: &Mode) -> Result<Explained, ReadError> {
    let mut watch = modes::Watch::new(mode);
    let pass = pipeline::read(inputs, open, &mut watch)?;
    explained(pass, watch)
}

/// The mode's explanation of a pass it watched.
fn explained(mut pass: Pass, watch: modes::Watch<'_>) -> Result<Explained, ReadError> {
    let inputs = std::mem::take(&mut pass.inputs);
    crate::read::inputs::Unread::nothing_read(&inputs, pass.events)?;
    let r = watch.explain(&pass.tl, &pass.strings)?;
    let report = with_inputs(r, inputs, &pass);
    Ok(Explained {
        report,
        timeline: pass.tl,
        strings: pass.strings,
    })
}

/// Reads the inputs, cuts cycles and explains the misses.
pub fn explain(
    inputs: Opened,
    open: &OpenOptions,
    o: &Options,
) -> Result<ExplainReport, ReadError> {
    explain_mode(inputs, open, &Mode::Cycles(o.clone()))
}

/// Puts what the readers said in front of the report's own notes, and what the
/// record-time snapshot knows about the machine into the context and advice.
fn with_inputs(r: ExplainReport, inputs: Inputs, pass: &Pass) -> ExplainReport {
    let cpus = crate::timeline::profile(&pass.tl, &pass.strings);
    let facts = (pass.events, pass.snapshot.as_ref());
    with_facts(r, inputs, facts, cpus, &pass.tl.recorder)
}

/// [`with_inputs`] from what a pass found: its events and snapshot, the CPUs' profiles
/// and the recorder's threads.
fn with_facts(
    mut r: ExplainReport,
    inputs: Inputs,
    (events, snapshot): (u64, Option<&crate::snapshot::Snapshot>),
    cpus: Vec<crate::timeline::CpuProfile>,
    recorder: &rustc_hash::FxHashSet<i32>,
) -> ExplainReport {
    r.cpus = cpus;
    r.unread = crate::read::inputs::Unread::of(&inputs, events);
    if let Some(line) = crate::read::inputs::skipped_line(&inputs, events) {
        r.blind.insert(0, line);
    }
    let mut notes = inputs.notes;
    match &r.unread {
        // Said under the verdict: every count above it rests on the part that was read.
        Some(u) if u.matters() => r.blind.insert(0, u.line()),
        Some(u) => notes.push(u.line()),
        None => {}
    }
    r.inputs = inputs.inputs;
    r.events = events;
    notes.append(&mut r.notes);
    r.notes = notes;
    match snapshot {
        Some(snap) => add_machine(&mut r, snap),
        None if !r.context.is_empty() || !r.advice.is_empty() => r.notes.push(
            "IRQ affinity and irqbalance are not in this trace (a `whylate record` trace.dat carries them)".into(),
        ),
        None => {}
    }
    machine::recorder_blame(&mut r, recorder);
    r
}

/// `whylate explain FILE` without selectors: the worst outliers across the measures —
/// waits for a CPU (real-time tasks first), long irq handlers, irqs-off sections, softirqs
/// deferred to ksoftirqd, late timers, slow work items — each explained by the same engine.
pub fn explain_auto(
    inputs: Opened,
    open: &OpenOptions,
    top: usize,
) -> Result<ExplainReport, ReadError> {
    explain_mode(
        inputs,
        open,
        &Mode::Auto {
            top,
            deadline_ns: None,
        },
    )
}

/// `--softirq VEC`: raise → service outliers of one softirq vector (and tasklets, for
/// TASKLET), each explained: where it was served, whether it was deferred to ksoftirqd,
/// and who held the CPU meanwhile (seed 002).
pub fn explain_softirq(
    inputs: Opened,
    open: &OpenOptions,
    vector: &str,
    deadline_ns: Option<u64>,
    top: usize,
) -> Result<ExplainReport, ReadError> {
    explain_mode(
        inputs,
        open,
        &Mode::Softirq {
            vector: vector.to_string(),
            deadline_ns,
            top,
        },
    )
}

/// `whylate explain --timer`: late hrtimer expiries and the wakeups after them (seed 004).
pub fn explain_timers(
    inputs: Opened,
    open: &OpenOptions,
    o: &TimerOptions,
) -> Result<ExplainReport, ReadError> {
    explain_mode(inputs, open, &Mode::Timer(o.clone()))
}
