//! whylate at fleet scale: one trace's findings written as Parquet tables
//! (docs/parquet.md), and `whylate fleet`, which ranks causes across many hosts' findings
//! with an embedded query engine (DataFusion) running SQL that Spark, Trino or DuckDB can
//! run too (docs/fleet.md).
//!
//! Data flows one way: a report ([`findings`]) -> rows ([`table`]) -> files ([`write`]);
//! files -> the engine ([`engine`]) -> queries ([`query`]) -> the fleet report
//! ([`report`]).

pub mod dialect;
#[cfg(feature = "query")]
pub mod engine;
pub mod findings;
pub mod meta;
pub mod query;
#[cfg(feature = "query")]
pub mod render;
#[cfg(feature = "query")]
pub mod report;
#[cfg(feature = "query")]
pub mod schema;
#[cfg(feature = "query")]
mod store;
pub mod synth;
pub mod table;
pub mod write;

pub use findings::{Findings, SCHEMA_VERSION, TABLES};
pub use meta::{MetaArgs, TraceFacts, TraceMeta};
pub use write::{write, WriteError, Written};
