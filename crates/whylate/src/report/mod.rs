//! Everything drawn for a person: the terminal text of every report (`text`), the HTML
//! page and its SVG plots (`html`, `svg`, fed by `plot`), and the Perfetto export. Reports
//! are computed below; this layer only renders them.

pub mod html;
pub mod perfetto;
pub mod plot;
pub mod style;
pub mod svg;
mod sweep;
mod text;

pub use style::Paint;
