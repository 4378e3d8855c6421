//! `whylate record`: trace through tracefs into a trace.dat (v6) that trace-cmd reads too.
//!
//! Everything happens in a tracefs instance of our own (`instances/whylate-PID`): its own
//! ring buffers, clock and event switches, so another tracer on the machine is never
//! disturbed, and removing the directory undoes every setting. One thread per CPU moves
//! whole ring-buffer pages from `per_cpu/cpuN/trace_pipe_raw` to a private spool file;
//! at the end the spools are joined behind the trace.dat header. A [`Session`] guard
//! restores tracefs (instance removed, tracefs unmounted if we mounted it) on every path
//! out, including errors and panics; signals only set the stop flag the main loop polls.

use crate::read::ringbuf::{PageCursor, PageLayout};
use crate::read::tep::Endian;
use crate::snapshot::{Rescan, Snapshot};
use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Event presets: name → tracepoints (`system:event`).
pub const PRESETS: &[(&str, &[&str])] = &[
    (
        "sched",
        &[
            "sched:sched_switch",
            "sched:sched_waking",
            "sched:sched_wakeup",
            "sched:sched_wakeup_new",
            "sched:sched_migrate_task",
            "sched:sched_process_fork",
            "sched:sched_process_exec",
            "sched:sched_process_exit",
        ],
    ),
    (
        "irq",
        &[
            "irq:irq_handler_entry",
            "irq:irq_handler_exit",
            "irq:softirq_raise",
            "irq:softirq_entry",
            "irq:softirq_exit",
            "irq:tasklet_entry",
            "irq:tasklet_exit",
        ],
    ),
    (
        "wq",
        &[
            "workqueue:workqueue_queue_work",
            "workqueue:workqueue_activate_work",
            "workqueue:workqueue_execute_start",
            "workqueue:workqueue_execute_end",
        ],
    ),
    (
        "syscalls",
        &["raw_syscalls:sys_enter", "raw_syscalls:sys_exit"],
    ),
    (
        "timer",
        &[
            "timer:hrtimer_start",
            "timer:hrtimer_cancel",
            "timer:hrtimer_expire_entry",
            "timer:hrtimer_expire_exit",
            "timer:timer_start",
            "timer:timer_cancel",
            "timer:timer_expire_entry",
            "timer:timer_expire_exit",
        ],
    ),
];

/// The default preset: the union of all of them.
pub const DEFAULT_PRESET: &str = "latency";

/// Why recording failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// Not root.
    #[error("whylate record needs root: tracefs and the per-CPU ring buffers are root-only. Run it with sudo, or analyse a trace you already have (whylate FILE)")]
    NotRoot,
    /// No tracefs.
    #[error("tracefs is not available: {0}")]
    NoTracefs(String),
    /// An event name that does not exist here.
    #[error("event `{name}` does not exist on this kernel ({kernel}){hint}")]
    UnknownEvent {
        /// As given.
        name: String,
        /// Kernel release.
        kernel: String,
        /// A close match or where to look.
        hint: String,
    },
    /// A filter the kernel refused.
    #[error(
        "event `{event}`: the kernel refused the filter `{filter}` ({why}); its fields: {fields}"
    )]
    BadFilter {
        /// `system:event`.
        event: String,
        /// As given.
        filter: String,
        /// The kernel's reason.
        why: String,
        /// The event's own fields, to write a filter with.
        fields: String,
    },
    /// An I/O error on a named path.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The command could not be started.
    #[error("cannot run `{cmd}`: {source}")]
    Spawn {
        /// The command.
        cmd: String,
        /// The cause.
        source: io::Error,
    },
}

fn ioe(path: &Path) -> impl FnOnce(io::Error) -> RecordError + '_ {
    move |source| RecordError::Io {
        path: path.to_path_buf(),
        source,
    }
}

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

/// Where tracefs is, mounting it when it is not.
struct Mount {
    root: PathBuf,
    mounted_by_us: bool,
}

