//! What a run reads and writes, checked together before any input is read: an output is
//! never an input (under any name) nor an existing trace given where an output was meant
//! (`export --perfetto A.txt B.txt`), no input is given twice, and every output can be
//! written (a directory option's own directory created when its parent exists; no other
//! directory is made), so a long analysis does not end in a refusal.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use whylate::read::ident;

/// What an output is.
enum Kind {
    /// A file the run writes (a report, an export): one that holds a trace is refused.
    File,
    /// A recording the run writes (`record -o`, `demo --keep`): replacing an older
    /// recording there is what the option is for.
    Recording,
    /// A directory the run writes files in; the function says which paths under it
    /// (relative) the run may write.
    Dir(fn(&Path) -> bool),
}

/// One output option and its path.
struct Output<'a> {
    option: &'static str,
    path: &'a Path,
    kind: Kind,
}

/// The paths of one run.
#[derive(Default)]
pub struct Paths<'a> {
    inputs: Vec<&'a Path>,
    merged: Vec<PathBuf>,
    outputs: Vec<Output<'a>>,
}

impl<'a> Paths<'a> {
    /// Traces read and merged into one timeline: none may be given twice.
    pub fn merged(mut self, files: &'a [PathBuf]) -> Self {
        self.inputs.extend(files.iter().map(PathBuf::as_path));
        self.merged.extend(files.iter().cloned());
        self
    }

    /// Other inputs (`--kallsyms`, the traces `diff` reads one after the other).
    pub fn reads(mut self, file: Option<&'a Path>) -> Self {
        self.inputs.extend(file);
        self
    }

    /// A file output (`--html`, `-o`, `--perfetto`).
    pub fn file(self, option: &'static str, path: Option<&'a Path>) -> Self {
        self.output(option, path, Kind::File)
    }

    /// A recording written (`record -o`, `demo --keep`).
    pub fn recording(self, option: &'static str, path: Option<&'a Path>) -> Self {
        self.output(option, path, Kind::Recording)
    }

    /// A directory output; `writes` says which relative paths under it the run writes.
    pub fn dir(
        self,
        option: &'static str,
        path: Option<&'a Path>,
        writes: fn(&Path) -> bool,
    ) -> Self {
        self.output(option, path, Kind::Dir(writes))
    }

    fn output(mut self, option: &'static str, path: Option<&'a Path>, kind: Kind) -> Self {
        if let Some(path) = path {
            self.outputs.push(Output { option, path, kind });
        }
        self
    }

    /// Refuses what would lose data or count twice, then makes every output writable
    /// (creating a directory option's own directory): the one-line reason otherwise.
    pub fn check(&self) -> Result<(), String> {
        ident::check_distinct(&self.merged, None).map_err(|e| e.to_string())?;
        for (k, o) in self.outputs.iter().enumerate() {
            if let Some(p) = self.outputs[..k].iter().find(|p| p.path == o.path) {
                return Err(format!(
                    "{} {}: also given to {}; give each output its own name",
                    o.option,
                    o.path.display(),
                    p.option
                ));
            }
            self.refuse_overwrite(o)?;
        }
        for o in &self.outputs {
            prepare(o)?;
        }
        Ok(())
    }

    /// An output that is an input, or a trace where a file is written, or an input
    /// inside a directory output that the run would write over.
    fn refuse_overwrite(&self, o: &Output<'_>) -> Result<(), String> {
        let (opt, shown) = (o.option, o.path.display());
        let out_id = ident::identity(o.path);
        for i in &self.inputs {
            if out_id.is_some() && ident::identity(i) == out_id {
                return Err(format!(
                    "{opt} {shown}: is the input {}; refusing to write over it (give the output another name)",
                    ident::display(i)
                ));
            }
        }
        let meta = std::fs::metadata(o.path).ok();
        match o.kind {
            Kind::File | Kind::Recording if meta.as_ref().is_some_and(|m| m.is_dir()) => {
                Err(format!("{opt} {shown}: is a directory; expected a file name"))
            }
            Kind::File => match whylate::read::trace_format(o.path) {
                Some(f) => Err(format!(
                    "{opt} {shown}: already exists and is a trace ({f}); refusing to write over it (was it meant as an input? give the output another name, or remove the file first)"
                )),
                None => Ok(()),
            },
            Kind::Recording => Ok(()),
            Kind::Dir(_) if meta.as_ref().is_some_and(|m| !m.is_dir()) => {
                Err(format!("{opt} {shown}: exists and is not a directory"))
            }
            Kind::Dir(writes) => self.input_inside(opt, o.path, writes),
        }
    }

