//! Which paths a tool call may read: regular files under the `--root` directories, after
//! every symlink is resolved. Anything else is refused with a message that says why.
//!
//! A path is checked by name, then opened once, component by component from the root's
//! own descriptor with `O_NOFOLLOW` (`O_PATH`, so a FIFO or device is never opened for
//! reading and no `open` can block), checked again on the descriptor (`fstat`: a regular
//! file) and read only through it. A symlink or FIFO swapped in between the check and the
//! open is refused, never followed: the check-then-open race of a name-based server.

use rustix::fs::{FileType, Mode, OFlags};
use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// The directories the server was started with, canonical, each with a descriptor held
/// from the start (a root renamed or swapped later is still the directory checked).
#[derive(Clone, Debug)]
pub struct Roots {
    dirs: Vec<PathBuf>,
    fds: Vec<Arc<OwnedFd>>,
}

/// A recording's output: where it really is, and the path the recorder writes (through
/// the directory's descriptor, held as long as this lives).
#[derive(Debug)]
pub struct NewFile {
    /// The canonical path, for messages and the answer.
    pub real: PathBuf,
    /// `/proc/self/fd/N/name`, N the directory's descriptor.
    pub write_to: PathBuf,
    _dir: OwnedFd,
}

/// A path must be UTF-8: the command line the tool's arguments become is text, and a
/// name that changed on the way would be opened by that other name.
fn utf8(given: &str, real: &Path) -> Result<(), String> {
    real.to_str().map(|_| ()).ok_or_else(|| {
        format!(
            "{given}: its real path {} is not valid UTF-8; refused (rename it)",
            real.display()
        )
    })
}

/// Why an opened path was refused after its check by name passed.
const SWAPPED: &str =
    "changed while it was being opened (a symlink or another kind of file took its place); refused";

impl Roots {
    /// Canonicalizes each `--root`; one that is no directory is an error naming it.
    pub fn new(given: &[PathBuf]) -> Result<Roots, String> {
        let mut dirs = Vec::new();
        let mut fds = Vec::new();
        for d in given {
            let c = d
                .canonicalize()
                .map_err(|e| format!("--root {}: {e}", d.display()))?;
            if !c.is_dir() {
                return Err(format!("--root {}: not a directory", d.display()));
            }
            let fd = rustix::fs::open(&c, dir_flags(), Mode::empty())
                .map_err(|e| format!("--root {}: {e}", d.display()))?;
            dirs.push(c);
            fds.push(Arc::new(fd));
        }
        Ok(Roots { dirs, fds })
    }

    /// The roots, for messages and the tools' descriptions.
    pub fn describe(&self) -> String {
        let all: Vec<String> = self.dirs.iter().map(|d| d.display().to_string()).collect();
        all.join(", ")
    }

    /// The canonical path of `given` (absolute, or relative to the first root that holds
    /// it) and the file opened there, when it is a regular file under a root; else why
    /// not. Read the file, never the path: the path is for messages.
    pub fn resolve(&self, given: &str) -> Result<(PathBuf, File), String> {
        let (real, root) = self.locate(given)?;
        utf8(given, &real)?;
        let fd = self.open_beneath(given, &real, root)?;
        let kind = stat_kind(&fd).map_err(|e| format!("{given}: {e}"))?;
        if kind != FileType::RegularFile {
            return Err(format!(
                "{given}: not a regular file (a directory, device, pipe or socket); only trace files are read"
            ));
        }
        // `O_PATH` descriptors cannot be read: reopen the very file through its magic
        // link, which names the open file itself, not a path that could change.
        let file = File::open(format!("/proc/self/fd/{}", fd.as_raw_fd()))
            .map_err(|e| format!("{given}: reopening the checked file for reading: {e}"))?;
        Ok((real, file))
    }

