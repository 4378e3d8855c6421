//! Findings written as Parquet in a hive-style layout any engine can prune:
//! `DIR/<table>/host=<host>/date=<YYYY-MM-DD>/<trace_id>.parquet`.
//!
//! One trace's tables are seen all or none: each is written under a temporary name of its
//! writer's own, then, holding `DIR/_committed/.lock`, its commit marker
//! `DIR/_committed/host=.../date=.../<trace_id>` is removed, the tables renamed into
//! place and the marker written again. `whylate fleet` reads only traces with a marker,
//! holding the lock shared, so it never sees a trace half replaced; two writers of one
//! trace take turns, and the last to commit leaves its whole set. A write that fails
//! part-way removes what it placed and leaves no marker.

use crate::findings::{Findings, SCHEMA_VERSION};
use crate::meta::check_part;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The directory of commit markers, beside the tables' (an engine listing a table's
/// directory never meets it).
pub const COMMITTED: &str = "_committed";

/// The lock file under [`COMMITTED`]: exclusive while a trace is committed, shared while
/// `fleet` reads.
pub const LOCK: &str = ".lock";

/// Why findings could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// A host or date that cannot name a directory.
    #[error("{0}")]
    Part(String),
    /// The file system said no.
    // Not a `source`: the message already says it, and a printer of error chains
    // would say it twice ("File name too long: File name too long").
    #[error("{path}: {error}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        error: std::io::Error,
    },
    /// Arrow or Parquet refused the data (a bug: the tables are built by this crate).
    #[error("{path}: {error}")]
    Parquet {
        /// The file.
        path: PathBuf,
        /// The error.
        error: parquet::errors::ParquetError,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WriteError + '_ {
    move |error| WriteError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// What was written.
#[derive(Debug, Default, Clone)]
pub struct Written {
    /// Files.
    pub files: usize,
    /// Rows, all tables.
    pub rows: usize,
    /// Bytes on disk.
    pub bytes: u64,
    /// The trace's directory part (`host=.../date=...`).
    pub part: String,
}

/// A table written under its temporary name, and the name it takes on commit.
struct Staged {
    tmp: PathBuf,
    path: PathBuf,
}

/// Writes every table of `f` under `dir`, the trace's tables all or none (see the module
/// doc). Empty tables are written too, so every table exists for an engine to read from
/// the first trace on.
pub fn write(dir: &Path, f: &Findings) -> Result<Written, WriteError> {
    check_part("host", &f.meta.host).map_err(WriteError::Part)?;
    check_part("date", &f.meta.date).map_err(WriteError::Part)?;
    let part = format!("host={}/date={}", f.meta.host, f.meta.date);
    let mut w = Written {
        part: part.clone(),
        ..Written::default()
    };
    let mut staged = Vec::new();
    let done = stage(dir, f, &part, &mut staged, &mut w).and_then(|()| {
        let marker = dir.join(COMMITTED).join(&part).join(&f.meta.trace_id);
        commit(dir, &marker, &staged)
    });
    if done.is_err() {
        for s in &staged {
            let _ = std::fs::remove_file(&s.tmp);
        }
    }
    done.map(|()| w)
}

/// Writes each table under a temporary name no other writer uses (a shared one let two
/// writers of one trace rename each other's file away: a bogus ENOENT).
fn stage(
    dir: &Path,
    f: &Findings,
    part: &str,
    staged: &mut Vec<Staged>,
    w: &mut Written,
) -> Result<(), WriteError> {
    let token = writer_token();
    for t in &f.tables {
        let d = dir.join(t.name).join(part);
        std::fs::create_dir_all(&d).map_err(io(&d))?;
        let path = d.join(format!("{}.parquet", f.meta.trace_id));
        let tmp = d.join(format!(".{}.{token}.parquet.tmp", f.meta.trace_id));
        // Listed before it exists, so a failure removes what it left.
        staged.push(Staged {
            tmp: tmp.clone(),
            path,
        });
        let bytes = write_one(&tmp, t).map_err(|e| match e {
            OneError::Io(error) => WriteError::Io { path: tmp, error },
            OneError::Parquet(error) => WriteError::Parquet { path: tmp, error },
        })?;
        w.files += 1;
        w.rows += t.len();
        w.bytes += bytes;
    }
    Ok(())
}

/// This process and thread, and a count: unique among concurrent writers on one host
/// (the pid) and within one process (the count).
fn writer_token() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Puts the staged tables in place under the lock: marker out, tables in, marker back.
/// On a failure the tables already placed are removed, so no engine reads a mix of this
/// write and an older one.
fn commit(dir: &Path, marker: &Path, staged: &[Staged]) -> Result<(), WriteError> {
    let lock = lock(dir, true)?;
    let parent = marker
        .parent()
        .expect("the marker is under the trace's part");
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    match std::fs::remove_file(marker) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(marker)(e)),
        _ => {}
    }
    let placed =
        (staged.iter()).try_for_each(|s| std::fs::rename(&s.tmp, &s.path).map_err(io(&s.path)));
    // The marker holds its trace's id: Spark's file sources list no empty file, and an
    // engine that reads markers as rows needs one per marker.
    let id = marker.file_name().map(|n| n.to_string_lossy().into_owned());
    let body = format!("{}\n", id.unwrap_or_default());
    let marked = placed.and_then(|()| std::fs::write(marker, body).map_err(io(marker)));
    if marked.is_err() {
        for s in staged {
            let _ = std::fs::remove_file(&s.path);
        }
    }
    drop(lock);
    marked
}

