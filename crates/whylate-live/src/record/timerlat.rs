//! `record --timerlat`: whether this kernel has the timerlat tracer, and recording with
//! it in whylate's own tracefs instance: the timer's period and the stack dump of late
//! activations set in `osnoise/` (those files are the kernel's, one set for all
//! instances: their old values are put back), the osnoise noise events and the
//! scheduler and IRQ tracepoints on in the instance (so `explain` can split each late
//! activation), the tracer started, and the instance's `trace` text saved at the end.

use super::error::{check_root, ioe, RecordError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The timer's period when none is given, us (the kernel's own default).
pub const DEFAULT_PERIOD_US: u64 = 1000;
/// A thread latency over this, us, has the IRQ's stack dumped after its sample
/// (`osnoise/print_stack`): explain's default deadline floor.
pub const STACK_US: u64 = 50;

/// Events turned on in the instance besides the tracer: the osnoise noise events and
/// what lets explain join its chains to a late activation.
const EVENTS: [&str; 7] = [
    "osnoise",
    "sched/sched_switch",
    "sched/sched_wakeup",
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
];

/// The same events as `record -e` names them, for `watch --timerlat` (which enables
/// events one by one, with its defaults beside them).
pub const WATCH_EVENTS: [&str; 5] = [
    "osnoise:sample_threshold",
    "osnoise:irq_noise",
    "osnoise:softirq_noise",
    "osnoise:nmi_noise",
    "osnoise:thread_noise",
];

/// The writes to the kernel's global `osnoise/` files (one set for all instances: the
/// caller saves their old values and puts them back): the period and the stack dump.
pub fn timerlat_globals(period_us: u64) -> Vec<(String, String)> {
    vec![
        ("osnoise/timerlat_period_us".into(), period_us.to_string()),
        ("osnoise/print_stack".into(), STACK_US.to_string()),
    ]
}

/// The writes that set up a timerlat recording in `instance` (a path under the tracefs
/// root, `instances/NAME`), in order: file (relative to the root), value. The global
/// `osnoise/` files come first; the caller saves their old values.
pub fn timerlat_plan(instance: &str, period_us: u64) -> Vec<(String, String)> {
    let mut v = timerlat_globals(period_us);
    for e in EVENTS {
        v.push((format!("{instance}/events/{e}/enable"), "1".into()));
    }
    v.push((format!("{instance}/current_tracer"), "timerlat".into()));
    v.push((format!("{instance}/tracing_on"), "1".into()));
    v
}

/// The writes that stop it: the tracer off in the instance (its files go with it);
/// the global files the plan changed are restored from what was saved.
pub fn timerlat_undo(instance: &str, saved: &[(String, String)]) -> Vec<(String, String)> {
    let mut v = vec![
        (format!("{instance}/tracing_on"), "0".into()),
        (format!("{instance}/current_tracer"), "nop".into()),
    ];
    v.extend(saved.iter().cloned());
    v
}

/// Whether the tracefs at `root` offers the timerlat tracer (`available_tracers`);
/// `kernel` names the kernel in the error.
pub fn timerlat_in(root: &Path, kernel: &str) -> Result<(), RecordError> {
    let p = root.join("available_tracers");
    let tracers = std::fs::read_to_string(&p).map_err(super::error::ioe(&p))?;
    if tracers.split_whitespace().any(|t| t == "timerlat") {
        return Ok(());
    }
    Err(RecordError::NoTimerlat {
        kernel: kernel.to_string(),
        tracers: tracers.split_whitespace().collect::<Vec<_>>().join(" "),
    })
}

/// Checks that this machine can record with the timerlat tracer: root, tracefs, the
/// tracer (else [`RecordError::NoTimerlat`], naming `CONFIG_TIMERLAT_TRACER`).
pub fn check_timerlat() -> Result<(), RecordError> {
    check_root()?;
    // A session, so that a tracefs mounted only to look is unmounted again.
    let s = super::tracefs::Session::open()?;
    timerlat_in(&s.mount.root, &super::dat::uname())
}

