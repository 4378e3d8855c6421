//! The run: its state, its loop (take pages, explain a window each tick, report what
//! settles) and its outcome.

use super::keep::Keeper;
use super::ring::{RawPage, Ring, ToChannel};
use super::settle::Settler;
use super::types::{LiveMiss, MinuteCost, Status, WatchError, WatchOptions, WatchResult, Watcher};
use crate::record::{self, MemPages, Meta, RecordError, Tracing};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};
use whylate::explain::{self, ExplainReport, Learned, Miss, Mode, RunSummary, Window};
use whylate::read::ksyms::Given;
use whylate::read::{OpenOptions, ReadError};

/// The readers' lag: a page is read within the readers' 100 ms poll period, so a window
/// ending this long ago holds every CPU's records.
pub(super) const LAG_NS: u64 = 300_000_000;

/// One run's state.
pub(super) struct Run<'a> {
    o: &'a WatchOptions,
    mode: Mode,
    deadline_source: String,
    pub(super) ring: Ring,
    settler: Settler,
    summary: RunSummary,
    /// What a kept window carries besides its pages (kallsyms included: it must explain
    /// anywhere).
    meta: Meta,
    /// The same without kallsyms, for the windows explained here: they get the symbols
    /// through `open`, so each tick writes pages, not 5 MB of symbol text (a large
    /// write() holds a CPU in the kernel, which a real-time workload there feels).
    lean: Meta,
    open: OpenOptions,
    window_name: PathBuf,
    /// The clocks and the kernel's task names.
    host: Box<dyn Host + 'a>,
    keeper: Option<Keeper>,
    /// Trace time when tracing began (the first window's floor).
    t0: u64,
    latest: u64,
    misses: u64,
    windows: u64,
    never_matched: Option<String>,
    lost: Vec<u64>,
    children: Vec<std::process::Child>,
    last_status: Option<Status>,
    /// What each minute cost so far ([`MinuteCost`]), and the process's CPU time at the
    /// last status.
    minutes: Vec<MinuteCost>,
    first_minute: u64,
    cpu_seen: u64,
}

/// Minutes whose costs a status carries at most (a day).
const MINUTES_KEPT: usize = 1440;

/// What a run takes from the machine: its clocks and the kernel's task names. Live, the
/// tracing session's ([`Live`]); in tests a script's, so ticks replay recorded pages at
/// any pace, the same on every machine.
pub(super) trait Host {
    /// The trace clock now, when it is the monotonic clock (`None`: the trace has its
    /// own clock, and the latest page read is now).
    fn trace_now(&self) -> Option<u64>;
    /// Time since the run began.
    fn elapsed(&self) -> Duration;
    /// This process's CPU time so far, ns.
    fn cpu_ns(&self) -> u64;
    /// The kernel's saved cmdlines now (tasks come and go).
    fn cmdlines(&self) -> Vec<u8>;
}

/// The live machine: CLOCK_MONOTONIC, tracefs's saved_cmdlines, the process's CPU time.
pub(super) struct Live {
    mono: bool,
    started: Instant,
    cmdlines: PathBuf,
}

impl Live {
    /// The host of a tracing session.
    pub(super) fn of(t: &Tracing<ToChannel>) -> Live {
        Live {
            mono: t.clock == "mono",
            started: t.started,
            cmdlines: t.root.join("saved_cmdlines"),
        }
    }
}

impl Host for Live {
    fn trace_now(&self) -> Option<u64> {
        self.mono.then(mono_now)
    }
    fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
    fn cpu_ns(&self) -> u64 {
        record::cpu_time_ns()
    }
    fn cmdlines(&self) -> Vec<u8> {
        record::read_tracefs(&self.cmdlines)
    }
}

impl<'a> Run<'a> {
    /// A run of `o` over pages described by `meta` (a trace.dat's header and formats),
    /// timed and named by `host`.
    pub(super) fn new(
        o: &'a WatchOptions,
        (meta, host): (Meta, Box<dyn Host + 'a>),
        keeper: Option<Keeper>,
        window_name: PathBuf,
    ) -> Run<'a> {
        let mut mode = o.mode.clone();
        if let Mode::Cycles(c) = &mut mode {
            c.learned = Learned::shared();
        }
        let deadline = mode.deadline_ns();
        let open = OpenOptions {
            kallsyms: Some(Given::new("/proc/kallsyms", meta.kallsyms.clone().into())),
            ..OpenOptions::default()
        };
        let span = span_for(deadline);
        Run {
            o,
            mode,
            deadline_source: if deadline.is_some() { "given" } else { "" }.into(),
            ring: Ring::default(),
            settler: Settler::new(o.before_ns, o.after_ns, span),
            summary: RunSummary::new(20),
            meta: meta.clone(),
            lean: Meta {
                kallsyms: Vec::new(),
                ..meta
            },
            open,
            window_name,
            keeper,
            t0: host.trace_now().map_or(0, |n| n.saturating_sub(LAG_NS)),
            latest: 0,
            misses: 0,
            windows: 0,
            never_matched: None,
            lost: Vec::new(),
            children: Vec::new(),
            last_status: None,
            minutes: Vec::new(),
            first_minute: 0,
            // Setting tracing up is not the first minute's cost.
            cpu_seen: host.cpu_ns(),
            host,
        }
    }
}

