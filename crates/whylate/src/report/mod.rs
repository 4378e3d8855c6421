//! Everything drawn for a person: the terminal text of every report (`text`), the HTML
//! page and its SVG plots (`html`, `svg`, fed by `plot` and `raster`), and the Perfetto
//! export. Reports are computed below; this layer only renders them.

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
