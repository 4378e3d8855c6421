//! A perf.data read through once is not kept resident: the reader gives back the pages
//! behind the records it still holds, so peak RSS follows the reorder window, not the file.

use super::*;
use std::os::unix::process::ExitStatusExt;

/// Peak RSS (KiB) and exit status of one command, from wait4 on that child alone.
// wait4 reaps the child (Child::wait cannot return its rusage).
#[allow(clippy::zombie_processes)]
fn peak_rss(cmd: &mut Command) -> (u64, std::process::ExitStatus) {
    let child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid out-parameter; the pid is our own child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut ru) };
    assert_eq!(r, child.id() as i32, "wait4");
    (
        ru.ru_maxrss as u64,
        std::process::ExitStatus::from_raw(status),
    )
}

#[test]
fn a_large_perf_data_is_not_kept_resident() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() && skip("not root: perf -a needs root") {
        return;
    }
    if !Command::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
        && skip("perf not installed (apt-get install linux-perf)")
    {
        return;
    }
    let _mount = MountGuard::new();
    let tmp = tmpdir("rss");
    let data = tmp.path().join("perf.data");
    // Two syscall events per byte dd copies: about 100 MB of samples, in many rounds.
    let st = Command::new("perf")
        .args([
            "record",
            "-q",
            "-a",
            "-m",
            "4M",
            "-e",
            "raw_syscalls:sys_enter,raw_syscalls:sys_exit",
            "-o",
        ])
        .arg(&data)
        .args([
            "--",
            "dd",
            "if=/dev/zero",
            "of=/dev/null",
            "bs=1",
            "count=300000",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    if !st.as_ref().is_ok_and(|s| s.success())
        && skip("perf record failed (perf_event_open unavailable?)")
    {
        return;
    }
    let size = std::fs::metadata(&data).unwrap().len() / 1024;
    assert!(
        size > 48 * 1024,
        "the recording is {size} KiB: too small to show anything"
    );
    let (rss, st) = peak_rss(Command::new(whylate()).args(["stats", "--json"]).arg(&data));
    assert!(st.success(), "whylate stats failed");
    eprintln!("rss: whylate stats on a {size} KiB perf.data peaked at {rss} KiB");
    if rss * 2 >= size {
        // Seen once in many runs (502 MiB for 157 MiB), never on its own: keep the
        // recording, whose rounds say what was held.
        let kept = keep_for_failure("rss", &[&data]);
        panic!("peak RSS {rss} KiB for a {size} KiB perf.data: the file stayed resident ({kept})");
    }
}
