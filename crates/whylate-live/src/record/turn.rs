//! The recorder's threads take turns with the workload. A reader woken by its poll (at
//! its timeout, or when the buffer fills past `buffer_percent`) drains up to
//! milliseconds of pages in one go, and a /proc rescan takes about a
//! millisecond in the kernel. On a PREEMPT_NONE kernel, with EEVDF protecting a freshly
//! picked task for its whole slice (nice and SCHED_BATCH do not shorten it), a task woken
//! on that CPU meanwhile waited the whole burst: 1.2 to 3.9 ms seen, the recorder's cost
//! charged to the workload. So each breaks its work into turns of `TURN`.
//!
//! A reader yields between turns. A yield forfeits the rest of the yielder's slice (Linux
//! 6.18): beside a CPU hog a reader that always yielded got a quarter of its CPU time and
//! lost half the events, so it yields only while its ring buffer has room (`Fill`). The
//! rescan thread runs at nice 19, where a forfeited slice is a hundred milliseconds of
//! others' time: it sleeps briefly between turns instead, which forfeits nothing.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long a recorder thread works before it lets a task woken on its CPU run.
const TURN: Duration = Duration::from_micros(50);

/// How long the rescan sleeps between turns: long enough for a woken task to be picked.
const PAUSE: Duration = Duration::from_micros(100);

/// The free ring-buffer room a reader keeps before it yields.
const SPARE: u64 = 2 << 20;

/// When the current stretch of work began, and how long the pauses so far took.
pub(crate) struct Turn {
    began: Instant,
    paused: Duration,
}

impl Turn {
    /// A stretch of work begins now.
    pub(crate) fn start() -> Turn {
        Turn {
            began: Instant::now(),
            paused: Duration::ZERO,
        }
    }

    /// Whether the stretch has lasted `TURN` at `now`.
    fn due(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.began) >= TURN
    }

    /// Once the stretch has lasted `TURN`: yields the CPU if `may` says so, and starts
    /// the next stretch.
    pub(crate) fn give_way(&mut self, may: impl FnOnce() -> bool) {
        if self.due(Instant::now()) {
            if may() {
                // SAFETY: sched_yield has no preconditions.
                unsafe { libc::sched_yield() };
            }
            self.began = Instant::now();
        }
    }

    /// Once the stretch has lasted `TURN`: sleeps `PAUSE`, and starts the next stretch.
    pub(crate) fn pause(&mut self) {
        let now = Instant::now();
        if self.due(now) {
            std::thread::sleep(PAUSE);
            self.began = Instant::now();
            self.paused += self.began - now;
        }
    }

    /// The time spent in `pause`: what a caller timing its own work leaves out.
    pub(crate) fn paused(&self) -> Duration {
        self.paused
    }
}

/// How full one CPU's ring buffer is: its `stats` file's unread bytes against its size.
pub(crate) struct Fill {
    stats: File,
    capacity: u64,
    text: Vec<u8>,
}

impl Fill {
    /// The fill of the CPU whose tracefs directory is `cpu_dir` (`per_cpu/cpuN`); `None`
    /// where the kernel lacks either file.
    pub(crate) fn open(cpu_dir: &Path) -> Option<Fill> {
        let kb = std::fs::read_to_string(cpu_dir.join("buffer_size_kb")).ok()?;
        let kb: u64 = kb.split_whitespace().next()?.parse().ok()?;
        let stats = File::open(cpu_dir.join("stats")).ok()?;
        Some(Fill {
            stats,
            capacity: kb * 1024,
            text: Vec::with_capacity(256),
        })
    }

    /// Whether under three quarters of the buffer is unread and `SPARE` is free. Since
    /// Linux 6.8 the kernel wakes a poller at half full (`buffer_percent`), so a reader
    /// yields through a whole ordinary drain; the free room (2 MiB: 20 ms at 100 MB/s)
    /// pays a yield's cost, the other task running until the next tick (4 ms at HZ=250).
    /// A small `--buffer-kb` never has it: its reader does not yield. Unknown, or a count
    /// past the buffer's size (kernels before the 2023 fix of the stats' bytes drift),
    /// is no room.
    pub(crate) fn roomy(&mut self) -> bool {
        let cap = self.capacity;
        (self.unread()).is_some_and(|b| b < cap / 4 * 3 && cap.saturating_sub(b) >= SPARE)
    }

    /// The `bytes:` line of `stats`: what the kernel holds that no reader took yet.
    fn unread(&mut self) -> Option<u64> {
        self.text.clear();
        self.text.resize(256, 0);
        // tracefs renders `stats` afresh on every read.
        let n = self.stats.read_at(&mut self.text, 0).ok()?;
        unread_in(std::str::from_utf8(&self.text[..n]).ok()?)
    }
}

/// The unread bytes a ring buffer's `stats` text gives.
fn unread_in(stats: &str) -> Option<u64> {
    let line = stats.lines().find_map(|l| l.strip_prefix("bytes:"))?;
    line.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// per_cpu/cpu0/stats as Linux 6.18 writes it.
    const STATS: &str = "entries: 5321\noverrun: 0\ncommit overrun: 0\nbytes: 212840\noldest event ts: 48327.650001\nnow ts: 48327.651106\ndropped events: 0\nread events: 77\n";

    #[test]
    fn the_unread_bytes_are_read_from_the_stats_text() {
        assert_eq!(unread_in(STATS), Some(212_840));
        assert_eq!(unread_in("entries: 3\n"), None);
        assert_eq!(unread_in("bytes: many\n"), None);
    }

    #[test]
    fn a_buffer_is_roomy_under_three_quarters_full_with_2_mib_free() {
        let dir = tempfile::tempdir().unwrap();
        let fill = |kb: u64, stats: &str| {
            std::fs::write(dir.path().join("buffer_size_kb"), format!("{kb}\n")).unwrap();
            std::fs::write(dir.path().join("stats"), stats).unwrap();
            Fill::open(dir.path()).unwrap().roomy()
        };
        // 8 MiB: 212,840 bytes unread, then exactly three quarters.
        assert!(fill(8192, STATS));
        assert!(!fill(8192, "bytes: 6291456\n"));
        // 1 MiB: never 2 MiB free, so never roomy.
        assert!(!fill(1024, "bytes: 0\n"));
        // Unknown, and a count past the size, are no room.
        assert!(!fill(8192, "entries: 1\n"));
        assert!(!fill(8192, "bytes: 9000000\n"));
        std::fs::remove_file(dir.path().join("buffer_size_kb")).unwrap();
        assert!(Fill::open(dir.path()).is_none());
    }

    #[test]
    fn a_turn_is_due_once_it_has_lasted() {
        let t = Turn::start();
        assert!(!t.due(t.began + TURN / 2));
        assert!(t.due(t.began + TURN));
        assert!(
            !t.due(t.began - TURN),
            "a clock read before the start is not due"
        );
    }
}
