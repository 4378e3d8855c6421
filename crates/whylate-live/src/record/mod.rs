//! `whylate record`: trace through tracefs into a trace.dat (v6) that trace-cmd reads too.
//!
//! Everything happens in a tracefs instance of our own (`instances/whylate-PID`): its own
//! ring buffers, clock and event switches, so another tracer on the machine is never
//! disturbed, and removing the directory undoes every setting. One thread per CPU moves
//! whole ring-buffer pages from `per_cpu/cpuN/trace_pipe_raw` to a private spool file;
//! at the end the spools are joined behind the trace.dat header. A `Session` guard
//! restores tracefs (instance removed, tracefs unmounted if we mounted it) on every path
//! out, including errors and panics; signals only set the stop flag the main loop polls.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use whylate::read::ringbuf::PageLayout;
use whylate::read::tep::Endian;
use whylate::snapshot::{Rescan, Snapshot};

mod dat;
mod error;
mod events;
#[cfg(test)]
pub(crate) mod readback;
mod readers;
mod timerlat;
mod tracefs;
mod turn;

use dat::{collect_formats, uname};
pub(crate) use dat::{dat_in_memory, write_dat, MemPages, Meta};
pub use error::RecordError;
use error::{check_root, ioe};
use events::{exclude_own_syscalls, resolve_events};
use readers::{join_readers, spawn_readers};
pub(crate) use readers::{PageSink, Reader};
pub use timerlat::{
    check_timerlat, record_timerlat, timerlat_globals, timerlat_in, timerlat_plan, timerlat_undo,
    Timerlat, DEFAULT_PERIOD_US, STACK_US, WATCH_EVENTS as TIMERLAT_WATCH_EVENTS,
};
pub(crate) use tracefs::read_tracefs;
pub use tracefs::reset;
use tracefs::{online_cpus, read_tracefs_string, stale_instances, write_tracefs, Session};

/// What to record.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// Presets and/or tracepoint names (`sched_switch`, `irq:irq_handler_entry`).
    pub events: Vec<String>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Ring buffer per CPU, KiB.
    pub buffer_kb: u32,
    /// Output file.
    pub output: PathBuf,
    /// Command to trace (stop when it exits).
    pub command: Vec<String>,
    /// Where the command's stdout goes; inherited when `None`.
    pub command_stdout: Option<PathBuf>,
}

/// Default ring buffer per CPU: 8 MiB holds ~0.3 s of a 1 M events/s burst per CPU while
/// the reader catches up.
pub const DEFAULT_BUFFER_KB: u32 = 8192;

/// Per-CPU outcome.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct CpuResult {
    /// CPU.
    pub cpu: u32,
    /// Events written.
    pub events: u64,
    /// Events the kernel lost (overrun + dropped), from `per_cpu/cpuN/stats`.
    pub lost: u64,
    /// Pages written.
    pub pages: u64,
}

/// The outcome of a recording.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RecordResult {
    /// Output file.
    pub output: PathBuf,
    /// Per CPU.
    pub cpus: Vec<CpuResult>,
    /// Events written.
    pub events: u64,
    /// Events lost.
    pub lost: u64,
    /// Wall time traced, ns.
    pub duration_ns: u64,
    /// Bytes of the output.
    pub bytes: u64,
    /// Recorder CPU time (user + system) of this process, ns.
    pub cpu_time_ns: u64,
    /// The traced command's exit code (128 + signal when it was killed).
    pub exit_code: Option<i32>,
    /// Tracepoints enabled.
    pub tracepoints: Vec<String>,
    /// Trace clock used.
    pub clock: String,
    /// Instances left by killed runs that were found (and removed with `reset`).
    pub stale_instances: Vec<String>,
    /// Advice when events were lost.
    pub suggestion: Option<String>,
}

