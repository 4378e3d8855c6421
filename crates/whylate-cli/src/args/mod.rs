//! The command line: every command and option, with values checked while parsing
//! (durations with units, measures, selectors' architecture, formats, scenarios), so a
//! command module gets typed values and only runs.

mod live;
mod values;

pub use live::{DemoArgs, RecordArgs, WatchArgs};
use values::window;
pub use values::Window;
use values::{deadline, expected_rate, func_glob, interval, measure, softirq_arg, stream};

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use whylate::explain::{Mode, Options as ExplainOptions, Pairing, Same};
use whylate::measure::{Measure, TaskSel};
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
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Option<Cmd>,
    /// `whylate FILE...` = `whylate explain FILE...` in automatic mode.
    pub files: Vec<PathBuf>,
    /// Colour in the terminal output: auto (when stdout is a terminal and NO_COLOR is
    /// unset), always, never.
    #[arg(long, global = true, value_enum, default_value = "auto")]
    pub color: ColorArg,
    /// No progress bar on stderr (it only shows on a terminal, for reads over a second).
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
}

/// `--color`.
#[derive(Clone, Copy, Default, ValueEnum)]
pub enum ColorArg {
    #[default]
    Auto,
    Always,
    Never,
}

/// `explain --help`'s examples, one per mode (each runs as written from the repository,
/// but for the two that need a trace with their events).
const EXPLAIN_EXAMPLES: &str = "\
Examples, one per mode:
  Automatic (no mode option): the worst outliers across all measures
    whylate explain examples/pty-poll.ftrace.gz
  Cycles: each request to its reply, the ones over the deadline explained
    whylate explain examples/frob.dat.zst \\
      --from 'sys_enter_write[comm=frobnicator,count=7]' \\
      --to 'sys_exit_read[comm=frobnicator,ret>0]' --deadline 3.5ms
  Timer: late periods of the timers that wake a task
    whylate explain examples/timer.dat.zst --timer --task periodic --deadline 300us
  Softirq: slow services of one vector
    whylate explain examples/softirq.dat.zst --softirq NET_RX --deadline 20us
  Expect: every A needs a B within T
    whylate explain trace.dat \\
      --expect 'irq_handler_entry[irq=42] -> softirq_entry[vec=3] within 1ms'
  Function: slow calls of a kernel function (function_graph)
    whylate explain trace.dat --function 'serial8250_*' --expect 115200baud
  Output: --json, --html FILE, --svg DIR, --parquet DIR beside the text";

