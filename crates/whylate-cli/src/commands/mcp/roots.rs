//! Which paths a tool call may read: regular files under the `--root` directories, after
//! every symlink is resolved. Anything else is refused with a message that says why.

use std::path::{Path, PathBuf};

/// The directories the server was started with, canonical.
#[derive(Clone, Debug)]
pub struct Roots {
    dirs: Vec<PathBuf>,
}

impl Roots {
    /// Canonicalizes each `--root`; one that is no directory is an error naming it.
    pub fn new(given: &[PathBuf]) -> Result<Roots, String> {
        let mut dirs = Vec::new();
        for d in given {
            let c = d
                .canonicalize()
                .map_err(|e| format!("--root {}: {e}", d.display()))?;
            if !c.is_dir() {
                return Err(format!("--root {}: not a directory", d.display()));
            }
            dirs.push(c);
        }
        Ok(Roots { dirs })
    }

    /// The roots, for messages and the tools' descriptions.
    pub fn describe(&self) -> String {
        let all: Vec<String> = self.dirs.iter().map(|d| d.display().to_string()).collect();
        all.join(", ")
    }

    /// The canonical path of `given` (absolute, or relative to the first root that holds
    /// it), when it is a regular file under a root; else why not.
    pub fn resolve(&self, given: &str) -> Result<PathBuf, String> {
        let real = self.locate(given)?;
        let meta = real.metadata().map_err(|e| format!("{given}: {e}"))?;
        if !meta.is_file() {
            return Err(format!(
                "{given}: not a regular file (a directory, device, pipe or socket); only trace files are read"
            ));
        }
        Ok(real)
    }

    /// The canonical path of `given` when it is a directory under a root (the findings
    /// directories `fleet` reads); else why not.
    pub fn resolve_dir(&self, given: &str) -> Result<PathBuf, String> {
        let real = self.locate(given)?;
        if !real.is_dir() {
            return Err(format!(
                "{given}: not a directory; give a findings directory (what --parquet wrote)"
            ));
        }
        Ok(real)
    }

    /// Where a new recording named `given` goes: its directory must be under a root
    /// (relative names go under the first root) and the name must not exist, so a tool
    /// call never overwrites a file.
    pub fn resolve_new(&self, given: &str) -> Result<PathBuf, String> {
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
        if !self.dirs.iter().any(|d| real_dir.starts_with(d)) {
            return Err(format!(
                "{given}: outside the roots this server writes ({}); recordings go under them",
                self.describe()
            ));
        }
        let target = real_dir.join(name);
        if target.symlink_metadata().is_ok() {
            return Err(format!(
                "{given}: exists; a recording never overwrites a file, give a new name"
            ));
        }
        Ok(target)
    }

    /// `given` with every symlink resolved, when it exists under a root.
    fn locate(&self, given: &str) -> Result<PathBuf, String> {
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
        if !self.dirs.iter().any(|d| real.starts_with(d)) {
            let via = if real.as_path() != candidate.as_path() {
                format!(" (it leads to {})", real.display())
            } else {
                String::new()
            };
            return Err(format!(
                "{given}: outside the roots this server reads ({}){via}; only traces under them are read",
                self.describe()
            ));
        }
        Ok(real)
    }
}

#[cfg(test)]
mod tests {
    use super::Roots;

    #[test]
    fn files_under_the_root_only() {
        let root = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("t.txt"), "x").unwrap();
        std::fs::write(out.path().join("secret"), "x").unwrap();
        std::os::unix::fs::symlink(out.path().join("secret"), root.path().join("link")).unwrap();
        std::fs::create_dir(root.path().join("sub")).unwrap();
        let r = Roots::new(&[root.path().to_path_buf()]).unwrap();
        let ok = r.resolve("t.txt").unwrap();
        assert_eq!(ok, root.path().canonicalize().unwrap().join("t.txt"));
        assert_eq!(r.resolve(ok.to_str().unwrap()).unwrap(), ok);
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
        assert_eq!(r.resolve_dir("findings").unwrap(), real.join("findings"));
        assert!(r
            .resolve_dir("t.dat")
            .unwrap_err()
            .contains("not a directory"));
        assert!(r
            .resolve_dir(out.path().to_str().unwrap())
            .unwrap_err()
            .contains("outside the roots"));
        assert_eq!(r.resolve_new("new.dat").unwrap(), real.join("new.dat"));
        assert_eq!(
            r.resolve_new("findings/new.dat").unwrap(),
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
}
