//! `whylate diff A B`.

use crate::args::DiffArgs;
use crate::output::{usage, Out};
use crate::progress::with_progress;
use std::process::ExitCode;

/// Two traces explained the same way, side by side.
pub fn run(a: DiffArgs, out: &Out, quiet: bool) -> anyhow::Result<ExitCode> {
    let open = a.input.open()?;
    let mode = match a.mode.mode() {
        Ok(m) => m,
        Err(e) => return usage(&e),
    };
    let both = [a.a.clone(), a.b.clone()];
    let (open, bar) = with_progress(open, &both, quiet);
    let r = whylate::diff::diff(&a.a, &a.b, &open, &mode);
    drop(bar);
    out.emit(r, a.json, |r, p| r.render_text(p))
}