#[derive(Subcommand)]
pub enum Cmd {
    /// Record a trace.dat (root), while CMD runs or until Ctrl-C
    ///
    /// Record a trace (root): drives tracefs in an instance of its own and writes a
    /// trace.dat that whylate and trace-cmd read. Traces CMD while it runs (`-- CMD ARGS`),
    /// else until Ctrl-C or --duration.
    Record(RecordArgs),
    /// Explain each miss live as it happens (root): for rare problems
    ///
    /// Watch a workload live (root) and explain each miss as it happens, for as long as it
    /// runs: records as `record` does, explains a window every half second with the same
    /// engine as `explain`, keeps each miss's window as a trace.dat when asked. The first
    /// thing to reach for when a problem is rare. Ctrl-C prints the whole run's report.
    Watch(WatchArgs),
    /// See whylate work on this machine (root): reproduce a seed, explain it
    ///
    /// See whylate work on this machine (root): a lab program reproduces a seed's
    /// mechanism, whylate records and explains it, and prints the program's own count of
    /// misses beside its explanation.
    Demo(DemoArgs),
    /// What is in a trace: format, time span, events, CPUs, tasks, losses
    ///
    /// What is in a trace: format, time span, events by name, CPU and task, lost events,
    /// lines not understood. Several files are merged by timestamp.
    Stats(StatsArgs),
    /// Explain why replies, timers, softirqs or calls were late (main job)
    ///
    /// One mode per heading below: request/response cycles, from a `--from` event to the
    /// first later `--to` event of the same thread; late timer periods (`--timer`); slow
    /// services of a softirq vector (`--softirq`); slow calls of a kernel function
    /// (`--function`); each A without its B in time (`--expect 'A -> B within T'`); with
    /// none of them, the worst outliers across all measures (automatic mode). What took
    /// longer than `--deadline` (or never ended) is a miss, and each is explained: the chain
    /// of hand-offs, what held it up, ranked causes over all misses, and what to do.
    #[command(after_help = EXPLAIN_EXAMPLES)]
    Explain(ExplainArgs),
    /// Write the HTML report of a trace: explain's analysis as one page
    ///
    /// Write the HTML report of a trace (automatic mode unless --from/--to, --timer or
    /// --softirq say what to explain): the same analysis as `explain`, as one
    /// self-contained page that opens in any browser without network.
    Report(ReportArgs),
    /// Export the timeline for ui.perfetto.dev (--perfetto FILE)
    ///
    /// Export the timeline for other viewers. `--perfetto FILE`: Chrome trace-event JSON
    /// that ui.perfetto.dev and chrome://tracing open: per CPU, tracks of tasks, hard
    /// irqs, softirqs, work items, hrtimers and lost events, and the explained misses'
    /// chains as flow arrows (automatic mode unless a mode option is given).
    Export(ExportArgs),
    /// Compare two traces of one workload (before/after a fix): what changed
    ///
    /// Compare two traces of the same workload (before/after a fix, old/new kernel),
    /// explained the same way: distributions side by side, causes that appeared, vanished
    /// or changed (keyed without pids), CPU time and interrupt placement that moved, and a
    /// one-line verdict. Without --deadline, B is judged by the deadline chosen for A.
    Diff(DiffArgs),
    /// Measure latencies (wakeup, runqueue, irq, syscall...) and the worst
    #[command(long_about = latency_about())]
    Latency(LatencyArgs),
    /// Rank causes across a fleet (the findings --parquet DIR wrote)
    ///
    /// Rank causes across a fleet: reads the findings that `explain`, `latency` and `watch`
    /// wrote with `--parquet DIR` (one directory or many, globs allowed) with an embedded
    /// query engine, and says which causes cost the most excess on how many hosts, where a
    /// cause appeared or grew (`--by kernel`, `--by label:KEY`), and which hosts are worst.
    /// `--sql` prints the SQL, which Spark, Trino and DuckDB run too (docs/fleet.md).
    #[cfg_attr(
        not(feature = "fleet"),
        command(about = "Rank causes across a fleet (needs a build with --features fleet)")
    )]
    Fleet(FleetArgs),
    /// Serve the analyses to an AI agent over MCP (traces under --root)
    ///
    /// Serve the analyses as tools of the Model Context Protocol on stdin/stdout, for an
    /// AI agent (its MCP client starts this command): stats, latency, explain (every
    /// mode), explain_miss, diff, list_events. Traces are read only under the --root
    /// directories; nothing is recorded and no shell command runs. Built with the `mcp`
    /// feature (docs/reference.md, "mcp").
    #[cfg_attr(
        not(feature = "mcp"),
        command(about = "MCP server for AI agents (needs a build with --features mcp)")
    )]
    Mcp(McpArgs),
}

/// `whylate mcp`.
#[derive(clap::Args)]
pub struct McpArgs {
    /// A directory whose traces the tools may read (repeatable); paths outside every
    /// root, symlinks that lead out, and anything but regular files are refused.
    #[arg(long = "root", value_name = "DIR", required = true)]
    pub roots: Vec<PathBuf>,
    /// Also offer the `record` tool: a recording of at most 60 s into a new file under
    /// a root (the server must run as root). Without it no tool records or writes.
    #[arg(long)]
    pub allow_record: bool,
    /// The most heap one call may take, in MiB (default: a quarter of the machine's
    /// memory, 256 to 4096): a call past it is stopped and refused, the server goes on.
    /// Calls that read run one at a time.
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(16..))]
    pub call_memory: Option<u64>,
}

