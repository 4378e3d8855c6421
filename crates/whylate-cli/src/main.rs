//! The `whylate` command: argument parsing, dispatch and printing only.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use clap::{Parser, Subcommand, ValueEnum};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use whylate::explain::{Mode, Options as ExplainOptions, Same};
use whylate::measure::{
    Bound, Filter, Measure, Options as LatencyOptions, TaskSel, ThroughputOpts,
};
use whylate::read::{Format, OpenOptions, ReadError};
use whylate::selector::Selector;
use whylate::syscalls::Arch;

/// whylate: find out why something on Linux was late, from a kernel trace.
#[derive(Parser)]
#[command(
    name = "whylate",
    version,
    about = "whylate: find out why something on Linux was late, from a kernel trace"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
    /// `whylate FILE...` = `whylate explain FILE...` in automatic mode.
    files: Vec<PathBuf>,
    /// Colour in the terminal output: auto (when stdout is a terminal and NO_COLOR is
    /// unset), always, never.
    #[arg(long, global = true, value_enum, default_value = "auto")]
    color: ColorArg,
    /// No progress bar on stderr (it only shows on a terminal, for reads over a second).
    #[arg(long, short = 'q', global = true)]
    quiet: bool,
}

#[derive(Clone, Copy, Default, ValueEnum)]
enum ColorArg {
    #[default]
    Auto,
    Always,
    Never,
}

/// Pictures of an explanation, besides the terminal report.
#[derive(clap::Args, Default)]
struct DrawArgs {
    /// Also write the report as one self-contained HTML file: verdict, causes, histogram,
    /// per-cycle raster, a swimlane per explained miss, advice and context.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Also write the plots as standalone SVG files in DIR (histogram.svg, raster.svg,
    /// miss-N.svg).
    #[arg(long, value_name = "DIR")]
    svg: Option<PathBuf>,
    /// Misses drawn one by one (swimlanes), worst first.
    #[arg(long, default_value_t = whylate::visual::DEFAULT_LANES)]
    lanes: usize,
}

/// How the inputs are read, for every command that reads traces.
#[derive(clap::Args)]
struct InputArgs {
    /// Fail (exit 2) on the first line that does not parse.
    #[arg(long)]
    strict: bool,
    /// Read as this format instead of guessing.
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// Reorder window in events, for traces whose timestamps are out of order.
    #[arg(long, default_value_t = whylate::read::DEFAULT_WINDOW)]
    reorder: usize,
    /// The recording machine's /proc/kallsyms (plain or compressed): names work functions
    /// and timer callbacks in a perf.data (which stores no symbols) or replaces a
    /// trace.dat's own. Without it a perf.data uses this machine's symbols only when it
    /// runs the same kernel build at the same address.
    #[arg(long, value_name = "FILE")]
    kallsyms: Option<PathBuf>,
}

impl InputArgs {
    fn open(&self) -> Result<OpenOptions, ReadError> {
        let kallsyms = match &self.kallsyms {
            Some(p) => Some((p.display().to_string(), whylate::read::ksyms::load_file(p)?)),
            None => None,
        };
        Ok(OpenOptions {
            format: self.format.map(Into::into),
            strict: self.strict,
            window: self.reorder,
            progress: None,
            kallsyms,
        })
    }
}

/// What `explain` and `diff` explain: cycles between selectors, late timers, one softirq
/// vector, or (with none of them) the worst outliers.
#[derive(clap::Args, Default)]
struct ModeArgs {
    /// Event that opens a cycle: EVENT[FIELD OP VALUE,...], e.g.
    /// 'sys_enter_write[comm=frobnicator,count=7]'.
    #[arg(long, requires = "to")]
    from: Option<String>,
    /// Event that closes it (repeat for alternatives), e.g.
    /// 'sys_exit_read[comm=frobnicator,ret>0]'.
    #[arg(long, requires = "from")]
    to: Vec<String>,
    /// Explain late timers instead of cycles: hrtimer expiries that woke a task (and
    /// self-reported lateness), split into "the interrupt came late" and "the woken
    /// task waited"; a miss is a period later than --deadline (else the slowest 1%).
    #[arg(long, conflicts_with_all = ["from", "to"])]
    timer: bool,
    /// With --timer: only timers that wake this task (pid, or comm with * ? globs).
    #[arg(long, requires = "timer", value_parser = TaskSel::parse)]
    task: Option<TaskSel>,
    /// Explain slow services of this softirq vector (NET_RX, TASKLET, TIMER... or its
    /// number): raise to entry, deferral to ksoftirqd, who held the CPU meanwhile.
    #[arg(long, value_name = "VEC", conflicts_with_all = ["from", "to", "timer"])]
    softirq: Option<String>,
    /// Cycles longer than this are misses (`3.5ms`); inferred from the data when absent.
    #[arg(long)]
    deadline: Option<String>,
    /// Who may close a cycle: the same thread, any thread of its process, anyone.
    #[arg(long, value_enum, default_value = "thread")]
    same: SameArg,
    /// Syscall table for raw_syscalls events.
    #[arg(long, default_value = "x86_64")]
    arch: String,
    /// Misses whose chain is shown.
    #[arg(long, default_value_t = 3)]
    top: usize,
}

