//! The fleet's SQL as a script another engine runs as printed (`whylate fleet --sql-only
//! --engine spark|duckdb`): the findings tables declared as views over the Parquet files,
//! then each query the report ran.
//!
//! The views read what `whylate fleet` reads (crate::engine): each table's files under
//! every root, `host` and `date` from the directories as text, and of those only the
//! traces with a commit marker (`_committed/host=H/date=D/ID`), each file by its name
//! (`ID.parquet` holds trace `ID`; a copy under another name is left out). In a root written
//! before markers existed, a trace counts when it has a `traces` file, as in whylate. The
//! script holds no lock: a write while it runs may show its sections different traces
//! (whylate holds the commit lock for the whole report). The engines differ in how
//! they list files, name the file a row came from and quote a string, so each gets its own
//! declarations; the queries are the same text.

use crate::findings::Findings;
use crate::write::COMMITTED;
use arrow::datatypes::{DataType, Schema};
use std::path::{Path, PathBuf};

/// An engine the script is written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// Apache Spark SQL (`spark-sql`, or each statement to `spark.sql`).
    Spark,
    /// DuckDB (the `duckdb` shell, or each statement to a connection).
    DuckDb,
}

impl Dialect {
    /// Every dialect, as `--engine` names them.
    pub const ALL: [(&'static str, Dialect); 2] =
        [("spark", Dialect::Spark), ("duckdb", Dialect::DuckDb)];

    /// Parses `spark` or `duckdb`.
    pub fn parse(s: &str) -> Result<Dialect, String> {
        (Self::ALL.iter())
            .find(|(n, _)| *n == s)
            .map(|(_, d)| *d)
            .ok_or_else(|| format!("expected spark or duckdb, found {s:?}"))
    }

    /// The name `--engine` takes.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Spark => "spark",
            Dialect::DuckDb => "duckdb",
        }
    }

    /// A string literal. Spark reads a backslash as an escape and two quotes as two
    /// literals side by side (`'a''b'` is `ab`); DuckDB reads both as written.
    pub fn lit(self, s: &str) -> String {
        match self {
            Dialect::Spark => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
            Dialect::DuckDb => format!("'{}'", s.replace('\'', "''")),
        }
    }

    /// How a view lasting the session is declared: the script leaves nothing in a
    /// database it runs in.
    fn temp_view(self) -> &'static str {
        match self {
            Dialect::Spark => "TEMPORARY VIEW",
            Dialect::DuckDb => "TEMP VIEW",
        }
    }

    /// The SQL type of a findings column.
    fn sql_type(self, t: &DataType) -> &'static str {
        match (t, self) {
            (DataType::Int64, _) => "BIGINT",
            (DataType::Float64, _) => "DOUBLE",
            (DataType::Boolean, _) => "BOOLEAN",
            (_, Dialect::Spark) => "STRING",
            (_, Dialect::DuckDb) => "VARCHAR",
        }
    }
}

/// A script and what its reader should know before running it.
pub struct Script {
    /// The statements, each ending in `;` at the end of a line.
    pub text: String,
    /// What the engine will not see as whylate does (also comments in `text`).
    pub notes: Vec<String>,
}

/// The script: a header, the views over `roots`, then each query as `-- NAME` and the
/// statement ending in `;` on its own line's end.
pub fn script(d: Dialect, roots: &[PathBuf], queries: &[(&str, &str)]) -> Result<Script, String> {
    let roots = roots
        .iter()
        .map(|r| std::path::absolute(r).map_err(|e| format!("{}: {e}", r.display())))
        .collect::<Result<Vec<_>, _>>()?;
    let mut text = format!(
        "-- whylate fleet: the findings under {} as views, then the SQL of each section, for {}.\n",
        roots
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        match d {
            Dialect::Spark => "Spark SQL (spark-sql -f FILE, or each statement to spark.sql)",
            Dialect::DuckDb => "DuckDB (duckdb < FILE)",
        }
    );
    let notes = if d == Dialect::Spark {
        spark_literals(queries)?;
        empty_markers(&roots)
    } else {
        Vec::new()
    };
    for n in &notes {
        text.push_str(&format!("-- {n}\n"));
    }
    text.push('\n');
    for v in views(d, &roots)? {
        text.push_str(&v);
        text.push_str(";\n");
    }
    for (name, q) in queries {
        text.push_str(&format!("\n-- {name}\n{q};\n"));
    }
    Ok(Script { text, notes })
}

