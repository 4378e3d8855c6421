//! The flight recorder: each miss's window kept as a trace.dat (capped in files and
//! bytes, the oldest dropped first, so a run can last days), and the on-miss command.

use super::types::{KeepOptions, LiveMiss};
use crate::record::RecordError;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The windows written so far, oldest first.
pub(super) struct Keeper {
    o: KeepOptions,
    kept: VecDeque<(PathBuf, u64)>,
    bytes: u64,
    dropped: u64,
}

impl Keeper {
    pub(super) fn new(o: &KeepOptions) -> Result<Keeper, RecordError> {
        std::fs::create_dir_all(&o.dir).map_err(|source| RecordError::Io {
            path: o.dir.clone(),
            source,
        })?;
        Ok(Keeper {
            o: o.clone(),
            kept: VecDeque::new(),
            bytes: 0,
            dropped: 0,
        })
    }

    /// Writes miss `n`'s window with `write` (which returns the bytes written), then
    /// drops the oldest windows beyond the caps.
    pub(super) fn keep(
        &mut self,
        n: u64,
        start_ns: u64,
        write: impl FnOnce(&Path) -> Result<u64, RecordError>,
    ) -> Result<PathBuf, RecordError> {
        let name = format!(
            "miss-{n:06}-{}.{:06}.dat",
            start_ns / 1_000_000_000,
            start_ns % 1_000_000_000 / 1000
        );
        let path = self.o.dir.join(name);
        let bytes = write(&path)?;
        self.kept.push_back((path.clone(), bytes));
        self.bytes += bytes;
        while self.kept.len() > self.o.max_files.max(1)
            || (self.bytes > self.o.max_bytes && self.kept.len() > 1)
        {
            let Some((p, b)) = self.kept.pop_front() else {
                break;
            };
            let _ = std::fs::remove_file(&p);
            self.bytes -= b;
            self.dropped += 1;
        }
        Ok(path)
    }

    /// The windows still on disk, and how many were dropped.
    pub(super) fn into_kept(self) -> (Vec<PathBuf>, u64) {
        (self.kept.into_iter().map(|k| k.0).collect(), self.dropped)
    }
}

/// Starts `sh -c CMD` with the miss's facts in its environment; not waited for (reaped
/// later). A command that cannot start is not fatal: the miss says why.
pub(super) fn on_miss(cmd: &str, m: &LiveMiss) -> Result<Child, String> {
    let cause = (m.miss.blame.first())
        .map(|((cat, who), _)| format!("{cat} {}", who.label_in(*cat)))
        .unwrap_or_default();
    let secs = |ns: u64| format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
    let mut c = Command::new("sh");
    c.arg("-c").arg(cmd).stdin(Stdio::null());
    c.env("WHYLATE_MISS_N", m.n.to_string())
        .env("WHYLATE_MISS_START", secs(m.miss.start_ns))
        .env("WHYLATE_MISS_TID", m.miss.tid.to_string())
        .env("WHYLATE_MISS_CPU", m.miss.cpu.to_string())
        .env("WHYLATE_MISS_LATE_NS", m.miss.late_ns.to_string())
        .env(
            "WHYLATE_MISS_DURATION_NS",
            m.miss
                .duration_ns
                .map(|d| d.to_string())
                .unwrap_or_default(),
        )
        .env("WHYLATE_MISS_CAUSE", cause)
        .env(
            "WHYLATE_MISS_JSON",
            serde_json::to_string(m).unwrap_or_default(),
        );
    if let Some(p) = &m.kept {
        c.env("WHYLATE_MISS_FILE", p);
    }
    c.spawn().map_err(|e| format!("--on-miss `{cmd}`: {e}"))
}

#[cfg(test)]
mod tests {
    use super::{KeepOptions, Keeper};

    #[test]
    fn the_oldest_windows_go_first_when_a_cap_is_reached() {
        let dir = tempfile::tempdir().unwrap();
        let o = KeepOptions {
            dir: dir.path().join("kept"),
            max_files: 3,
            max_bytes: 25,
        };
        let mut k = Keeper::new(&o).unwrap();
        let write = |p: &std::path::Path| {
            std::fs::write(p, [0u8; 10]).unwrap();
            Ok(10)
        };
        for n in 1..=4 {
            k.keep(n, n * 1_500_000_000, write).unwrap();
        }
        // 4 files of 10 bytes, at most 3 and 25 bytes: the two oldest went.
        let (kept, dropped) = k.into_kept();
        let names: Vec<String> = (kept.iter())
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            ["miss-000003-4.500000.dat", "miss-000004-6.000000.dat"]
        );
        assert_eq!(dropped, 2);
        assert!(!o.dir.join("miss-000001-1.500000.dat").exists());
    }
}
