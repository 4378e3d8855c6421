//! The embedded engine: DataFusion, with every findings table registered as a listing
//! table over the roots given (hive partitions `host` and `date` as columns), and query
//! results turned into plain rows.

use crate::findings::{Findings, TABLES};
use crate::schema::{self, mismatch_in, Strict};
use crate::store::Marked;
use crate::write::COMMITTED;
use datafusion::arrow::array::{Array, Float64Array, Int64Array, StringArray};
use datafusion::arrow::compute::{cast, concat_batches};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::datasource::MemTable;
use datafusion::execution::cache::cache_manager::CacheManagerConfig;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why the fleet could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// A path that holds no findings.
    #[error("{0}")]
    Input(String),
    /// A findings file that is not what its table holds: its path, the column, what was
    /// expected and found.
    #[error("{0}")]
    File(String),
    /// The engine failed (a query error): its innermost cause, one line.
    #[error("query engine: {}", root_line(.0))]
    Engine(#[from] datafusion::error::DataFusionError),
    /// The runtime could not start, or the commit lock could not be taken.
    #[error("{0}")]
    Runtime(#[from] std::io::Error),
}

/// An engine error's innermost cause, first line: the layers above it repeat it.
fn root_line(e: &datafusion::error::DataFusionError) -> String {
    let root = e.find_root().to_string();
    root.lines().next().unwrap_or_default().to_string()
}

impl From<crate::write::WriteError> for FleetError {
    fn from(e: crate::write::WriteError) -> FleetError {
        FleetError::Input(e.to_string())
    }
}

/// Bytes of Parquet footers the engine keeps between queries. Its default, 50 MiB, filled
/// with thousands of small files' footers costs memory and time for little reuse: at
/// 10,000 hosts, 4 MiB measured 18.5 s and 435 MiB peak against 21.7 s and 503 MiB.
const METADATA_CACHE_BYTES: usize = 4 << 20;

/// A session with the findings tables registered.
pub struct Engine {
    ctx: SessionContext,
    rt: tokio::runtime::Runtime,
    roots: Vec<PathBuf>,
    /// The traces read: (host, date, trace_id) with a commit marker.
    committed: HashSet<TraceKey>,
    /// Each root's commit lock, held shared while the engine lives: no trace is replaced
    /// between two queries of one report.
    _locks: Vec<std::fs::File>,
    notes: Vec<String>,
}

impl Engine {
    /// Registers every table under each root (a directory `whylate ... --parquet` wrote):
    /// of each, only the traces with a commit marker (crate::write).
    pub fn open(roots: &[PathBuf]) -> Result<Engine, FleetError> {
        if roots.is_empty() {
            return Err(FleetError::Input("no findings directory given".into()));
        }
        for r in roots {
            check_root(r)?;
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        // No statistics: collecting them opens every file's footer while planning each
        // query, and these queries scan whole tables anyway.
        let mut cfg = SessionConfig::new()
            .with_information_schema(false)
            .with_collect_statistics(false);
        // The join to the marked traces would push its keys into every file's scan as a
        // filter to prune by: no file or row group is pruned (every trace is marked, but
        // for a failed write's), and evaluating it per file cost 4x the whole report.
        cfg.options_mut()
            .optimizer
            .enable_join_dynamic_filter_pushdown = false;
        let caches = CacheManagerConfig::default().with_metadata_cache_limit(METADATA_CACHE_BYTES);
        let rt_env = RuntimeEnvBuilder::new()
            .with_cache_manager(caches)
            .build_arc()?;
        let ctx = SessionContext::new_with_config_rt(cfg, rt_env);
        let mut e = Engine {
            ctx,
            rt,
            roots: roots.to_vec(),
            committed: HashSet::new(),
            _locks: Vec::new(),
            notes: Vec::new(),
        };
        let unmarked = e.read_markers()?;
        // The engine lists and reads files through a view that does not show them.
        let local = ObjectStoreUrl::local_filesystem();
        (e.ctx).register_object_store(local.as_ref(), Arc::new(Marked::new(&unmarked)));
        for (name, schema) in Findings::schemas() {
            e.register_one(name, schema)?;
        }
        Ok(e)
    }

    /// Takes each root's lock and reads its markers. A root without any (written before
    /// markers) is read whole: each trace with a `traces` file counts, and a note says a
    /// write that failed part-way cannot be told apart there. Files of a trace without a
    /// marker (a write cut short mid-commit, a copy under another name) are left out,
    /// and a note says how many: their paths are returned.
    fn read_markers(&mut self) -> Result<Vec<PathBuf>, FleetError> {
        let mut unmarked = Vec::new();
        for r in &self.roots {
            self._locks.extend(crate::write::lock(r, false)?);
            let marked = r.join(COMMITTED);
            if marked.is_dir() {
                for (host, date, f) in parts(&marked)? {
                    let id = f.file_name().map(|n| n.to_string_lossy().into_owned());
                    self.committed.extend(id.map(|id| (host, date, id)));
                }
            } else {
                self.committed
                    .extend(trace_files(r, "traces")?.into_iter().map(|(k, _)| k));
                self.notes.push(format!(
                    "{}: no commit markers (findings written before whylate marked them): every trace with a `traces` file there is read, and one whose write failed part-way cannot be told from a whole one; writing a trace again marks it",
                    r.display()
                ));
            }
            let mut stray = HashSet::new();
            for t in TABLES {
                for (k, f) in trace_files(r, t)? {
                    if !self.committed.contains(&k) {
                        stray.insert(k);
                        unmarked.push(f);
                    }
                }
            }
            if !stray.is_empty() {
                self.notes.push(format!(
                    "{}: {} trace(s) have tables but no commit marker (a write cut short, or a copy under another name): left out",
                    r.display(),
                    stray.len()
                ));
            }
        }
        Ok(unmarked)
    }

    fn register_one(&self, name: &'static str, schema: SchemaRef) -> Result<(), FleetError> {
        let urls = (self.roots.iter())
            .map(|r| r.join(name))
            .filter(|d| d.is_dir())
            .map(|d| table_url(&d))
            .collect::<Result<Vec<_>, _>>()?;
        if urls.is_empty() {
            // Findings from before this table existed: it answers with no rows.
            let mut fields = schema.fields().to_vec();
            for p in ["host", "date"] {
                fields.push(Arc::new(Field::new(p, DataType::Utf8, true)));
            }
            let all = Arc::new(Schema::new(fields));
            let empty = MemTable::try_new(all, vec![vec![]])?;
            self.ctx.register_table(name, Arc::new(empty))?;
            return Ok(());
        }
        let opts = ListingOptions::new(Arc::new(ParquetFormat::default()))
            .with_file_extension(".parquet")
            .with_table_partition_cols(vec![
                ("host".into(), DataType::Utf8),
                ("date".into(), DataType::Utf8),
            ]);
        // The schema is known: no file is opened to infer it, and a table no trace
        // has rows in yet still answers (with no rows). Each file is held to it.
        let cfg = ListingTableConfig::new_with_multi_paths(urls)
            .with_listing_options(opts)
            .with_schema(schema)
            .with_expr_adapter_factory(Arc::new(Strict { table: name }));
        let table = Arc::new(ListingTable::try_new(cfg)?);
        self.ctx.register_table(name, table)?;
        Ok(())
    }

    /// Reads these columns of `tables` into memory, once: the queries after this one read
    /// them there instead of opening the files again. For tables of a few rows per trace,
    /// whose cost is per file (its footer, its plan), not per row.
    pub fn load(&self, tables: &[(&str, &[&str])]) -> Result<(), FleetError> {
        for &(name, columns) in tables {
            let read = self.rt.block_on(async {
                let df = self.ctx.table(name).await?.select_columns(columns)?;
                let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
                Ok::<_, datafusion::error::DataFusionError>((schema, df.collect().await?))
            });
            let (schema, batches) = read.map_err(|e| self.failure(e))?;
            // Two partitions, one batch each (a file's rows are a batch of a few rows):
            // the queries over it use both CPUs and no per-batch work.
            let half = batches.len().div_ceil(2).max(1);
            let mut parts = Vec::new();
            for c in batches.chunks(half) {
                parts
                    .push(vec![concat_batches(&schema, c)
                        .map_err(datafusion::error::DataFusionError::from)?]);
            }
            if parts.is_empty() {
                parts.push(Vec::new());
            }
            let mem = MemTable::try_new(schema, parts)?;
            self.ctx.deregister_table(name)?;
            self.ctx.register_table(name, Arc::new(mem))?;
        }
        Ok(())
    }

    /// Runs one query to the end; results are small (aggregates), the scans stream.
    pub fn query(&self, sql: &str) -> Result<Rows, FleetError> {
        let batches = self.rt.block_on(async {
            let df = self.ctx.sql(sql).await?;
            df.collect().await
        });
        batches
            .map(|batches| Rows { batches })
            .map_err(|e| self.failure(e))
    }

    /// What the fleet cannot say from these findings (roots without commit markers).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// A query that failed: the file at fault, when one is (a column missing or of
    /// another type, a file that is no Parquet), named with its full path.
    fn failure(&self, e: datafusion::error::DataFusionError) -> FleetError {
        let m = mismatch_in(&e);
        for (name, schema) in Findings::schemas() {
            if m.as_ref().is_some_and(|m| m.table != name) {
                continue;
            }
            let files = self.files(name);
            let only = m.as_ref().map(|m| m.column.as_str());
            if let Some(msg) = schema::locate(&files, name, &schema, only) {
                return FleetError::File(msg);
            }
        }
        match m {
            Some(m) => FleetError::File(m.to_string()),
            None => FleetError::Engine(e),
        }
    }

    /// The files of `table` the engine reads (marked traces), in path order.
    fn files(&self, table: &str) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = (self.roots.iter())
            .flat_map(|r| trace_files(r, table).unwrap_or_default())
            .filter(|(k, _)| self.committed.contains(k))
            .map(|(_, f)| f)
            .collect();
        out.sort();
        out
    }
}

/// A trace's key: host, date, trace id.
type TraceKey = (String, String, String);

/// The `.parquet` files of `table` under `root`, each with its trace's key.
fn trace_files(root: &Path, table: &str) -> std::io::Result<Vec<(TraceKey, PathBuf)>> {
    let mut out = Vec::new();
    for (host, date, f) in parts(&root.join(table))? {
        if f.extension().is_some_and(|x| x == "parquet") {
            if let Some(id) = f.file_stem().map(|n| n.to_string_lossy().into_owned()) {
                out.push(((host, date, id), f));
            }
        }
    }
    Ok(out)
}

/// The entries of `dir/host=H/date=D/` as (H, D, path); hidden names (temporary files, the
/// lock) are left out. A missing `dir` has none.
fn parts(dir: &Path) -> std::io::Result<Vec<(String, String, PathBuf)>> {
    let list = |d: &Path| -> std::io::Result<Vec<(String, PathBuf)>> {
        let mut v = Vec::new();
        for e in std::fs::read_dir(d)? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with('.') {
                v.push((name, e.path()));
            }
        }
        Ok(v)
    };
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for (h, hp) in list(dir)? {
        let Some(host) = h.strip_prefix("host=").filter(|_| hp.is_dir()) else {
            continue;
        };
        for (d, dp) in list(&hp)? {
            let Some(date) = d.strip_prefix("date=").filter(|_| dp.is_dir()) else {
                continue;
            };
            for (_, f) in list(&dp)? {
                out.push((host.to_string(), date.to_string(), f));
            }
        }
    }
    Ok(out)
}