    /// The canonical path of `given` and a descriptor of it, when it is a directory under
    /// a root (the findings directories `fleet` reads); else why not.
    pub fn resolve_dir(&self, given: &str) -> Result<(PathBuf, OwnedFd), String> {
        let (real, root) = self.locate(given)?;
        utf8(given, &real)?;
        let fd = self.open_beneath(given, &real, root)?;
        if stat_kind(&fd).map_err(|e| format!("{given}: {e}"))? != FileType::Directory {
            return Err(format!(
                "{given}: not a directory; give a findings directory (what --parquet wrote)"
            ));
        }
        Ok((real, fd))
    }

    /// Opens `real` (canonical, under root `root`) one component at a time from the
    /// root's descriptor, following no symlink: what a name-based check passed, changed
    /// since, is refused here.
    fn open_beneath(&self, given: &str, real: &Path, root: usize) -> Result<OwnedFd, String> {
        let rel = real.strip_prefix(&self.dirs[root]).map_err(|_| {
            format!(
                "{given}: outside the roots this server reads ({})",
                self.describe()
            )
        })?;
        let mut at =
            rustix::io::dup(self.fds[root].as_fd()).map_err(|e| format!("{given}: {e}"))?;
        let parts: Vec<_> = rel.components().collect();
        for (i, c) in parts.iter().enumerate() {
            let Component::Normal(name) = c else {
                return Err(format!("{given}: {SWAPPED}"));
            };
            let last = i + 1 == parts.len();
            let flags = if last { leaf_flags() } else { dir_flags() };
            at = rustix::fs::openat(&at, *name, flags, Mode::empty()).map_err(|e| {
                if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR {
                    format!("{given}: {SWAPPED}")
                } else {
                    format!("{given}: {}", std::io::Error::from(e))
                }
            })?;
            // `O_PATH | O_NOFOLLOW` opens a symlink itself rather than failing.
            if last && stat_kind(&at).map_err(|e| format!("{given}: {e}"))? == FileType::Symlink {
                return Err(format!("{given}: {SWAPPED}"));
            }
        }
        Ok(at)
    }

    /// Where a new recording named `given` goes: its directory must be under a root
    /// (relative names go under the first root) and the name must not exist, so a tool
    /// call never overwrites a file. Returns the real path (for messages) and the path
    /// to write, through a descriptor of the directory held for the call
    /// (`/proc/self/fd/N/name`): a directory swapped for a symlink while the recording
    /// runs is not followed, and the recorder opens the name itself with `O_NOFOLLOW`.
    pub fn resolve_new(&self, given: &str) -> Result<NewFile, String> {
        let p = Path::new(given);
        let name = p
            .file_name()
            .filter(|n| !given.ends_with('/') && *n != "..")
            .ok_or_else(|| format!("{given}: not a file name; give a new file under the roots"))?;
        let dir = match p.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(d) if d.is_absolute() => d.to_path_buf(),
            Some(d) => self.dirs[0].join(d),
            None => self.dirs[0].clone(),
        };
        let real_dir = dir
            .canonicalize()
            .map_err(|e| format!("{given}: its directory {}: {e}", dir.display()))?;
        let Some(root) = self.dirs.iter().position(|d| real_dir.starts_with(d)) else {
            return Err(format!(
                "{given}: outside the roots this server writes ({}); recordings go under them",
                self.describe()
            ));
        };
        utf8(given, &real_dir)?;
        let fd = self.open_beneath(given, &real_dir, root)?;
        if stat_kind(&fd).map_err(|e| format!("{given}: {e}"))? != FileType::Directory {
            return Err(format!("{given}: {SWAPPED}"));
        }
        let exists = rustix::fs::statat(&fd, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW);
        if exists.is_ok() {
            return Err(format!(
                "{given}: exists; a recording never overwrites a file, give a new name"
            ));
        }
        let write_to = PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd())).join(name);
        Ok(NewFile {
            real: real_dir.join(name),
            write_to,
            _dir: fd,
        })
    }

    /// `given` with every symlink resolved, when it exists under a root.
    fn locate(&self, given: &str) -> Result<(PathBuf, usize), String> {
        if given.is_empty() {
            return Err("an empty path; give a trace file under the roots".into());
        }
        let p = Path::new(given);
        let candidate = if p.is_absolute() {
            p.to_path_buf()
        } else {
            let found = self
                .dirs
                .iter()
                .map(|d| d.join(p))
                .find(|c| c.symlink_metadata().is_ok());
            match found {
                Some(c) => c,
                None => {
                    return Err(format!(
                        "{given}: no such file under the roots ({})",
                        self.describe()
                    ))
                }
            }
        };
        let real = candidate
            .canonicalize()
            .map_err(|e| format!("{given}: {e}"))?;
        let Some(root) = self.dirs.iter().position(|d| real.starts_with(d)) else {
            let via = if real.as_path() != candidate.as_path() {
                format!(" (it leads to {})", real.display())
            } else {
                String::new()
            };
            return Err(format!(
                "{given}: outside the roots this server reads ({}){via}; only traces under them are read",
                self.describe()
            ));
        };
        Ok((real, root))
    }
}