/// The longest sample every window is made to hold whole: ten deadlines, at least 1 s.
fn span_for(deadline: Option<u64>) -> u64 {
    deadline.map_or(0, |d| 10 * d).max(1_000_000_000)
}

/// Starts the command to watch, if there is one.
pub(super) fn spawn(o: &WatchOptions) -> Result<Option<std::process::Child>, RecordError> {
    let Some((name, args)) = o.command.split_first() else {
        return Ok(None);
    };
    let mut cmd = std::process::Command::new(name);
    cmd.args(args);
    if o.command_stdout_to_stderr {
        use std::os::fd::AsFd;
        if let Ok(fd) = std::io::stderr().as_fd().try_clone_to_owned() {
            cmd.stdout(fd);
        }
    }
    let child = cmd.spawn().map_err(|source| RecordError::Spawn {
        cmd: o.command.join(" "),
        source,
    })?;
    Ok(Some(child))
}

/// CLOCK_MONOTONIC now, ns: the trace's clock when it is `mono`.
fn mono_now() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Writes the pages of `[from, to]` as a trace.dat at `path`.
fn write_window(
    ring: &Ring,
    meta: &Meta,
    (from, to): (u64, u64),
    path: &Path,
) -> Result<u64, RecordError> {
    let mut cpus: Vec<MemPages> = ring.window(from, to);
    record::write_dat(path, meta, &mut cpus)
}

/// Explains the window `[from, to]` of the ring, handed over in memory as a trace.dat
/// (`name` in messages); a window where the selectors matched nothing yet is empty, not
/// an error (the reason is kept for the end).
fn explain_window(
    (ring, meta): (&Ring, &Meta),
    (from, to): (u64, u64),
    name: &Path,
    (open, mode): (&OpenOptions, &Mode),
) -> Result<Result<ExplainReport, String>, ReadError> {
    let bytes = record::dat_in_memory(meta, ring.window(from, to));
    let one = whylate::read::Opened::pieces(name, bytes, open)?;
    match explain::run(one, open, mode) {
        Ok(x) => Ok(Ok(x.report)),
        Err(ReadError::NoMatch { why }) => Ok(Err(why)),
        Err(e) => Err(e),
    }
}

/// Samples a window must hold before a deadline is chosen from it (when none is given)...
const LEARN_SAMPLES: usize = 100;
/// ... or how long a rare sample may be waited for (the window grows meanwhile).
const LEARN_TIME: Duration = Duration::from_secs(10);

/// Hands the memory a window's analysis freed back to the kernel: glibc keeps freed
/// heap pages of the large, short-lived tables (the timeline, the decoded events) otherwise, and
/// RSS would stay at the largest window's high-water mark for the rest of the run.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory; 0 keeps no padding.
    unsafe {
        libc::malloc_trim(0);
    }
}