/// A root must hold the findings tables' directories.
fn check_root(r: &Path) -> Result<(), FleetError> {
    if !r.is_dir() {
        return Err(FleetError::Input(format!(
            "{}: not a directory (expected one written by --parquet)",
            r.display()
        )));
    }
    let present: Vec<&str> = TABLES
        .iter()
        .copied()
        .filter(|t| r.join(t).is_dir())
        .collect();
    if present.is_empty() {
        let found: Vec<String> = std::fs::read_dir(r)
            .map(|d| {
                d.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .take(8)
                    .collect()
            })
            .unwrap_or_default();
        return Err(FleetError::Input(format!(
            "{}: no findings tables in it (expected directories {}; found {})",
            r.display(),
            TABLES.join(", "),
            if found.is_empty() {
                "nothing".to_string()
            } else {
                found.join(", ")
            }
        )));
    }
    Ok(())
}

fn table_url(dir: &Path) -> Result<ListingTableUrl, FleetError> {
    let abs = std::path::absolute(dir)?;
    let mut s = abs.to_string_lossy().into_owned();
    if !s.ends_with('/') {
        s.push('/');
    }
    Ok(ListingTableUrl::parse(s)?)
}

/// Query results, read by column name.
pub struct Rows {
    batches: Vec<RecordBatch>,
}

