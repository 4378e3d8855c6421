//! Terminal renderings, one per report: what the user reads first comes first.

mod diff;
mod explain;
mod latency;
mod stats;
