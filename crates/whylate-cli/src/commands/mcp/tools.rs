//! The tools as a model sees them: names, what each answers and when to call it, and the
//! JSON schema of its arguments. Argument names are the CLI's options without `--`
//! (`deadline` is `--deadline`), so errors that name an option name the argument too.

use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use whylate::measure::Measure;

/// What the server tells the client about itself (MCP `instructions`).
pub const INSTRUCTIONS: &str = "whylate explains why something on Linux was late, from a kernel trace \
(trace-cmd trace.dat, perf.data, ftrace text...). Start with `list_events` (what the trace holds: event names, \
fields, tasks) or `stats`; then `explain`: with `from`/`to` selectors and a `deadline` for request/reply cycles, \
`timer` for late timer periods, `softirq`, `function`, `expect`, or with no mode for the worst outliers. Its \
result is the verdict, ranked causes, advice and the worst misses with their chains; page through the rest with \
offset/limit, or get one with `explain_miss`. Times are integer nanoseconds (`_ns` fields); durations given as \
arguments take a unit (`3.5ms`, `500us`). Paths are trace files under the server's roots (relative to a root, or \
absolute).";

/// What this server offers beyond the read-only analyses.
#[derive(Clone, Copy, Debug, Default)]
pub struct Offer {
    /// `record` (the server was started with `--allow-record`).
    pub record: bool,
}

/// Every tool the server offers: the read-only analyses, `fleet` in a build with the
/// query engine, `record` when the server was started with `--allow-record`.
pub fn all(offer: Offer) -> Vec<Tool> {
    let mut v = analyses();
    if cfg!(feature = "fleet") {
        v.push(fleet());
    }
    if offer.record {
        v.push(record());
    }
    v
}

/// The longest recording a tool call may ask for: long enough to catch a rare miss, short
/// enough that a forgotten call does not fill the disk.
pub const RECORD_MAX_NS: u64 = 60_000_000_000;

fn fleet() -> Tool {
    tool(
        "fleet",
        "Causes ranked across many traces and hosts, as `whylate fleet --json`: from the findings directories that \
`whylate explain/latency/watch --parquet DIR` wrote (directories under the roots). Answers which cause costs most \
time across the fleet, on which hosts, and, with `by` (`host`, `kernel`, `label:KEY`), where a cause appeared or \
grew against the other groups.",
        props(&[json!({
            "paths": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                "description": "Findings directories (what --parquet wrote), under the roots."},
            "by": s("Compare groups: `host`, `kernel` or `label:KEY`."),
            "deadline": s("Judge every sample against this deadline instead of each trace's own (`5ms`)."),
            "mode": {"type": "string", "enum": whylate_fleet::meta::modes(), "description": format!(
                "Only traces of this analysis: {}.", whylate_fleet::meta::modes().join(", "))},
            "top": {"type": "integer", "minimum": 0, "description": "Causes and hosts listed (default 10)."},
        })]),
        &["paths"],
    )
}

fn record() -> Tool {
    let mut t = tool(
        "record",
        "Records this machine's kernel events now (needs the server to run as root) for `duration` (at most 60s) \
into a new trace.dat under the roots, as `whylate record --json` reports it (events, lost, per CPU). Then call \
`list_events` or `explain` on the file. Presets for `events`: sched, irq, wq, syscalls, printk, timer, latency (all of \
them, the default); or tracepoint names. It never runs a command and never overwrites a file.",
        props(&[json!({
            "output": s("The new file (relative to the first root, or absolute under one); must not exist."),
            "duration": s("How long to record, with a unit (`2s`, `500ms`); at most 60s."),
            "events": {"type": "array", "items": {"type": "string"},
                "description": "Presets and/or tracepoints (default: latency, i.e. all presets)."},
            "buffer_kb": {"type": "integer", "minimum": 1, "description": "Ring buffer per CPU, KiB."},
        })]),
        &["output", "duration"],
    );
    if let Some(a) = t.annotations.as_mut() {
        a.read_only_hint = Some(false);
        a.open_world_hint = Some(true);
    }
    t
}

