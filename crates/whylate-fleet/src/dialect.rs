//! The fleet's SQL as a script another engine runs as printed (`whylate fleet --sql-only
//! --engine spark|duckdb`): the findings tables declared as views over the Parquet files,
//! then each query the report ran.
//!
//! The views read what `whylate fleet` reads (crate::engine): each table's files under
//! every root, `host` and `date` from the directories as text, and of those only the
//! traces with a commit marker (`_committed/host=H/date=D/ID`), each file by its name
//! (`ID.parquet` holds trace `ID`; a copy under another name is left out). A root written
//! before markers existed is read whole, as whylate reads it. The engines differ in how
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
        if let Some(c) = text.chars().find(|c| "*?[]{}\\".contains(*c)) {
            return Err(format!(
                "{text}: the path holds {c:?}, which {} would read as a file pattern; move or link the findings to a plain path",
                d.name()
            ));
        }
        if r.join(COMMITTED).is_dir() {
            out.extend(marks(d, i, r));
        }
    }
    for (name, schema) in Findings::schemas() {
        let mut parts = Vec::new();
        for (i, r) in roots.iter().enumerate() {
            if !r.join(name).is_dir() {
                continue;
            }
            if d == Dialect::Spark {
                out.push(spark_files(i, r, name, &schema));
            }
            parts.push(rows_of(d, i, r, name, &schema, r.join(COMMITTED).is_dir()));
        }
        if parts.is_empty() {
            // No root has the table yet: it answers with no rows, as in whylate.
            parts.push(empty(d, &schema));
        }
        out.push(format!(
            "CREATE OR REPLACE {}VIEW {name} AS\n{}",
            if d == Dialect::Spark {
                "TEMPORARY "
            } else {
                ""
            },
            parts.join("\nUNION ALL\n")
        ));
    }
    Ok(out)
}

/// The view `whylate_marks_I`: root I's commit markers as (host, date, trace_id), all
/// three from the marker's path (a partition value read as a number, `007`, would not be
/// the host's name).
fn marks(d: Dialect, i: usize, root: &Path) -> Vec<String> {
    let dir = root.join(COMMITTED);
    let dir = dir.to_string_lossy();
    let part =
        |n: usize| format!("regexp_extract({{f}}, '/host=([^/]*)/date=([^/]*)/([^/]*)$', {n})");
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
                "CREATE OR REPLACE TEMPORARY VIEW whylate_marks_{i}_files USING binaryFile OPTIONS (path {})",
                d.lit(&dir)
            ),
            format!(
                "CREATE OR REPLACE TEMPORARY VIEW whylate_marks_{i} AS SELECT {} FROM whylate_marks_{i}_files",
                cols("path")
            ),
        ],
        Dialect::DuckDb => vec![format!(
            "CREATE OR REPLACE VIEW whylate_marks_{i} AS SELECT {} FROM glob({}) WHERE NOT starts_with(parse_filename(file), '.')",
            cols("file"),
            d.lit(&format!("{dir}/host=*/date=*/*"))
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
fn rows_of(d: Dialect, i: usize, root: &Path, name: &str, schema: &Schema, marked: bool) -> String {
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
    let mut w = format!("{file} = r.trace_id");
    if marked {
        w.push_str(&format!(
            " AND EXISTS (SELECT 1 FROM whylate_marks_{i} c WHERE c.host = r.host AND c.date = r.date AND c.trace_id = r.trace_id)"
        ));
    }
    format!("SELECT {} FROM {from} WHERE {w}", cols.join(", "))
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
        std::fs::create_dir_all(root.join("causes")).unwrap();
        std::fs::create_dir_all(root.join(COMMITTED)).unwrap();
        for d in [Dialect::Spark, Dialect::DuckDb] {
            let v = views(d, std::slice::from_ref(&root)).unwrap().join(";\n");
            for t in crate::TABLES {
                assert!(v.contains(&format!("VIEW {t} AS")), "{t} in {v}");
            }
            // The one table present reads its files; the others have no rows.
            assert_eq!(v.matches("WHERE 1 = 0").count(), crate::TABLES.len() - 1);
            assert!(v.contains("whylate_marks_0 c"), "{v}");
        }
        let odd = tmp.path().join("a[1]");
        std::fs::create_dir_all(&odd).unwrap();
        let e = views(Dialect::Spark, &[odd]).unwrap_err();
        assert!(e.contains("file pattern"), "{e}");
    }
}