fn find_tracefs() -> Option<PathBuf> {
    let m = fs::read_to_string("/proc/mounts").ok()?;
    for line in m.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() > 2 && f[2] == "tracefs" {
            return Some(PathBuf::from(f[1]));
        }
    }
    for line in m.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() > 2 && f[2] == "debugfs" {
            let p = Path::new(f[1]).join("tracing");
            if p.join("instances").is_dir() {
                return Some(p);
            }
        }
    }
    None
}

fn mount_tracefs() -> Result<Mount, RecordError> {
    if let Some(root) = find_tracefs() {
        return Ok(Mount {
            root,
            mounted_by_us: false,
        });
    }
    let root = PathBuf::from("/sys/kernel/tracing");
    if !root.is_dir() {
        return Err(RecordError::NoTracefs(
            "/sys/kernel/tracing does not exist (kernel built without CONFIG_TRACING?)".into(),
        ));
    }
    let src = CString::new("nodev").expect("static");
    let target = CString::new("/sys/kernel/tracing").expect("static");
    let fstype = CString::new("tracefs").expect("static");
    // SAFETY: valid NUL-terminated strings; a null data pointer is allowed.
    let r = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(RecordError::NoTracefs(format!(
            "mounting tracefs on /sys/kernel/tracing failed: {}",
            io::Error::last_os_error()
        )));
    }
    Ok(Mount {
        root,
        mounted_by_us: true,
    })
}

/// Restores tracefs when dropped: the instance removed, tracefs unmounted if we mounted it.
struct Session {
    mount: Mount,
    instance: Option<PathBuf>,
}

impl Session {
    fn remove_instance(&mut self) {
        if let Some(inst) = self.instance.take() {
            let _ = fs::write(inst.join("tracing_on"), "0");
            // rmdir fails with EBUSY while a reader still holds a file: retry briefly.
            for _ in 0..50 {
                match fs::remove_dir(&inst) {
                    Ok(()) => break,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => break,
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.remove_instance();
        if self.mount.mounted_by_us {
            let target = CString::new(self.mount.root.as_os_str().as_encoded_bytes())
                .expect("no NUL in a path from /proc/mounts");
            // SAFETY: valid NUL-terminated path.
            unsafe {
                libc::umount(target.as_ptr());
            }
        }
    }
}

fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    pid > 0
        && (unsafe { libc::kill(pid, 0) } == 0
            || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
}

/// Instances named `whylate-PID` whose PID is gone.
fn stale_instances(root: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Ok(rd) = fs::read_dir(root.join("instances")) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if let Some(pid) = name
                .strip_prefix("whylate-")
                .and_then(|p| p.parse::<i32>().ok())
            {
                if !pid_alive(pid) {
                    v.push(e.path());
                }
            }
        }
    }
    v.sort();
    v
}

/// Removes instances left by killed runs; returns their names. Mounts tracefs only for the
/// duration of the call when it was not mounted.
pub fn reset() -> Result<Vec<String>, RecordError> {
    check_root()?;
    let mount = mount_tracefs()?;
    let s = Session {
        mount,
        instance: None,
    };
    let mut out = Vec::new();
    for p in stale_instances(&s.mount.root) {
        let _ = fs::write(p.join("tracing_on"), "0");
        fs::remove_dir(&p).map_err(ioe(&p))?;
        out.push(
            p.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
        );
    }
    Ok(out)
}

fn check_root() -> Result<(), RecordError> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err(RecordError::NotRoot);
    }
    Ok(())
}

/// Splits `-e` values at commas outside `[...]` (a filter may hold commas).
fn split_events(names: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for n in names {
        let (mut depth, mut cur) = (0i32, String::new());
        for ch in n.chars() {
            match ch {
                '[' => depth += 1,
                ']' => depth -= 1,
                ',' if depth <= 0 => {
                    out.push(std::mem::take(&mut cur).trim().to_string());
                    continue;
                }
                _ => {}
            }
            cur.push(ch);
        }
        out.push(cur.trim().to_string());
    }
    out.retain(|s| !s.is_empty());
    out
}

