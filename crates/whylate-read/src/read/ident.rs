//! Which file a path names: the same input given twice (under any name) would be read
//! twice and counted twice, and a pipe given twice would be split between two readers;
//! an output that is an input would destroy it. Files are compared by device and inode,
//! so `./t.dat`, `t.dat` and a link to it are one file; `-` is standard input.

use crate::read::ReadError;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// A file's identity: (device, inode).
pub type Ident = (u64, u64);

/// The metadata of `path`, `-` being standard input (`/dev/stdin` names its descriptor).
fn metadata(path: &Path) -> Option<std::fs::Metadata> {
    let p = if path.as_os_str() == "-" {
        Path::new("/dev/stdin")
    } else {
        path
    };
    std::fs::metadata(p).ok()
}

/// The identity of the file `path` names (following links), None when it cannot be
/// had (no such file: opening it says why).
pub fn identity(path: &Path) -> Option<Ident> {
    metadata(path).map(|m| (m.dev(), m.ino()))
}

/// True when `path` can only be read once, front to back: standard input, a pipe (a
/// FIFO, `<(cmd)`), a socket or a character device. Binary readers seek, so such an
/// input is read as standard input is: spooled, or read as a stream.
pub fn is_stream(path: &Path) -> bool {
    if path.as_os_str() == "-" {
        return true;
    }
    metadata(path).is_some_and(|m| {
        let t = m.file_type();
        t.is_fifo() || t.is_socket() || t.is_char_device()
    })
}

/// Files opened by the caller, by the path they stand for. A server that checks a path
/// and then lets the library open it by name reads whatever the name leads to by then (a
/// symlink swapped in, a FIFO that blocks `open`); one that opens once and hands the
/// descriptor over reads what it checked.
#[derive(Debug, Default)]
pub struct Held {
    files: Vec<(PathBuf, std::sync::Arc<std::fs::File>)>,
}

impl Held {
    /// Adds `file` as the one `path` stands for.
    pub fn insert(&mut self, path: PathBuf, file: std::fs::File) {
        self.files.push((path, std::sync::Arc::new(file)));
    }

    /// The file held for `path`, if any.
    pub fn get(&self, path: &Path) -> Option<&std::sync::Arc<std::fs::File>> {
        self.files.iter().find(|(p, _)| p == path).map(|(_, f)| f)
    }
}

pub use crate::read::source::display;

/// Refuses inputs that name one file twice (the same path, or two paths to one file):
/// each of its events would count twice, and a pipe would be split between two readers.
/// A path `held` holds is the file held for it, not whatever its name leads to now.
pub fn check_distinct(paths: &[PathBuf], held: Option<&Held>) -> Result<(), ReadError> {
    use std::collections::HashMap;
    // Maps, not scans: thousands of inputs are checked in linear time.
    let mut names: HashMap<&PathBuf, ()> = HashMap::with_capacity(paths.len());
    let mut files: HashMap<Ident, &PathBuf> = HashMap::with_capacity(paths.len());
    for p in paths {
        let id = match held.and_then(|h| h.get(p)) {
            Some(f) => f.metadata().ok().map(|m| (m.dev(), m.ino())),
            None => identity(p),
        };
        let first = match names.insert(p, ()) {
            Some(()) => Some(p),
            None => id.and_then(|id| files.insert(id, p)),
        };
        if let Some(q) = first {
            return Err(ReadError::SameInput {
                path: p.clone(),
                first: q.clone(),
            });
        }
    }
    same_bytes(paths, held)
}

/// Bytes compared at each end of two inputs of one size.
const ENDS: u64 = 1 << 20;

/// Refuses two regular files with the same bytes: a copy of a trace beside it would
/// count its events twice. Files of one size are compared by their first and last MiB
/// (a copy, not two recordings: those differ in their first bytes' times already).
fn same_bytes(paths: &[PathBuf], held: Option<&Held>) -> Result<(), ReadError> {
    use std::hash::{Hash, Hasher};
    let size = |p: &PathBuf| -> Option<u64> {
        let m = match held {
            Some(h) => h.get(p)?.metadata().ok()?,
            None if is_stream(p) => return None,
            None => metadata(p)?,
        };
        (m.is_file() && m.len() > 0).then_some(m.len())
    };
    let sizes: Vec<Option<u64>> = paths.iter().map(size).collect();
    let mut of_size: std::collections::HashMap<u64, usize> = Default::default();
    for len in sizes.iter().flatten() {
        *of_size.entry(*len).or_default() += 1;
    }
    let mut seen: std::collections::HashMap<(u64, u64), &PathBuf> = Default::default();
    for (p, len) in paths.iter().zip(&sizes) {
        let Some(len) = *len else { continue };
        if of_size[&len] < 2 {
            continue;
        }
        let f = match held {
            Some(h) => h.get(p).cloned(),
            None => std::fs::File::open(p).ok().map(std::sync::Arc::new),
        };
        let Some(f) = f else { continue };
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let mut buf = vec![0u8; ENDS.min(len) as usize];
        for at in [0, len - buf.len() as u64] {
            if std::os::unix::fs::FileExt::read_exact_at(&*f, &mut buf, at).is_err() {
                return Ok(());
            }
            buf.hash(&mut h);
        }
        if let Some(first) = seen.insert((len, h.finish()), p) {
            return Err(ReadError::SameContent {
                path: p.clone(),
                first: first.clone(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_file_under_two_names_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "x").unwrap();
        std::fs::write(&b, "z").unwrap();
        std::os::unix::fs::symlink(&a, dir.path().join("l")).unwrap();
        assert!(check_distinct(&[a.clone(), b.clone()], None).is_ok());
        let e = check_distinct(&[a.clone(), b.clone(), dir.path().join("l")], None).unwrap_err();
        assert!(e.to_string().contains("given twice"), "{e}");
        let e = check_distinct(&["-".into(), "-".into()], None).unwrap_err();
        assert!(e.to_string().starts_with("- (standard input)"), "{e}");
        // A copy is another file with the same bytes: refused too; a file of the same
        // size with other bytes is not.
        let (c, d) = (dir.path().join("c"), dir.path().join("d"));
        std::fs::write(&c, "y").unwrap();
        std::fs::copy(&a, &d).unwrap();
        assert!(check_distinct(&[a.clone(), b.clone(), c.clone()], None).is_ok());
        let e = check_distinct(&[a.clone(), c.clone(), d.clone()], None).unwrap_err();
        assert!(e.to_string().contains("holds the same bytes as"), "{e}");
        assert!(e.to_string().starts_with(&d.display().to_string()), "{e}");
        let e = check_distinct(&["-".into(), "-".into()], None).unwrap_err();
        assert!(e.to_string().starts_with("- (standard input)"), "{e}");
        assert!(is_stream(Path::new("-")) && !is_stream(&a));
    }
}
