//! Terminal renderings, one per report: what the user reads first comes first.

mod diff;
mod explain;
mod latency;
mod stats;

pub use diff::DiffText;
pub use explain::ExplainText;
pub use latency::LatencyText;
pub use stats::StatsText;