/// An event to enable: system, name, and the kernel filter from `EVENT[FILTER]`.
type Wanted = (String, String, Option<String>);

/// Resolves presets and names to `system:event` (with any `[filter]`), checking each
/// exists. A filtered event named after a preset's replaces the preset's unfiltered one.
fn resolve_events(root: &Path, names: &[String]) -> Result<Vec<Wanted>, RecordError> {
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_string();
    let mut want: Vec<String> = Vec::new();
    let names: Vec<String> = if names.is_empty() {
        vec![DEFAULT_PRESET.to_string()]
    } else {
        split_events(names)
    };
    for n in &names {
        if n == DEFAULT_PRESET {
            for (_, evs) in PRESETS {
                want.extend(evs.iter().map(|s| s.to_string()));
            }
        } else if let Some((_, evs)) = PRESETS.iter().find(|(p, _)| p == n) {
            want.extend(evs.iter().map(|s| s.to_string()));
        } else {
            want.push(n.clone());
        }
    }
    let events = root.join("events");
    let mut out: Vec<Wanted> = Vec::new();
    for w in want {
        let (w, filter) = match w.split_once('[') {
            Some((name, rest)) => {
                let f = rest.strip_suffix(']').unwrap_or(rest).trim().to_string();
                (name.trim().to_string(), (!f.is_empty()).then_some(f))
            }
            None => (w, None),
        };
        let (sys, ev) = match w.split_once([':', '/']) {
            Some((s, e)) => (s.to_string(), e.to_string()),
            None => {
                // A bare name: find its system.
                let mut found = None;
                if let Ok(rd) = fs::read_dir(&events) {
                    for s in rd.flatten() {
                        if s.path().join(&w).join("format").is_file() {
                            found = Some(s.file_name().to_string_lossy().to_string());
                            break;
                        }
                    }
                }
                match found {
                    Some(s) => (s, w.clone()),
                    None => {
                        return Err(unknown_event(&events, &w, &kernel));
                    }
                }
            }
        };
        if !events.join(&sys).join(&ev).join("format").is_file() {
            // Presets name events some kernels lack (tasklet_* before 5.x): skip those.
            if PRESETS
                .iter()
                .any(|(_, evs)| evs.contains(&format!("{sys}:{ev}").as_str()))
            {
                continue;
            }
            return Err(unknown_event(&events, &w, &kernel));
        }
        match out.iter_mut().find(|o| o.0 == sys && o.1 == ev) {
            Some(o) => {
                if filter.is_some() {
                    o.2 = filter;
                }
            }
            None => out.push((sys, ev, filter)),
        }
    }
    Ok(out)
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

fn unknown_event(events: &Path, name: &str, kernel: &str) -> RecordError {
    let bare = name.rsplit([':', '/']).next().unwrap_or(name);
    let mut all = Vec::new();
    if let Ok(rd) = fs::read_dir(events) {
        for s in rd.flatten() {
            if let Ok(evs) = fs::read_dir(s.path()) {
                for e in evs.flatten() {
                    if e.path().is_dir() {
                        let n = e.file_name().to_string_lossy().to_string();
                        all.push((n, s.file_name().to_string_lossy().to_string()));
                    }
                }
            }
        }
    }
    let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
    let close: Vec<String> = crate::suggest::closest(bare, names, 5)
        .into_iter()
        .filter_map(|n| {
            all.iter()
                .find(|(e, _)| *e == n)
                .map(|(e, s)| format!("{s}:{e}"))
        })
        .collect();
    let hint = if close.is_empty() {
        format!(
            "; presets: {}, {DEFAULT_PRESET}; all events: ls {}",
            PRESETS.iter().map(|p| p.0).collect::<Vec<_>>().join(", "),
            events.display()
        )
    } else {
        format!("; did you mean {}?", close.join(", "))
    };
    RecordError::UnknownEvent {
        name: name.into(),
        kernel: kernel.into(),
        hint,
    }
}

fn online_cpus(root: &Path) -> Vec<u32> {
    let mut v: Vec<u32> = fs::read_dir(root.join("per_cpu"))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    e.file_name()
                        .to_str()
                        .and_then(|n| n.strip_prefix("cpu"))
                        .and_then(|n| n.parse().ok())
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// One CPU's reader: pages from trace_pipe_raw to a spool file.
struct Reader {
    cpu: u32,
    spool: File,
    /// Where the (unlinked) spool was created, for error messages.
    spool_path: PathBuf,
    pages: u64,
    events: u64,
}

fn read_cpu(
    pipe: PathBuf,
    mut r: Reader,
    page: usize,
    layout: PageLayout,
    stop: Arc<AtomicBool>,
) -> io::Result<Reader> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&pipe)?;
    let fd = f.as_raw_fd();
    let mut f = f;
    let mut buf = vec![0u8; page];
    let mut out = BufWriter::with_capacity(1 << 20, r.spool.try_clone()?);
    let mut draining = false;
    loop {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        if !draining {
            // SAFETY: one valid pollfd.
            unsafe {
                libc::poll(&mut pfd, 1, 100);
            }
        }
        loop {
            match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    // A short read is a partial page: the header's commit says how much.
                    buf[n..].fill(0);
                    let mut used = 0;
                    if let Some(mut c) = PageCursor::new(&buf, &layout) {
                        used = c.len();
                        while c.next(&buf, layout.endian).is_some() {
                            r.events += 1;
                        }
                    }
                    out.write_all(&buf)?;
                    r.pages += 1;
                    // A page less than half full means we caught up with the writer. Reading
                    // on would chase our own read() syscalls' events one page each.
                    if !draining && used < (page - layout.data_off) / 2 {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        if draining {
            break;
        }
        if stop.load(Ordering::Acquire) {
            // tracing_on is already 0: one more pass empties the buffer.
            draining = true;
        }
    }
    out.flush()?;
    drop(out);
    Ok(r)
}

/// A running reader: it hands its `Reader` back when joined.
type ReaderThread = std::thread::JoinHandle<io::Result<Reader>>;

/// One reader thread per CPU, each moving its CPU's pages to an unlinked spool file in
/// `out_dir`; returns their handles and the recorder's thread ids (this thread first).
fn spawn_readers(
    cpus: &[u32],
    out_dir: &Path,
    inst: &Path,
    page: usize,
    layout: PageLayout,
    reader_stop: &Arc<AtomicBool>,
) -> Result<(Vec<ReaderThread>, Vec<i32>), RecordError> {
    let mut handles = Vec::new();
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    for &cpu in cpus {
        let spool_path = out_dir.join(format!(".whylate-{}-cpu{cpu}", std::process::id()));
        let spool = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&spool_path)
            .map_err(ioe(&spool_path))?;
        // Unlinked at once: the open file is all we need, and a killed run leaves nothing.
        let _ = fs::remove_file(&spool_path);
        let r = Reader {
            cpu,
            spool,
            spool_path,
            pages: 0,
            events: 0,
        };
        let pipe = inst.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
        let st = reader_stop.clone();
        let tx = tid_tx.clone();
        handles.push(std::thread::spawn(move || {
            let _ = tx.send(reader_thread_setup());
            read_cpu(pipe, r, page, layout, st)
        }));
    }
    drop(tid_tx);
    // SAFETY: gettid has no preconditions.
    let mut own = vec![unsafe { libc::gettid() }];
    // Each reader sends its tid first thing (and keeps its sender: take, not drain).
    own.extend(tid_rx.iter().take(handles.len()));
    Ok((handles, own))
}

/// A reader thread's first step: its tid (to keep its syscalls out of the trace), and
/// SCHED_BATCH: at its fair share of CPU it drains the buffers as fast as at nice 0, but
/// its wakeup never preempts the task that is running (a traced workload's), it waits for
/// that task's slice to end.
fn reader_thread_setup() -> i32 {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: valid param; 0 = the calling thread. Best effort: a failure leaves nice 0.
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_BATCH, &p);
        libc::gettid()
    }
}

