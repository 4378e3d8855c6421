//! Where a Perfetto trace's bytes are read again after the first pass: by offset, from a
//! plain file or through a compressed one's decompressing cursors.

use crate::read::unpack::{FileAt, Unpacked};
use std::fs::File;
use std::io::{self, Read};
use std::sync::Arc;

/// Where the trace's bytes are read again: a plain file, or a compressed one through
/// decompressing cursors.
#[derive(Clone)]
pub(crate) enum Source {
    /// A plain file, by `pread`.
    File(Arc<File>),
    /// A compressed file.
    Unpacked(Arc<Unpacked>),
    /// Bytes in memory.
    Memory(Arc<crate::read::memory::Pieces>),
}

impl Source {
    pub(crate) fn reader(&self) -> Box<dyn Read + Send> {
        match self {
            Source::File(f) => Box::new(FileAt::new(f.clone())),
            Source::Unpacked(u) => Box::new(crate::read::unpack::Reader::new(u.clone())),
            Source::Memory(b) => Box::new(crate::read::memory::Reader::new(b.clone())),
        }
    }

    pub(crate) fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<()> {
        match self {
            Source::File(f) => std::os::unix::fs::FileExt::read_exact_at(&**f, buf, at),
            Source::Unpacked(u) => u.read_exact_at(buf, at),
            Source::Memory(b) => b.read_exact_at(buf, at),
        }
    }
}