/// The queries quote as DuckDB and DataFusion do (`''` inside a literal): Spark would read
/// such a literal, or one with a backslash, as another string. The names whylate writes
/// have neither; a host directory written by hand may.
fn spark_literals(queries: &[(&str, &str)]) -> Result<(), String> {
    for (name, q) in queries {
        if q.contains("''") || q.contains('\\') {
            return Err(format!(
                "the {name} query names a host or value with a quote or backslash, which Spark SQL reads as another string; rename the host directory, or use --engine duckdb"
            ));
        }
    }
    Ok(())
}

/// Roots whose commit markers include empty files (written before markers held the
/// trace id): Spark's file sources list no empty file, so its views leave those traces out.
fn empty_markers(roots: &[PathBuf]) -> Vec<String> {
    let mut out = Vec::new();
    for r in roots {
        let mut n = 0;
        let dirs = |p: &Path| -> Vec<PathBuf> {
            std::fs::read_dir(p)
                .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
                .unwrap_or_default()
        };
        for h in dirs(&r.join(COMMITTED)) {
            for dt in dirs(&h) {
                n += (dirs(&dt).iter())
                    .filter(|f| std::fs::metadata(f).is_ok_and(|m| m.is_file() && m.len() == 0))
                    .count();
            }
        }
        if n > 0 {
            out.push(format!(
                "{}: {n} commit marker(s) are empty files (written before markers held the trace id); Spark lists no empty file, so these views leave those traces out: write the traces again to read them here",
                r.display()
            ));
        }
    }
    out
}

/// The statements that declare every findings table over `roots` (absolute paths).
pub fn views(d: Dialect, roots: &[PathBuf]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for (i, r) in roots.iter().enumerate() {
        let text = r.to_str().ok_or_else(|| {
            format!(
                "{}: the path is not UTF-8, so no SQL text can name it",
                r.display()
            )
        })?;
        check_path(d, text)?;
        out.extend(marks(d, i, r));
    }
    for (name, schema) in Findings::schemas() {
        let mut parts = Vec::new();
        for (i, r) in roots.iter().enumerate() {
            if !has_files(&r.join(name)) {
                continue;
            }
            if d == Dialect::Spark {
                out.push(spark_files(i, r, name, &schema));
            }
            parts.push(rows_of(d, i, r, name, &schema));
        }
        if parts.is_empty() {
            // No root has the table yet: it answers with no rows, as in whylate.
            parts.push(empty(d, &schema));
        }
        out.push(format!(
            "CREATE OR REPLACE {} {name} AS\n{}",
            d.temp_view(),
            parts.join("\nUNION ALL\n")
        ));
    }
    Ok(out)
}

/// A root the script can name: no control character (it would end a comment line) and
/// nothing an engine reads as a file pattern. (Spark reads `:`, `%20` and spaces in an
/// absolute local path as written: tried with pyspark 4.3.)
fn check_path(d: Dialect, text: &str) -> Result<(), String> {
    let bad = |c: char| c.is_control() || "*?[]{}\\".contains(c);
    match text.chars().find(|c| bad(*c)) {
        Some(c) => Err(format!(
            "{text}: the path holds {c:?}, which {} would not read as a plain path; move or link the findings to one",
            d.name()
        )),
        None => Ok(()),
    }
}