impl Run<'_> {
    /// Takes pages and explains windows until the run should end; returns the command's
    /// exit code (none when --duration or --until stopped it).
    pub(super) fn watch_loop(
        &mut self,
        t: &Tracing<ToChannel>,
        rx: &Receiver<RawPage>,
        mut child: Option<&mut Child>,
        stop: &AtomicBool,
        out: &mut dyn Watcher,
    ) -> Result<Option<i32>, WatchError> {
        // This thread explains windows: at nice 19 its work never preempts the workload.
        // SAFETY: setpriority on the calling thread (Linux nice is per thread).
        unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
        let mut next_tick = Instant::now() + Duration::from_millis(500);
        let mut stop_seen = None;
        let mut ended_by_us = false;
        loop {
            match rx.recv_timeout(Duration::from_millis(20)) {
                Ok(p) => {
                    self.take(p);
                    while let Ok(p) = rx.try_recv() {
                        self.take(p);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if let Some(c) = child.as_mut() {
                if let Ok(Some(st)) = c.try_wait() {
                    use std::os::unix::process::ExitStatusExt;
                    // Ended by --duration or --until: its status is ours, not its own.
                    if ended_by_us {
                        return Ok(None);
                    }
                    return Ok(Some(
                        st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0)),
                    ));
                }
            }
            let timed_out = self.o.duration.is_some_and(|d| self.host.elapsed() >= d);
            let enough = self.o.until.is_some_and(|n| self.misses >= n);
            ended_by_us |= (timed_out || enough) && !stop.load(Ordering::Acquire);
            if stop.load(Ordering::Acquire) || timed_out || enough {
                match child.as_mut() {
                    None => break,
                    Some(c) => record::stop_child(c, &mut stop_seen, timed_out || enough),
                }
            }
            if Instant::now() >= next_tick {
                let t_start = Instant::now();
                self.lost = (0..self.ring.lost.len() as u32)
                    .map(|c| t.lost(c))
                    .collect();
                self.tick(false, out)?;
                let took = t_start.elapsed();
                next_tick = Instant::now() + Duration::from_millis(500).max(took * 2);
            }
        }
        Ok(None)
    }

    /// The kernel's lost-event counts per CPU at the end of tracing.
    pub(super) fn set_lost(&mut self, lost: Vec<u64>) {
        self.lost = lost;
    }

    /// Takes a page a reader handed over.
    pub(super) fn take(&mut self, p: RawPage) {
        self.latest = self.latest.max(p.ts);
        self.ring.push(p, self.o.ring_bytes);
    }

    /// Explains the window that ends a reader's lag ago (`last`: everything read).
    pub(super) fn tick(&mut self, last: bool, out: &mut dyn Watcher) -> Result<(), WatchError> {
        self.reap();
        let now = self.host.trace_now().unwrap_or(self.latest);
        let to = if last {
            u64::MAX
        } else {
            now.saturating_sub(LAG_NS)
        };
        let floor = self.ring.complete_from().unwrap_or(self.t0).max(self.t0);
        let learning = self.mode.deadline_ns().is_none();
        let from = if learning {
            floor
        } else {
            self.settler.start(floor)
        };
        if to <= from || self.ring.bytes() == 0 {
            return Ok(());
        }
        self.meta.cmdlines = self.host.cmdlines();
        self.lean.cmdlines.clone_from(&self.meta.cmdlines);
        self.windows += 1;
        let (wall, cpu) = (Instant::now(), self.host.cpu_ns());
        let r = explain_window(
            (&self.ring, &self.lean),
            (from, to),
            &self.window_name,
            (&self.open, &self.mode),
        );
        let spent = self.host.cpu_ns().saturating_sub(cpu);
        let m = self.minute();
        m.windows += 1;
        m.traced_ns += to.min(now.max(from)) - from;
        m.analysis_ns += wall.elapsed().as_nanos() as u64;
        m.analysis_cpu_ns += spent;
        let r = match r? {
            Ok(r) => r,
            Err(why) => {
                self.never_matched.get_or_insert(why);
                self.status(out);
                return Ok(());
            }
        };
        self.never_matched = None;
        if learning && !self.learn(&r, last) {
            self.status(out);
            return Ok(());
        }
        self.settler.deadline = self.mode.deadline_ns();
        let first = from == floor && self.settler.start(floor) == floor;
        let settled = self.settler.settle(&r.windows, (from, to), first, last);
        let misses = self.settled_misses(&r, &settled);
        self.summary.add(&r, &settled, &misses);
        for m in misses {
            self.report_miss(m, &r, to, out)?;
        }
        if !last {
            self.ring.trim(self.settler.start(floor).saturating_sub(1));
        }
        release_freed_memory();
        self.status(out);
        Ok(())
    }

    /// Without a deadline: once a window holds enough samples (or the run ends), its
    /// policy's deadline is fixed for the rest of the run. False while still learning.
    fn learn(&mut self, r: &ExplainReport, last: bool) -> bool {
        let long = self.host.elapsed() >= LEARN_TIME && !r.windows.is_empty();
        if r.windows.len() < LEARN_SAMPLES && !long && !last {
            return false;
        }
        let Some(d) = r.deadline_ns else {
            return false;
        };
        self.mode = self.mode.with_deadline(Some(d));
        self.deadline_source = format!(
            "learnt from the first {} samples and kept: {}",
            r.windows.len(),
            r.deadline_source
        );
        self.settler.span = span_for(Some(d));
        true
    }

    /// The explained misses among `settled`, matched by start, thread and CPU.
    fn settled_misses<'r>(&self, r: &'r ExplainReport, settled: &[Window]) -> Vec<&'r Miss> {
        let mut v: Vec<&Miss> = (settled.iter().filter(|w| w.miss))
            .filter_map(|w| {
                (r.misses.iter())
                    .find(|m| m.start_ns == w.start_ns && m.tid == w.tid && m.cpu == w.cpu)
            })
            .collect();
        v.sort_by_key(|m| m.start_ns);
        v
    }

    /// Reports one settled miss: keeps its window, runs the on-miss command.
    fn report_miss(
        &mut self,
        m: &Miss,
        r: &ExplainReport,
        to: u64,
        out: &mut dyn Watcher,
    ) -> Result<(), WatchError> {
        self.misses += 1;
        self.minute().misses += 1;
        let end = m.start_ns + m.duration_ns.unwrap_or(m.late_ns);
        let (from, until) = (
            m.start_ns.saturating_sub(self.o.before_ns),
            end + self.o.after_ns,
        );
        let kept = match self.keeper.as_mut() {
            Some(k) => Some(k.keep(self.misses, m.start_ns, |p| {
                write_window(&self.ring, &self.meta, (from, until), p)
            })?),
            None => None,
        };
        let now = self.host.trace_now().unwrap_or(to);
        let mut lm = LiveMiss {
            n: self.misses,
            miss: m.clone(),
            deadline_ns: self.mode.deadline_ns(),
            lost: self.ring.lost_in(m.start_ns, end),
            kept,
            explained_after_ns: now.saturating_sub(end),
            on_miss_error: None,
        };
        if let Some(cmd) = &self.o.on_miss {
            match super::keep::on_miss(cmd, &lm) {
                Ok(c) => self.children.push(c),
                Err(e) => lm.on_miss_error = Some(e),
            }
        }
        out.miss(&lm, r);
        Ok(())
    }

    /// The on-miss commands that ended are reaped (no zombies over a long run).
    fn reap(&mut self) {
        self.children
            .retain_mut(|c| !matches!(c.try_wait(), Ok(Some(_))));
    }

    /// The current wall-clock minute's costs.
    fn minute(&mut self) -> &mut MinuteCost {
        let now = self.host.elapsed().as_secs() / 60;
        let i = now.saturating_sub(self.first_minute) as usize;
        if self.minutes.len() <= i {
            self.minutes.resize(i + 1, MinuteCost::default());
        }
        if self.minutes.len() > MINUTES_KEPT {
            let gone = self.minutes.len() - MINUTES_KEPT;
            self.minutes.drain(..gone);
            self.first_minute += gone as u64;
        }
        self.minutes.last_mut().expect("the current minute")
    }

    fn status(&mut self, out: &mut dyn Watcher) {
        let cpu = self.host.cpu_ns();
        let spent = cpu.saturating_sub(self.cpu_seen);
        self.cpu_seen = cpu;
        self.minute().cpu_ns += spent;
        let wall = self.host.elapsed();
        let s = Status {
            elapsed_ns: wall.as_nanos() as u64,
            report: self.summary.report(),
            deadline_ns: self.mode.deadline_ns(),
            lost: self.lost.clone(),
            recorder_cpu: cpu as f64 / wall.as_nanos().max(1) as f64,
            ring_bytes: self.ring.bytes(),
            windows: self.windows,
            minutes: self.minutes.clone(),
            first_minute: self.first_minute,
        };
        out.status(&s);
        self.last_status = Some(s);
    }

    /// The run's outcome: the whole run's report, or why nothing was measured.
    pub(super) fn finish(
        mut self,
        exit_code: Option<i32>,
        stale_instances: Vec<String>,
        tracepoints: Vec<String>,
        out: &mut dyn Watcher,
    ) -> Result<WatchResult, WatchError> {
        if let (Some(why), 0) = (&self.never_matched, self.summary.stats().count) {
            return Err(WatchError::Read(whylate::read::ReadError::NoMatch {
                why: why.clone(),
            }));
        }
        self.status(out);
        for c in &mut self.children {
            let _ = c.wait();
        }
        let mut report = self.summary.report();
        if let Some(r) = &mut report {
            r.deadline_ns = self.mode.deadline_ns();
            r.deadline_source = self.deadline_source.clone();
            r.inputs.clear();
        }
        let (kept, dropped) = match self.keeper {
            Some(k) => k.into_kept(),
            None => (Vec::new(), 0),
        };
        Ok(WatchResult {
            report,
            status: self.last_status.take().expect("a status was just made"),
            deadline_source: self.deadline_source,
            misses: self.misses,
            squeezed_pages: self.ring.squeezed,
            kept,
            dropped,
            exit_code,
            stale_instances,
            tracepoints,
        })
    }
}

impl From<std::io::Error> for WatchError {
    fn from(e: std::io::Error) -> WatchError {
        WatchError::Record(RecordError::Io {
            path: std::path::PathBuf::new(),
            source: e,
        })
    }
}