impl Rows {
    /// Rows in all.
    pub fn len(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    /// No rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Column `name` as text (null: None), all rows.
    pub fn text(&self, name: &str) -> Vec<Option<String>> {
        self.column(name, &DataType::Utf8, |a| {
            let a = a.as_any().downcast_ref::<StringArray>()?;
            Some(
                (0..a.len())
                    .map(|i| a.is_valid(i).then(|| a.value(i).to_string()))
                    .collect(),
            )
        })
    }

    /// Column `name` as integers (null: None), all rows.
    pub fn int(&self, name: &str) -> Vec<Option<i64>> {
        self.column(name, &DataType::Int64, |a| {
            let a = a.as_any().downcast_ref::<Int64Array>()?;
            Some(
                (0..a.len())
                    .map(|i| a.is_valid(i).then(|| a.value(i)))
                    .collect(),
            )
        })
    }

    /// Column `name` as floats (null: None), all rows.
    pub fn float(&self, name: &str) -> Vec<Option<f64>> {
        self.column(name, &DataType::Float64, |a| {
            let a = a.as_any().downcast_ref::<Float64Array>()?;
            Some(
                (0..a.len())
                    .map(|i| a.is_valid(i).then(|| a.value(i)))
                    .collect(),
            )
        })
    }

    fn column<T: Clone>(
        &self,
        name: &str,
        to: &DataType,
        get: impl Fn(&dyn Array) -> Option<Vec<Option<T>>>,
    ) -> Vec<Option<T>> {
        let mut out = Vec::with_capacity(self.len());
        for b in &self.batches {
            let vals = b
                .column_by_name(name)
                .and_then(|c| cast(c, to).ok())
                .and_then(|c| get(c.as_ref()));
            match vals {
                Some(v) => out.extend(v),
                None => out.extend(std::iter::repeat_n(None, b.num_rows())),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::TraceMeta;
    use datafusion::arrow::array::ArrayRef;

    fn count(e: &Engine, table: &str) -> i64 {
        let r = e
            .query(&format!("SELECT COUNT(*) AS n FROM {table}"))
            .unwrap();
        r.int("n")[0].unwrap()
    }

    #[test]
    fn tables_read_with_partitions_and_missing_ones_are_empty() {
        let tmp = tempfile::tempdir().unwrap();
        let meta = TraceMeta {
            host: "h1".into(),
            date: "2026-11-25".into(),
            trace_id: "00000000000000aa".into(),
            kernel: "6.18".into(),
            labels: vec![("team".into(), "rt".into())],
            mode: "timer".into(),
        };
        crate::write(tmp.path(), &Findings::new(meta)).unwrap();
        let e = Engine::open(&[tmp.path().to_path_buf()]).unwrap();
        assert_eq!(count(&e, "labels"), 1);
        let r = e
            .query("SELECT host, date, key, value FROM labels")
            .unwrap();
        assert_eq!(r.text("host"), [Some("h1".to_string())]);
        assert_eq!(r.text("date"), [Some("2026-11-25".to_string())]);
        // Findings written before a table existed: it answers with no rows.
        std::fs::remove_dir_all(tmp.path().join("labels")).unwrap();
        let e = Engine::open(&[tmp.path().to_path_buf()]).unwrap();
        assert_eq!(count(&e, "labels"), 0);
        assert_eq!(count(&e, "traces"), 0);
    }

    #[test]
    fn a_loaded_table_answers_from_memory_as_its_files_did() {
        let tmp = tempfile::tempdir().unwrap();
        for (host, id) in [("h1", "00000000000000aa"), ("h2", "00000000000000bb")] {
            let meta = TraceMeta {
                host: host.into(),
                date: "2026-11-25".into(),
                trace_id: id.into(),
                kernel: "6.18".into(),
                labels: vec![("team".into(), "rt".into())],
                mode: "timer".into(),
            };
            crate::write(tmp.path(), &Findings::new(meta)).unwrap();
        }
        let e = Engine::open(&[tmp.path().to_path_buf()]).unwrap();
        let q = "SELECT host, date, trace_id, key, value FROM labels ORDER BY host";
        let before = e.query(q).unwrap();
        let all = ["host", "date", "trace_id", "key", "value"];
        e.load(&[("labels", &all[..])]).unwrap();
        // Its files gone, the table still answers: from memory, with its partitions.
        std::fs::remove_dir_all(tmp.path().join("labels")).unwrap();
        let after = e.query(q).unwrap();
        for c in ["host", "date", "trace_id", "key", "value"] {
            assert_eq!(before.text(c), after.text(c), "{c}");
        }
        assert_eq!(after.text("host"), [Some("h1".into()), Some("h2".into())]);
        assert_eq!(after.text("value"), [Some("rt".into()), Some("rt".into())]);
        // A table no root has loads as an empty one.
        std::fs::remove_dir_all(tmp.path().join("cpus")).unwrap();
        let e = Engine::open(&[tmp.path().to_path_buf()]).unwrap();
        e.load(&[("cpus", &["host"][..])]).unwrap();
        assert_eq!(count(&e, "cpus"), 0);
    }

    #[test]
    fn a_root_without_tables_is_refused_with_what_it_holds() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("trace.dat"), b"x").unwrap();
        let Err(e) = Engine::open(&[tmp.path().to_path_buf()]) else {
            panic!("opened a directory with no findings")
        };
        let msg = e.to_string();
        assert!(
            msg.contains("no findings tables") && msg.contains("trace.dat"),
            "{msg}"
        );
    }

    /// A whole trace of host `h1` under `dir`, then its `traces` file replaced by one
    /// with the table's columns but `column` (left out, or of type `as_type`), one row.
    fn traces_file_with(dir: &Path, column: &str, as_type: Option<DataType>) -> PathBuf {
        file_with(dir, 0, column, as_type)
    }

    /// As [`traces_file_with`], for the table `TABLES[table]`.
    fn file_with(dir: &Path, table: usize, column: &str, as_type: Option<DataType>) -> PathBuf {
        use datafusion::arrow::array::new_null_array;
        let meta = TraceMeta {
            host: "h1".into(),
            date: "2026-11-25".into(),
            trace_id: "00000000000000aa".into(),
            kernel: "6.18".into(),
            labels: Vec::new(),
            mode: "cycles".into(),
        };
        crate::write(dir, &Findings::new(meta)).unwrap();
        let (name, table) = Findings::schemas().remove(table);
        let mut fields = Vec::new();
        let mut cols: Vec<ArrayRef> = Vec::new();
        for f in table.fields() {
            let t = match (f.name() == column, &as_type) {
                (true, None) => continue,
                (true, Some(t)) => t.clone(),
                (false, _) => f.data_type().clone(),
            };
            fields.push(Field::new(f.name(), t.clone(), true));
            cols.push(if f.name() == "trace_id" {
                Arc::new(StringArray::from(vec!["00000000000000aa"]))
            } else {
                new_null_array(&t, 1)
            });
        }
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap();
        let path = dir.join(format!(
            "{name}/host=h1/date=2026-11-25/00000000000000aa.parquet"
        ));
        let file = std::fs::File::create(&path).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        path
    }

    fn fleet_error(dir: &Path) -> String {
        let e = Engine::open(&[dir.to_path_buf()]).unwrap();
        let o = crate::query::FleetOptions {
            top: 10,
            ..Default::default()
        };
        match crate::report::fleet(&e, &o) {
            Ok(r) => panic!("read as {} misses of {} samples", r.misses, r.samples),
            Err(e @ FleetError::File(_)) => e.to_string(),
            Err(e) => panic!("not located: {e}"),
        }
    }

    #[test]
    fn a_file_missing_a_column_no_query_reads_still_counts() {
        let tmp = tempfile::tempdir().unwrap();
        traces_file_with(tmp.path(), "whylate_version", None);
        let e = Engine::open(&[tmp.path().to_path_buf()]).unwrap();
        let o = crate::query::FleetOptions {
            top: 10,
            ..Default::default()
        };
        let r = crate::report::fleet(&e, &o).unwrap();
        assert_eq!((r.hosts, r.traces), (1, 1));
    }

    #[test]
    fn a_file_missing_a_column_is_refused_naming_the_file_and_the_column() {
        let tmp = tempfile::tempdir().unwrap();
        let path = traces_file_with(tmp.path(), "misses", None);
        let msg = fleet_error(tmp.path());
        let want = format!("{}: no column `misses` (expected Int64); the file's columns: trace_id, kernel, labels, mode, whylate_version,", path.display());
        assert!(msg.starts_with(&want), "{msg}");
        assert!(msg.starts_with('/') && !msg.contains('\n'), "{msg}");
    }

    #[test]
    fn a_column_of_another_type_is_refused_with_the_file_and_both_types() {
        let tmp = tempfile::tempdir().unwrap();
        let path = traces_file_with(tmp.path(), "misses", Some(DataType::Utf8));
        assert_eq!(
            fleet_error(tmp.path()),
            format!(
                "{}: column `misses`: expected Int64, found Utf8",
                path.display()
            )
        );
        // Another width of the same kind reads as it is.
        let tmp = tempfile::tempdir().unwrap();
        traces_file_with(tmp.path(), "misses", Some(DataType::Int32));
        let e = Engine::open(&[tmp.path().to_path_buf()]).unwrap();
        assert_eq!(count(&e, "traces"), 1);
    }

    #[test]
    fn a_file_that_is_no_parquet_is_refused_by_its_full_path() {
        let tmp = tempfile::tempdir().unwrap();
        let path = traces_file_with(tmp.path(), "misses", None);
        std::fs::write(&path, b"not parquet at all").unwrap();
        let msg = fleet_error(tmp.path());
        let want = format!("{}: not a readable Parquet file (", path.display());
        assert!(msg.starts_with(&want) && !msg.contains('\n'), "{msg}");
    }

    #[test]
    fn a_column_added_after_a_file_was_written_reads_as_null_there() {
        for column in ["key_misses", "once_ns"] {
            let tmp = tempfile::tempdir().unwrap();
            let causes = TABLES.iter().position(|t| *t == "causes").unwrap();
            file_with(tmp.path(), causes, column, None);
            let e = Engine::open(&[tmp.path().to_path_buf()]).unwrap();
            let o = crate::query::FleetOptions {
                top: 10,
                ..Default::default()
            };
            let r = crate::report::fleet(&e, &o).unwrap_or_else(|e| panic!("{column}: {e}"));
            assert_eq!(r.causes.len(), 1, "{column}");
        }
    }

    #[test]
    fn a_trace_without_a_commit_marker_is_left_out_and_said() {
        let tmp = tempfile::tempdir().unwrap();
        for id in ["00000000000000aa", "00000000000000bb"] {
            let meta = TraceMeta {
                host: "h1".into(),
                date: "2026-11-25".into(),
                trace_id: id.into(),
                kernel: "6.18".into(),
                labels: vec![("id".into(), id.into())],
                mode: "timer".into(),
            };
            crate::write(tmp.path(), &Findings::new(meta)).unwrap();
        }
        // A writer stopped between putting its tables in place and marking them.
        let marker = "_committed/host=h1/date=2026-11-25/00000000000000bb";
        std::fs::remove_file(tmp.path().join(marker)).unwrap();
        let e = Engine::open(&[tmp.path().to_path_buf()]).unwrap();
        let r = e.query("SELECT value FROM labels").unwrap();
        assert_eq!(r.text("value"), [Some("00000000000000aa".to_string())]);
        assert!(
            e.notes()[0].ends_with(
                "1 trace(s) have tables but no commit marker (a write cut short, or a copy under another name): left out"
            ),
            "{:?}",
            e.notes()
        );
    }

    /// A committed trace's files copied under another name hold rows that claim the
    /// committed trace's id; a junk `.parquet` beside them has no marker either. Both
    /// are left out by their names, and the query runs.
    #[test]
    fn copies_under_another_name_and_junk_files_without_a_marker_are_left_out() {
        let tmp = tempfile::tempdir().unwrap();
        let meta = TraceMeta {
            host: "h1".into(),
            date: "2026-11-25".into(),
            trace_id: "00000000000000aa".into(),
            kernel: "6.18".into(),
            labels: vec![("id".into(), "aa".into())],
            mode: "timer".into(),
        };
        crate::write(tmp.path(), &Findings::new(meta)).unwrap();
        let part = "host=h1/date=2026-11-25";
        for t in TABLES {
            let d = tmp.path().join(t).join(part);
            std::fs::copy(d.join("00000000000000aa.parquet"), d.join("copy.parquet")).unwrap();
        }
        let junk = tmp.path().join("labels").join(part).join("junk.parquet");
        std::fs::write(&junk, b"not parquet").unwrap();
        let e = Engine::open(&[tmp.path().to_path_buf()]).unwrap();
        let r = e.query("SELECT value FROM labels").unwrap();
        assert_eq!(r.text("value"), [Some("aa".to_string())]);
        let r = e.query("SELECT COUNT(*) AS n FROM traces").unwrap();
        assert_eq!(r.len(), 1);
        assert!(
            e.notes()[0].ends_with(
                "2 trace(s) have tables but no commit marker (a write cut short, or a copy under another name): left out"
            ),
            "{:?}",
            e.notes()
        );
    }
}
