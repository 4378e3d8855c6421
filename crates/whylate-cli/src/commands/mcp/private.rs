//! `fleet` under the roots: its query engine opens files by name, so a findings directory
//! is first copied, through descriptors, into a directory private to the call, and the
//! engine reads only the copy. Each directory is opened from its parent's descriptor with
//! `O_NOFOLLOW`, each file with `O_PATH` then checked with `fstat` (a FIFO is never opened
//! for reading, so nothing can block), and a symlink, device, FIFO or socket anywhere in
//! the tree refuses the call, naming it. The copy is taken under the findings' own commit
//! lock (shared), so no `--parquet` write is seen half-done.

use rustix::fs::{FileType, Mode, OFlags};
use std::ffi::OsString;
use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// The most a call copies: findings are aggregates (a few KB per trace), so more than
/// this is not findings.
const MAX_BYTES: u64 = 1 << 30;

/// How long a call waits for the findings' commit lock.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The deepest a findings tree goes (`table/host=H/date=D/file` is 4; `_committed` 4).
const MAX_DEPTH: usize = 8;

/// A findings directory and its private copy (removed when dropped).
pub struct Copied {
    /// The directory the caller named (canonical): messages name it, not the copy.
    pub real: PathBuf,
    /// The copy the engine reads.
    pub copy: PathBuf,
    _dir: tempfile::TempDir,
}

/// Copies the directory open at `fd` (the caller's `real`) into a new private directory.
pub fn copy(real: &Path, fd: OwnedFd) -> Result<Copied, String> {
    let dir = tempfile::Builder::new()
        .prefix("whylate-mcp-fleet-")
        .tempdir()
        .map_err(|e| format!("fleet: a private directory for the copy: {e}"))?;
    let copy = dir.path().join("findings");
    // The root's check left an `O_PATH` descriptor: listing needs one open for reading.
    let fd = rustix::fs::openat(
        &fd,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("{}: {}", real.display(), std::io::Error::from(e)))?;
    let _lock = lock_shared(real, &fd)?;
    let mut budget = MAX_BYTES;
    copy_dir(real, &fd, &copy, (&mut budget, 0))?;
    Ok(Copied {
        real: real.to_path_buf(),
        copy,
        _dir: dir,
    })
}

/// Takes the findings' commit lock (`_committed/.lock`) shared, when there is one: a
/// lock that is not a regular file refuses the call rather than block it.
fn lock_shared(real: &Path, fd: &OwnedFd) -> Result<Option<File>, String> {
    let committed = match open_at(fd, "_committed".as_ref(), true) {
        Ok(Some(d)) => d,
        Ok(None) => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", real.join("_committed").display())),
    };
    let lock = real.join("_committed/.lock");
    let Some(l) = open_at(&committed, ".lock".as_ref(), false)
        .map_err(|e| format!("{}: {e}", lock.display()))?
    else {
        return Ok(None);
    };
    let f = readable(&l).map_err(|e| format!("{}: {e}", lock.display()))?;
    // Never wait for good: a writer (or anyone) holding the lock for longer than
    // LOCK_WAIT makes the call fail, saying so.
    let t0 = std::time::Instant::now();
    loop {
        match f.try_lock_shared() {
            Ok(()) => return Ok(Some(f)),
            Err(std::fs::TryLockError::WouldBlock) if t0.elapsed() < LOCK_WAIT => {
                std::thread::sleep(std::time::Duration::from_millis(50))
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(format!(
                "{}: held by a writer for over {} s (a --parquet write in progress?); try again",
                lock.display(),
                LOCK_WAIT.as_secs()
            ))
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(format!("{}: {e}", lock.display())),
        }
    }
}

/// Copies every entry of `from` (open at `fd`) into `to`, refusing any entry that is not
/// a directory or a regular file.
fn copy_dir(
    from: &Path,
    fd: &OwnedFd,
    to: &Path,
    (budget, depth): (&mut u64, usize),
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "{}: deeper than a findings directory goes ({MAX_DEPTH} levels); refused",
            from.display()
        ));
    }
    std::fs::create_dir(to).map_err(|e| format!("fleet: {}: {e}", to.display()))?;
    let mut names: Vec<OsString> = Vec::new();
    let list = rustix::fs::Dir::read_from(fd).map_err(|e| format!("{}: {e}", from.display()))?;
    for entry in list {
        let entry = entry.map_err(|e| format!("{}: {e}", from.display()))?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(
                <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name).to_os_string(),
            );
        }
    }
    names.sort();
    for name in names {
        let (src, dst) = (from.join(&name), to.join(&name));
        let Some(child) =
            open_at(fd, Path::new(&name), false).map_err(|e| format!("{}: {e}", src.display()))?
        else {
            continue; // removed since it was listed
        };
        match kind(&child).map_err(|e| format!("{}: {e}", src.display()))? {
            FileType::Directory => {
                let d = open_at(fd, Path::new(&name), true)
                    .map_err(|e| format!("{}: {e}", src.display()))?
                    .ok_or_else(|| format!("{}: removed while read", src.display()))?;
                copy_dir(&src, &d, &dst, (&mut *budget, depth + 1))?
            }
            FileType::RegularFile => copy_file(&src, &child, &dst, budget)?,
            other => {
                return Err(format!(
                    "{}: a {} inside a findings directory; fleet reads only directories and regular files there (no symlinks)",
                    src.display(),
                    what(other)
                ))
            }
        }
    }
    Ok(())
}

