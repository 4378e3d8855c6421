//! The local file system as the query engine sees it: without the table files of traces
//! that have no commit marker.
//!
//! Whether a file counts is a fact of its name (`<trace_id>.parquet` under its host and
//! date) and of the marker beside it, not of the rows inside: a committed trace's files
//! copied under another name hold rows that claim the committed trace's id, and a join on
//! that id would count them twice. Hiding the unmarked files from the engine's listing
//! leaves them out by name, whatever they hold (a copy, a half-written file, junk), and
//! costs nothing when every trace is marked.

use async_trait::async_trait;
use datafusion::object_store::local::LocalFileSystem;
use datafusion::object_store::path::Path;
use datafusion::object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};
use futures::stream::{BoxStream, StreamExt};
use std::collections::HashSet;
use std::sync::Arc;

/// Local files, less `hidden`.
#[derive(Debug)]
pub(crate) struct Marked {
    inner: LocalFileSystem,
    hidden: Arc<HashSet<Path>>,
}

impl Marked {
    /// The local file system without the files at `hidden` (absolute paths).
    pub(crate) fn new(hidden: &[std::path::PathBuf]) -> Marked {
        let hidden = hidden
            .iter()
            .filter_map(|p| Path::from_absolute_path(std::path::absolute(p).ok()?).ok())
            .collect();
        Marked {
            inner: LocalFileSystem::new(),
            hidden: Arc::new(hidden),
        }
    }
}

impl std::fmt::Display for Marked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Marked({} hidden)", self.hidden.len())
    }
}

#[async_trait]
impl ObjectStore for Marked {
    async fn put_opts(&self, p: &Path, data: PutPayload, o: PutOptions) -> Result<PutResult> {
        self.inner.put_opts(p, data, o).await
    }

    async fn put_multipart_opts(
        &self,
        p: &Path,
        o: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(p, o).await
    }

    async fn get_opts(&self, p: &Path, o: GetOptions) -> Result<GetResult> {
        self.inner.get_opts(p, o).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let hidden = self.hidden.clone();
        self.inner
            .list(prefix)
            .filter(move |m| {
                let keep = !matches!(m, Ok(m) if hidden.contains(&m.location));
                std::future::ready(keep)
            })
            .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let mut r = self.inner.list_with_delimiter(prefix).await?;
        r.objects.retain(|m| !self.hidden.contains(&m.location));
        Ok(r)
    }

    async fn copy_opts(&self, from: &Path, to: &Path, o: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, o).await
    }
}