/// Opens `DIR/_committed/.lock` and locks it, exclusive for a writer, shared for a reader
/// (which needs it to exist: findings nobody wrote with markers have no writer to wait
/// for).
pub fn lock(dir: &Path, exclusive: bool) -> Result<Option<std::fs::File>, WriteError> {
    let d = dir.join(COMMITTED);
    let path = d.join(LOCK);
    let file = if exclusive {
        std::fs::create_dir_all(&d).map_err(io(&d))?;
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io(&path))?
    } else {
        match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(&path)(e)),
        }
    };
    let locked = if exclusive {
        file.lock()
    } else {
        file.lock_shared()
    };
    locked.map_err(io(&path))?;
    Ok(Some(file))
}

enum OneError {
    Io(std::io::Error),
    Parquet(parquet::errors::ParquetError),
}

fn write_one(path: &Path, t: &crate::table::Table) -> Result<u64, OneError> {
    let file = std::fs::File::create(path).map_err(OneError::Io)?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_key_value_metadata(Some(vec![
            KeyValue::new("whylate.table".into(), t.name.to_string()),
            KeyValue::new("whylate.schema_version".into(), SCHEMA_VERSION.to_string()),
        ]))
        .build();
    let batch = t
        .batch()
        .map_err(|e| OneError::Parquet(parquet::errors::ParquetError::ArrowError(e.to_string())))?;
    let mut w = ArrowWriter::try_new(file, t.schema(), Some(props)).map_err(OneError::Parquet)?;
    w.write(&batch).map_err(OneError::Parquet)?;
    let file = w.into_inner().map_err(OneError::Parquet)?;
    file.metadata().map(|m| m.len()).map_err(OneError::Io)
}

// Each test reads what it wrote back through the engine.
#[cfg(all(test, feature = "query"))]
mod tests {
    use super::*;
    use crate::engine::Engine;
    use crate::findings::TABLES;
    use crate::meta::TraceMeta;
    use crate::table::Val;

