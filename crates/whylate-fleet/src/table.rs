//! A table being filled row by row, then turned into one Arrow record batch: the rows of
//! one trace's findings are few (thousands), so they are gathered as values and converted
//! column by column at the end.

use arrow::array::{ArrayRef, BooleanBuilder, Float64Builder, Int64Builder, StringBuilder};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatch;
use std::sync::Arc;

/// One cell.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    /// Unsigned integer (ns, counts, CPUs).
    U(Option<u64>),
    /// Signed integer (pids, irq numbers).
    I(Option<i64>),
    /// Float (shares).
    F(Option<f64>),
    /// Text.
    S(Option<String>),
    /// Flag.
    B(Option<bool>),
}

impl From<u64> for Val {
    fn from(v: u64) -> Val {
        Val::U(Some(v))
    }
}
impl From<Option<u64>> for Val {
    fn from(v: Option<u64>) -> Val {
        Val::U(v)
    }
}
impl From<u32> for Val {
    fn from(v: u32) -> Val {
        Val::U(Some(u64::from(v)))
    }
}
impl From<Option<u32>> for Val {
    fn from(v: Option<u32>) -> Val {
        Val::U(v.map(u64::from))
    }
}
impl From<i32> for Val {
    fn from(v: i32) -> Val {
        Val::I(Some(i64::from(v)))
    }
}
impl From<Option<i32>> for Val {
    fn from(v: Option<i32>) -> Val {
        Val::I(v.map(i64::from))
    }
}
impl From<f64> for Val {
    fn from(v: f64) -> Val {
        Val::F(Some(v))
    }
}
impl From<bool> for Val {
    fn from(v: bool) -> Val {
        Val::B(Some(v))
    }
}
impl From<&str> for Val {
    fn from(v: &str) -> Val {
        Val::S(Some(v.to_string()))
    }
}
impl From<String> for Val {
    fn from(v: String) -> Val {
        Val::S(Some(v))
    }
}
impl From<Option<String>> for Val {
    fn from(v: Option<String>) -> Val {
        Val::S(v)
    }
}
impl From<Option<&str>> for Val {
    fn from(v: Option<&str>) -> Val {
        Val::S(v.map(str::to_string))
    }
}

/// A column: name and type; every column is nullable (a trace may not know a value).
#[derive(Clone, Copy, Debug)]
pub struct Col {
    /// Column name.
    pub name: &'static str,
    /// `u` unsigned (stored as signed 64-bit), `i` signed, `f` float, `s` text, `b` flag.
    pub kind: char,
}

/// Shorthand for a column.
pub const fn col(name: &'static str, kind: char) -> Col {
    Col { name, kind }
}

/// A table's columns and the rows gathered so far.
pub struct Table {
    /// Table name (the directory it is written under).
    pub name: &'static str,
    cols: Vec<Col>,
    rows: Vec<Vec<Val>>,
}

impl Table {
    /// An empty table with these columns.
    pub fn new(name: &'static str, cols: Vec<Col>) -> Table {
        Table {
            name,
            cols,
            rows: Vec::new(),
        }
    }

    /// Appends a row; its values follow the columns' order.
    pub fn push(&mut self, row: Vec<Val>) {
        debug_assert_eq!(row.len(), self.cols.len(), "table {}", self.name);
        self.rows.push(row);
    }

    /// Rows gathered.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// No rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The Arrow schema.
    pub fn schema(&self) -> SchemaRef {
        let fields: Vec<Field> = self
            .cols
            .iter()
            .map(|c| Field::new(c.name, data_type(c.kind), true))
            .collect();
        Arc::new(Schema::new(fields))
    }

    /// The rows as one record batch. A value of the wrong kind for its column is an
    /// error naming both (a bug in the code that filled the table).
    pub fn batch(&self) -> Result<RecordBatch, ArrowError> {
        let arrays = self
            .cols
            .iter()
            .enumerate()
            .map(|(i, c)| self.column(i, *c))
            .collect::<Result<Vec<ArrayRef>, ArrowError>>()?;
        RecordBatch::try_new(self.schema(), arrays)
    }

    fn column(&self, i: usize, c: Col) -> Result<ArrayRef, ArrowError> {
        let wrong = |v: &Val| {
            ArrowError::InvalidArgumentError(format!(
                "table {}: column {} ({}) got {v:?}",
                self.name, c.name, c.kind
            ))
        };
        let cells = self.rows.iter().map(|r| &r[i]);
        Ok(match c.kind {
            'u' => {
                let mut b = Int64Builder::with_capacity(self.rows.len());
                for v in cells {
                    let Val::U(x) = v else { return Err(wrong(v)) };
                    b.append_option(x.map(|x| i64::try_from(x).unwrap_or(i64::MAX)));
                }
                Arc::new(b.finish())
            }
            'i' => {
                let mut b = Int64Builder::with_capacity(self.rows.len());
                for v in cells {
                    let Val::I(x) = v else { return Err(wrong(v)) };
                    b.append_option(*x);
                }
                Arc::new(b.finish())
            }
            'f' => {
                let mut b = Float64Builder::with_capacity(self.rows.len());
                for v in cells {
                    let Val::F(x) = v else { return Err(wrong(v)) };
                    b.append_option(*x);
                }
                Arc::new(b.finish())
            }
            'b' => {
                let mut b = BooleanBuilder::with_capacity(self.rows.len());
                for v in cells {
                    let Val::B(x) = v else { return Err(wrong(v)) };
                    b.append_option(*x);
                }
                Arc::new(b.finish())
            }
            _ => {
                let mut b = StringBuilder::new();
                for v in cells {
                    let Val::S(x) = v else { return Err(wrong(v)) };
                    b.append_option(x.as_deref());
                }
                Arc::new(b.finish())
            }
        })
    }
}

fn data_type(kind: char) -> DataType {
    match kind {
        // Unsigned values are stored signed: Spark and Trino read no unsigned 64-bit
        // Parquet columns as plain integers, and no ns count here reaches 2^63.
        'u' | 'i' => DataType::Int64,
        'f' => DataType::Float64,
        'b' => DataType::Boolean,
        _ => DataType::Utf8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_become_typed_columns() {
        let mut t = Table::new("t", vec![col("a", 'u'), col("b", 's'), col("c", 'b')]);
        t.push(vec![3u64.into(), "x".into(), true.into()]);
        t.push(vec![Val::U(None), Val::S(None), false.into()]);
        let b = t.batch().unwrap();
        assert_eq!((b.num_rows(), b.num_columns()), (2, 3));
        assert_eq!(b.column(0).null_count(), 1);
        assert_eq!(b.schema().field(1).data_type(), &DataType::Utf8);
    }

    #[test]
    fn a_value_of_the_wrong_kind_is_named() {
        let mut t = Table::new("t", vec![col("a", 'u')]);
        t.push(vec!["x".into()]);
        let e = t.batch().unwrap_err().to_string();
        assert!(e.contains("column a"), "{e}");
    }
}
