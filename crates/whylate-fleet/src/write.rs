//! Findings written as Parquet in a hive-style layout any engine can prune:
//! `DIR/<table>/host=<host>/date=<YYYY-MM-DD>/<trace_id>.parquet`.

use crate::findings::{Findings, SCHEMA_VERSION};
use crate::meta::check_part;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use std::path::{Path, PathBuf};

/// Why findings could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// A host or date that cannot name a directory.
    #[error("{0}")]
    Part(String),
    /// The file system said no.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Arrow or Parquet refused the data (a bug: the tables are built by this crate).
    #[error("{path}: {source}")]
    Parquet {
        /// The file.
        path: PathBuf,
        /// The error.
        source: parquet::errors::ParquetError,
    },
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

/// Writes every table of `f` under `dir`, each file whole or not at all (written to a
/// hidden temporary name, then renamed). Empty tables are written too, so every table
/// exists for an engine to read from the first trace on.
pub fn write(dir: &Path, f: &Findings) -> Result<Written, WriteError> {
    check_part("host", &f.meta.host).map_err(WriteError::Part)?;
    check_part("date", &f.meta.date).map_err(WriteError::Part)?;
    let part = format!("host={}/date={}", f.meta.host, f.meta.date);
    let mut w = Written {
        part: part.clone(),
        ..Written::default()
    };
    for t in &f.tables {
        let d = dir.join(t.name).join(&part);
        std::fs::create_dir_all(&d).map_err(|source| WriteError::Io {
            path: d.clone(),
            source,
        })?;
        let path = d.join(format!("{}.parquet", f.meta.trace_id));
        let tmp = d.join(format!(".{}.parquet.tmp", f.meta.trace_id));
        let bytes = write_one(&tmp, t).map_err(|e| match e {
            OneError::Io(source) => WriteError::Io {
                path: tmp.clone(),
                source,
            },
            OneError::Parquet(source) => WriteError::Parquet {
                path: tmp.clone(),
                source,
            },
        })?;
        std::fs::rename(&tmp, &path).map_err(|source| WriteError::Io {
            path: path.clone(),
            source,
        })?;
        w.files += 1;
        w.rows += t.len();
        w.bytes += bytes;
    }
    Ok(w)
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
