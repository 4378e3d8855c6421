//! Findings files held to the tables' schemas while they are read. The engine's default
//! reads a column a file lacks as nulls (a `traces` file of another layout then counts
//! 0 misses, silently) and a column of another type through a cast whose error names no
//! file. Here a column a query reads must be in each file with a type it can be read as;
//! otherwise the query fails, and [`locate`] finds the file to name with the column and
//! both types.

use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::error::DataFusionError;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr_adapter::{
    DefaultPhysicalExprAdapterFactory, PhysicalExprAdapter, PhysicalExprAdapterFactory,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Columns added after the first layout, as (table, column): a file written before them
/// lacks them, and they read as null there (the queries allow for it).
pub const LATER: [(&str, &str); 3] = [
    ("causes", "key_misses"),
    ("blame", "key_first"),
    ("causes", "once_ns"),
];

fn later(table: &str, column: &str) -> bool {
    LATER.contains(&(table, column))
}

/// A column of a file that a query read and that does not fit its table.
#[derive(Debug, Clone, thiserror::Error)]
#[error("table {table}: column `{column}`: expected {expected}, found {}", found_text(.found))]
pub struct Mismatch {
    /// The table.
    pub table: &'static str,
    /// The column.
    pub column: String,
    /// Its type in the table.
    pub expected: DataType,
    /// Its type in the file; None: the file has no such column.
    pub found: Option<DataType>,
}

fn found_text(found: &Option<DataType>) -> String {
    found
        .as_ref()
        .map_or_else(|| "no such column".into(), ToString::to_string)
}

/// Whether a file's column of type `found` reads as the table's `expected` without loss
/// of meaning: the same type, or another width or encoding of the same kind (whylate
/// writes Int64, Float64, Boolean and Utf8; another writer may choose otherwise).
pub fn readable_as(found: &DataType, expected: &DataType) -> bool {
    use DataType::*;
    let text = |t: &DataType| match t {
        Utf8 | LargeUtf8 | Utf8View => true,
        Dictionary(_, v) => matches!(**v, Utf8 | LargeUtf8 | Utf8View),
        _ => false,
    };
    found == expected
        || match expected {
            Int64 => found.is_integer(),
            Float64 => found.is_floating() || found.is_integer(),
            Utf8 => text(found),
            _ => false,
        }
}

/// The engine's expression adapter for one table's files, refusing what does not fit.
#[derive(Debug)]
pub struct Strict {
    /// The table its files belong to.
    pub table: &'static str,
}

impl PhysicalExprAdapterFactory for Strict {
    fn create(
        &self,
        logical: SchemaRef,
        physical: SchemaRef,
    ) -> datafusion::common::Result<Arc<dyn PhysicalExprAdapter>> {
        let inner = DefaultPhysicalExprAdapterFactory.create(logical.clone(), physical.clone())?;
        Ok(Arc::new(StrictAdapter {
            table: self.table,
            logical,
            physical,
            inner,
        }))
    }
}

#[derive(Debug)]
struct StrictAdapter {
    table: &'static str,
    logical: SchemaRef,
    physical: SchemaRef,
    inner: Arc<dyn PhysicalExprAdapter>,
}

impl PhysicalExprAdapter for StrictAdapter {
    fn rewrite(
        &self,
        expr: Arc<dyn PhysicalExpr>,
    ) -> datafusion::common::Result<Arc<dyn PhysicalExpr>> {
        expr.apply(|e| {
            let Some(c) = e.downcast_ref::<Column>() else {
                return Ok(TreeNodeRecursion::Continue);
            };
            // Partition columns (host, date) come from the path, not the file.
            let Ok(want) = self.logical.field_with_name(c.name()) else {
                return Ok(TreeNodeRecursion::Continue);
            };
            let found = (self.physical.field_with_name(c.name()).ok()).map(|f| f.data_type());
            let fits = match found {
                Some(f) => readable_as(f, want.data_type()),
                None => later(self.table, c.name()),
            };
            if fits {
                return Ok(TreeNodeRecursion::Continue);
            }
            Err(DataFusionError::External(Box::new(Mismatch {
                table: self.table,
                column: c.name().to_string(),
                expected: want.data_type().clone(),
                found: found.cloned(),
            })))
        })?;
        self.inner.rewrite(expr)
    }
}

/// The [`Mismatch`] an engine error carries, however deep it was wrapped.
pub fn mismatch_in(e: &DataFusionError) -> Option<Mismatch> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(x) = cur {
        if let Some(m) = x.downcast_ref::<Mismatch>() {
            return Some(m.clone());
        }
        cur = x.source();
    }
    None
}

/// What is wrong with one file of `table` (`expected`: its schema): not readable as
/// Parquet, a column missing, or of a type it cannot be read as. `only`: the column to
/// look at (the one a query failed on), else all.
pub fn check_file(
    path: &Path,
    table: &str,
    expected: &SchemaRef,
    only: Option<&str>,
) -> Option<String> {
    use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
    let loaded = std::fs::File::open(path)
        .map_err(|e| e.to_string())
        .and_then(|f| {
            ArrowReaderMetadata::load(&f, ArrowReaderOptions::new()).map_err(|e| e.to_string())
        });
    let meta = match loaded {
        Ok(m) => m,
        Err(e) => {
            return Some(format!(
                "{}: not a readable Parquet file ({e})",
                path.display()
            ))
        }
    };
    let file = meta.schema();
    for want in expected.fields() {
        if only.is_some_and(|c| c != want.name()) {
            continue;
        }
        match file.field_with_name(want.name()) {
            Err(_) if later(table, want.name()) => {}
            Err(_) => {
                let have: Vec<&str> = file.fields().iter().map(|f| f.name().as_str()).collect();
                return Some(format!(
                    "{}: no column `{}` (expected {}); the file's columns: {}",
                    path.display(),
                    want.name(),
                    want.data_type(),
                    if have.is_empty() {
                        "none".into()
                    } else {
                        have.join(", ")
                    }
                ));
            }
            Ok(f) if !readable_as(f.data_type(), want.data_type()) => {
                return Some(format!(
                    "{}: column `{}`: expected {}, found {}",
                    path.display(),
                    want.name(),
                    want.data_type(),
                    f.data_type()
                ));
            }
            Ok(_) => {}
        }
    }
    None
}

/// The first file among `files` with something wrong (see [`check_file`]), said in one
/// line with its full path.
pub fn locate(
    files: &[PathBuf],
    table: &str,
    expected: &SchemaRef,
    only: Option<&str>,
) -> Option<String> {
    files
        .iter()
        .find_map(|p| check_file(p, table, expected, only))
}