/// The directory the output (and the per-CPU spool files beside it) goes to; an error
/// naming the output when it does not exist.
fn output_dir(output: &Path) -> Result<PathBuf, RecordError> {
    let dir = output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    if dir.is_dir() {
        return Ok(dir);
    }
    Err(RecordError::Io {
        path: output.to_path_buf(),
        source: io::Error::new(
            io::ErrorKind::NotFound,
            format!("its directory {} does not exist", dir.display()),
        ),
    })
}

pub(crate) fn cpu_time_ns() -> u64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid out pointer.
    unsafe {
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
    }
    let t = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000;
    t(ru.ru_utime) + t(ru.ru_stime)
}

/// A tracefs instance configured and tracing, with one reader per CPU moving pages to
/// its sink: what `record` and `watch` share. Dropping it stops the readers and restores
/// tracefs (the instance removed, tracefs unmounted if it was mounted for us).
pub(crate) struct Tracing<S: PageSink> {
    session: Session,
    pub(crate) root: PathBuf,
    pub(crate) inst: PathBuf,
    events: Vec<events::Wanted>,
    pub(crate) clock: &'static str,
    pub(crate) page: usize,
    header_page: String,
    /// Instances left by killed runs.
    pub(crate) stale: Vec<String>,
    /// The machine at the start, with the paths of descriptors opened since.
    pub(crate) snapshot: Snapshot,
    pub(crate) rescan: Rescan,
    reader_stop: Arc<AtomicBool>,
    handles: Vec<readers::ReaderThread<S>>,
    /// When tracing was switched on.
    pub(crate) started: Instant,
}

/// What stopping a [`Tracing`] hands back.
pub(crate) struct Stopped<S> {
    pub(crate) readers: Vec<Reader<S>>,
    pub(crate) cpus: Vec<CpuResult>,
    pub(crate) meta: Meta,
    pub(crate) duration_ns: u64,
}

impl<S: PageSink> Tracing<S> {
    /// Mounts tracefs if needed, makes our instance, enables `events` with their filters
    /// (and the timerlat tracer, when asked), starts a reader per CPU into `sink(cpu)`,
    /// and switches tracing on.
    pub(crate) fn start(
        events: &[String],
        buffer_kb: u32,
        timerlat: Option<Timerlat>,
        sink: impl FnMut(u32, usize, PageLayout) -> Result<S, RecordError>,
    ) -> Result<Tracing<S>, RecordError> {
        check_root()?;
        let mut session = Session::open()?;
        let root = session.mount.root.clone();
        let stale: Vec<String> = (stale_instances(&root).iter())
            .map(|p| p.file_name().unwrap_or_default().to_string_lossy().into())
            .collect();
        let events = resolve_events(&root, events)?;
        let inst = (root.join("instances")).join(format!("whylate-{}", std::process::id()));
        fs::create_dir(&inst).map_err(ioe(&inst))?;
        session.instance = Some(inst.clone());
        let clock = configure(&root, &inst, buffer_kb, &events)?;
        if let Some(tl) = timerlat {
            tl.start_in(&root, &inst, &mut session)?;
        }
        let header_page = read_tracefs_string(&root.join("events/header_page"));
        let page = fs::read_to_string(inst.join("buffer_subbuf_size_kb"))
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .map(|kb| kb * 1024)
            .unwrap_or(4096);
        let layout = PageLayout::from_header_page(&header_page, 8, Endian::default());
        let cpus = online_cpus(&inst);
        let mut snapshot = Snapshot::take();
        snapshot.recorder = Some(std::process::id() as i32);
        let rescan = Rescan::new(&snapshot);
        let reader_stop = Arc::new(AtomicBool::new(false));
        let (handles, own) = spawn_readers(&cpus, &inst, page, layout, &reader_stop, sink)?;
        let mut t = Tracing {
            session,
            root,
            inst,
            events,
            clock,
            page,
            header_page,
            stale,
            snapshot,
            rescan,
            reader_stop,
            handles,
            started: Instant::now(),
        };
        exclude_own_syscalls(&t.inst, &t.events, &own);
        t.started = Instant::now();
        write_tracefs(&t.inst, "tracing_on", "1")?;
        Ok(t)
    }

