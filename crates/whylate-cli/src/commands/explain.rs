//! `whylate explain`, `report` and `export`: one analysis, shown in the terminal, as an
//! HTML page, or as a Perfetto trace.

use super::draw::{explain_with_outputs, Outputs};
use crate::args::{ExplainArgs, ExportArgs, ReportArgs};
use crate::output::{usage, Out};
use crate::paths::{self, Paths};
use crate::progress::with_progress;
use std::process::ExitCode;
use whylate_report::ExplainText;

/// Explains, and draws what --html/--svg ask for.
pub fn explain(a: ExplainArgs, out: &Out, quiet: bool) -> anyhow::Result<ExitCode> {
    if a.list_causes {
        out.text(&whylate::explain::causes::table())?;
        return Ok(ExitCode::SUCCESS);
    }
    let mode = match a.mode.mode() {
        Ok(m) => m,
        Err(e) => return usage(&e),
    };
    let checked = Paths::default()
        .merged(&a.files)
        .reads(a.input.kallsyms.as_deref())
        .file("--html", a.draw.html.as_deref())
        .dir("--svg", a.draw.svg.as_deref(), paths::svg_files)
        .dir(
            "--parquet",
            a.findings.parquet.as_deref(),
            paths::parquet_files,
        )
        .check();
    if let Err(e) = checked {
        return usage(&e);
    }
    let (open, bar) = with_progress(a.input.open()?, &a.files, quiet);
    let outputs = Outputs {
        html: a.draw.html,
        svg: a.draw.svg,
        lanes: a.draw.lanes,
    };
    // --parquet writes a row per cycle, which only the whole trace holds.
    let events = match a.findings.parquet {
        Some(_) => 0,
        None => a.window_events,
    };
    let r = explain_with_outputs(&a.files, &open, (&mode, events), &outputs);
    drop(bar);
    if let Ok(r) = &r {
        a.findings.write_explain(&a.files, r, mode.name())?;
    }
    out.emit(r, a.json, |r, p| r.render_text(p))
}

/// Writes the HTML report; the terminal gets the verdict line.
pub fn report(a: ReportArgs, out: &Out, quiet: bool) -> anyhow::Result<ExitCode> {
    let mode = match a.mode.mode() {
        Ok(m) => m,
        Err(e) => return usage(&e),
    };
    let checked = Paths::default()
        .merged(&a.files)
        .reads(a.input.kallsyms.as_deref())
        .file("-o", Some(&a.output))
        .dir("--svg", a.svg.as_deref(), paths::svg_files)
        .check();
    if let Err(e) = checked {
        return usage(&e);
    }
    let (open, bar) = with_progress(a.input.open()?, &a.files, quiet);
    let outputs = Outputs {
        html: Some(a.output),
        svg: a.svg,
        lanes: a.lanes,
    };
    let r = explain_with_outputs(&a.files, &open, (&mode, 0), &outputs);
    drop(bar);
    out.emit(r, false, |r, p| {
        let text = r.render_text(p);
        let mut head = text.lines().next().unwrap_or_default().to_string();
        head.push('\n');
        head
    })
}

/// Writes the Perfetto (Chrome trace-event JSON) export.
pub fn export(a: ExportArgs, out: &Out, quiet: bool) -> anyhow::Result<ExitCode> {
    let mode = match a.mode.mode() {
        Ok(m) => m,
        Err(e) => return usage(&e),
    };
    let checked = Paths::default()
        .merged(&a.files)
        .reads(a.input.kallsyms.as_deref())
        .file("--perfetto", Some(&a.perfetto))
        .check();
    if let Err(e) = checked {
        return usage(&e);
    }
    let perfetto = a.perfetto;
    let (open, bar) = with_progress(a.input.open()?, &a.files, quiet);
    let x = whylate::read::Opened::files(&a.files, &open)
        .and_then(|i| whylate::explain::run(i, &open, &mode));
    drop(bar);
    let r = match x {
        Ok(x) => match write_perfetto(&x, &perfetto) {
            Ok(st) => Ok(st),
            Err(e) => {
                let what = format!("writing {}", perfetto.display());
                return Err(anyhow::Error::new(e).context(what));
            }
        },
        Err(e) => Err(e),
    };
    out.emit(r, a.json, |st, _| {
        let kinds: Vec<String> = st.slices.iter().map(|(k, v)| format!("{k} {v}")).collect();
        format!(
            "{} slices ({}), {} flows\n",
            st.total_slices,
            kinds.join(", "),
            st.flows
        )
    })
}

/// Writes the explanation `x` as a Perfetto (Chrome trace-event JSON) file at `path`.
fn write_perfetto(
    x: &whylate::explain::Explained,
    path: &std::path::Path,
) -> std::io::Result<whylate_report::perfetto::ExportStats> {
    let f = std::fs::File::create(path)?;
    let st = whylate_report::perfetto::write(
        std::io::BufWriter::new(f),
        &x.report,
        &x.timeline,
        &x.strings,
    )?;
    eprintln!(
        "whylate: wrote {} ({} slices, {} chains as flows, {} bytes): open it in ui.perfetto.dev",
        path.display(),
        st.total_slices,
        st.flows,
        st.bytes
    );
    Ok(st)
}