#[derive(Subcommand)]
enum Cmd {
    /// Record a trace (root): drives tracefs in an instance of its own and writes a
    /// trace.dat that whylate and trace-cmd read. Traces CMD while it runs (`-- CMD ARGS`),
    /// else until Ctrl-C or --duration.
    Record {
        /// Presets (sched, irq, wq, syscalls, timer, latency = all of them) and/or
        /// tracepoints (`sched_switch`, `irq:irq_handler_entry`), comma separated.
        /// `EVENT[FILTER]` sets the kernel's event filter (`'sys_exit_read[ret > 0]'`).
        #[arg(short = 'e', long = "events")]
        events: Vec<String>,
        /// Stop after this long (`10s`, `500ms`).
        #[arg(long)]
        duration: Option<String>,
        /// Ring buffer per CPU, KiB.
        #[arg(long, default_value_t = whylate::record::DEFAULT_BUFFER_KB)]
        buffer_kb: u32,
        /// Output file (written 0600: traces hold command names and paths).
        #[arg(short = 'o', long, default_value = "trace.dat")]
        output: PathBuf,
        /// Remove tracefs instances left by killed whylate runs, then exit.
        #[arg(long)]
        reset: bool,
        /// Machine-readable summary.
        #[arg(long)]
        json: bool,
        /// The command to trace.
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// See whylate work on this machine (root): a lab program reproduces a seed's
    /// mechanism, whylate records and explains it, and prints the program's own count of
    /// misses beside its explanation.
    Demo {
        /// frob (seed 000: a pty reply behind CPU hogs), timer (seed 004: a periodic
        /// thread beside a hog) or softirq (seeds 002/003: a UDP flood's NET_RX softirq
        /// beside a real-time thread).
        #[arg(default_value = "frob")]
        scenario: String,
        /// Run the fixed variant (frob: SCHED_IDLE hogs; timer: a SCHED_FIFO victim;
        /// softirq: the flood received on its own CPU).
        #[arg(long)]
        mitigate: bool,
        /// Keep the recording here (the program's ground truth goes beside it, .truth).
        #[arg(long)]
        keep: Option<PathBuf>,
        /// Misses shown in full.
        #[arg(long, default_value_t = 2)]
        top: usize,
        /// Machine-readable result.
        #[arg(long)]
        json: bool,
    },
    /// What is in a trace: format, time span, events by name, CPU and task, lost events,
    /// lines not understood. Several files are merged by timestamp.
    Stats {
        /// Trace files (ftrace, trace-cmd report, latency/function_graph dumps, perf script,
        /// sysdig, systrace, trace.dat, perf.data; .gz/.zst/.xz are decompressed).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Machine-readable output (schema: docs/json.md).
        #[arg(long)]
        json: bool,
        /// How many tasks to list.
        #[arg(long, default_value_t = 10)]
        top: usize,
        #[command(flatten)]
        input: InputArgs,
    },
    /// Explain request/response cycles: from a `--from` event to the first later `--to`
    /// event of the same thread; the cycles over `--deadline` (or with no reply) are misses,
    /// and each is explained: the chain of hand-offs, what held it up, ranked causes over all
    /// misses, and what to do. `--timer` explains late timer periods instead; with neither,
    /// the worst outliers across all measures are explained (automatic mode).
    Explain {
        /// Trace files, merged by timestamp.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        mode: ModeArgs,
        /// Machine-readable output (schema: docs/json.md).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        draw: DrawArgs,
        #[command(flatten)]
        input: InputArgs,
    },
    /// Write the HTML report of a trace (automatic mode unless --from/--to, --timer or
    /// --softirq say what to explain): the same analysis as `explain`, as one
    /// self-contained page that opens in any browser without network.
    Report {
        /// Trace files, merged by timestamp.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The HTML file.
        #[arg(short = 'o', long, default_value = "whylate-report.html")]
        output: PathBuf,
        /// Also write the plots as standalone SVG files in DIR.
        #[arg(long, value_name = "DIR")]
        svg: Option<PathBuf>,
        /// Misses drawn one by one (swimlanes), worst first.
        #[arg(long, default_value_t = whylate::visual::DEFAULT_LANES)]
        lanes: usize,
        #[command(flatten)]
        mode: ModeArgs,
        #[command(flatten)]
        input: InputArgs,
    },
    /// Export the timeline for other viewers. `--perfetto FILE`: Chrome trace-event JSON
    /// that ui.perfetto.dev and chrome://tracing open: per CPU, tracks of tasks, hard
    /// irqs, softirqs, work items, hrtimers and lost events, and the explained misses'
    /// chains as flow arrows (automatic mode unless a mode option is given).
    Export {
        /// Trace files, merged by timestamp.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The JSON file to write.
        #[arg(long, value_name = "FILE", required = true)]
        perfetto: PathBuf,
        #[command(flatten)]
        mode: ModeArgs,
        /// Print what was written as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        input: InputArgs,
    },
    /// Compare two traces of the same workload (before/after a fix, old/new kernel),
    /// explained the same way: distributions side by side, causes that appeared, vanished
    /// or changed (keyed without pids), CPU time and interrupt placement that moved, and a
    /// one-line verdict. Without --deadline, B is judged by the deadline chosen for A.
    Diff {
        /// The trace before.
        a: PathBuf,
        /// The trace after.
        b: PathBuf,
        #[command(flatten)]
        mode: ModeArgs,
        /// Machine-readable output (schema: docs/json.md).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        input: InputArgs,
    },
    /// Measure latencies: wakeup, runqueue, irq, softirq, work, syscall, timer, throughput,
    /// irqsoff. Per group: count, min/p50/p90/p99/p99.9/max, a histogram and the worst
    /// samples with time, CPU and task (and who held the CPU meanwhile).
    Latency {
        /// Trace files, merged by timestamp.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Measures, comma-separated (default: every measure the trace has events for).
        #[arg(long, short, value_delimiter = ',')]
        measure: Vec<String>,
        /// Only samples of this task: a pid, or a comm (`*`/`?` glob).
        #[arg(long, value_parser = TaskSel::parse)]
        task: Option<TaskSel>,
        /// Only samples on this CPU.
        #[arg(long)]
        cpu: Option<u32>,
        /// Only samples starting in A..B: seconds as the trace prints them, or +S for
        /// seconds after the first event; either side may be empty.
        #[arg(long, value_name = "A..B")]
        window: Option<String>,
        /// Worst samples listed per measure, and groups shown in the terminal.
        #[arg(long, default_value_t = 10)]
        top: usize,
        /// Machine-readable output (schema: docs/json.md).
        #[arg(long)]
        json: bool,
        /// With --json: every sample as [ts_ns, value_ns].
        #[arg(long)]
        samples: bool,
        /// throughput: the event to count (`console`, `sched_switch`, `tracing_mark_write`).
        #[arg(long)]
        event: Option<String>,
        /// throughput: sum this numeric field instead of counting (`len` = message bytes).
        #[arg(long)]
        field: Option<String>,
        /// throughput: interval (`1s`, `100ms`).
        #[arg(long, default_value = "1s")]
        interval: String,
        /// throughput: expected rate per second (115200 baud 8N1 = 11520 bytes/s).
        #[arg(long)]
        expect: Option<f64>,
        #[command(flatten)]
        input: InputArgs,
    },
}

#[derive(Clone, Copy, Default, ValueEnum)]
enum SameArg {
    #[default]
    Thread,
    Tgid,
    Any,
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
    TraceDat,
    PerfData,
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
            FormatArg::TraceDat => Format::TraceDat,
            FormatArg::PerfData => Format::PerfData,
        }
    }
}

