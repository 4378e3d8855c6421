//! One module per command: each takes its typed arguments and the output, runs the
//! library, and prints.

pub mod demo;
pub mod diff;
mod draw;
pub mod explain;
mod findings;
pub mod fleet;
pub mod latency;
pub mod mcp;
pub mod record;
pub mod stats;
pub mod watch;