    /// The tracepoints enabled, as `system:event[filter]`.
    pub(crate) fn tracepoints(&self) -> Vec<String> {
        (self.events.iter())
            .map(|(s, e, f)| match f {
                Some(f) => format!("{s}:{e}[{f}]"),
                None => format!("{s}:{e}"),
            })
            .collect()
    }

    /// What a trace.dat of this recording holds besides its pages; `cpustats` are the
    /// per-CPU `stats` texts (empty while tracing).
    pub(crate) fn meta(&self, cpustats: Vec<String>) -> Meta {
        let enabled: Vec<(String, String)> = (self.events.iter())
            .map(|e| (e.0.clone(), e.1.clone()))
            .collect();
        let trace_clock = fs::read_to_string(self.inst.join("trace_clock")).unwrap_or_default();
        Meta {
            page: self.page,
            header_page: self.header_page.clone(),
            header_event: read_tracefs_string(&self.root.join("events/header_event")),
            formats: collect_formats(&self.root, &enabled),
            kallsyms: read_tracefs(Path::new("/proc/kallsyms")),
            printk: read_tracefs(&self.root.join("printk_formats")),
            cmdlines: read_tracefs(&self.root.join("saved_cmdlines")),
            clock: trace_clock.trim().to_string(),
            uname: uname(),
            cpustats,
            snapshot: serde_json::to_vec(&self.snapshot).unwrap_or_default(),
        }
    }

    /// Per CPU: events lost so far (the buffer's overruns and drops).
    pub(crate) fn lost(&self, cpu: u32) -> u64 {
        cpu_stats(&self.inst, cpu).1
    }

    /// Switches tracing off, drains and joins the readers, and removes the instance.
    pub(crate) fn stop(mut self) -> Result<Stopped<S>, RecordError> {
        self.rescan.scan(&mut self.snapshot);
        let duration_ns = self.started.elapsed().as_nanos() as u64;
        let _ = write_tracefs(&self.inst, "tracing_on", "0");
        self.reader_stop.store(true, Ordering::Release);
        let (readers, reader_err) = join_readers(std::mem::take(&mut self.handles));
        let (cpus, cpustats) = per_cpu_results(&self.inst, &readers);
        let meta = self.meta(cpustats);
        // Tracing is over: put tracefs back before the (slower) file assembly.
        self.session.remove_instance();
        if let Some(e) = reader_err {
            return Err(RecordError::Io {
                path: self.inst.join("per_cpu"),
                source: e,
            });
        }
        Ok(Stopped {
            readers,
            cpus,
            meta,
            duration_ns,
        })
    }
}

impl<S: PageSink> Drop for Tracing<S> {
    fn drop(&mut self) {
        // An error or panic before `stop`: the readers hold the instance's files open.
        let _ = fs::write(self.inst.join("tracing_on"), "0");
        self.reader_stop.store(true, Ordering::Release);
        let _ = join_readers(std::mem::take(&mut self.handles));
    }
}

