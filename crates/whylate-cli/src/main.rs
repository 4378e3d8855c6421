//! The `whylate` command: argument parsing, dispatch and printing only.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use clap::{Parser, Subcommand, ValueEnum};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use whylate::read::{Format, OpenOptions, ReadError};

/// whylate: find out why something on Linux was late, from a kernel trace.
#[derive(Parser)]
#[command(
    version,
    about = "whylate: find out why something on Linux was late, from a kernel trace"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// What is in a trace: format, time span, events by name, CPU and task, lost events,
    /// lines not understood. Several files are merged by timestamp.
    Stats {
        /// Trace files (ftrace, trace-cmd report, latency/function_graph dumps, perf script,
        /// sysdig, systrace; .gz/.zst/.xz are decompressed).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Machine-readable output (schema: docs/json.md).
        #[arg(long)]
        json: bool,
        /// Fail (exit 2) on the first line that does not parse.
        #[arg(long)]
        strict: bool,
        /// Read as this format instead of guessing.
        #[arg(long, value_enum)]
        format: Option<FormatArg>,
        /// How many tasks to list.
        #[arg(long, default_value_t = 10)]
        top: usize,
        /// Reorder window in events, for traces whose timestamps are out of order.
        #[arg(long, default_value_t = whylate::read::DEFAULT_WINDOW)]
        window: usize,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum FormatArg {
    Ftrace,
    TraceCmdReport,
    LatencyTracer,
    FunctionGraph,
    PerfScript,
    Sysdig,
    Systrace,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Ftrace => Format::Ftrace,
            FormatArg::TraceCmdReport => Format::TraceCmdReport,
            FormatArg::LatencyTracer => Format::LatencyTracer,
            FormatArg::FunctionGraph => Format::FunctionGraph,
            FormatArg::PerfScript => Format::PerfScript,
            FormatArg::Sysdig => Format::Sysdig,
            FormatArg::Systrace => Format::Systrace,
        }
    }
}

/// Exit codes: 0 ok, 1 a command-specific "found nothing", 2 unusable input or usage.
const EXIT_BAD_INPUT: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::BrokenPipe {
                    return ExitCode::SUCCESS;
                }
            }
            eprintln!("whylate: {e:#}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.cmd {
        Cmd::Stats {
            files,
            json,
            strict,
            format,
            top,
            window,
        } => {
            let opts = OpenOptions {
                format: format.map(Into::into),
                strict,
                window,
            };
            let report = match whylate::stats::stats(&files, &opts, top) {
                Ok(r) => r,
                Err(e @ (ReadError::UnknownFormat { .. } | ReadError::Strict { .. })) => {
                    eprintln!("whylate: {e}");
                    return Ok(ExitCode::from(EXIT_BAD_INPUT));
                }
                Err(e) => return Err(e.into()),
            };
            let mut out = std::io::stdout().lock();
            if json {
                serde_json::to_writer_pretty(&mut out, &report)?;
                writeln!(out)?;
            } else {
                out.write_all(report.render_text().as_bytes())?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
