//! `--parquet DIR` on `explain`, `latency` and `watch`: who the trace belongs to (the
//! user's flags, else what the recording kept), then the findings written as Parquet.

use crate::args::FindingsArgs;
use std::path::{Path, PathBuf};
use whylate::explain::{ExplainReport, Machine};
use whylate::read::inputs::InputInfo;
use whylate_fleet::{Findings, MetaArgs, TraceFacts, TraceMeta};

impl FindingsArgs {
    fn meta_args(&self) -> MetaArgs {
        MetaArgs {
            host: self.host.clone(),
            kernel: self.kernel.clone(),
            date: self.date.clone(),
            labels: self.labels.clone(),
        }
    }

    /// Writes an explain report's findings, when `--parquet` asked for them.
    pub fn write_explain(
        &self,
        files: &[PathBuf],
        r: &ExplainReport,
        mode: &str,
    ) -> anyhow::Result<()> {
        let Some(dir) = &self.parquet else {
            return Ok(());
        };
        let facts = facts(files, &r.inputs, r.machine.as_ref());
        let key = format!("{} {} {}", r.from, r.to.join(","), r.deadline_source);
        let meta = TraceMeta::resolve(&self.meta_args(), &facts, mode, &key);
        write(dir, &Findings::of_explain(meta, r))
    }

    /// Writes a latency report's findings (every sample), when `--parquet` asked.
    pub fn write_latency(
        &self,
        files: &[PathBuf],
        r: &whylate::latency::LatencyReport,
    ) -> anyhow::Result<()> {
        let Some(dir) = &self.parquet else {
            return Ok(());
        };
        let facts = facts(files, &r.inputs, None);
        let names: Vec<&str> = r.measures.iter().map(|m| m.measure.name()).collect();
        let meta = TraceMeta::resolve(&self.meta_args(), &facts, "latency", &names.join(","));
        write(dir, &Findings::of_latency(meta, r))
    }
}

impl FindingsArgs {
    /// Writes a watch run's findings: the whole run's report with every miss collected
    /// (no samples: a watch can run for days; the traces row has the counts).
    pub fn write_watch(
        &self,
        rep: &ExplainReport,
        misses: Vec<whylate::explain::Miss>,
        uncollected: u64,
        mode: &str,
        started: std::time::SystemTime,
    ) -> anyhow::Result<()> {
        let Some(dir) = &self.parquet else {
            return Ok(());
        };
        let mut r = rep.clone();
        r.misses = misses;
        if uncollected > 0 {
            r.notes.push(format!(
                "findings list the first {} misses; {uncollected} later ones are in the causes only",
                r.misses.len()
            ));
        }
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .ok()
        };
        let start_s = started
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let facts = TraceFacts {
            hostname: read("/proc/sys/kernel/hostname"),
            kernel: read("/proc/sys/kernel/osrelease"),
            started_unix_s: Some(start_s),
            mtime_unix_s: None,
            inputs: Vec::new(),
        };
        // Each run is its own trace: its start time is part of its id.
        let key = format!("watch {} {} {start_s}", r.from, r.to.join(","));
        let meta = TraceMeta::resolve(&self.meta_args(), &facts, mode, &key);
        write(dir, &Findings::of_explain(meta, &r))
    }
}

/// What the trace says about itself: the recording's snapshot, the inputs' identity and
/// the newest input's modification time.
pub fn facts(files: &[PathBuf], inputs: &[InputInfo], m: Option<&Machine>) -> TraceFacts {
    let mtime = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok()?.modified().ok())
        .max()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs());
    TraceFacts {
        hostname: m.and_then(|m| m.hostname.clone()),
        kernel: m.map(|m| m.kernel.clone()).filter(|k| !k.is_empty()),
        started_unix_s: m.and_then(|m| m.started_unix_s),
        mtime_unix_s: mtime,
        inputs: inputs
            .iter()
            .map(|i| {
                let name = Path::new(&i.path)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| i.path.clone());
                (name, i.bytes, i.events)
            })
            .collect(),
    }
}

/// Writes `f` under `dir` and says where.
pub fn write(dir: &Path, f: &Findings) -> anyhow::Result<()> {
    let w = whylate_fleet::write(dir, f)?;
    eprintln!(
        "whylate: wrote findings to {} ({} tables under {}, {} rows, {} KiB, trace {})",
        dir.display(),
        w.files,
        w.part,
        w.rows,
        w.bytes.div_ceil(1024),
        f.meta.trace_id
    );
    Ok(())
}