/// Records until `stop` is set, the duration passes, or the command exits.
pub fn record(opts: &RecordOptions, stop: Arc<AtomicBool>) -> Result<RecordResult, RecordError> {
    check_root()?;
    // Checked before tracefs is touched: a typo in -o must not cost a recording.
    let out_dir = output_dir(&opts.output)?;
    let mut t = Tracing::start(&opts.events, opts.buffer_kb, None, |cpu, page, _| {
        readers::spool(&out_dir, cpu, page as u64)
    })?;
    let child = spawn_command(opts);
    let mut exit_code = None;
    let spawn_err = match child {
        Ok(mut child) => {
            let run = Run {
                opts,
                stop: &stop,
                started: t.started,
            };
            exit_code = run.wait(child.as_mut(), &mut t.rescan, &mut t.snapshot);
            None
        }
        // The readers are running: the instance must be taken down in order.
        Err(e) => Some(e),
    };
    let tracepoints = t.tracepoints();
    let (clock, stale) = (t.clock, std::mem::take(&mut t.stale));
    let mut st = t.stop()?;
    if let Some(e) = spawn_err {
        return Err(e);
    }
    let bytes = write_dat(&opts.output, &st.meta, &mut st.readers)?;
    let events_n: u64 = st.cpus.iter().map(|c| c.events).sum();
    let lost: u64 = st.cpus.iter().map(|c| c.lost).sum();
    let suggestion = (lost > 0).then(|| {
        format!(
            "{lost} events were lost: record again with a bigger ring buffer, e.g. --buffer-kb {}, or fewer events",
            (opts.buffer_kb as u64 * 4).min(1 << 20)
        )
    });
    Ok(RecordResult {
        output: opts.output.clone(),
        cpus: st.cpus,
        events: events_n,
        lost,
        duration_ns: st.duration_ns,
        bytes,
        cpu_time_ns: cpu_time_ns(),
        exit_code,
        tracepoints,
        clock: clock.into(),
        stale_instances: stale,
        suggestion,
    })
}

/// Sets up the instance before tracing starts: tracing off, the buffer size, the clock
/// (returned), each event's filter and enable.
fn configure(
    root: &Path,
    inst: &Path,
    buffer_kb: u32,
    events: &[(String, String, Option<String>)],
) -> Result<&'static str, RecordError> {
    write_tracefs(inst, "tracing_on", "0")?;
    write_tracefs(inst, "buffer_size_kb", &buffer_kb.to_string())?;
    let clocks = fs::read_to_string(inst.join("trace_clock")).unwrap_or_default();
    // mono matches CLOCK_MONOTONIC, the clock programs log their own deadlines with.
    let clock = if clocks
        .split_whitespace()
        .any(|c| c.trim_matches(['[', ']']) == "mono")
    {
        "mono"
    } else {
        "local"
    };
    write_tracefs(inst, "trace_clock", clock)?;
    for (sys, ev, filter) in events {
        if let Some(f) = filter {
            let path = inst.join(format!("events/{sys}/{ev}/filter"));
            if let Err(e) = fs::write(&path, f) {
                return Err(bad_filter(root, sys, ev, f, e));
            }
        }
        write_tracefs(inst, &format!("events/{sys}/{ev}/enable"), "1")?;
    }
    Ok(clock)
}

/// The kernel refused `filter` on `sys:ev`: the error names the event's fields.
fn bad_filter(root: &Path, sys: &str, ev: &str, filter: &str, e: io::Error) -> RecordError {
    let format = read_tracefs_string(&root.join(format!("events/{sys}/{ev}/format")));
    let fields: Vec<String> = whylate::read::tep::parse_format(&format, sys)
        .map(|f| {
            f.fields
                .iter()
                .filter(|x| !x.name.starts_with("common_"))
                .map(|x| x.name.to_string())
                .collect()
        })
        .unwrap_or_default();
    RecordError::BadFilter {
        event: format!("{sys}:{ev}"),
        filter: filter.to_string(),
        why: e.to_string(),
        fields: fields.join(" "),
    }
}

/// Starts the command to trace, if there is one (its stdout to `command_stdout`).
pub(crate) fn spawn_command(
    opts: &RecordOptions,
) -> Result<Option<std::process::Child>, RecordError> {
    if opts.command.is_empty() {
        return Ok(None);
    }
    let mut cmd = std::process::Command::new(&opts.command[0]);
    cmd.args(&opts.command[1..]);
    if let Some(p) = &opts.command_stdout {
        let f = File::create(p).map_err(|source| RecordError::Io {
            path: p.clone(),
            source,
        })?;
        cmd.stdout(f);
    }
    let child = cmd.spawn().map_err(|source| RecordError::Spawn {
        cmd: opts.command.join(" "),
        source,
    })?;
    Ok(Some(child))
}

/// The recording as it runs: what ends it (the command, --duration, a stop signal).
struct Run<'a> {
    opts: &'a RecordOptions,
    stop: &'a AtomicBool,
    started: Instant,
}