/// A directory on the way: opened for lookups only, never through a symlink.
fn dir_flags() -> OFlags {
    OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// The last component: `O_PATH` opens no file for I/O, so a FIFO cannot block it and a
/// device's open has no effect.
fn leaf_flags() -> OFlags {
    OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// What kind of file a descriptor is.
fn stat_kind(fd: &impl AsFd) -> std::io::Result<FileType> {
    let st = rustix::fs::fstat(fd)?;
    Ok(FileType::from_raw_mode(st.st_mode))
}

#[cfg(test)]
mod tests {
    use super::Roots;
    use rustix::fs::{FileType, Mode};
    use std::sync::Arc;

    #[test]
    fn files_under_the_root_only() {
        let root = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("t.txt"), "x").unwrap();
        std::fs::write(out.path().join("secret"), "x").unwrap();
        std::os::unix::fs::symlink(out.path().join("secret"), root.path().join("link")).unwrap();
        std::fs::create_dir(root.path().join("sub")).unwrap();
        let r = Roots::new(&[root.path().to_path_buf()]).unwrap();
        let ok = r.resolve("t.txt").unwrap().0;
        assert_eq!(ok, root.path().canonicalize().unwrap().join("t.txt"));
        assert_eq!(r.resolve(ok.to_str().unwrap()).unwrap().0, ok);
        let err = |p: &str| r.resolve(p).unwrap_err();
        assert!(err("link").contains("outside the roots"), "{}", err("link"));
        assert!(err("../x").contains("no such file") || err("../x").contains("outside"));
        let secret = out.path().join("secret");
        assert!(err(secret.to_str().unwrap()).contains("outside the roots"));
        assert!(err("/dev/zero").contains("outside the roots"));
        assert!(err("sub").contains("not a regular file"));
        assert!(err("missing.dat").contains("no such file"));
        assert!(err("").contains("empty path"));
        let dev = Roots::new(&["/dev".into()]).unwrap();
        assert!(dev
            .resolve("zero")
            .unwrap_err()
            .contains("not a regular file"));
    }

    #[test]
    fn directories_and_new_files_under_the_root_only() {
        let root = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("findings")).unwrap();
        std::fs::write(root.path().join("t.dat"), "x").unwrap();
        let r = Roots::new(&[root.path().to_path_buf()]).unwrap();
        let real = root.path().canonicalize().unwrap();
        assert_eq!(r.resolve_dir("findings").unwrap().0, real.join("findings"));
        assert!(r
            .resolve_dir("t.dat")
            .unwrap_err()
            .contains("not a directory"));
        assert!(r
            .resolve_dir(out.path().to_str().unwrap())
            .unwrap_err()
            .contains("outside the roots"));
        let n = r.resolve_new("new.dat").unwrap();
        assert_eq!(n.real, real.join("new.dat"));
        assert!(n.write_to.starts_with("/proc/self/fd/") && n.write_to.ends_with("new.dat"));
        // The recorder's path leads to the directory checked.
        std::fs::write(&n.write_to, "rec").unwrap();
        assert_eq!(
            std::fs::read_to_string(real.join("new.dat")).unwrap(),
            "rec"
        );
        assert_eq!(
            r.resolve_new("findings/new.dat").unwrap().real,
            real.join("findings/new.dat")
        );
        let err = |p: &str| r.resolve_new(p).unwrap_err();
        assert!(
            err("t.dat").contains("never overwrites"),
            "{}",
            err("t.dat")
        );
        assert!(
            err("../x.dat").contains("outside the roots"),
            "{}",
            err("../x.dat")
        );
        let abs = out.path().join("x.dat");
        assert!(err(abs.to_str().unwrap()).contains("outside the roots"));
        assert!(err("nodir/x.dat").contains("its directory"));
        assert!(err("findings/").contains("not a file name"));
    }

    /// A name swapped between a regular file inside the root, a symlink to a file outside
    /// and a FIFO, while paths are resolved and read: nothing outside is ever read, and no
    /// call blocks on the FIFO.
    #[test]
    fn a_name_swapped_under_the_check_is_never_followed() {
        use std::io::Read;
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
        let root = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let secret = out.path().join("secret");
        std::fs::write(&secret, "OUTSIDE").unwrap();
        let (inside, link, fifo) = (
            root.path().join("in"),
            root.path().join("link"),
            root.path().join("fifo"),
        );
        std::fs::write(&inside, "INSIDE").unwrap();
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let name = root.path().join("r.ftrace");
        std::fs::hard_link(&inside, &name).unwrap();
        let r = Roots::new(&[root.path().to_path_buf()]).unwrap();
        let (stop, swaps) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicU64::new(0)),
        );
        let swapper = {
            let (stop, swaps, name) = (stop.clone(), swaps.clone(), name.clone());
            let tmp = root.path().join("tmp");
            std::thread::spawn(move || {
                let sources = [&inside, &link, &fifo];
                let mut i = 0usize;
                while !stop.load(Relaxed) {
                    // rename(2) replaces the name atomically with a link of each kind.
                    let _ = std::fs::remove_file(&tmp);
                    let src = sources[i % 3];
                    let made = if src == &link {
                        std::os::unix::fs::symlink(&secret, &tmp)
                    } else {
                        std::fs::hard_link(src, &tmp)
                    };
                    if made.is_ok() && std::fs::rename(&tmp, &name).is_ok() {
                        swaps.fetch_add(1, Relaxed);
                    }
                    i += 1;
                }
            })
        };
        let (mut read, mut refused) = (0u64, 0u64);
        while swaps.load(Relaxed) < 10_000 {
            match r.resolve(name.to_str().unwrap()) {
                Ok((_, mut f)) => {
                    let mut text = String::new();
                    f.read_to_string(&mut text).unwrap();
                    assert_eq!(text, "INSIDE", "read a file other than the one checked");
                    read += 1;
                }
                Err(e) => {
                    assert!(!e.contains("OUTSIDE"), "{e}");
                    refused += 1;
                }
            }
        }
        stop.store(true, Relaxed);
        swapper.join().unwrap();
        assert!(read > 0 && refused > 0, "read {read}, refused {refused}");
    }

    /// A name that is not UTF-8 would reach the command line changed: refused.
    #[test]
    fn a_name_that_is_not_utf8_is_refused() {
        use std::os::unix::ffi::OsStrExt;
        let root = tempfile::tempdir().unwrap();
        let bad = root.path().join(std::ffi::OsStr::from_bytes(b"a\xff"));
        std::fs::write(&bad, "x").unwrap();
        std::os::unix::fs::symlink(&bad, root.path().join("x")).unwrap();
        let r = Roots::new(&[root.path().to_path_buf()]).unwrap();
        let e = r.resolve("x").unwrap_err();
        assert!(e.contains("not valid UTF-8"), "{e}");
    }
}
