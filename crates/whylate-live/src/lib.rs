//! whylate-live: whylate on a running machine. [`record`] traces through a tracefs
//! instance of its own into a trace.dat, [`watch`] records the same way and explains each
//! miss while the workload runs, and [`demo`] builds a lab program (`lab/*.c`, compiled
//! into the binary), records it and sets whylate's explanation beside the program's own
//! measurements. It depends on the `whylate` library (reading, the analyses) and on
//! `whylate-report` (the demo's and watch's text); nothing below depends on it, so the
//! offline analyses build and test without touching tracefs, perf or a C compiler.
#![deny(missing_docs)]

pub mod demo;
pub mod record;
pub mod watch;