/// Whether a table directory holds any `.parquet` file (DuckDB refuses a pattern that
/// matches none; whylate reads such a table as empty).
fn has_files(dir: &Path) -> bool {
    let entries = |p: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(p)
            .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default()
    };
    (entries(dir).iter()).any(|h| {
        (entries(h).iter())
            .any(|dt| (entries(dt).iter()).any(|f| f.extension().is_some_and(|x| x == "parquet")))
    })
}

/// The view `whylate_marks_I`: root I's commit markers as (host, date, trace_id), all
/// three from the marker's path (a partition value read as a number, `007`, would not be
/// the host's name). A root without markers (written before them) lists its `traces`
/// files instead, as whylate does: a trace counts when it has one.
fn marks(d: Dialect, i: usize, root: &Path) -> Vec<String> {
    let marked = root.join(COMMITTED).is_dir();
    let (dir, ext, glob) = if marked {
        (root.join(COMMITTED), "", "*")
    } else {
        (root.join("traces"), "[.]parquet", "*.parquet")
    };
    let dir = dir.to_string_lossy();
    let re = format!("/host=([^/]*)/date=([^/]*)/([^/]*){ext}$");
    let part = |n: usize| format!("regexp_extract({{f}}, '{re}', {n})");
    let cols = |f: &str| {
        format!(
            "{} AS host, {} AS date, {} AS trace_id",
            part(1).replace("{f}", f),
            part(2).replace("{f}", f),
            part(3).replace("{f}", f)
        )
    };
    match d {
        // Spark lists the empty marker files as binary files.
        Dialect::Spark => vec![
            format!(
                "CREATE OR REPLACE TEMPORARY VIEW whylate_marks_{i}_files USING binaryFile OPTIONS (path {}, pathGlobFilter {})",
                d.lit(&dir),
                d.lit(glob)
            ),
            format!(
                "CREATE OR REPLACE TEMPORARY VIEW whylate_marks_{i} AS SELECT {} FROM whylate_marks_{i}_files",
                cols("path")
            ),
        ],
        Dialect::DuckDb => vec![format!(
            "CREATE OR REPLACE TEMP VIEW whylate_marks_{i} AS SELECT {} FROM glob({}) WHERE NOT starts_with(parse_filename(file), '.')",
            cols("file"),
            d.lit(&format!("{dir}/host=*/date=*/{glob}"))
        )],
    }
}

/// Spark's view of one root's files of a table, declared with the table's columns (a file
/// written before a later column reads it as null; `host` and `date` stay text).
fn spark_files(i: usize, root: &Path, name: &str, schema: &Schema) -> String {
    let d = Dialect::Spark;
    let mut cols: Vec<String> = (schema.fields().iter())
        .map(|f| format!("{} {}", f.name(), d.sql_type(f.data_type())))
        .collect();
    cols.extend(["host STRING".to_string(), "date STRING".to_string()]);
    format!(
        "CREATE OR REPLACE TEMPORARY VIEW whylate_{name}_{i} ({}) USING parquet OPTIONS (path {}, pathGlobFilter '*.parquet')",
        cols.join(", "),
        d.lit(&root.join(name).to_string_lossy())
    )
}

/// One root's rows of a table: its files named by their trace, of marked traces.
fn rows_of(d: Dialect, i: usize, root: &Path, name: &str, schema: &Schema) -> String {
    let mut cols: Vec<String> = (schema.fields().iter())
        .map(|f| format!("r.{}", f.name()))
        .collect();
    cols.extend(["r.host".to_string(), "r.date".to_string()]);
    let (from, file) = match d {
        Dialect::Spark => (
            format!("whylate_{name}_{i} r"),
            "regexp_extract(input_file_name(), '([^/]*)[.]parquet$', 1)".to_string(),
        ),
        Dialect::DuckDb => (
            format!(
                "read_parquet({}, filename = true, hive_partitioning = true, hive_types_autocast = false, union_by_name = true) r",
                d.lit(&format!("{}/host=*/date=*/*.parquet", root.join(name).to_string_lossy()))
            ),
            "parse_filename(r.filename, true)".to_string(),
        ),
    };
    format!(
        "SELECT {} FROM {from} WHERE {file} = r.trace_id AND EXISTS (SELECT 1 FROM whylate_marks_{i} c WHERE c.host = r.host AND c.date = r.date AND c.trace_id = r.trace_id)",
        cols.join(", ")
    )
}