/// The timerlat tracer run in whylate's own instance beside its events (`watch
/// --timerlat`): its pages are read like any event's.
#[derive(Clone, Copy, Debug)]
pub struct Timerlat {
    /// The timer's period, us.
    pub period_us: u64,
}

impl Timerlat {
    /// Sets the tracer up in `inst` (tracing still off): the global `osnoise/` files are
    /// saved into `session` and set, then the instance's tracer; `session` puts all of
    /// it back when the instance goes, whatever happens after.
    pub(super) fn start_in(
        &self,
        root: &Path,
        inst: &Path,
        session: &mut super::tracefs::Session,
    ) -> Result<(), RecordError> {
        timerlat_in(root, &super::dat::uname())?;
        for w in timerlat_globals(self.period_us) {
            let p = root.join(&w.0);
            let old = std::fs::read_to_string(&p).map_err(ioe(&p))?;
            session.restore.push((p, old.trim().to_string()));
            put(root, &w)?;
        }
        session.tracer = true;
        let p = inst.join("current_tracer");
        std::fs::write(&p, "timerlat").map_err(ioe(&p))
    }
}

/// Writes `value` to `root/file`.
fn put(root: &Path, (file, value): &(String, String)) -> Result<(), RecordError> {
    let p = root.join(file);
    std::fs::write(&p, value).map_err(ioe(&p))
}

/// Streams the instance's `trace` text to `output`, created 0600 (traces hold command
/// names).
fn save(trace: &Path, output: &Path) -> Result<(), RecordError> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut from = std::fs::File::open(trace).map_err(ioe(trace))?;
    let mut to = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(output)
        .map_err(ioe(output))?;
    std::io::copy(&mut from, &mut to).map_err(ioe(output))?;
    Ok(())
}