/// Keeps the recorder's own syscalls (page reads, /proc rescans) out of the syscall
/// events: each page read would otherwise write events into the next page, and a /proc
/// rescan thousands. Only syscall events are filtered: the recorder's scheduling and the
/// interrupts that land on it stay traced, so its cost to the workload is measured.
fn exclude_own_syscalls(inst: &Path, events: &[Wanted], own: &[i32]) {
    let not_us = own
        .iter()
        .map(|t| format!("common_pid != {t}"))
        .collect::<Vec<_>>()
        .join(" && ");
    for (sys, ev, filter) in events {
        if sys != "syscalls" && sys != "raw_syscalls" {
            continue;
        }
        let f = match filter {
            Some(f) => format!("({f}) && {not_us}"),
            None => not_us.clone(),
        };
        // Best effort: the user's own filter was checked when it was set.
        let _ = fs::write(inst.join(format!("events/{sys}/{ev}/filter")), f);
    }
}

fn cpu_time_ns() -> u64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid out pointer.
    unsafe {
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
    }
    let t = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000;
    t(ru.ru_utime) + t(ru.ru_stime)
}

/// Records until `stop` is set, the duration passes, or the command exits.
pub fn record(opts: &RecordOptions, stop: Arc<AtomicBool>) -> Result<RecordResult, RecordError> {
    check_root()?;
    // Checked before tracefs is touched: a typo in -o must not cost a recording.
    let out_dir = output_dir(&opts.output)?;
    let mount = mount_tracefs()?;
    let mut session = Session {
        mount,
        instance: None,
    };
    let root = session.mount.root.clone();
    let stale: Vec<String> = stale_instances(&root)
        .iter()
        .map(|p| {
            p.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let events = resolve_events(&root, &opts.events)?;
    let inst = root
        .join("instances")
        .join(format!("whylate-{}", std::process::id()));
    fs::create_dir(&inst).map_err(ioe(&inst))?;
    session.instance = Some(inst.clone());
    let clock = configure(&root, &inst, opts.buffer_kb, &events)?;
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
    let mut rescan = Rescan::new(&snapshot);
    let reader_stop = Arc::new(AtomicBool::new(false));
    let (handles, own) = spawn_readers(&cpus, &out_dir, &inst, page, layout, &reader_stop)?;
    exclude_own_syscalls(&inst, &events, &own);
    let started = Instant::now();
    let start_res = write_tracefs(&inst, "tracing_on", "1");
    let mut exit_code = None;
    let mut spawn_err = None;
    if start_res.is_ok() {
        match spawn_command(opts) {
            Ok(mut child) => {
                let run = Run {
                    opts,
                    stop: &stop,
                    started,
                };
                exit_code = run.wait(child.as_mut(), &mut rescan, &mut snapshot);
            }
            // The readers are running: the instance must be taken down in order.
            Err(e) => spawn_err = Some(e),
        }
    }
    rescan.scan(&mut snapshot);
    let duration_ns = started.elapsed().as_nanos() as u64;
    let _ = write_tracefs(&inst, "tracing_on", "0");
    reader_stop.store(true, Ordering::Release);
    let (mut readers, reader_err) = join_readers(handles);
    let (cpu_results, cpustats) = per_cpu_results(&inst, &readers);
    let trace_clock = fs::read_to_string(inst.join("trace_clock")).unwrap_or_default();
    let enabled: Vec<(String, String)> =
        events.iter().map(|e| (e.0.clone(), e.1.clone())).collect();
    let formats = collect_formats(&root, &enabled);
    // Tracing is over: put tracefs back before the (slower) file assembly.
    session.remove_instance();
    // The spools were unlinked when created: dropping `readers` frees them.
    if let Some(e) = spawn_err {
        return Err(e);
    }
    start_res?;
    if let Some(e) = reader_err {
        return Err(RecordError::Io {
            path: inst.join("per_cpu"),
            source: e,
        });
    }
    let meta = Meta {
        page,
        header_page,
        header_event: read_tracefs_string(&root.join("events/header_event")),
        formats,
        kallsyms: read_tracefs(Path::new("/proc/kallsyms")),
        printk: read_tracefs(&root.join("printk_formats")),
        cmdlines: read_tracefs(&root.join("saved_cmdlines")),
        clock: trace_clock.trim().to_string(),
        uname: uname(),
        cpustats,
        snapshot: serde_json::to_vec(&snapshot).unwrap_or_default(),
    };
    let bytes = write_dat(&opts.output, &meta, &mut readers)?;
    let events_n: u64 = cpu_results.iter().map(|c| c.events).sum();
    let lost: u64 = cpu_results.iter().map(|c| c.lost).sum();
    let suggestion = (lost > 0).then(|| {
        format!(
            "{lost} events were lost: record again with a bigger ring buffer, e.g. --buffer-kb {}, or fewer events",
            (opts.buffer_kb as u64 * 4).min(1 << 20)
        )
    });
    Ok(RecordResult {
        output: opts.output.clone(),
        cpus: cpu_results,
        events: events_n,
        lost,
        duration_ns,
        bytes,
        cpu_time_ns: cpu_time_ns(),
        exit_code,
        tracepoints: events
            .iter()
            .map(|(s, e, f)| match f {
                Some(f) => format!("{s}:{e}[{f}]"),
                None => format!("{s}:{e}"),
            })
            .collect(),
        clock: clock.into(),
        stale_instances: stale,
        suggestion,
    })
}

/// Writes `v` to the instance's file `rel`.
fn write_tracefs(inst: &Path, rel: &str, v: &str) -> Result<(), RecordError> {
    let p = inst.join(rel);
    fs::write(&p, v).map_err(ioe(&p))
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
    let fields: Vec<String> = crate::read::tep::parse_format(&format, sys)
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
fn spawn_command(opts: &RecordOptions) -> Result<Option<std::process::Child>, RecordError> {
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
                rescan.scan(snapshot);
                scanned = Instant::now();
                // Often at first (a traced command opens its files early), then rarely,
                // and never more than 5% of a CPU on a box with many descriptors.
                let base = if self.started.elapsed() < Duration::from_secs(1) {
                    50
                } else {
                    250
                };
                scan_every = Duration::from_millis(base).max(t.elapsed() * 20);
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
fn stop_child(c: &mut std::process::Child, stop_seen: &mut Option<Instant>, timed_out: bool) {
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

/// The readers' results, and the error of the first that failed.
fn join_readers(handles: Vec<ReaderThread>) -> (Vec<Reader>, Option<io::Error>) {
    let mut readers = Vec::new();
    let mut reader_err = None;
    for h in handles {
        match h.join() {
            Ok(Ok(r)) => readers.push(r),
            Ok(Err(e)) => reader_err = Some(e),
            Err(_) => reader_err = Some(io::Error::other("a reader thread panicked")),
        }
    }
    (readers, reader_err)
}

/// Per CPU: events read and lost (the buffer's overruns and drops), and its stats text
/// for the trace.dat.
fn per_cpu_results(inst: &Path, readers: &[Reader]) -> (Vec<CpuResult>, Vec<String>) {
    let mut cpu_results = Vec::new();
    let mut cpustats = Vec::new();
    for r in readers {
        let stats = fs::read_to_string(inst.join(format!("per_cpu/cpu{}/stats", r.cpu)))
            .unwrap_or_default();
        let num = |k: &str| {
            (stats.lines())
                .find_map(|l| l.strip_prefix(k))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        cpu_results.push(CpuResult {
            cpu: r.cpu,
            events: r.events,
            lost: num("overrun:") + num("dropped events:"),
            pages: r.pages,
        });
        cpustats.push(format!("CPU: {}\n{stats}", r.cpu));
    }
    (cpu_results, cpustats)
}

/// Reads a tracefs file whole. Some (header_page, header_event) regenerate their text on
/// every read() and ignore the offset, so a small first read (Rust's 32-byte probe) would
/// see only the start: read with one large buffer.
fn read_tracefs(p: &Path) -> Vec<u8> {
    let Ok(mut f) = File::open(p) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match f.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    out
}

fn read_tracefs_string(p: &Path) -> String {
    String::from_utf8_lossy(&read_tracefs(p)).into_owned()
}

fn uname() -> String {
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: valid out pointer.
    if unsafe { libc::uname(&mut u) } != 0 {
        return String::new();
    }
    let f = |b: &[libc::c_char]| {
        let bytes: Vec<u8> = b
            .iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!(
        "{} {} {} {} {}",
        f(&u.sysname),
        f(&u.nodename),
        f(&u.release),
        f(&u.version),
        f(&u.machine)
    )
}

/// Formats to store: ftrace's own (print, function...) and each enabled event, by system.
fn collect_formats(root: &Path, events: &[(String, String)]) -> Vec<(String, Vec<Vec<u8>>)> {
    let mut out: Vec<(String, Vec<Vec<u8>>)> = Vec::new();
    let mut ftrace = Vec::new();
    if let Ok(rd) = fs::read_dir(root.join("events/ftrace")) {
        let mut names: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        names.sort();
        for p in names {
            let t = read_tracefs(&p.join("format"));
            if !t.is_empty() {
                ftrace.push(t);
            }
        }
    }
    out.push(("ftrace".into(), ftrace));
    for (sys, ev) in events {
        let t = read_tracefs(&root.join("events").join(sys).join(ev).join("format"));
        if t.is_empty() {
            continue;
        }
        match out.iter_mut().find(|(s, _)| s == sys) {
            Some((_, v)) => v.push(t),
            None => out.push((sys.clone(), vec![t])),
        }
    }
    out
}

struct Meta {
    page: usize,
    header_page: String,
    header_event: String,
    formats: Vec<(String, Vec<Vec<u8>>)>,
    kallsyms: Vec<u8>,
    printk: Vec<u8>,
    cmdlines: Vec<u8>,
    clock: String,
    uname: String,
    cpustats: Vec<String>,
    snapshot: Vec<u8>,
}

/// Writes a trace.dat v6: header, formats, symbols, options, then each CPU's pages.
fn write_dat(path: &Path, m: &Meta, readers: &mut [Reader]) -> Result<u64, RecordError> {
    let mut h: Vec<u8> = Vec::new();
    h.extend_from_slice(crate::read::tracedat::MAGIC);
    h.extend_from_slice(b"6\0");
    h.push(0); // little endian
    h.push(8); // long size
    h.extend_from_slice(&(m.page as u32).to_le_bytes());
    h.extend_from_slice(b"header_page\0");
    h.extend_from_slice(&(m.header_page.len() as u64).to_le_bytes());
    h.extend_from_slice(m.header_page.as_bytes());
    h.extend_from_slice(b"header_event\0");
    h.extend_from_slice(&(m.header_event.len() as u64).to_le_bytes());
    h.extend_from_slice(m.header_event.as_bytes());
    let (ftrace, systems) = m
        .formats
        .split_first()
        .expect("ftrace entry is always first");
    h.extend_from_slice(&(ftrace.1.len() as u32).to_le_bytes());
    for f in &ftrace.1 {
        h.extend_from_slice(&(f.len() as u64).to_le_bytes());
        h.extend_from_slice(f);
    }
    h.extend_from_slice(&(systems.len() as u32).to_le_bytes());
    for (sys, fs_) in systems {
        h.extend_from_slice(sys.as_bytes());
        h.push(0);
        h.extend_from_slice(&(fs_.len() as u32).to_le_bytes());
        for f in fs_ {
            h.extend_from_slice(&(f.len() as u64).to_le_bytes());
            h.extend_from_slice(f);
        }
    }
    h.extend_from_slice(&(m.kallsyms.len() as u32).to_le_bytes());
    h.extend_from_slice(&m.kallsyms);
    h.extend_from_slice(&(m.printk.len() as u32).to_le_bytes());
    h.extend_from_slice(&m.printk);
    h.extend_from_slice(&(m.cmdlines.len() as u64).to_le_bytes());
    h.extend_from_slice(&m.cmdlines);
    let ncpu = readers.iter().map(|r| r.cpu + 1).max().unwrap_or(0);
    h.extend_from_slice(&ncpu.to_le_bytes());
    h.extend_from_slice(b"options  \0");
    let mut opt = |id: u16, data: &[u8]| {
        h.extend_from_slice(&id.to_le_bytes());
        h.extend_from_slice(&(data.len() as u32).to_le_bytes());
        h.extend_from_slice(data);
    };
    let cstr = |s: &str| {
        let mut v = s.as_bytes().to_vec();
        v.push(0);
        v
    };
    opt(4, &cstr(&m.clock)); // TRACECLOCK
    opt(5, &cstr(&m.uname)); // UNAME
    for s in &m.cpustats {
        opt(2, &cstr(s)); // CPUSTAT
    }
    opt(crate::snapshot::OPTION_ID, &m.snapshot);
    h.extend_from_slice(&0u16.to_le_bytes()); // DONE
    h.extend_from_slice(b"flyrecord\0");
    // Per CPU (offset, size); data starts page-aligned after this table.
    let table_at = h.len();
    h.resize(table_at + 16 * ncpu as usize, 0);
    let page = m.page as u64;
    let mut off = (h.len() as u64).div_ceil(page) * page;
    let mut sizes = vec![(0u64, 0u64); ncpu as usize];
    for r in readers.iter_mut() {
        let size = r.pages * page;
        sizes[r.cpu as usize] = (if size > 0 { off } else { 0 }, size);
        off += size;
    }
    for (i, (o, s)) in sizes.iter().enumerate() {
        let at = table_at + 16 * i;
        h[at..at + 8].copy_from_slice(&o.to_le_bytes());
        h[at + 8..at + 16].copy_from_slice(&s.to_le_bytes());
    }
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(ioe(path))?;
    // An existing file keeps its old mode with `create`: make it private anyway.
    use std::os::unix::fs::PermissionsExt;
    f.set_permissions(fs::Permissions::from_mode(0o600))
        .map_err(ioe(path))?;
    let data_start = (h.len() as u64).div_ceil(page) * page;
    h.resize(data_start as usize, 0);
    f.write_all(&h).map_err(ioe(path))?;
    for r in readers.iter_mut() {
        if r.pages == 0 {
            continue;
        }
        r.spool
            .seek(SeekFrom::Start(0))
            .map_err(ioe(&r.spool_path))?;
        let n = io::copy(&mut (&r.spool).take(r.pages * page), &mut f).map_err(ioe(path))?;
        if n != r.pages * page {
            return Err(RecordError::Io {
                path: r.spool_path.clone(),
                source: io::Error::other(format!(
                    "spool holds {n} bytes, expected {}",
                    r.pages * page
                )),
            });
        }
    }
    f.flush().map_err(ioe(path))?;
    Ok(f.metadata().map(|m| m.len()).unwrap_or(0))
}
