//! The `whylate` command: parse (`args`), run one command (`commands`), print (`output`).
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod args;
mod commands;
mod output;
mod paths;
mod progress;

use args::{Cli, Cmd, DrawArgs, ExplainArgs, InputArgs, ModeArgs};
use clap::Parser;
use output::{usage, Out, EXIT_BAD_INPUT};
use std::process::ExitCode;

fn main() -> ExitCode {
    fixed_mmap_threshold();
    open_files_to_hard_limit();
    let cli = match Cli::try_parse_from(shorthand(std::env::args_os().collect())) {
        Ok(cli) => cli,
        Err(e) => return output::clap_error(e),
    };
    run(cli).unwrap_or_else(output::failed)
}

/// `whylate FILE... [explain options]` is `whylate explain FILE... [options]`: the
/// command's name goes in before the first argument that is a trace (an existing path,
/// or `-`), so every explain option works in the short form the output suggests.
fn shorthand(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    use clap::CommandFactory;
    let mut i = 1;
    while let Some(a) = args.get(i) {
        match a.to_str() {
            Some("--color") => i += 2,
            Some(s) if s.starts_with('-') && s != "-" => i += 1,
            _ => break,
        }
    }
    let Some(first) = args.get(i) else {
        return args;
    };
    let cmd = Cli::command();
    let is_cmd = first
        .to_str()
        .is_some_and(|f| f == "help" || cmd.get_subcommands().any(|c| c.get_name() == f));
    let is_trace = first == "-" || std::path::Path::new(first).exists();
    // Options before the file (`whylate -q FILE`) stay global: only the file's own place
    // takes the command name, and only when no option explain lacks came first.
    if !is_cmd && is_trace {
        args.insert(i, "explain".into());
    }
    args
}

/// Serves buffers of 1 MiB and more from their own maps, given back when freed. glibc
/// otherwise raises that threshold to the size of each large buffer freed (up to 32 MiB),
/// and the decompressed chunks and batches of MiBs that follow come from a heap that
/// keeps them after they are freed: on the 1.24 GB perf.data.zst of docs/benchmarks.md
/// that left the peak RSS 15-20 MiB above the live bytes.
fn fixed_mmap_threshold() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a tunable of the allocator, before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

/// Raises the soft limit on open files to the hard one, as many tools do: every input is
/// open at once while they are merged by time, and thousands of files (one per CPU per
/// host, say) pass the usual soft limit of 1024 long before memory counts.
fn open_files_to_hard_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write only the struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let out = Out::new(cli.color);
    let quiet = cli.quiet;
    let Some(cmd) = cli.cmd else {
        return bare_files(cli.files, &out, quiet);
    };
    match cmd {
        Cmd::Record(a) => commands::record::run(a),
        Cmd::Watch(a) => commands::watch::run(a, &out),
        Cmd::Demo(a) => commands::demo::run(a, &out),
        Cmd::Stats(a) => commands::stats::run(a, &out, quiet),
        Cmd::Explain(a) => commands::explain::explain(a, &out, quiet),
        Cmd::Report(a) => commands::explain::report(a, &out, quiet),
        Cmd::Export(a) => commands::explain::export(a, &out, quiet),
        Cmd::Diff(a) => commands::diff::run(a, &out, quiet),
        Cmd::Latency(a) => commands::latency::run(a, &out, quiet),
        Cmd::Fleet(a) => commands::fleet::run(a, &out),
        Cmd::Mcp(a) => commands::mcp::run(a),
    }
}

/// `whylate FILE...`: explain in automatic mode; no file: the help.
fn bare_files(files: Vec<std::path::PathBuf>, out: &Out, quiet: bool) -> anyhow::Result<ExitCode> {
    use clap::CommandFactory;
    if files.is_empty() {
        Cli::command().print_help()?;
        return Ok(ExitCode::from(EXIT_BAD_INPUT));
    }
    if let Some(msg) = mistyped_command(&files[0]) {
        return usage(&msg);
    }
    let a = ExplainArgs {
        files,
        mode: ModeArgs::auto(),
        json: false,
        list_causes: false,
        window_events: whylate::pipeline::Windowing::DEFAULT.events,
        draw: DrawArgs {
            lanes: whylate_report::plot::DEFAULT_LANES,
            ..Default::default()
        },
        findings: Default::default(),
        input: InputArgs {
            reorder: whylate::read::DEFAULT_WINDOW,
            ..Default::default()
        },
    };
    commands::explain::explain(a, out, quiet)
}

/// `whylate FILE` is explain's shorthand, so a mistyped command arrives as a file: when
/// `first` is no file but close to a command's name, the error that says so.
fn mistyped_command(first: &std::path::Path) -> Option<String> {
    use clap::CommandFactory;
    if first.exists() || first.as_os_str() == "-" {
        return None;
    }
    let word = first.to_string_lossy();
    let cmds: Vec<String> = Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    let close = whylate::suggest::closest(&word, cmds.iter().map(String::as_str), 3);
    (!close.is_empty()).then(|| {
        format!(
            "`{word}` is neither a file nor a command{}",
            whylate::suggest::did_you_mean(&close)
        )
    })
}