/// Exit codes (README, "Exit codes"): 0 ok, 2 unusable input or usage, 130 Ctrl-C while
/// `record` traced a command; `record -- CMD` otherwise exits with CMD's own status.
const EXIT_BAD_INPUT: u8 = 2;
/// 128 + SIGINT, the shell's status for a Ctrl-C.
const EXIT_INTERRUPTED: u8 = 130;

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
            // A read error names its file and cause in its own message; the chain would
            // print the cause twice.
            match e.downcast_ref::<ReadError>() {
                Some(r) => eprintln!("whylate: {r}"),
                None => eprintln!("whylate: {e:#}"),
            }
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    use std::io::IsTerminal;
    let color = match cli.color {
        ColorArg::Always => true,
        ColorArg::Never => false,
        ColorArg::Auto => {
            std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    };
    let Some(cmd) = cli.cmd else {
        use clap::CommandFactory;
        if cli.files.is_empty() {
            Cli::command().print_help()?;
            return Ok(ExitCode::from(EXIT_BAD_INPUT));
        }
        if let Some(msg) = mistyped_command(&cli.files[0]) {
            return usage(&msg);
        }
        return run(Cli {
            cmd: Some(Cmd::Explain {
                files: cli.files,
                mode: ModeArgs {
                    arch: "x86_64".into(),
                    top: 3,
                    ..Default::default()
                },
                json: false,
                draw: DrawArgs {
                    lanes: whylate::visual::DEFAULT_LANES,
                    ..Default::default()
                },
                input: InputArgs {
                    strict: false,
                    format: None,
                    reorder: whylate::read::DEFAULT_WINDOW,
                    kallsyms: None,
                },
            }),
            files: Vec::new(),
            color: cli.color,
            quiet: cli.quiet,
        });
    };
    match cmd {
        Cmd::Record {
            events,
            duration,
            buffer_kb,
            output,
            reset,
            json,
            command,
        } => record(events, duration, buffer_kb, output, reset, json, command),
        Cmd::Demo {
            scenario,
            mitigate,
            keep,
            top,
            json,
        } => {
            let Some(scenario) = whylate::demo::Scenario::parse(&scenario) else {
                return usage(&format!(
                    "demo {scenario:?}: expected frob, timer or softirq"
                ));
            };
            let r = whylate::demo::run(&whylate::demo::DemoOptions {
                scenario,
                mitigate,
                keep,
                top,
            });
            let r = match r {
                Ok(r) => r,
                Err(e @ whylate::demo::DemoError::NotRoot) => {
                    eprintln!("whylate: {e}");
                    return Ok(ExitCode::from(EXIT_BAD_INPUT));
                }
                Err(e) => return Err(e.into()),
            };
            let mut out = std::io::stdout().lock();
            if json {
                serde_json::to_writer_pretty(&mut out, &r)?;
                writeln!(out)?;
            } else {
                out.write_all(r.render_text().as_bytes())?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Stats {
            files,
            json,
            top,
            input,
        } => {
            let (open, bar) = with_progress(input.open()?, &files, cli.quiet);
            let r = whylate::stats::stats(&files, &open, top);
            drop(bar);
            emit(r, json, color, |r| r.render_text())
        }
        Cmd::Explain {
            files,
            mode,
            json,
            draw,
            input,
        } => {
            let mode = match mode.parse() {
                Ok(m) => m,
                Err(e) => return usage(&e),
            };
            let (open, _bar) = with_progress(input.open()?, &files, cli.quiet);
            let out = Outputs {
                html: draw.html,
                svg: draw.svg,
                lanes: draw.lanes,
            };
            let r = explain_with_outputs(&files, &open, &mode, &out);
            drop(_bar);
            emit(r, json, color, |r| r.render_text())
        }
        Cmd::Report {
            files,
            output,
            svg,
            lanes,
            mode,
            input,
        } => {
            let mode = match mode.parse() {
                Ok(m) => m,
                Err(e) => return usage(&e),
            };
            let (open, _bar) = with_progress(input.open()?, &files, cli.quiet);
            let out = Outputs {
                html: Some(output),
                svg,
                lanes,
            };
            let r = explain_with_outputs(&files, &open, &mode, &out);
            drop(_bar);
            emit(r, false, color, |r| {
                let text = r.render_text();
                let mut head = text.lines().next().unwrap_or_default().to_string();
                head.push('\n');
                head
            })
        }
        Cmd::Export {
            files,
            perfetto,
            mode,
            json,
            input,
        } => {
            let mode = match mode.parse() {
                Ok(m) => m,
                Err(e) => return usage(&e),
            };
            let (open, _bar) = with_progress(input.open()?, &files, cli.quiet);
            let r = whylate::explain::explain_then(&files, &open, &mode, |r, tl, s| {
                let f = std::fs::File::create(&perfetto)?;
                let st = whylate::perfetto::write(std::io::BufWriter::new(f), r, tl, s)?;
                eprintln!(
                    "whylate: wrote {} ({} slices, {} chains as flows, {} bytes): open it in ui.perfetto.dev",
                    perfetto.display(),
                    st.total_slices,
                    st.flows,
                    st.bytes
                );
                Ok::<_, std::io::Error>(st)
            });
            drop(_bar);
            let r = match r {
                Ok((_, Ok(st))) => Ok(st),
                Ok((_, Err(e))) => {
                    return Err(
                        anyhow::Error::new(e).context(format!("writing {}", perfetto.display()))
                    )
                }
                Err(e) => Err(e),
            };
            emit(r, json, color, |st| {
                format!(
                    "{} slices ({}), {} flows\n",
                    st.total_slices,
                    st.slices
                        .iter()
                        .map(|(k, v)| format!("{k} {v}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    st.flows
                )
            })
        }
        Cmd::Diff {
            a,
            b,
            mode,
            json,
            input,
        } => {
            let open = input.open()?;
            let mode = match mode.parse() {
                Ok(m) => m,
                Err(e) => return usage(&e),
            };
            let both = [a.clone(), b.clone()];
            let (open, bar) = with_progress(open, &both, cli.quiet);
            let r = whylate::diff::diff(&a, &b, &open, &mode);
            drop(bar);
            emit(r, json, color, |r| r.render_text())
        }
        Cmd::Latency {
            files,
            measure,
            task,
            cpu,
            window,
            top,
            json,
            samples,
            event,
            field,
            interval,
            expect,
            input,
        } => {
            let open = input.open()?;
            let measures = match whylate::latency::parse_measures(&measure.join(",")) {
                Ok(m) => m,
                Err(e) => return usage(&e),
            };
            let window = match window.as_deref().map(parse_window).transpose() {
                Ok(w) => w.unwrap_or((None, None)),
                Err(e) => return usage(&e),
            };
            let interval_ns =
                match duration_opt("--interval", &interval, "an interval must be longer than 0") {
                    Ok(v) => v,
                    Err(e) => return usage(&e),
                };
            if field.is_some() && event.is_none() {
                return usage("--field needs --event");
            }
            let wants_tput = measures.contains(&Measure::Throughput);
            if wants_tput && event.is_none() {
                return usage("--measure throughput needs --event NAME (and optionally --field, --interval, --expect)");
            }
            let tput = event.map(|event| ThroughputOpts {
                event,
                field,
                interval_ns,
                expect_per_s: expect,
            });
            let opts = LatencyOptions {
                measures,
                filter: Filter { task, cpu, window },
                top,
                raw_samples: samples,
                throughput: None,
            };
            let (open, bar) = with_progress(open, &files, cli.quiet);
            let r = whylate::latency::latency(&files, &open, &opts, tput);
            drop(bar);
            emit(r, json, color, |r| r.render_text(top))
        }
    }
}

fn record(
    events: Vec<String>,
    duration: Option<String>,
    buffer_kb: u32,
    output: PathBuf,
    reset: bool,
    json: bool,
    command: Vec<String>,
) -> anyhow::Result<ExitCode> {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use whylate::record::{self, RecordOptions};
    if reset {
        return match record::reset() {
            Ok(v) if v.is_empty() => {
                println!("no instance left by a killed whylate run");
                Ok(ExitCode::SUCCESS)
            }
            Ok(v) => {
                println!("removed {}", v.join(", "));
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => usage(&e.to_string()),
        };
    }
    let duration = match duration.as_deref().map(|d| {
        duration_opt(
            "--duration",
            d,
            "a recording must last longer than 0 (or leave --duration out: until Ctrl-C)",
        )
    }) {
        None => None,
        Some(Ok(ns)) => Some(std::time::Duration::from_nanos(ns)),
        Some(Err(e)) => return usage(&e),
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    // Ctrl-C while tracing a command exits 130 as the shell's own convention, whatever
    // the command made of its SIGINT (without a command Ctrl-C is the normal stop: 0).
    let interrupted = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, interrupted.clone())?;
    let opts = RecordOptions {
        events,
        duration,
        buffer_kb,
        output,
        command,
        command_stdout: None,
    };
    if opts.command.is_empty() && opts.duration.is_none() && !json {
        eprintln!("whylate: recording until Ctrl-C");
    }
    let r = match record::record(&opts, stop) {
        Ok(r) => r,
        Err(e) => return usage(&e.to_string()),
    };
    if json {
        serde_json::to_writer_pretty(std::io::stdout().lock(), &r)?;
        println!();
    } else {
        for s in &r.stale_instances {
            eprintln!(
                "whylate: tracefs instance {s} was left by a killed run; `whylate record --reset` removes it"
            );
        }
        println!(
            "{}: {} events in {}, {} lost, {} bytes ({} clock, {} tracepoints)",
            r.output.display(),
            r.events,
            whylate::units::dur(r.duration_ns),
            r.lost,
            r.bytes,
            r.clock,
            r.tracepoints.len()
        );
        for c in &r.cpus {
            println!("  cpu {}: {} events, {} lost", c.cpu, c.events, c.lost);
        }
        println!("  recorder CPU time {}", whylate::units::dur(r.cpu_time_ns));
        if let Some(s) = &r.suggestion {
            println!("  {s}");
        }
    }
    let ctrl_c = interrupted.load(std::sync::atomic::Ordering::Acquire);
    Ok(match r.exit_code {
        Some(_) if ctrl_c => ExitCode::from(EXIT_INTERRUPTED),
        Some(c) => ExitCode::from(c.clamp(0, 255) as u8),
        None => ExitCode::SUCCESS,
    })
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

fn usage(msg: &str) -> anyhow::Result<ExitCode> {
    eprintln!("whylate: {msg}");
    Ok(ExitCode::from(EXIT_BAD_INPUT))
}

/// Seconds as a trace prints them (`93115.324019`) to ns, exactly.
fn parse_secs(s: &str) -> Option<u64> {
    let (i, f) = s.split_once('.').unwrap_or((s, ""));
    if f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let i: u64 = if i.is_empty() { 0 } else { i.parse().ok()? };
    let mut frac: u64 = if f.is_empty() { 0 } else { f.parse().ok()? };
    for _ in f.len()..9 {
        frac *= 10;
    }
    i.checked_mul(1_000_000_000)?.checked_add(frac)
}

fn parse_bound(s: &str) -> Result<Option<Bound>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    let (rel, body) = match s.strip_prefix('+') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let ns = parse_duration(body)
        .filter(|_| body.ends_with('s'))
        .or_else(|| parse_secs(body))
        .ok_or_else(|| {
            format!("--window: {s:?} is not a time in seconds (e.g. 93115.3240 or +1.5)")
        })?;
    Ok(Some(if rel { Bound::Rel(ns) } else { Bound::Abs(ns) }))
}

fn parse_window(s: &str) -> Result<(Option<Bound>, Option<Bound>), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("--window {s:?}: expected A..B"))?;
    Ok((parse_bound(a)?, parse_bound(b)?))
}

/// `1s`, `100ms`, `500us`, `250ns`, `1.5ms`.
fn parse_duration(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mul) = if let Some(n) = s.strip_suffix("ns") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix("us") {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix("µs") {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e9)
    } else {
        return None;
    };
    let v: f64 = num.trim().parse().ok()?;
    (v.is_finite() && v >= 0.0).then(|| (v * mul).round() as u64)
}

/// The longest duration accepted: beyond it a value is a typo (a unit forgotten), and
/// cutting it to fit would hide that.
const MAX_DURATION_NS: u64 = 365 * 86_400 * 1_000_000_000;

/// Reads option `opt`'s duration `s`, refusing what cannot be meant: no unit, a negative
/// or absurd value, and 0 (`zero` says why 0 is no use there).
fn duration_opt(opt: &str, s: &str, zero: &str) -> Result<u64, String> {
    let number = s
        .trim()
        .trim_end_matches(|c: char| c.is_alphabetic() || c == 'µ');
    if number.trim().parse::<f64>() == Ok(0.0) {
        return Err(format!("{opt} {s:?}: {zero}"));
    }
    let Some(ns) = parse_duration(s) else {
        return Err(format!(
            "{opt} {s:?}: expected a number and a unit (ns, us, ms, s), e.g. 3.5ms or 500us"
        ));
    };
    if ns >= MAX_DURATION_NS {
        return Err(format!(
            "{opt} {s:?}: longer than a year; refused rather than cut to fit (a unit missing?)"
        ));
    }
    if ns == 0 {
        return Err(format!("{opt} {s:?}: shorter than a nanosecond"));
    }
    Ok(ns)
}

impl ModeArgs {
    /// The explain mode these arguments ask for, or what is wrong with them.
    fn parse(self) -> Result<Mode, String> {
        let deadline_ns = self
            .deadline
            .as_deref()
            .map(|d| {
                duration_opt(
                    "--deadline",
                    d,
                    "a zero deadline makes every cycle a miss; give the longest time that is still on time, e.g. 3.5ms",
                )
            })
            .transpose()?;
        let top = self.top;
        if let Some(vector) = self.softirq {
            return Ok(Mode::Softirq {
                vector,
                deadline_ns,
                top,
            });
        }
        if self.timer {
            return Ok(Mode::Timer(whylate::explain::TimerOptions {
                task: self.task,
                deadline_ns,
                top,
            }));
        }
        let Some(from) = self.from else {
            return Ok(Mode::Auto { top });
        };
        let from = Selector::parse(&from).map_err(|e| format!("--from: {e}"))?;
        let mut to = Vec::new();
        for t in &self.to {
            to.push(Selector::parse(t).map_err(|e| format!("--to: {e}"))?);
        }
        let Some(arch) = Arch::parse(&self.arch) else {
            return Err(format!(
                "--arch {:?}: expected x86_64 or aarch64",
                self.arch
            ));
        };
        Ok(Mode::Cycles(ExplainOptions {
            from,
            to,
            deadline_ns,
            same: match self.same {
                SameArg::Thread => Same::Thread,
                SameArg::Tgid => Same::Tgid,
                SameArg::Any => Same::Any,
            },
            arch,
            top,
        }))
    }
}

/// A progress bar on stderr while inputs are read: shown only on a terminal, only after a
/// second, never with --quiet. Dropping it clears the bar.
struct ProgressGuard {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for ProgressGuard {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn with_progress(
    mut open: OpenOptions,
    files: &[PathBuf],
    quiet: bool,
) -> (OpenOptions, Option<ProgressGuard>) {
    use std::io::IsTerminal;
    use std::sync::atomic::Ordering::Relaxed;
    if quiet || !std::io::stderr().is_terminal() {
        return (open, None);
    }
    let p = std::sync::Arc::new(whylate::read::Progress::default());
    open.progress = Some(p.clone());
    let total: u64 = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let thread = std::thread::spawn(move || {
        let t0 = std::time::Instant::now();
        let mut bar: Option<indicatif::ProgressBar> = None;
        while !stop2.load(Relaxed) {
            std::thread::sleep(std::time::Duration::from_millis(100));
            if t0.elapsed() < std::time::Duration::from_secs(1) {
                continue;
            }
            let b = bar.get_or_insert_with(|| {
                let b = indicatif::ProgressBar::with_draw_target(
                    Some(total.max(1)),
                    indicatif::ProgressDrawTarget::stderr_with_hz(10),
                )
                .with_elapsed(t0.elapsed());
                // Bytes give a bar for text inputs; a binary one (read out of order)
                // shows its events and the time only.
                let template = if p.binary.load(Relaxed) {
                    "{spinner} {msg} {elapsed}"
                } else {
                    "{spinner} {msg} [{wide_bar}] {percent}% {elapsed}"
                };
                b.set_style(
                    indicatif::ProgressStyle::with_template(template)
                        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                        .progress_chars("=> "),
                );
                b
            });
            b.set_position(p.bytes.load(Relaxed).min(total));
            let ev = p.events.load(Relaxed);
            b.set_message(if p.read_done.load(Relaxed) {
                format!("{:.1} M events read; analysing", ev as f64 / 1e6)
            } else {
                format!("reading: {:.1} M events", ev as f64 / 1e6)
            });
        }
        if let Some(b) = bar {
            b.finish_and_clear();
        }
    });
    (
        open,
        Some(ProgressGuard {
            stop,
            thread: Some(thread),
        }),
    )
}

/// What `explain` and `report` write besides the terminal report.
struct Outputs {
    html: Option<PathBuf>,
    svg: Option<PathBuf>,
    lanes: usize,
}

/// Explains, and while the timeline is at hand draws what `out` asks for. Errors writing
/// the outputs come back as the read error's I/O variant, naming the file.
fn explain_with_outputs(
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
        let plots =
            whylate::visual::build(r, tl, s, &whylate::visual::PlotOptions { lanes: out.lanes });
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
            let page = whylate::visual::html::render(r, &plots, &title);
            std::fs::write(path, &page).map_err(io(path))?;
            eprintln!(
                "whylate: wrote {} ({} KiB; {} cycles, {} markers, {} misses drawn)",
                path.display(),
                page.len() / 1024,
                plots.raster.cycles.len(),
                plots.raster.marks.len(),
                plots.lanes.len()
            );
        }
        if let Some(dir) = &out.svg {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
            let mut files = vec![
                (
                    "histogram.svg".to_string(),
                    whylate::visual::svg::histogram(&plots.hist),
                ),
                (
                    "raster.svg".to_string(),
                    whylate::visual::svg::raster(&plots.raster),
                ),
            ];
            for l in &plots.lanes {
                let id = format!("miss-{}", l.miss + 1);
                files.push((format!("{id}.svg"), whylate::visual::svg::swimlane(l, &id)));
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

/// Terminal colour: the verdict and section headings bold, each miss's heading and what
/// ran over its usual time red, what was still pending at the deadline yellow.
fn paint(text: &str) -> String {
    const BOLD: &str = "\x1b[1m";
    const RED: &str = "\x1b[31m";
    const YELLOW: &str = "\x1b[33m";
    const RESET: &str = "\x1b[0m";
    let mut o = String::with_capacity(text.len() + text.len() / 8);
    for (i, line) in text.lines().enumerate() {
        let bare = !line.starts_with(' ') && !line.is_empty();
        if i == 0 || (bare && line.ends_with(':')) {
            o.push_str(&format!("{BOLD}{line}{RESET}\n"));
            continue;
        }
        if bare && (line.starts_with("miss ") || line.starts_with("outlier ")) {
            o.push_str(&format!("{BOLD}{RED}{line}{RESET}\n"));
            continue;
        }
        let line = line.replace(
            "[pending at the deadline]",
            &format!("{YELLOW}[pending at the deadline]{RESET}"),
        );
        match line.find("<- ") {
            Some(k) => o.push_str(&format!("{}{RED}{}{RESET}\n", &line[..k], &line[k..])),
            None => {
                o.push_str(&line);
                o.push('\n');
            }
        }
    }
    o
}

fn emit<R: serde::Serialize>(
    r: Result<R, ReadError>,
    json: bool,
    color: bool,
    text: impl FnOnce(&R) -> String,
) -> anyhow::Result<ExitCode> {
    let report = match r {
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
    } else if color {
        out.write_all(paint(&text(&report)).as_bytes())?;
    } else {
        out.write_all(text(&report).as_bytes())?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_windows() {
        assert_eq!(parse_duration("1.5ms"), Some(1_500_000));
        assert_eq!(parse_duration("3"), None);
        assert_eq!(parse_secs("93115.324019"), Some(93_115_324_019_000));
        assert_eq!(
            parse_window("+1.5..").unwrap(),
            (Some(Bound::Rel(1_500_000_000)), None)
        );
        assert_eq!(
            parse_window("10.5..11").unwrap(),
            (
                Some(Bound::Abs(10_500_000_000)),
                Some(Bound::Abs(11_000_000_000))
            )
        );
        assert!(parse_window("x..y").is_err());
    }
}