/// Findings written for fleet analysis, on `explain`, `latency` and `watch`.
#[derive(clap::Args, Default, Clone)]
pub struct FindingsArgs {
    /// Also write the findings as Parquet tables under DIR, one directory per table,
    /// partitioned `host=.../date=...` (schema: docs/parquet.md); `whylate fleet DIR`
    /// ranks them across hosts.
    #[arg(help_heading = "Fleet findings (--parquet)", long, value_name = "DIR")]
    pub parquet: Option<PathBuf>,
    /// The host the trace comes from (default: the name `whylate record` kept, else
    /// `unknown`).
    #[arg(help_heading = "Fleet findings (--parquet)", long, requires = "parquet", value_parser = host_arg)]
    pub host: Option<String>,
    /// The kernel release (default: the one `whylate record` kept, else empty).
    #[arg(
        help_heading = "Fleet findings (--parquet)",
        long,
        requires = "parquet"
    )]
    pub kernel: Option<String>,
    /// The date to file the findings under, YYYY-MM-DD (default: when the recording
    /// started, else the trace file's modification date, UTC).
    #[arg(help_heading = "Fleet findings (--parquet)", long, requires = "parquet", value_parser = date_arg)]
    pub date: Option<String>,
    /// A label every row carries, `key=value` (repeatable): `--label team=net`,
    /// `--label rollout=b`; `fleet --by label:team` groups by it.
    #[arg(help_heading = "Fleet findings (--parquet)", long = "label", requires = "parquet", value_name = "KEY=VALUE", value_parser = whylate_fleet::meta::parse_label)]
    pub labels: Vec<(String, String)>,
}

/// `--host`: it names a directory of the findings, checked here rather than after the
/// analysis.
fn host_arg(s: &str) -> Result<String, String> {
    whylate_fleet::meta::check_part("host", s).map(|()| s.to_string())
}

fn date_arg(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let ok = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    if ok {
        Ok(s.into())
    } else {
        Err(format!("expected YYYY-MM-DD, found {s:?}"))
    }
}

/// `whylate fleet`.
#[derive(clap::Args)]
pub struct FleetArgs {
    /// Findings directories (what --parquet wrote), or globs of them (`'lab/*/findings'`).
    #[arg(required = true, value_name = "PATH|GLOB")]
    pub paths: Vec<String>,
    /// Compare groups: `host`, `kernel`, or `label:KEY` (a --label key): where each cause
    /// appeared or grew against the other groups.
    #[arg(long, value_parser = whylate_fleet::query::By::parse)]
    pub by: Option<whylate_fleet::query::By>,
    /// Judge every sample against this deadline instead of each trace's own (`5ms`).
    #[arg(long, value_parser = deadline)]
    pub deadline: Option<u64>,
    /// Only traces of this analysis (`watch` files under the mode it watched).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(whylate_fleet::meta::modes()))]
    pub mode: Option<String>,
    /// Causes and hosts listed.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Machine-readable output (schema: docs/fleet.md).
    #[arg(long)]
    pub json: bool,
    /// Also write the report as one HTML file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Print the SQL each section runs (after the report), to run it elsewhere.
    #[arg(long)]
    pub sql: bool,
    /// Print only a script for --engine: the findings declared as views, then each
    /// section's SQL (`whylate fleet DIR --sql-only --engine duckdb | duckdb`).
    #[arg(long, requires = "engine", conflicts_with_all = ["json", "html", "sql"])]
    pub sql_only: bool,
    /// The engine --sql-only writes for: spark or duckdb.
    #[arg(long, requires = "sql_only", value_parser = whylate_fleet::dialect::Dialect::parse)]
    pub engine: Option<whylate_fleet::dialect::Dialect>,
}

#[derive(clap::Args)]
pub struct StatsArgs {
    /// Trace files (ftrace, trace-cmd report, latency/function_graph dumps, perf script,
    /// sysdig, systrace, trace.dat, perf.data; .gz/.zst/.xz are decompressed).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Machine-readable output (schema: docs/json.md).
    #[arg(long)]
    pub json: bool,
    /// How many tasks to list.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    #[command(flatten)]
    pub input: InputArgs,
}

