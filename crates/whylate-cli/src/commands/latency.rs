//! `whylate latency`.

use crate::args::LatencyArgs;
use crate::output::{usage, Out};
use crate::paths::{self, Paths};
use crate::progress::with_progress;
use std::process::ExitCode;
use whylate::measure::{Filter, Measure, Options, ThroughputOpts};

/// The measures, per group.
pub fn run(a: LatencyArgs, out: &Out, quiet: bool) -> anyhow::Result<ExitCode> {
    if a.field.is_some() && a.event.is_none() {
        return usage("--field needs --event");
    }
    if a.measure.contains(&Measure::Throughput) && a.event.is_none() {
        return usage(
            "--measure throughput needs --event NAME (and optionally --field, --interval, --expect)",
        );
    }
    let checked = Paths::default()
        .merged(&a.files)
        .reads(a.input.kallsyms.as_deref())
        .dir(
            "--parquet",
            a.findings.parquet.as_deref(),
            paths::parquet_files,
        )
        .check();
    if let Err(e) = checked {
        return usage(&e);
    }
    let open = a.input.open()?;
    let tput = a.event.map(|event| ThroughputOpts {
        event,
        field: a.field,
        interval_ns: a.interval,
        expect_per_s: a.expect,
    });
    let opts = Options {
        measures: a.measure,
        filter: Filter {
            task: a.task,
            cpu: a.cpu,
            window: a.window.unwrap_or((None, None)),
        },
        top: a.top,
        // Findings hold every sample; the JSON only when asked (--samples).
        raw_samples: a.samples || a.findings.parquet.is_some(),
        throughput: None,
        func: a.func,
    };
    let (open, bar) = with_progress(open, &a.files, quiet);
    let mut r = whylate::latency::latency(&a.files, &open, &opts, tput);
    drop(bar);
    if let Ok(r) = &mut r {
        a.findings.write_latency(&a.files, r)?;
        if !a.samples {
            for g in r.measures.iter_mut().flat_map(|m| &mut m.groups) {
                g.samples = None;
            }
        }
    }
    out.emit(r, a.json, |r, p| r.render_text(a.top, p))
}
