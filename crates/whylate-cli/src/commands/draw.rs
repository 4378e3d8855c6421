//! What `explain --html/--svg` and `report` write besides the terminal report: the
//! single-file HTML page and the standalone SVG plots, drawn from the finished explanation
//! and the timeline it kept.

use std::path::{Path, PathBuf};
use whylate::explain::{ExplainReport, Explained, Mode};
use whylate::read::{OpenOptions, ReadError};
use whylate_report::plot::Plots;

/// What `explain` and `report` write besides the terminal report.
pub struct Outputs {
    /// The HTML page.
    pub html: Option<PathBuf>,
    /// The directory for SVG files.
    pub svg: Option<PathBuf>,
    /// Misses drawn one by one.
    pub lanes: usize,
}

/// Explains, then draws what `out` asks for from the report and its timeline. Errors
/// writing the outputs come back as the read error's I/O variant, naming the file. With
/// nothing to draw, a long trace is explained in windows of `events` (0: whole).
pub fn explain_with_outputs(
    files: &[PathBuf],
    open: &OpenOptions,
    (mode, events): (&Mode, u64),
    out: &Outputs,
) -> Result<ExplainReport, ReadError> {
    let inputs = whylate::read::Opened::files(files, open)?;
    if out.html.is_none() && out.svg.is_none() {
        let w = whylate::pipeline::Windowing {
            events,
            ..whylate::pipeline::Windowing::DEFAULT
        };
        return whylate::explain::report(inputs, open, mode, w);
    }
    let x = whylate::explain::run(inputs, open, mode)?;
    if out.html.is_some() || out.svg.is_some() {
        draw(&x, files, out)?;
    }
    Ok(x.report)
}

/// Writes the HTML page and the SVG files `out` asks for. A write error names its file
/// (as the I/O variant of the read error, which the command prints the same way).
fn draw(x: &Explained, files: &[PathBuf], out: &Outputs) -> Result<(), ReadError> {
    let opts = whylate_report::plot::PlotOptions { lanes: out.lanes };
    let plots = whylate_report::plot::build(&x.report, &x.timeline, &x.strings, &opts);
    if let Some(path) = &out.html {
        let title = (files.iter().map(|f| f.display().to_string()))
            .collect::<Vec<_>>()
            .join(", ");
        html(&x.report, &plots, &title, path).map_err(io(path))?;
    }
    if let Some(dir) = &out.svg {
        svgs(&x.report, &plots, dir)?;
    }
    Ok(())
}

/// The I/O error of writing `path`, as a read error naming it.
fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ReadError {
    let path = path.to_path_buf();
    move |source| ReadError::Io { path, source }
}

/// The single-file page, written as composed: a page of a million cycles is tens of MB.
fn html(r: &ExplainReport, plots: &Plots, title: &str, path: &Path) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    let len = whylate_report::html::write(r, plots, title, &mut w)?;
    std::io::Write::flush(&mut w)?;
    eprintln!(
        "whylate: wrote {} ({} KiB; {} cycles, {} markers, {} misses drawn)",
        path.display(),
        len / 1024,
        r.windows.len(),
        plots.raster.marks.len(),
        plots.lanes.len()
    );
    Ok(())
}

/// The histogram, the raster and one swimlane per drawn miss, as SVG files in `dir`.
fn svgs(r: &ExplainReport, plots: &Plots, dir: &Path) -> Result<(), ReadError> {
    use whylate_report::svg;
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let mut files = vec![
        ("histogram.svg".to_string(), svg::histogram(&plots.hist)),
        (
            "raster.svg".to_string(),
            svg::raster(&plots.raster, &r.windows),
        ),
    ];
    for l in &plots.lanes {
        let id = format!("miss-{}", l.miss + 1);
        files.push((format!("{id}.svg"), svg::swimlane(l, &id)));
    }
    for (name, body) in &files {
        let p = dir.join(name);
        std::fs::write(&p, body).map_err(io(&p))?;
    }
    eprintln!(
        "whylate: wrote {} SVG files in {}",
        files.len(),
        dir.display()
    );
    Ok(())
}
