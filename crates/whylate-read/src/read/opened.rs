//! The one input every analysis takes: traces already opened, each with the name messages
//! call it by. Opening is done here, by the callers that know where traces come from (the
//! CLI and the MCP server from paths, `watch` from its ring, tests and fuzz targets from
//! bytes); the analyses below never open anything.

use super::open::{open_each, open_memory, Input};
use super::options::OpenOptions;
use super::{memory, ReadError};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Traces opened once, read together (merged by time), each with the name messages call
/// it by (its path, or what stands for an input held in memory).
pub struct Opened {
    names: Vec<PathBuf>,
    sources: Vec<Input>,
}

impl Opened {
    /// Opens every file of `paths` (`-` is standard input), each once: two names of one
    /// file, or two files with the same bytes, are refused (their events would count twice).
    pub fn files(paths: &[PathBuf], opts: &OpenOptions) -> Result<Opened, ReadError> {
        Ok(Opened {
            names: paths.to_vec(),
            sources: open_each(paths, opts)?,
        })
    }

    /// A trace held in memory, in any format, compressed or not, named `name`.
    pub fn bytes(
        name: impl AsRef<Path>,
        bytes: impl Into<Arc<[u8]>>,
        opts: &OpenOptions,
    ) -> Result<Opened, ReadError> {
        let mut pieces = memory::Pieces::new();
        pieces.push(bytes.into());
        Opened::pieces(name, pieces, opts)
    }

    /// A trace held in memory as pieces laid end to end (`watch`'s window: the header it
    /// composed and the ring's pages, shared, not copied), named `name`.
    pub fn pieces(
        name: impl AsRef<Path>,
        bytes: memory::Pieces,
        opts: &OpenOptions,
    ) -> Result<Opened, ReadError> {
        let name = name.as_ref();
        Ok(Opened::one(
            name.to_path_buf(),
            open_memory(name, bytes, opts)?,
        ))
    }

    /// One input already opened, named `name`.
    pub fn one(name: PathBuf, source: Input) -> Opened {
        Opened {
            names: vec![name],
            sources: vec![source],
        }
    }

    /// These inputs and `other`'s, read together.
    pub fn and(mut self, other: Opened) -> Opened {
        self.names.extend(other.names);
        self.sources.extend(other.sources);
        self
    }

    /// The inputs' names, in order.
    pub fn names(&self) -> &[PathBuf] {
        &self.names
    }

    /// The opened inputs, in order.
    pub fn sources(&self) -> &[Input] {
        &self.sources
    }

    /// The same inputs opened again, to be read again from their start (a second pass):
    /// None when one of them is a stream, which cannot be read twice.
    pub fn again(&self, opts: &OpenOptions) -> Option<Result<Opened, ReadError>> {
        let mut sources = Vec::with_capacity(self.sources.len());
        for s in &self.sources {
            match s.again(opts)? {
                Ok(s) => sources.push(s),
                Err(e) => return Some(Err(e)),
            }
        }
        Some(Ok(Opened {
            names: self.names.clone(),
            sources,
        }))
    }

    /// The names and the inputs, for the pass that reads them.
    pub fn into_parts(self) -> (Vec<PathBuf>, Vec<Input>) {
        (self.names, self.sources)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Interner;
    use crate::read::EventSource;

    #[test]
    fn bytes_in_every_form_read_as_the_file() {
        let text = "  bash-42 [001] d..2. 10.000001: sched_waking: comm=cat pid=7 prio=120 target_cpu=001\n";
        let gz = {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            std::io::Write::write_all(&mut e, text.as_bytes()).unwrap();
            e.finish().unwrap()
        };
        for bytes in [text.as_bytes().to_vec(), gz] {
            let o = Opened::bytes("mem.txt", bytes, &OpenOptions::default()).unwrap();
            assert_eq!(o.names(), [PathBuf::from("mem.txt")]);
            let (_, mut srcs) = o.into_parts();
            let mut s = Interner::new();
            let e = srcs[0].next_event(&mut s).unwrap().unwrap();
            assert_eq!((e.ts, e.cpu, e.tid), (10_000_001_000, 1, 42));
        }
        let e = Opened::bytes("mem.bin", vec![0u8; 64], &OpenOptions::default());
        assert!(matches!(e, Err(ReadError::UnknownFormat { .. })));
    }
}
