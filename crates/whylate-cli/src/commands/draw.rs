//! What `explain --html/--svg` and `report` write besides the terminal report: the
//! single-file HTML page and the standalone SVG plots, drawn while the timeline is at hand.

use std::path::PathBuf;
use whylate::explain::Mode;
use whylate::read::{OpenOptions, ReadError};

/// What `explain` and `report` write besides the terminal report.
pub struct Outputs {
    /// The HTML page.
    pub html: Option<PathBuf>,
    /// The directory for SVG files.
    pub svg: Option<PathBuf>,
    /// Misses drawn one by one.
    pub lanes: usize,
}

/// Explains, and while the timeline is at hand draws what `out` asks for. Errors writing
/// the outputs come back as the read error's I/O variant, naming the file.
pub fn explain_with_outputs(
    files: &[PathBuf],
    open: &OpenOptions,
    mode: &Mode,
    out: &Outputs,
) -> Result<whylate::explain::ExplainReport, ReadError> {
    let drawn = out.html.is_some() || out.svg.is_some();
    let (r, written) = whylate::explain::explain_then(files, open, mode, |r, tl, s| {
        if !drawn {
            return Ok(());
        }
        let plots = whylate::report::plot::build(
            r,
            tl,
            s,
            &whylate::report::plot::PlotOptions { lanes: out.lanes },
        );
        let io = |path: &std::path::Path| {
            let path = path.to_path_buf();
            move |source| ReadError::Io { path, source }
        };
        if let Some(path) = &out.html {
            let title = files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ");
            // Written as composed: a page of a million cycles is tens of MB.
            let mut w = std::io::BufWriter::new(std::fs::File::create(path).map_err(io(path))?);
            let len = whylate::report::html::write(r, &plots, &title, &mut w)
                .and_then(|len| std::io::Write::flush(&mut w).map(|()| len))
                .map_err(io(path))?;
            eprintln!(
                "whylate: wrote {} ({} KiB; {} cycles, {} markers, {} misses drawn)",
                path.display(),
                len / 1024,
                r.windows.len(),
                plots.raster.marks.len(),
                plots.lanes.len()
            );
        }
        if let Some(dir) = &out.svg {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
            let mut files = vec![
                (
                    "histogram.svg".to_string(),
                    whylate::report::svg::histogram(&plots.hist),
                ),
                (
                    "raster.svg".to_string(),
                    whylate::report::svg::raster(&plots.raster, &r.windows),
                ),
            ];
            for l in &plots.lanes {
                let id = format!("miss-{}", l.miss + 1);
                files.push((format!("{id}.svg"), whylate::report::svg::swimlane(l, &id)));
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
        }
        Ok(())
    })?;
    written.map(|()| r)
}