/// Copies the regular file open at `fd` (`O_PATH`) to `dst`, within `budget` bytes.
fn copy_file(src: &Path, fd: &OwnedFd, dst: &Path, budget: &mut u64) -> Result<(), String> {
    let mut f = readable(fd).map_err(|e| format!("{}: {e}", src.display()))?;
    let len = f
        .metadata()
        .map_err(|e| format!("{}: {e}", src.display()))?
        .len();
    if len > *budget {
        return Err(format!(
            "{}: findings directories over {} GiB are not read by the MCP server; run `whylate fleet` on them",
            src.display(),
            MAX_BYTES >> 30
        ));
    }
    *budget -= len;
    let mut out = File::create_new(dst).map_err(|e| format!("fleet: {}: {e}", dst.display()))?;
    // No more than its size when checked: a file that grows meanwhile is cut there.
    std::io::copy(&mut std::io::Read::take(&mut f, len), &mut out)
        .map_err(|e| format!("{}: {e}", src.display()))?;
    Ok(())
}

/// `name` under the directory `dir`, opened without following a symlink: a directory
/// for lookups (`want_dir`), or anything as `O_PATH`. None when it does not exist.
fn open_at(dir: &impl AsFd, name: &Path, want_dir: bool) -> std::io::Result<Option<OwnedFd>> {
    let mut flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    if want_dir {
        flags |= OFlags::DIRECTORY;
        // Listing needs a descriptor open for reading, not `O_PATH`.
        flags.remove(OFlags::PATH);
        flags |= OFlags::RDONLY;
    }
    match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => Ok(Some(fd)),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(rustix::io::Errno::LOOP) | Err(rustix::io::Errno::NOTDIR) => Err(
            std::io::Error::other("a symlink or not a directory; fleet follows no symlinks"),
        ),
        Err(e) => Err(e.into()),
    }
}

/// The regular file open at the `O_PATH` descriptor `fd`, reopened for reading through
/// its magic link (the open file itself, not a name).
fn readable(fd: &OwnedFd) -> std::io::Result<File> {
    if kind(fd)? != FileType::RegularFile {
        return Err(std::io::Error::other(
            "not a regular file; refused (fleet never opens a FIFO or device)",
        ));
    }
    File::open(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

fn kind(fd: &impl AsFd) -> std::io::Result<FileType> {
    Ok(FileType::from_raw_mode(rustix::fs::fstat(fd)?.st_mode))
}

fn what(t: FileType) -> &'static str {
    match t {
        FileType::Symlink => "symlink",
        FileType::Fifo => "FIFO",
        FileType::Socket => "socket",
        FileType::CharacterDevice | FileType::BlockDevice => "device",
        _ => "file of another kind",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirfd(p: &Path) -> OwnedFd {
        rustix::fs::open(p, OFlags::PATH | OFlags::DIRECTORY, Mode::empty()).unwrap()
    }

    #[test]
    fn the_copy_holds_the_files_and_refuses_links_and_fifos() {
        let root = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let fl = root.path().join("fl");
        std::fs::create_dir_all(fl.join("traces/host=a/date=d")).unwrap();
        std::fs::create_dir_all(fl.join("_committed")).unwrap();
        std::fs::write(fl.join("traces/host=a/date=d/1.parquet"), "P").unwrap();
        std::fs::write(fl.join("_committed/.lock"), "").unwrap();
        let c = copy(&fl, dirfd(&fl)).unwrap();
        let got = std::fs::read_to_string(c.copy.join("traces/host=a/date=d/1.parquet")).unwrap();
        assert_eq!(got, "P");
        let gone = c.copy.clone();
        drop(c);
        assert!(!gone.exists(), "the copy is removed with the call");

        // A table that is a symlink out: refused, naming it.
        std::fs::create_dir_all(out.path().join("traces")).unwrap();
        std::fs::remove_dir_all(fl.join("traces")).unwrap();
        std::os::unix::fs::symlink(out.path().join("traces"), fl.join("traces")).unwrap();
        let e = copy(&fl, dirfd(&fl)).err().unwrap();
        assert!(e.contains("fl/traces") && e.contains("symlink"), "{e}");
        std::fs::remove_file(fl.join("traces")).unwrap();

        // A lock that is a FIFO: refused at once, not waited on.
        std::fs::remove_file(fl.join("_committed/.lock")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            fl.join("_committed/.lock"),
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let e = copy(&fl, dirfd(&fl)).err().unwrap();
        assert!(
            e.contains(".lock") && e.contains("not a regular file"),
            "{e}"
        );
    }
}
