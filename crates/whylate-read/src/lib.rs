//! whylate-read: any trace people have, read into one time-ordered stream of events, and
//! the events' own vocabulary.
//!
//! - [`read`] turns trace files and bytes (ftrace, trace-cmd report, latency-tracer and
//!   function_graph dumps, perf script, sysdig, systrace, kernel logs, trace.dat, perf.data,
//!   Perfetto; compressed or not) into [`event::Event`]s, opened once as [`read::Opened`].
//! - [`event`], [`snapshot`], [`syscalls`] and [`fdpath`] say what an event is, what the
//!   recorder saw before the first one, how syscalls are named and which file a
//!   descriptor was.
//! - [`selector`] picks events out of the stream (`sys_enter_write[comm=frob]`).
//!
//! The analyses live in the `whylate` crate, which re-exports every module here under its
//! own name (`whylate::read`, `whylate::event`, ...). Nothing here knows about timelines,
//! measures or explanations: data flows one way, from here up.
#![deny(missing_docs)]

pub mod event;
pub mod fdpath;
pub mod glob;
pub mod packed;
pub mod read;
pub mod selector;
pub mod snapshot;
pub mod suggest;
mod swar;
pub mod syscalls;
// The trace files every reader is tried on (tests and the `testkit` feature only).
#[cfg(any(test, feature = "testkit"))]
#[doc(hidden)]
pub mod testfiles;
pub mod units;