fn analyses() -> Vec<Tool> {
    vec![
        tool(
            "list_events",
            "What a trace holds, to write selectors: every event name (as a selector writes it: `sched_switch`, \
`sys_enter_write`), its count, the fields a selector can test on it (`count`, `ret`, `comm`, `pid`...) and the \
tasks that emit it most. Call this first on an unknown trace. Selector syntax: `EVENT[FIELD OP VALUE,...]`, OP one \
of = != < <= > >= ~ (glob), e.g. `sys_exit_read[comm=frobnicator,ret>0]`.",
            props(&[files(), input()]),
            &["files"],
        ),
        tool(
            "stats",
            "What is in a trace, as `whylate stats --json`: format, time span (`first_ns`, `last_ns`, `span_ns`), \
events by name and CPU, busiest tasks, lost events, lines not understood, and notes on where the trace is blind.",
            props(&[files(), input(), top("Tasks listed (default 10).")]),
            &["files"],
        ),
        tool(
            "latency",
            format!("Measured latencies, as `whylate latency --json` (without per-sample lists): per measure ({}) \
and group, count and min/p50/p90/p99/p99.9/max in ns, and the worst samples with time, CPU and task. Use it to see \
which latency is bad before explaining it.", Measure::names().join(", ")),
            props(&[files(), input(), latency(), top("Worst samples per measure (default 10).")]),
            &["files"],
        ),
        tool(
            "explain",
            "Why it was late, as `whylate explain --json`: the verdict (cycles, misses, deadline, quantiles in ns), \
ranked causes (`causes[]`: category, culprit, excess ns, share), advice, context, and the misses worst first, each \
with its chain of hand-offs and who held each up. Modes: `from`+`to` (+`deadline`) = request/reply cycles; \
`timer` (+`task`) = late timer periods; `softirq` = slow services of a vector; `function` = slow calls of a kernel \
function; `expect` = 'A -> B within T'; none = the worst outliers across all measures. Only `limit` misses \
(default `top`, 3) come in full from `offset`; `page` says how many there are. Call `list_events` first to write \
selectors.",
            props(&[files(), input(), mode(), paging()]),
            &["files"],
        ),
        tool(
            "explain_miss",
            "One miss of an `explain` in full: its chain (one link per hand-off, offsets and durations in ns, \
`excess_ns` over the usual, `held_by` = who held it up). Same arguments as `explain`, plus `index` (0 = the worst, \
as `explain` lists them) or `at_ns` (the miss whose cycle contains that time, else the nearest start).",
            props(&[files(), input(), mode(), miss()]),
            &["files"],
        ),
        tool(
            "diff",
            "Two traces of one workload compared (before/after a fix), as `whylate diff --json`: a one-line \
`verdict`, both sides' cycles and misses, causes that appeared, vanished, grew or shrank, CPU time and interrupt \
placement that moved. Both traces are explained the same way (the same mode arguments as `explain`); without \
`deadline`, B is judged by A's.",
            props(&[diff_files(), input(), mode()]),
            &["a", "b"],
        ),
    ]
}

fn tool(
    name: &'static str,
    description: impl Into<std::borrow::Cow<'static, str>>,
    props: Map<String, Value>,
    required: &[&str],
) -> Tool {
    let schema = json!({
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": false,
    });
    let Value::Object(schema) = schema else {
        unreachable!("a JSON object")
    };
    let mut a = ToolAnnotations::default();
    a.read_only_hint = Some(true);
    a.destructive_hint = Some(false);
    a.open_world_hint = Some(false);
    Tool::new(name, description, Arc::new(schema)).with_annotations(a)
}

/// The property names of `tool`'s arguments (None: no such tool in `offer`).
pub fn properties(tool: &str, offer: Offer) -> Option<Vec<String>> {
    let t = all(offer).into_iter().find(|t| t.name == tool)?;
    let props = t.input_schema.get("properties")?.as_object()?;
    Some(props.keys().cloned().collect())
}

fn props(parts: &[Value]) -> Map<String, Value> {
    let mut m = Map::new();
    for p in parts {
        if let Value::Object(o) = p {
            m.extend(o.clone());
        }
    }
    m
}

fn s(desc: &str) -> Value {
    json!({"type": "string", "description": desc})
}

fn files() -> Value {
    json!({"files": {"type": "array", "items": {"type": "string"}, "minItems": 1,
        "description": "Trace files (relative to a root, or absolute under one), merged by timestamp."}})
}

fn diff_files() -> Value {
    json!({"a": s("The trace before."), "b": s("The trace after.")})
}

fn top(desc: &str) -> Value {
    json!({"top": {"type": "integer", "minimum": 0, "description": desc}})
}

fn input() -> Value {
    json!({
        "format": {"type": "string", "description": "Read as this format instead of guessing.",
            "enum": whylate::read::formats().map(|f| f.arg()).collect::<Vec<_>>()},
        "kallsyms": s("The recording machine's /proc/kallsyms (a file under the roots): names functions in a perf.data."),
        "arch": {"type": "string", "enum": ["x86_64", "aarch64"], "description": "Syscall table for raw syscall numbers."},
        "reorder": {"type": "integer", "minimum": 1, "description": "Reorder window in events (default 4096; a Perfetto trace's is at least 524288)."},
        "strict": {"type": "boolean", "description": "Fail on the first line that does not parse."},
    })
}

