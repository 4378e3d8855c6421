//! `whylate latency`.

use crate::args::LatencyArgs;
use crate::output::{usage, Out};
use crate::paths::{self, Paths};
use crate::progress::with_progress;
use std::process::ExitCode;
use whylate::measure::{Filter, Measure, Options, ThroughputOpts};
use whylate_report::LatencyText;

/// The measures, per group.
pub fn run(a: LatencyArgs, out: &Out, quiet: bool) -> anyhow::Result<ExitCode> {
    let (opts, tput) = match options(&a, a.samples || a.findings.parquet.is_some()) {
        Ok(o) => o,
        Err(e) => return usage(&e),
    };
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
    let (open, bar) = with_progress(open, &a.files, quiet);
    let w = whylate::pipeline::Windowing {
        events: a.window_events,
        ..whylate::latency::WINDOWING
    };
    let mut r = whylate::read::Opened::files(&a.files, &open)
        .and_then(|i| whylate::latency::latency_in(i, &open, &opts, tput, w));
    drop(bar);
    if let Some(e) = r.as_ref().ok().and_then(|r| r.void_filter.clone()) {
        return usage(&e);
    }
    if let Ok(r) = &mut r {
        a.findings.write_latency(&a.files, r)?;
        if !a.samples {
            drop_samples(r);
        }
    }
    out.emit(r, a.json, |r, p| r.render_text(a.top, p))
}

/// The library's options for `a`, or the usage error; `raw_samples`: keep every sample
/// (findings hold them all; the JSON only when asked, --samples).
pub fn options(
    a: &LatencyArgs,
    raw_samples: bool,
) -> Result<(Options, Option<ThroughputOpts>), String> {
    if a.field.is_some() && a.event.is_none() {
        return Err("--field needs --event".into());
    }
    if a.measure.contains(&Measure::Throughput) && a.event.is_none() {
        return Err(
            "--measure throughput needs --event NAME (and optionally --field, --interval, --expect)"
                .into(),
        );
    }
    let tput = a.event.clone().map(|event| ThroughputOpts {
        event,
        field: a.field.clone(),
        interval_ns: a.interval,
        expect_per_s: a.expect,
    });
    let opts = Options {
        measures: a.measure.clone(),
        filter: Filter {
            task: a.task.clone(),
            cpu: a.cpu,
            window: a.window.unwrap_or((None, None)),
        },
        top: a.top,
        raw_samples,
        throughput: None,
        func: a.func.clone(),
        settle: whylate::measure::Settle::WHOLE,
    };
    Ok((opts, tput))
}

/// Leaves the samples out of the report (`--json` without `--samples`).
pub fn drop_samples(r: &mut whylate::latency::LatencyReport) {
    for g in r.measures.iter_mut().flat_map(|m| &mut m.groups) {
        g.samples = None;
    }
}