impl Run<'_> {
    /// Waits for the end, rescanning /proc meanwhile; returns the command's exit status
    /// (128 + signal when a signal ended it).
    fn wait(
        &self,
        mut child: Option<&mut std::process::Child>,
        rescan: &mut Rescan,
        snapshot: &mut Snapshot,
    ) -> Option<i32> {
        // This thread now only waits and rescans /proc: at nice 19 a wakeup of it never
        // preempts the workload (a traced busy-poller lost 1.7 ms to a rescan at nice 0).
        // After the spawn, so CMD keeps our priority.
        // SAFETY: setpriority on the calling thread (Linux nice is per thread).
        let nice_before = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
        let mut stop_seen: Option<Instant> = None;
        let mut scanned = Instant::now();
        let mut scan_every = Duration::from_millis(50);
        let mut exit_code = None;
        loop {
            if let Some(c) = child.as_mut() {
                if let Ok(Some(st)) = c.try_wait() {
                    use std::os::unix::process::ExitStatusExt;
                    exit_code = Some(st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0)));
                    break;
                }
            }
            let timed_out = (self.opts.duration).is_some_and(|d| self.started.elapsed() >= d);
            if self.stop.load(Ordering::Acquire) || timed_out {
                match child.as_mut() {
                    None => break,
                    Some(c) => stop_child(c, &mut stop_seen, timed_out),
                }
            }
            if scanned.elapsed() >= scan_every {
                let t = Instant::now();
                let mut turn = turn::Turn::start();
                rescan.scan_with(snapshot, || turn.pause());
                scanned = Instant::now();
                // The scan's own cost, without the pauses it made for the workload.
                let cost = t.elapsed().saturating_sub(turn.paused());
                // Often at first (a traced command opens its files early), then rarely,
                // and never more than 5% of a CPU on a box with many descriptors.
                let base = if self.started.elapsed() < Duration::from_secs(1) {
                    50
                } else {
                    250
                };
                scan_every = Duration::from_millis(base).max(cost * 20);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // SAFETY: as above. Raising priority back needs root, which we have.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice_before) };
        exit_code
    }
}

/// Asked to stop while the command runs: Ctrl-C reached the child too; a SIGTERM or the
/// duration did not, so it gets SIGTERM (after 2 s of grace for Ctrl-C), then SIGKILL.
pub(crate) fn stop_child(
    c: &mut std::process::Child,
    stop_seen: &mut Option<Instant>,
    timed_out: bool,
) {
    let t = *stop_seen.get_or_insert_with(Instant::now);
    if t.elapsed() > Duration::from_secs(2) || timed_out {
        // SAFETY: plain kill of our own child.
        unsafe {
            libc::kill(c.id() as i32, libc::SIGTERM);
        }
        if t.elapsed() > Duration::from_secs(5) {
            let _ = c.kill();
        }
    }
}

/// One CPU's `stats` text and the events it lost (the buffer's overruns and drops).
fn cpu_stats(inst: &Path, cpu: u32) -> (String, u64) {
    let stats =
        fs::read_to_string(inst.join(format!("per_cpu/cpu{cpu}/stats"))).unwrap_or_default();
    let num = |k: &str| {
        (stats.lines())
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    let lost = num("overrun:") + num("dropped events:");
    (stats, lost)
}

/// Per CPU: events read and lost, and its stats text for the trace.dat.
fn per_cpu_results<S>(inst: &Path, readers: &[Reader<S>]) -> (Vec<CpuResult>, Vec<String>) {
    let mut cpu_results = Vec::new();
    let mut cpustats = Vec::new();
    for r in readers {
        let (stats, lost) = cpu_stats(inst, r.cpu);
        cpu_results.push(CpuResult {
            cpu: r.cpu,
            events: r.events,
            lost,
            pages: r.pages,
        });
        cpustats.push(format!("CPU: {}\n{stats}", r.cpu));
    }
    (cpu_results, cpustats)
}
