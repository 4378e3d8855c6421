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

/// The writes that set up a timerlat recording in `instance` (a path under the tracefs
/// root, `instances/NAME`), in order: file (relative to the root), value. The global
/// `osnoise/` files come first; the caller saves their old values.
pub fn timerlat_plan(instance: &str, period_us: u64) -> Vec<(String, String)> {
    let mut v = vec![
        ("osnoise/timerlat_period_us".into(), period_us.to_string()),
        ("osnoise/print_stack".into(), STACK_US.to_string()),
    ];
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
    let m = super::tracefs::mount_tracefs()?;
    timerlat_in(&m.root, &super::dat::uname())
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
    period_us: Option<u64>,
    duration: Option<Duration>,
    output: &Path,
    stop: &AtomicBool,
) -> Result<PathBuf, RecordError> {
    check_timerlat()?;
    let root = super::tracefs::mount_tracefs()?.root;
    let instance = format!("instances/whylate-timerlat-{}", std::process::id());
    let dir = root.join(&instance);
    std::fs::create_dir(&dir).map_err(ioe(&dir))?;
    let plan = timerlat_plan(&instance, period_us.unwrap_or(DEFAULT_PERIOD_US));
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
}