/// A table no root has: its columns, no rows.
fn empty(d: Dialect, schema: &Schema) -> String {
    let mut cols: Vec<String> = (schema.fields().iter())
        .map(|f| {
            format!(
                "CAST(NULL AS {}) AS {}",
                d.sql_type(f.data_type()),
                f.name()
            )
        })
        .collect();
    let text = d.sql_type(&DataType::Utf8);
    cols.extend([
        format!("CAST(NULL AS {text}) AS host"),
        format!("CAST(NULL AS {text}) AS date"),
    ]);
    format!("SELECT {} WHERE 1 = 0", cols.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_quote_for_each_engine() {
        assert_eq!(Dialect::DuckDb.lit("o'brien"), "'o''brien'");
        assert_eq!(Dialect::Spark.lit("o'brien"), r"'o\'brien'");
        assert_eq!(Dialect::Spark.lit(r"a\b"), r"'a\\b'");
        assert_eq!(Dialect::parse("spark").unwrap(), Dialect::Spark);
        assert!(Dialect::parse("trino")
            .unwrap_err()
            .contains("spark or duckdb"));
    }

    #[test]
    fn views_name_every_table_and_refuse_patterns() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("f");
        let part = root.join("causes/host=h/date=2026-12-06");
        std::fs::create_dir_all(&part).unwrap();
        std::fs::write(part.join("00000000000000aa.parquet"), b"").unwrap();
        // A table directory without files reads as absent (DuckDB refuses an empty glob).
        std::fs::create_dir_all(root.join("blame/host=h")).unwrap();
        std::fs::create_dir_all(root.join(COMMITTED)).unwrap();
        for d in [Dialect::Spark, Dialect::DuckDb] {
            let v = views(d, std::slice::from_ref(&root)).unwrap().join(";\n");
            for t in crate::TABLES {
                assert!(v.contains(&format!("VIEW {t} AS")), "{t} in {v}");
            }
            // The one table with files reads them; the others have no rows.
            assert_eq!(v.matches("WHERE 1 = 0").count(), crate::TABLES.len() - 1);
            assert!(v.contains("whylate_marks_0 c"), "{v}");
            assert!(v.contains(&format!("/{COMMITTED}")), "{v}");
        }
        // Without markers, a trace counts when it has a `traces` file, as in whylate.
        std::fs::remove_dir_all(root.join(COMMITTED)).unwrap();
        let v = views(Dialect::DuckDb, std::slice::from_ref(&root))
            .unwrap()
            .join(";\n");
        assert!(v.contains("/traces/host=*/date=*/*.parquet"), "{v}");
        let odd = tmp.path().join("a[1]");
        std::fs::create_dir_all(&odd).unwrap();
        let e = views(Dialect::Spark, &[odd]).unwrap_err();
        assert!(e.contains("not read as a plain path"), "{e}");
        // A newline would end a comment line and run the rest of the path as SQL.
        assert!(views(Dialect::DuckDb, &[tmp.path().join("a\nb")]).is_err());
        assert!(views(Dialect::Spark, &[tmp.path().join("db:5432 x")]).is_ok());
    }

    #[test]
    fn spark_refuses_a_literal_it_would_read_as_another_string() {
        let q = [("host causes", "SELECT 1 WHERE t.host IN ('o''brien')")];
        let e = spark_literals(&q).unwrap_err();
        assert!(
            e.contains("host causes") && e.contains("--engine duckdb"),
            "{e}"
        );
        assert!(spark_literals(&[("modes", "SELECT 'timer'")]).is_ok());
    }
}
