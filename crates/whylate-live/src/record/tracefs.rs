//! tracefs: finding or mounting it, the instance `Session` that puts everything back, instances left by killed runs, online CPUs, reading and writing its files.

use super::error::{check_root, ioe, RecordError};
use std::ffi::CString;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where tracefs is, mounting it when it is not.
pub(super) struct Mount {
    pub(super) root: PathBuf,
    pub(super) mounted_by_us: bool,
}

/// The first tracefs mounted, from /proc/mounts.
pub(super) fn find_tracefs() -> Option<PathBuf> {
    let m = fs::read_to_string("/proc/mounts").ok()?;
    (m.lines())
        .map(|l| l.split_whitespace().collect::<Vec<&str>>())
        .find(|f| f.len() > 2 && f[2] == "tracefs")
        .map(|f| PathBuf::from(f[1]))
}

/// Tracing inside debugfs itself, as kernels before tracefs (4.1) kept it. Only asked on
/// such kernels: on later ones `debugfs/tracing` is an automount, and looking into it
/// would leave tracefs mounted there after the run.
fn debugfs_tracing() -> Option<PathBuf> {
    let m = fs::read_to_string("/proc/mounts").ok()?;
    (m.lines())
        .map(|l| l.split_whitespace().collect::<Vec<&str>>())
        .filter(|f| f.len() > 2 && f[2] == "debugfs")
        .map(|f| Path::new(f[1]).join("tracing"))
        .find(|p| p.join("instances").is_dir())
}

pub(super) fn mount_tracefs() -> Result<Mount, RecordError> {
    if let Some(root) = find_tracefs() {
        return Ok(Mount {
            root,
            mounted_by_us: false,
        });
    }
    let root = PathBuf::from("/sys/kernel/tracing");
    if !root.is_dir() {
        return match debugfs_tracing() {
            Some(root) => Ok(Mount {
                root,
                mounted_by_us: false,
            }),
            None => Err(RecordError::NoTracefs(
                "/sys/kernel/tracing does not exist (kernel built without CONFIG_TRACING?)".into(),
            )),
        };
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
pub(super) struct Session {
    pub(super) mount: Mount,
    pub(super) instance: Option<PathBuf>,
    /// A tracer was set in the instance: it is set back to nop before the rmdir.
    pub(super) tracer: bool,
    /// Files outside the instance changed for it (the tracer's global settings), with
    /// their old values: put back once the instance is gone.
    pub(super) restore: Vec<(PathBuf, String)>,
}

impl Session {
    /// Tracefs mounted if it was not, with no instance yet: dropping it unmounts what it
    /// mounted.
    pub(super) fn open() -> Result<Session, RecordError> {
        Ok(Session {
            mount: mount_tracefs()?,
            instance: None,
            tracer: false,
            restore: Vec::new(),
        })
    }

    pub(super) fn remove_instance(&mut self) {
        if let Some(inst) = self.instance.take() {
            let _ = fs::write(inst.join("tracing_on"), "0");
            if self.tracer {
                let _ = fs::write(inst.join("current_tracer"), "nop");
            }
            // rmdir fails with EBUSY while a reader still holds a file: retry briefly.
            for _ in 0..50 {
                match fs::remove_dir(&inst) {
                    Ok(()) => break,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => break,
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        }
        for (p, old) in std::mem::take(&mut self.restore) {
            let _ = fs::write(p, old);
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

pub(super) fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    pid > 0
        && (unsafe { libc::kill(pid, 0) } == 0
            || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
}

/// Instances named `whylate-PID` whose PID is gone.
pub(super) fn stale_instances(root: &Path) -> Vec<PathBuf> {
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
    let s = Session::open()?;
    let mut out = Vec::new();
    for p in stale_instances(&s.mount.root) {
        let _ = fs::write(p.join("tracing_on"), "0");
        // A tracer left running (watch --timerlat) keeps the instance busy.
        let _ = fs::write(p.join("current_tracer"), "nop");
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

pub(super) fn online_cpus(root: &Path) -> Vec<u32> {
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

/// Writes `v` to the instance's file `rel`.
pub(super) fn write_tracefs(inst: &Path, rel: &str, v: &str) -> Result<(), RecordError> {
    let p = inst.join(rel);
    fs::write(&p, v).map_err(ioe(&p))
}

/// Reads a tracefs file whole. Some (header_page, header_event) regenerate their text on
/// every read() and ignore the offset, so a small first read (Rust's 32-byte probe) would
/// see only the start: read with one large buffer.
pub(crate) fn read_tracefs(p: &Path) -> Vec<u8> {
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

pub(super) fn read_tracefs_string(p: &Path) -> String {
    String::from_utf8_lossy(&read_tracefs(p)).into_owned()
}