/// `whylate explain`.
#[derive(clap::Args)]
pub struct ExplainArgs {
    /// Trace files, merged by timestamp.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub mode: ModeArgs,
    /// Machine-readable output (schema: docs/json.md).
    #[arg(help_heading = "Output", long)]
    pub json: bool,
    /// List the cause categories and exit (no trace needed).
    ///
    /// Each category's id, as the text and JSON write it, with what it means and the
    /// usual fixes; docs/causes.md adds how each comes about.
    #[arg(help_heading = "Output", long, exclusive = true)]
    pub list_causes: bool,
    /// Events a window of a long trace holds (0: the whole trace at once).
    ///
    /// Cycle mode with a --deadline and --expect read a trace longer than this in
    /// windows, each explained and dropped: memory is bounded by a window, not by the
    /// trace. Each cycle (or A) is counted by the window it starts in, with its whole
    /// chain; quantiles are exact up to 8192 distinct durations, then to 8 significant
    /// bits, and the 1000 worst misses (--expect: the first) are kept in full (the first
    /// note says so). Automatic mode (no selectors), --timer, --softirq and --function
    /// read such a trace twice, in windows: first the usuals (and a deadline not given)
    /// over the whole trace, then each window's outliers judged against them (--timer
    /// without a --deadline three times: its p99 decides which periods are on time); a
    /// trace from a pipe is read whole. --html, --svg and --parquet hold the whole trace.
    #[arg(help_heading = "Input", long, value_name = "N",
          default_value_t = whylate::pipeline::Windowing::DEFAULT.events)]
    pub window_events: u64,
    #[command(flatten)]
    pub draw: DrawArgs,
    #[command(flatten)]
    pub findings: FindingsArgs,
    #[command(flatten)]
    pub input: InputArgs,
}

/// `whylate report`.
#[derive(clap::Args)]
pub struct ReportArgs {
    /// Trace files, merged by timestamp.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The HTML file.
    #[arg(short = 'o', long, default_value = "whylate-report.html")]
    pub output: PathBuf,
    /// Also write the plots as standalone SVG files in DIR.
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
    /// Misses drawn one by one (swimlanes), worst first.
    #[arg(long, default_value_t = whylate_report::plot::DEFAULT_LANES)]
    pub lanes: usize,
    #[command(flatten)]
    pub mode: ModeArgs,
    #[command(flatten)]
    pub input: InputArgs,
}

/// `whylate export`.
#[derive(clap::Args)]
pub struct ExportArgs {
    /// Trace files, merged by timestamp.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The JSON file to write.
    #[arg(long, value_name = "FILE", required = true)]
    pub perfetto: PathBuf,
    #[command(flatten)]
    pub mode: ModeArgs,
    /// Print what was written as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub input: InputArgs,
}

/// `whylate diff`.
#[derive(clap::Args)]
pub struct DiffArgs {
    /// The trace before.
    pub a: PathBuf,
    /// The trace after.
    pub b: PathBuf,
    #[command(flatten)]
    pub mode: ModeArgs,
    /// Machine-readable output (schema: docs/json.md).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub input: InputArgs,
}

/// `whylate latency`.
#[derive(clap::Args)]
pub struct LatencyArgs {
    /// Trace files, merged by timestamp.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[arg(long, short, value_delimiter = ',', value_parser = measure, help = measure_help())]
    pub measure: Vec<Measure>,
    /// Only samples of this task: a pid, or a comm (`*`/`?` glob).
    #[arg(long, value_parser = TaskSel::parse)]
    pub task: Option<TaskSel>,
    /// Only samples on this CPU.
    #[arg(long)]
    pub cpu: Option<u32>,
    /// Only samples starting in A..B: seconds as the trace prints them, or +S for
    /// seconds after the first event; either side may be empty.
    #[arg(long, value_name = "A..B", value_parser = window)]
    pub window: Option<Window>,
    /// Worst samples listed per measure, and groups shown in the terminal.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Machine-readable output (schema: docs/json.md).
    #[arg(long)]
    pub json: bool,
    /// With --json: every sample as [ts_ns, value_ns].
    #[arg(long)]
    pub samples: bool,
    #[command(flatten)]
    pub findings: FindingsArgs,
    /// function: only functions whose name matches this pattern (`*`, `?`, `[...]`), e.g.
    /// `--func 'serial8250_*'`.
    #[arg(long, value_name = "GLOB", value_parser = func_glob)]
    pub func: Option<whylate::glob::Glob>,
    /// throughput: the stream to count, a selector as for `--from`: `console`,
    /// `sched_switch`, `funcgraph_entry[func=serial8250_console_putchar]`, `console[len>1]`.
    #[arg(long, value_name = "SEL", value_parser = stream)]
    pub event: Option<String>,
    /// throughput: sum this numeric field instead of counting (`len` = message bytes).
    #[arg(long)]
    pub field: Option<String>,
    /// throughput: interval (`1s`, `100ms`).
    #[arg(long, default_value = "1s", value_parser = interval)]
    pub interval: u64,
    /// throughput: the rate the stream should keep up: per second (`11520`, `11520/s`) or
    /// a serial line speed (`115200baud`: 8N1, 10 bits a byte, = 11520 bytes/s).
    #[arg(long, value_name = "RATE", value_parser = expected_rate)]
    pub expect: Option<f64>,
    /// Events a window of a long trace holds (0: the whole trace at once).
    ///
    /// A trace longer than this is measured in windows, each dropped once measured:
    /// memory is bounded by a window, not by the trace. Each sample is counted by the
    /// window it ends in, whole (a window starts from what was open when it began);
    /// quantiles are exact up to 8192 distinct values per group, then to 8 significant
    /// bits (the last note says which). Throughput, --samples and --parquet hold the
    /// whole trace.
    #[arg(help_heading = "Input", long, value_name = "N",
          default_value_t = whylate::latency::WINDOWING.events)]
    pub window_events: u64,
    #[command(flatten)]
    pub input: InputArgs,
}

