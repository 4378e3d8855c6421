//! `whylate stats`.

use crate::args::StatsArgs;
use crate::output::{usage, Out};
use crate::paths::Paths;
use crate::progress::with_progress;
use std::process::ExitCode;
use whylate_report::StatsText;

/// What is in the traces.
pub fn run(a: StatsArgs, out: &Out, quiet: bool) -> anyhow::Result<ExitCode> {
    let checked = Paths::default()
        .merged(&a.files)
        .reads(a.input.kallsyms.as_deref())
        .check();
    if let Err(e) = checked {
        return usage(&e);
    }
    let (open, bar) = with_progress(a.input.open()?, &a.files, quiet);
    let r = whylate::read::Opened::files(&a.files, &open)
        .and_then(|i| whylate::stats::stats(i, &open, a.top));
    drop(bar);
    out.emit(r, a.json, |r, p| r.render_text(p))
}
