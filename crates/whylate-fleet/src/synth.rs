//! A synthetic fleet for tests and benchmarks: the bundled example recordings (examples/)
//! explained once each, as the README explains them, and their findings written for many
//! hosts that differ by kernel, labels and which example they ran. The assignment is
//! fixed, so what a fleet query must say can be summed by hand from the examples' own
//! explain reports.

use crate::findings::Findings;
use crate::meta::{MetaArgs, TraceFacts, TraceMeta};
use crate::write::{write, WriteError, Written};
use std::path::{Path, PathBuf};
use whylate::explain::{ExplainReport, Mode, Options, TimerOptions};
use whylate::measure::TaskSel;
use whylate::read::{OpenOptions, ReadError};
use whylate::selector::Selector;

/// The frob request/reply cycle (seed 000's selectors, deadline 3.5 ms).
const FROB_FROM: &str = "sys_enter_write[comm=frobnicator,count=7]";
const FROB_TO: &str = "sys_exit_read[comm=frobnicator,ret>0]";

/// Kernels of the old and new halves of the fleet.
pub const KERNELS: [&str; 2] = ["6.1.0-synthetic", "6.18.0-synthetic"];

/// Each example the fleet runs: name, file under the repository, and its analysis.
pub fn examples() -> Vec<(&'static str, &'static str, Mode)> {
    let cycles = || {
        Mode::Cycles(Options {
            from: Selector::parse(FROB_FROM).expect("a valid selector"),
            to: vec![Selector::parse(FROB_TO).expect("a valid selector")],
            deadline_ns: Some(3_500_000),
            same: Default::default(),
            pairing: Default::default(),
            arch: None,
            top: 5,
            learned: Default::default(),
        })
    };
    let timer = || {
        Mode::Timer(TimerOptions {
            task: TaskSel::parse("periodic").ok(),
            deadline_ns: Some(300_000),
            top: 5,
        })
    };
    vec![
        ("frob", "examples/frob.dat.zst", cycles()),
        ("timer", "examples/timer.dat.zst", timer()),
        ("softirq", "examples/softirq.dat.zst", timer()),
        (
            "softirq-mitigated",
            "examples/softirq-mitigated.dat.zst",
            timer(),
        ),
        ("pty-poll", "examples/pty-poll.ftrace.gz", cycles()),
        (
            "pty-poll-auto",
            "examples/pty-poll.ftrace.gz",
            Mode::Auto {
                top: 5,
                deadline_ns: None,
            },
        ),
    ]
}

/// Every example explained, in [`examples`] order.
pub fn explain_examples(repo: &Path) -> Result<Vec<(&'static str, ExplainReport)>, ReadError> {
    examples()
        .into_iter()
        .map(|(name, file, mode)| {
            let r = whylate::explain::explain_mode(
                whylate::read::Opened::files(&[repo.join(file)], &OpenOptions::default())?,
                &OpenOptions::default(),
                &mode,
            )?;
            Ok((name, r))
        })
        .collect()
}

/// One host of the synthetic fleet.
#[derive(Clone, Debug)]
pub struct Host {
    /// `h00042`.
    pub host: String,
    /// One of [`KERNELS`].
    pub kernel: &'static str,
    /// `team` (a, b, c) and `rollout` (canary for every tenth host, else stable).
    pub labels: Vec<(String, String)>,
    /// Index into [`examples`].
    pub example: usize,
}

/// `n` hosts: the first half on the old kernel, the second on the new. Both halves run
/// frob, timer and pty-poll (cycles and automatic); the old half runs the softirq lab with
/// its mitigation, the new half without, so the NET_RX softirq appears with the new
/// kernel.
pub fn plan(n: usize) -> Vec<Host> {
    const OLD: [usize; 5] = [0, 1, 3, 4, 5];
    const NEW: [usize; 5] = [0, 1, 2, 4, 5];
    (0..n)
        .map(|i| {
            let new = i >= n / 2;
            let example = if new { NEW[i % 5] } else { OLD[i % 5] };
            Host {
                host: format!("h{i:05}"),
                kernel: KERNELS[usize::from(new)],
                labels: vec![
                    ("team".into(), ["a", "b", "c"][i % 3].into()),
                    (
                        "rollout".into(),
                        if i % 10 == 0 { "canary" } else { "stable" }.into(),
                    ),
                ],
                example,
            }
        })
        .collect()
}

/// Writes each host's findings under `dir` (date 2026-11-25), from the explained
/// examples. Returns the totals.
pub fn write_fleet(
    dir: &Path,
    reports: &[(&'static str, ExplainReport)],
    hosts: &[Host],
) -> Result<Written, WriteError> {
    let modes: Vec<&'static str> = examples().iter().map(|e| e.2.name()).collect();
    let mut total = Written::default();
    for h in hosts {
        let (name, r) = &reports[h.example];
        let args = MetaArgs {
            host: Some(h.host.clone()),
            kernel: Some(h.kernel.into()),
            date: Some("2026-11-25".into()),
            labels: h.labels.clone(),
        };
        let facts = TraceFacts {
            inputs: vec![(format!("{name}.dat"), 0, r.events)],
            ..TraceFacts::default()
        };
        let meta = TraceMeta::resolve(&args, &facts, modes[h.example], name);
        let w = write(dir, &Findings::of_explain(meta, r))?;
        total.files += w.files;
        total.rows += w.rows;
        total.bytes += w.bytes;
    }
    Ok(total)
}

/// The repository root, from a crate directory two levels down.
pub fn repo_from(manifest_dir: &str) -> PathBuf {
    Path::new(manifest_dir).join("../..")
}