fn latency() -> Value {
    json!({
        "measure": {"type": "array", "items": {"type": "string", "enum": Measure::names()},
            "description": "Measures (default: all the trace has events for)."},
        "task": s("Only samples of this task: a pid, or a comm (* ? globs)."),
        "cpu": {"type": "integer", "minimum": 0, "description": "Only samples on this CPU."},
        "window": s("Only samples starting in A..B: seconds as the trace prints them, or +S after the first event; a side may be empty."),
        "func": s("function measure: only functions matching this glob."),
        "event": s("throughput: the stream to count, a selector."),
        "field": s("throughput: sum this numeric field instead of counting."),
        "interval": s("throughput: interval with a unit (default 1s)."),
        "expect": s("throughput: the rate to keep up, per second (`11520/s`) or baud (`115200baud`)."),
    })
}

fn mode() -> Value {
    json!({
        "from": s("Event that opens a cycle, a selector: EVENT[FIELD OP VALUE,...], e.g. `sys_enter_write[comm=frobnicator,count=7]`."),
        "to": {"type": "array", "items": {"type": "string"},
            "description": "Events that close it (alternatives), e.g. [`sys_exit_read[comm=frobnicator,ret>0]`]."},
        "deadline": s("Longer than this is a miss, with a unit: `3.5ms`, `300us`. Inferred from the data when absent."),
        "timer": {"type": "boolean", "description": "Explain late timer periods (hrtimers that wake a task)."},
        "task": s("With timer: only timers that wake this task (pid, or comm with globs)."),
        "softirq": s("Explain slow services of this softirq vector (NET_RX, TASKLET, TIMER... or its number)."),
        "function": s("Explain slow calls of this kernel function (a glob), from function_graph."),
        "expect": s("A pattern 'A -> B within T' (each A needs a B within T); with function, a rate (`115200baud`)."),
        "same": {"type": "string", "enum": ["thread", "tgid", "any", "cpu"], "description": "Who may close a cycle (default thread; cpu is for expect)."},
        "pair": {"type": "string", "enum": ["fifo", "latest"], "description": "How replies pair with open requests (default fifo)."},
        "key": s("Pair a reply with the open request with the same value of this field, e.g. `fd`."),
        "top": {"type": "integer", "minimum": 0, "description": "Misses shown in full (default 3): the default `limit`."},
    })
}

fn paging() -> Value {
    json!({
        "offset": {"type": "integer", "minimum": 0, "description": "First miss returned in full (0 = the worst)."},
        "limit": {"type": "integer", "minimum": 0, "description": "Misses returned in full (default `top`, 3)."},
    })
}

fn miss() -> Value {
    json!({
        "index": {"type": "integer", "minimum": 0, "description": "Which miss: 0 = the worst, as `explain` lists them."},
        "at_ns": {"type": "integer", "minimum": 0, "description": "Which miss: the one whose cycle contains this time (ns, the trace's clock), else the nearest start."},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// The measures the MCP schema, the CLI help and docs/reference.md name are the
    /// catalogue's, in its order: a measure added there reaches all three or this fails.
    #[test]
    fn every_list_of_modes_is_the_catalogue() {
        let modes = whylate_fleet::meta::modes();
        let f = fleet();
        assert_eq!(f.input_schema["properties"]["mode"]["enum"], json!(modes));
        let cli = crate::args::Cli::command();
        let sub = cli.find_subcommand("fleet").unwrap();
        let arg = sub.get_arguments().find(|a| a.get_id() == "mode").unwrap();
        let values: Vec<String> = (arg.get_possible_values().iter())
            .map(|v| v.get_name().to_string())
            .collect();
        assert_eq!(values, modes);
    }

    #[test]
    fn every_list_of_measures_is_the_catalogue() {
        let names = Measure::names();
        let all_tools = all(Offer::default());
        let lat = all_tools.iter().find(|t| t.name == "latency").unwrap();
        let items = &lat.input_schema["properties"]["measure"]["items"]["enum"];
        assert_eq!(items, &json!(names));
        let desc = lat.description.as_deref().unwrap_or_default();
        assert!(desc.contains(&names.join(", ")), "{desc}");

        let cli = crate::args::Cli::command();
        let sub = cli.find_subcommand("latency").unwrap();
        let about = sub.get_long_about().unwrap().to_string();
        assert!(about.contains(&names.join(", ")), "{about}");
        let arg = sub
            .get_arguments()
            .find(|a| a.get_id() == "measure")
            .unwrap();
        let help = arg.get_help().unwrap().to_string();
        assert!(help.contains(&names.join(", ")), "{help}");

        let doc = include_str!("../../../../../docs/reference.md");
        let table = doc.split("| measure | what | grouped by |").nth(1).unwrap();
        let rows: Vec<&str> = table
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with("| `"))
            .filter_map(|l| l[3..].split('`').next())
            .collect();
        assert_eq!(rows, names, "docs/reference.md's measure table");
    }
}