/// Pictures of an explanation, besides the terminal report.
#[derive(clap::Args, Default)]
pub struct DrawArgs {
    /// Also write the report as one self-contained HTML file: verdict, causes, histogram,
    /// per-cycle raster, a swimlane per explained miss, advice and context.
    #[arg(help_heading = "Output", long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also write the plots as standalone SVG files in DIR (histogram.svg, raster.svg,
    /// miss-N.svg).
    #[arg(help_heading = "Output", long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
    /// Misses drawn one by one (swimlanes), worst first.
    #[arg(help_heading = "Output", long, default_value_t = whylate_report::plot::DEFAULT_LANES)]
    pub lanes: usize,
}

/// How the inputs are read, for every command that reads traces.
#[derive(clap::Args, Default)]
pub struct InputArgs {
    /// Fail (exit 2) on the first line that does not parse.
    #[arg(help_heading = "Input", long)]
    pub strict: bool,
    /// Read as this format instead of guessing.
    #[arg(help_heading = "Input", long, value_enum)]
    pub format: Option<FormatArg>,
    /// Reorder window in events, for traces whose timestamps are out of order (a Perfetto
    /// trace's is at least 524288: one drain period of every CPU).
    #[arg(help_heading = "Input", long, default_value_t = whylate::read::DEFAULT_WINDOW)]
    pub reorder: usize,
    /// The recording machine's /proc/kallsyms (plain or compressed): names work functions
    /// and timer callbacks in a perf.data (which stores no symbols) or replaces a
    /// trace.dat's own. Without it a perf.data uses this machine's symbols only when it
    /// runs the same kernel build at the same address.
    #[arg(help_heading = "Input", long, value_name = "FILE")]
    pub kallsyms: Option<PathBuf>,
    /// Syscall table that names raw_syscalls numbers; by default the one the trace says
    /// (a perf.data's or trace.dat's machine), else x86_64.
    #[arg(help_heading = "Input", long, value_enum)]
    pub arch: Option<ArchArg>,
}

impl InputArgs {
    /// The reader options (loads and checks `--kallsyms`).
    pub fn open(&self) -> Result<OpenOptions, ReadError> {
        self.open_held(None)
    }

    /// [`InputArgs::open`] where `held` holds files already opened for their paths (the
    /// MCP server's): those are read through their descriptors, `--kallsyms` too.
    pub fn open_held(
        &self,
        held: Option<std::sync::Arc<whylate::read::Held>>,
    ) -> Result<OpenOptions, ReadError> {
        use whylate::read::ksyms;
        let kallsyms = match &self.kallsyms {
            Some(p) => {
                let text = match held.as_ref().and_then(|h| h.get(p)) {
                    Some(f) => ksyms::load_opened(
                        p,
                        f.try_clone().map_err(|source| ReadError::Io {
                            path: p.clone(),
                            source,
                        })?,
                    )?,
                    None => ksyms::load_file(p)?,
                };
                Some(ksyms::Given::new(p.display().to_string(), text))
            }
            None => None,
        };
        Ok(OpenOptions {
            format: self.format.map(Into::into),
            strict: self.strict,
            window: self.reorder,
            progress: None,
            kallsyms,
            arch: self.arch.map(Into::into),
            held,
        })
    }
}