    /// An input the run would write over inside the directory output `dir`.
    fn input_inside(&self, opt: &str, dir: &Path, writes: fn(&Path) -> bool) -> Result<(), String> {
        let Ok(dir_abs) = dir.canonicalize() else {
            return Ok(());
        };
        for i in &self.inputs {
            let Ok(abs) = i.canonicalize() else { continue };
            if abs.strip_prefix(&dir_abs).is_ok_and(writes) {
                return Err(format!(
                    "{opt} {}: the run writes {} there, an input; refusing to write over it",
                    dir.display(),
                    i.display()
                ));
            }
        }
        Ok(())
    }
}

/// Makes sure `o`'s directory exists and can be written. A directory option's own
/// directory (`--parquet DIR`, `--svg DIR`, `--keep DIR`) is created when its parent
/// exists, and that is said; no other directory is ever created, so a mistyped path (or
/// `--html /nonexistent/x.html` as root) makes nothing outside what was named.
fn prepare(o: &Output<'_>) -> Result<(), String> {
    let (opt, shown) = (o.option, o.path.display());
    let (dir, own) = match o.kind {
        Kind::Dir(_) => (o.path, true),
        Kind::File | Kind::Recording => match o.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => (p, false),
            _ => (Path::new("."), false),
        },
    };
    if std::fs::symlink_metadata(dir).is_err() {
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if !own || !parent.is_dir() {
            let missing = if own { parent } else { dir };
            return Err(format!(
                "{opt} {shown}: the directory {} does not exist; whylate creates no directory but the one a directory option names (create it first: mkdir -p {})",
                missing.display(),
                missing.display()
            ));
        }
        std::fs::create_dir(dir).map_err(|e| {
            format!(
                "{opt} {shown}: cannot create the directory {}: {e}",
                dir.display()
            )
        })?;
        eprintln!("whylate: created the directory {} ({opt})", dir.display());
    } else if !dir.is_dir() {
        return Err(format!(
            "{opt} {shown}: {} is not a directory",
            dir.display()
        ));
    }
    let (target, mode) = match o.kind {
        Kind::File | Kind::Recording if o.path.exists() => (o.path, libc::W_OK),
        _ => (dir, libc::W_OK | libc::X_OK),
    };
    writable(target, mode).map_err(|e| format!("{opt} {shown}: cannot write there: {e}"))
}

/// access(2): may this process write `path` (`mode`: W_OK, and X_OK to create in a
/// directory)?
fn writable(path: &Path, mode: libc::c_int) -> std::io::Result<()> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
    if unsafe { libc::access(c.as_ptr(), mode) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// `--svg DIR` writes histogram.svg, raster.svg and miss-N.svg in DIR.
pub fn svg_files(rel: &Path) -> bool {
    let name = rel.to_string_lossy();
    rel.components().count() == 1
        && (name == "histogram.svg"
            || name == "raster.svg"
            || (name.starts_with("miss-") && name.ends_with(".svg")))
}

/// `--parquet DIR` writes `.parquet` files (and their temporary names) under DIR.
pub fn parquet_files(rel: &Path) -> bool {
    let name = rel.to_string_lossy();
    name.ends_with(".parquet") || name.ends_with(".parquet.tmp")
}

/// `watch --keep DIR` writes windows of its own recording: no input of the run.
pub fn no_inputs(_: &Path) -> bool {
    false
}
