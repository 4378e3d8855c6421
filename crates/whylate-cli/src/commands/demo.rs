//! `whylate demo`.

use crate::args::DemoArgs;
use crate::output::{usage, Out, EXIT_BAD_INPUT};
use crate::paths::Paths;
use std::process::ExitCode;
use whylate_live::demo::{DemoError, DemoOptions};

/// A lab program, recorded and explained beside its own count.
pub fn run(a: DemoArgs, out: &Out) -> anyhow::Result<ExitCode> {
    if let Err(e) = Paths::default()
        .recording("--keep", a.keep.as_deref())
        .check()
    {
        return usage(&e);
    }
    let r = whylate_live::demo::run(&DemoOptions {
        scenario: a.scenario.into(),
        mitigate: a.mitigate,
        keep: a.keep,
        top: a.top,
    });
    let r = match r {
        Ok(r) => r,
        Err(e @ DemoError::NotRoot) => {
            eprintln!("whylate: {e}");
            return Ok(ExitCode::from(EXIT_BAD_INPUT));
        }
        Err(e) => return Err(e.into()),
    };
    if a.json {
        out.json(&r)?;
    } else {
        out.text(&r.render_text(&out.paint()))?;
    }
    Ok(ExitCode::SUCCESS)
}