/// What `explain`, `report`, `export` and `diff` explain: cycles between selectors, late
/// timers, one softirq vector, or (with none of them) the worst outliers.
#[derive(clap::Args, Default)]
pub struct ModeArgs {
    /// Event that opens a cycle: EVENT[FIELD OP VALUE,...], e.g.
    /// 'sys_enter_write[comm=frobnicator,count=7]'.
    #[arg(help_heading = "Cycles (--from/--to)", long, requires = "to")]
    pub from: Option<String>,
    /// Event that closes it (repeat for alternatives), e.g.
    /// 'sys_exit_read[comm=frobnicator,ret>0]'.
    #[arg(help_heading = "Cycles (--from/--to)", long, requires = "from")]
    pub to: Vec<String>,
    /// Explain late timers instead of cycles: hrtimer expiries that woke a task (and
    /// self-reported lateness), split into "the interrupt came late" and "the woken
    /// task waited"; a miss is a period later than --deadline (else the slowest 1%).
    #[arg(help_heading = "Timer (--timer)", long, conflicts_with_all = ["from", "to"])]
    pub timer: bool,
    /// With --timer: only timers that wake this task (pid, or comm with * ? globs).
    #[arg(help_heading = "Timer (--timer)", long, requires = "timer", value_parser = TaskSel::parse)]
    pub task: Option<TaskSel>,
    /// Explain slow services of this softirq vector (NET_RX, TASKLET, TIMER... or its
    /// number): raise to entry, deferral to ksoftirqd, who held the CPU meanwhile.
    #[arg(help_heading = "Softirq (--softirq)", long, value_name = "VEC", conflicts_with_all = ["from", "to", "timer"], value_parser = softirq_arg)]
    pub softirq: Option<String>,
    /// Explain slow calls of this kernel function (a glob) from function_graph: its
    /// callees, its own code, what interrupted or preempted it, interrupts off inside it.
    /// Without function_graph, the irqs-off sections it opened.
    #[arg(help_heading = "Function (--function)", long, value_name = "FUNC", conflicts_with_all = ["from", "to", "timer", "softirq"])]
    pub function: Option<String>,
    /// With --function: the rate it should move units at (`11520/s`, `115200baud` = 11520
    /// bytes/s with 8N1); a call may take one unit's time. Else a pattern, 'A -> B within
    /// T': each A (a selector) needs a B within T.
    #[arg(
        help_heading = "Expect (--expect, or a rate with --function)",
        long,
        value_name = "RATE|PATTERN"
    )]
    pub expect: Option<String>,
    /// Cycles longer than this are misses (`3.5ms`); inferred from the data when absent.
    #[arg(help_heading = "Every mode", long, value_parser = deadline)]
    pub deadline: Option<u64>,
    /// Who may close a cycle: the same thread (default), any thread of its process,
    /// anyone; with --expect also the same CPU (its default).
    #[arg(help_heading = "Cycles (--from/--to)", long, value_enum)]
    pub same: Option<SameArg>,
    /// How replies pair with requests when several are open: the oldest open request gets
    /// the next reply (fifo), or a new request abandons the open one (latest: a client
    /// that gives up and asks again).
    #[arg(
        help_heading = "Cycles (--from/--to)",
        long,
        value_enum,
        default_value = "fifo",
        requires = "from"
    )]
    pub pair: PairArg,
    /// Pair a reply with the open request that has the same value of this field (on a
    /// syscall exit, the field of the call it returns from), e.g. `--key fd`.
    #[arg(
        help_heading = "Cycles (--from/--to)",
        long,
        value_name = "FIELD",
        conflicts_with = "pair"
    )]
    pub key: Option<String>,
    /// Misses whose chain is shown.
    #[arg(help_heading = "Every mode", long, default_value_t = 3)]
    pub top: usize,
}

impl ModeArgs {
    /// The automatic mode, as `whylate FILE` runs it.
    pub fn auto() -> ModeArgs {
        ModeArgs {
            top: 3,
            ..Default::default()
        }
    }

