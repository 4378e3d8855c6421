//! The trait every measure implements, and what it computes from.

use super::cx::Cx;
use super::rate::Throughput;
use super::report::{MeasureReport, Options, TracerSample};

/// What a measure is computed from.
pub(super) struct Input<'a> {
    pub(super) cx: &'a Cx<'a>,
    pub(super) o: &'a Options,
    pub(super) tracers: &'a [TracerSample],
    pub(super) tput: Option<&'a Throughput>,
}

/// One measure: its samples from the timeline, grouped into a report. Each lives in a
/// file of its own.
pub(super) trait Measurer {
    fn measure(&self, i: &Input<'_>) -> MeasureReport;
}
