//! `whylate diff A B`.

use crate::args::DiffArgs;
use crate::output::{usage, Out};
use crate::progress::with_progress;
use std::process::ExitCode;
use whylate::read::ident;
use whylate_report::DiffText;

/// Two traces explained the same way, side by side.
pub fn run(a: DiffArgs, out: &Out, quiet: bool) -> anyhow::Result<ExitCode> {
    let mode = match a.mode.mode() {
        Ok(m) => m,
        Err(e) => return usage(&e),
    };
    // A trace compared with itself is read twice, which a stream cannot be.
    let both = [a.a.clone(), a.b.clone()];
    if ident::is_stream(&a.a) && ident::check_distinct(&both, None).is_err() {
        return usage(&format!(
            "{} is both A and B: a stream can be read once; save it to a file to compare it with itself",
            ident::display(&a.a)
        ));
    }
    let open = a.input.open()?;
    let (open, bar) = with_progress(open, &both, quiet);
    let r = open_both(&a.a, &a.b, &open).and_then(|(x, y)| whylate::diff::diff(x, y, &open, &mode));
    drop(bar);
    out.emit(r, a.json, |r, p| r.render_text(p))
}

/// Opens A, then B: each side is one input.
pub(crate) fn open_both(
    a: &std::path::Path,
    b: &std::path::Path,
    open: &whylate::read::OpenOptions,
) -> Result<(whylate::read::Opened, whylate::read::Opened), whylate::read::ReadError> {
    let one = |p: &std::path::Path| whylate::read::Opened::files(&[p.to_path_buf()], open);
    Ok((one(a)?, one(b)?))
}