    /// The explain mode these arguments ask for, or what is wrong with a selector.
    pub fn mode(self) -> Result<Mode, String> {
        let (deadline_ns, top) = (self.deadline, self.top);
        if let Some(f) = self.function {
            let func = whylate::glob::Glob::new(&f).map_err(|e| format!("--function: {e}"))?;
            let expect_per_s = match &self.expect {
                Some(r) => Some(expected_rate(r).map_err(|e| format!("--expect: {e}"))?),
                None => None,
            };
            return Ok(Mode::Function(whylate::explain::FunctionOptions {
                func,
                deadline_ns,
                expect_per_s,
                top,
            }));
        }
        if let Some(p) = self.expect.as_deref().filter(|_| self.from.is_none()) {
            let scope = match (self.key, self.same) {
                (Some(f), _) => whylate::explain::Scope::Field(f),
                (None, None | Some(SameArg::Cpu)) => whylate::explain::Scope::Cpu,
                (None, Some(SameArg::Thread)) => whylate::explain::Scope::Thread,
                (None, Some(SameArg::Tgid)) => whylate::explain::Scope::Tgid,
                (None, Some(SameArg::Any)) => whylate::explain::Scope::Any,
            };
            let o = whylate::explain::ExpectOptions::parse(p, scope, top, deadline)
                .map_err(|e| format!("--expect: {e}"))?;
            return Ok(Mode::Expect(o));
        }
        if self.key.is_some() && self.from.is_none() {
            return Err("--key pairs --from with --to, or A with B in --expect".into());
        }
        if self.expect.is_some() {
            return Err(
                "--expect takes a rate with --function, or a pattern 'A -> B within T' alone"
                    .into(),
            );
        }
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
            return Ok(Mode::Auto { top, deadline_ns });
        };
        let from = Selector::parse(&from).map_err(|e| format!("--from: {e}"))?;
        let mut to = Vec::new();
        for t in &self.to {
            to.push(Selector::parse(t).map_err(|e| format!("--to: {e}"))?);
        }
        Ok(Mode::Cycles(ExplainOptions {
            from,
            to,
            deadline_ns,
            same: match self.same {
                Some(SameArg::Cpu) => return Err("--same cpu is for --expect".into()),
                s => s.unwrap_or_default().into(),
            },
            pairing: match (self.key, self.pair) {
                (Some(f), _) => Pairing::Key(f),
                (None, PairArg::Fifo) => Pairing::Fifo,
                (None, PairArg::Latest) => Pairing::Latest,
            },
            arch: None,
            top,
            learned: Default::default(),
        }))
    }
}

/// `--pair`.
#[derive(Clone, Copy, Default, ValueEnum)]
pub enum PairArg {
    #[default]
    Fifo,
    Latest,
}

/// `--same`.
#[derive(Clone, Copy, Default, ValueEnum)]
pub enum SameArg {
    #[default]
    Thread,
    Tgid,
    Any,
    Cpu,
}

impl From<SameArg> for Same {
    fn from(s: SameArg) -> Same {
        match s {
            SameArg::Thread => Same::Thread,
            SameArg::Tgid => Same::Tgid,
            SameArg::Any | SameArg::Cpu => Same::Any,
        }
    }
}

/// `--arch`.
#[derive(Clone, Copy, ValueEnum)]
pub enum ArchArg {
    #[value(name = "x86_64", alias = "amd64", alias = "x86-64")]
    X86_64,
    #[value(name = "aarch64", alias = "arm64")]
    Aarch64,
}

impl From<ArchArg> for Arch {
    fn from(a: ArchArg) -> Arch {
        match a {
            ArchArg::X86_64 => Arch::X86_64,
            ArchArg::Aarch64 => Arch::Aarch64,
        }
    }
}

/// `--format`: the formats of the library's registry of readers, as it spells them.
#[derive(Clone, Copy)]
pub struct FormatArg(Format);

impl ValueEnum for FormatArg {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: std::sync::OnceLock<Vec<FormatArg>> = std::sync::OnceLock::new();
        ALL.get_or_init(|| whylate::read::formats().map(FormatArg).collect())
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.0.arg()))
    }
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        f.0
    }
}

/// `latency`'s long help, its measures from the catalogue ([`Measure::names`]).
fn latency_about() -> String {
    format!(
        "Measure latencies: {}. Per group: count, min/p50/p90/p99/p99.9/max, a histogram and \
         the worst samples with time, CPU and task (and who held the CPU meanwhile).",
        Measure::names().join(", ")
    )
}

/// `--measure`'s help, naming every measure.
fn measure_help() -> String {
    format!(
        "Measures, comma-separated: {} (default: every measure the trace has events for)",
        Measure::names().join(", ")
    )
}
