//! whylate-report: everything drawn for a person from whylate's reports: the terminal
//! text of every report ([`ExplainText`], [`StatsText`], [`LatencyText`], [`DiffText`],
//! styled by [`Paint`]), the HTML page and its SVG plots ([`html`], [`svg`], fed by
//! [`plot`] and [`raster`]), and the Perfetto export ([`perfetto`]). It depends only on
//! the `whylate` library, whose reports (and, for the plots, timeline) it takes as they
//! are: the analyses are computed below and this crate only renders them, so the
//! analyses never wait on a renderer and a renderer can change without touching them.
#![deny(missing_docs)]

pub mod html;
mod labels;
pub mod perfetto;
pub mod plot;
pub mod raster;
pub mod style;
pub mod svg;
mod sweep;
mod text;

pub use style::Paint;
pub use text::{DiffText, ExplainText, LatencyText, StatsText};