/// Records with the timerlat tracer until `stop` or `duration`, then writes the
/// instance's `trace` text to `output` (what `whylate FILE` reads). Everything it set is
/// put back, even when a step fails.
pub fn record_timerlat(
    tl: Timerlat,
    duration: Option<Duration>,
    output: &Path,
    stop: &AtomicBool,
) -> Result<PathBuf, RecordError> {
    check_timerlat()?;
    // Held to the end: tracefs mounted for the recording is unmounted after it.
    let session = super::tracefs::Session::open()?;
    let root = session.mount.root.clone();
    let instance = format!("instances/whylate-timerlat-{}", std::process::id());
    let dir = root.join(&instance);
    std::fs::create_dir(&dir).map_err(ioe(&dir))?;
    let plan = timerlat_plan(&instance, tl.period_us);
    let saved: Vec<(String, String)> = (plan.iter().filter(|w| w.0.starts_with("osnoise/")))
        .filter_map(|(f, _)| {
            let old = std::fs::read_to_string(root.join(f)).ok()?;
            Some((f.clone(), old.trim().to_string()))
        })
        .collect();
    let run = || -> Result<(), RecordError> {
        for w in &plan {
            put(&root, w)?;
        }
        let t0 = Instant::now();
        while !stop.load(Ordering::Relaxed) && duration.is_none_or(|d| t0.elapsed() < d) {
            std::thread::sleep(Duration::from_millis(100));
        }
        put(&root, &(format!("{instance}/tracing_on"), "0".into()))?;
        save(&dir.join("trace"), output)
    };
    let r = run();
    for w in timerlat_undo(&instance, &saved) {
        let _ = put(&root, &w);
    }
    let _ = std::fs::remove_dir(&dir);
    r.map(|()| output.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_without_the_tracer_gets_one_line_naming_its_option() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("available_tracers"), "blk function nop\n").unwrap();
        let e = timerlat_in(d.path(), "6.1.0").unwrap_err().to_string();
        assert_eq!(e, "this kernel (6.1.0) has no timerlat tracer (available_tracers: blk function nop): it needs CONFIG_TIMERLAT_TRACER=y; a timerlat trace recorded elsewhere reads with `whylate FILE`");
        assert!(!e.contains('\n'));
        std::fs::write(d.path().join("available_tracers"), "timerlat osnoise nop\n").unwrap();
        assert!(timerlat_in(d.path(), "6.1.0").is_ok());
    }

    /// The writes a recording plans, in order, and the ones that undo it.
    #[test]
    fn the_tracefs_writes_planned() {
        let p = timerlat_plan("instances/w", 500);
        let w = |f: &str, v: &str| (f.to_string(), v.to_string());
        assert_eq!(p[0], w("osnoise/timerlat_period_us", "500"));
        assert_eq!(p[1], w("osnoise/print_stack", "50"));
        assert_eq!(p[2], w("instances/w/events/osnoise/enable", "1"));
        assert_eq!(p[3], w("instances/w/events/sched/sched_switch/enable", "1"));
        assert_eq!(p[8], w("instances/w/events/irq/softirq_exit/enable", "1"));
        assert_eq!(p[9], w("instances/w/current_tracer", "timerlat"));
        assert_eq!(p[10], w("instances/w/tracing_on", "1"));
        assert_eq!(p.len(), 11);
        let u = timerlat_undo("instances/w", &[w("osnoise/timerlat_period_us", "1000")]);
        assert_eq!(
            u,
            vec![
                w("instances/w/tracing_on", "0"),
                w("instances/w/current_tracer", "nop"),
                w("osnoise/timerlat_period_us", "1000"),
            ]
        );
    }

    /// `watch --timerlat` on a tracefs that has the tracer: the globals are set with
    /// their old values saved, the instance's tracer set; taking the instance down puts
    /// the tracer back to nop and the globals back as they were. Without the tracer,
    /// nothing is written.
    #[test]
    fn a_watched_tracer_is_set_up_and_everything_put_back() {
        use super::super::tracefs::{Mount, Session};
        let d = tempfile::tempdir().unwrap();
        let (root, inst) = (d.path(), d.path().join("instances/w"));
        std::fs::create_dir_all(root.join("osnoise")).unwrap();
        std::fs::create_dir_all(&inst).unwrap();
        let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
        std::fs::write(root.join("osnoise/timerlat_period_us"), "1000\n").unwrap();
        std::fs::write(root.join("osnoise/print_stack"), "0\n").unwrap();
        let mut s = Session {
            mount: Mount {
                root: root.to_path_buf(),
                mounted_by_us: false,
            },
            instance: Some(inst.clone()),
            tracer: false,
            restore: Vec::new(),
        };
        std::fs::write(root.join("available_tracers"), "function nop\n").unwrap();
        let tl = Timerlat { period_us: 250 };
        assert!(tl.start_in(root, &inst, &mut s).is_err());
        assert_eq!((s.tracer, s.restore.len()), (false, 0));
        assert_eq!(read("osnoise/timerlat_period_us"), "1000\n");
        std::fs::write(root.join("available_tracers"), "timerlat osnoise nop\n").unwrap();
        tl.start_in(root, &inst, &mut s).unwrap();
        assert_eq!(read("osnoise/timerlat_period_us"), "250");
        assert_eq!(read("osnoise/print_stack"), "50");
        assert_eq!(read("instances/w/current_tracer"), "timerlat");
        // The instance is a plain directory here, so its rmdir fails after retries: what
        // matters is what was written before and restored after.
        s.remove_instance();
        assert_eq!(read("instances/w/current_tracer"), "nop");
        assert_eq!(read("instances/w/tracing_on"), "0");
        assert_eq!(read("osnoise/timerlat_period_us"), "1000");
        assert_eq!(read("osnoise/print_stack"), "0");
        assert!(s.restore.is_empty());
    }
}