    /// One trace of host `h1` from the run named `run` (a label every row carries), with
    /// a sample row.
    fn trace(run: &str) -> Findings {
        let meta = TraceMeta {
            host: "h1".into(),
            date: "2026-11-25".into(),
            trace_id: "00000000000000aa".into(),
            kernel: "6.18".into(),
            labels: vec![("run".into(), run.into())],
            mode: "cycles".into(),
        };
        let mut f = Findings::new(meta);
        let mut row = vec![Val::S(None), Val::S(None), 5u64.into(), 7u64.into()];
        row.extend([true.into(), 3u64.into(), Val::I(Some(9)), 0u64.into()]);
        f.push("samples", row);
        f
    }

    fn labels_read(e: &Engine, table: &str) -> Vec<Option<String>> {
        let q = format!("SELECT DISTINCT labels FROM {table} ORDER BY labels");
        e.query(&q).unwrap().text("labels")
    }

    /// Every `.parquet` (and temporary) file of the trace, any table.
    fn files_left(dir: &Path) -> Vec<PathBuf> {
        let mut v = Vec::new();
        for t in TABLES {
            let d = dir.join(t).join("host=h1/date=2026-11-25");
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                if e.path().is_file() {
                    v.push(e.path());
                }
            }
        }
        v
    }

    #[test]
    fn a_write_that_fails_part_way_leaves_nothing_fleet_reads() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        // A directory where `misses` goes makes its rename fail after `traces` and
        // `samples` were placed: first on a new trace, then over a whole older one.
        let blocked = dir.join("misses/host=h1/date=2026-11-25/00000000000000aa.parquet");
        for earlier in [false, true] {
            if earlier {
                std::fs::remove_dir(&blocked).unwrap();
                write(dir, &trace("a")).unwrap();
                std::fs::remove_file(&blocked).unwrap();
            }
            std::fs::create_dir_all(&blocked).unwrap();
            let e = write(dir, &trace("b")).unwrap_err().to_string();
            assert!(e.starts_with(&blocked.display().to_string()), "{e}");
            assert_eq!(files_left(dir), Vec::<PathBuf>::new(), "earlier: {earlier}");
            let marker = dir.join("_committed/host=h1/date=2026-11-25/00000000000000aa");
            assert!(!marker.exists());
            let eng = Engine::open(&[dir.to_path_buf()]).unwrap();
            for t in ["traces", "samples", "labels"] {
                assert_eq!(labels_read(&eng, t), Vec::<Option<String>>::new(), "{t}");
            }
        }
    }

    #[test]
    fn concurrent_writers_of_one_trace_leave_one_whole_set() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        for round in 0..4 {
            std::thread::scope(|s| {
                for w in 0..6 {
                    s.spawn(move || write(dir, &trace(&format!("r{round}w{w}"))).unwrap());
                }
            });
            let eng = Engine::open(&[dir.to_path_buf()]).unwrap();
            let samples = labels_read(&eng, "samples");
            assert_eq!(samples.len(), 1, "one writer's rows: {samples:?}");
            assert_eq!(labels_read(&eng, "labels"), samples, "round {round}");
            let tmp_left = files_left(dir).into_iter().filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().ends_with(".tmp"))
            });
            assert_eq!(tmp_left.count(), 0);
        }
    }

    #[test]
    fn a_writer_waits_while_fleet_reads_so_no_query_sees_a_trace_half_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        write(&dir, &trace("a")).unwrap();
        let eng = Engine::open(std::slice::from_ref(&dir)).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let d = dir.clone();
        let writer = std::thread::spawn(move || {
            write(&d, &trace("b")).unwrap();
            tx.send(()).unwrap();
        });
        let waited = std::time::Duration::from_millis(300);
        assert!(rx.recv_timeout(waited).is_err(), "wrote under a reader");
        assert_eq!(labels_read(&eng, "samples"), [Some("run=a".to_string())]);
        drop(eng);
        writer.join().unwrap();
        let eng = Engine::open(&[dir]).unwrap();
        assert_eq!(labels_read(&eng, "samples"), [Some("run=b".to_string())]);
    }
}
