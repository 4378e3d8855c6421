//! What the command prints and how it ends: reports as text (styled while rendered when
//! colour is on) or JSON, one-line errors, and the exit codes.

use crate::args::ColorArg;
use std::io::Write;
use std::process::ExitCode;
use whylate::read::ReadError;
use whylate_report::Paint;

/// Exit codes (docs/reference.md, "Exit codes"): 0 ok, 2 unusable input or usage, 130 Ctrl-C while
/// `record` traced a command; `record -- CMD` otherwise exits with CMD's own status.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Ctrl-C while `record -- CMD` ran.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Where reports go: stdout, styled when `--color` (or, for `auto`, the terminal and
/// NO_COLOR / CLICOLOR) says so.
pub struct Out {
    choice: anstream::ColorChoice,
}

impl Out {
    /// Decides colour once, for the whole run.
    pub fn new(color: ColorArg) -> Out {
        let asked = match color {
            ColorArg::Auto => anstream::ColorChoice::Auto,
            ColorArg::Always => anstream::ColorChoice::Always,
            ColorArg::Never => anstream::ColorChoice::Never,
        };
        asked.write_global();
        let choice = anstream::AutoStream::choice(&std::io::stdout());
        Out { choice }
    }

    /// How to style text for this output.
    pub fn paint(&self) -> Paint {
        Paint::new(self.choice != anstream::ColorChoice::Never)
    }

    /// Writes `text` to stdout.
    pub fn text(&self, text: &str) -> anyhow::Result<()> {
        let mut out = anstream::AutoStream::new(std::io::stdout().lock(), self.choice);
        out.write_all(text.as_bytes())?;
        Ok(())
    }

    /// Writes `value` as pretty JSON to stdout.
    pub fn json<R: serde::Serialize>(&self, value: &R) -> anyhow::Result<()> {
        // Buffered: stdout alone flushes at every newline, and pretty JSON has one per
        // field (a cycle-mode report of a million cycles made 450k write calls).
        let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
        // As an io::Error (serde_json's wraps it), so a closed pipe ends quietly as text does.
        serde_json::to_writer_pretty(&mut out, value).map_err(std::io::Error::from)?;
        writeln!(out)?;
        out.flush()?;
        Ok(())
    }

    /// Prints a report (JSON or text), or the read error that stopped it: an input no
    /// reader understands or a `--strict` failure is a one-line refusal (exit 2).
    pub fn emit<R: serde::Serialize>(
        &self,
        r: Result<R, ReadError>,
        json: bool,
        text: impl FnOnce(&R, &Paint) -> String,
    ) -> anyhow::Result<ExitCode> {
        let report = match r {
            Ok(r) => r,
            Err(e @ (ReadError::UnknownFormat { .. } | ReadError::Strict { .. })) => {
                eprintln!("whylate: {e}");
                return Ok(ExitCode::from(EXIT_BAD_INPUT));
            }
            Err(e) => return Err(e.into()),
        };
        if json {
            self.json(&report)?;
        } else {
            self.text(&text(&report, &self.paint()))?;
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// True when the error, or one it wraps (serde_json wraps the writer's), is a closed pipe.
fn broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        let kind = c
            .downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            .or_else(|| c.downcast_ref::<serde_json::Error>()?.io_error_kind());
        kind == Some(std::io::ErrorKind::BrokenPipe)
    })
}

/// A usage error, one line, exit 2.
pub fn usage(msg: &str) -> anyhow::Result<ExitCode> {
    eprintln!("whylate: {msg}");
    Ok(ExitCode::from(EXIT_BAD_INPUT))
}

/// A command-line error: a bad value is one line naming the option and why (exit 2);
/// anything else (help, version, a missing argument) is clap's own output.
pub fn clap_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if !matches!(
        e.kind(),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation
    ) {
        e.exit();
    }
    eprintln!("whylate: {}", clap_message(&e));
    ExitCode::from(EXIT_BAD_INPUT)
}

/// A command-line error in one line, as `whylate` prints it after `whylate: `: the
/// first line of clap's message, and the possible values when clap knows them.
pub fn clap_message(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let first = e.to_string();
    let first = first.lines().next().unwrap_or_default();
    let mut msg = first.strip_prefix("error: ").unwrap_or(first).to_string();
    if let Some(ContextValue::Strings(v)) = e.get(ContextKind::ValidValue) {
        msg.push_str(&format!(" (possible values: {})", v.join(", ")));
    }
    msg
}

/// The end of a run that failed: a broken pipe is no failure (`| head`, text or JSON); a
/// read error names its file and cause in its own message (the chain would print the
/// cause twice).
pub fn failed(e: anyhow::Error) -> ExitCode {
    if broken_pipe(&e) {
        return ExitCode::SUCCESS;
    }
    match e.downcast_ref::<ReadError>() {
        Some(r) => eprintln!("whylate: {r}"),
        None => eprintln!("whylate: {e:#}"),
    }
    ExitCode::from(EXIT_BAD_INPUT)
}
