//! whylate: read Linux kernel traces in any common format and explain why something was late.
//!
//! # Brief overview
//! - [`read`] turns a trace file (ftrace, trace-cmd report, latency-tracer and function_graph
//!   dumps, perf script, sysdig, systrace, trace.dat; compressed or not) into one time-ordered stream of
//!   [`event::Event`]s. It and the events' vocabulary ([`event`], [`selector`], ...) are the
//!   `whylate-read` crate, re-exported here under their own names.
//! - [`stats`] summarises a trace: format, span, counts, lost events, lines not understood.
//! - [`explain`], [`latency`] and [`diff`] compute reports; drawing them for a person is
//!   the `whylate-report` crate's job, recording and live watching `whylate-live`'s. The
//!   timeline and the analyses share crate-private items, so they stay one crate
//!   (docs/architecture.md, "Crates").
//!
//! Every analysis takes its input as [`read::Opened`]: traces opened once, from paths
//! (`Opened::files`), bytes in memory (`Opened::bytes`) or a live ring's pages.
//!
//! # Example
//! ```
//! use whylate::{event::Interner, read::{EventSource, Opened}};
//! let line = "  bash-42 [001] d..2. 10.000001: sched_waking: comm=cat pid=7 prio=120 target_cpu=001\n";
//! let opened = Opened::bytes("t.txt", line.as_bytes().to_vec(), &Default::default()).unwrap();
//! let (_, mut inputs) = opened.into_parts();
//! let mut strings = Interner::new();
//! let ev = inputs[0].next_event(&mut strings).unwrap().unwrap();
//! assert_eq!((ev.ts, ev.cpu, ev.tid), (10_000_001_000, 1, 42));
//! assert_eq!(strings.get(ev.comm), "bash");
//!
//! let opened = Opened::bytes("t.txt", line.as_bytes().to_vec(), &Default::default()).unwrap();
//! let stats = whylate::stats::stats(opened, &Default::default(), 5).unwrap();
//! assert_eq!(stats.events, 1);
//! ```
#![deny(missing_docs)]

// Reading and the events' vocabulary live in whylate-read; here under their own names, so
// `whylate::read` and `crate::event` mean what they always did.
pub use whylate_read::{
    event, fdpath, glob, packed, read, selector, snapshot, suggest, syscalls, units,
};

pub mod diff;
pub mod dist;
pub mod explain;
pub mod latency;
pub mod measure;
pub mod pipeline;
pub mod stats;
// Small traces for unit tests, here and (through the `testkit` feature, enabled only by
// their dev-dependencies) in the crates above; not part of the library's interface.
#[cfg(any(test, feature = "testkit"))]
#[doc(hidden)]
pub mod testkit;
#[cfg(any(test, feature = "testkit"))]
#[doc(hidden)]
pub mod testkit_rtla;
pub mod timeline;
