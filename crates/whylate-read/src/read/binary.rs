//! What a binary format's reader is to the rest of whylate ([`Binary`]), how it is opened
//! ([`Opening`]: the bytes after sniffing, with the ways to reach them at random), and how
//! it splits across two threads ([`DecodingHalf`]). A binary format declares
//! `Build::Binary(its open function)` in its [`Reader`](super::format::Reader); nothing
//! else names it: the opening layer, the pass and the reports see only this trait.

use crate::event::{Event, Interner};
use crate::read::decompress::{self, Compression};
use crate::read::options::OpenOptions;
use crate::read::source::{Diag, OrderStats, ReadError};
use crate::read::{ksyms, memory, unpack};
use std::any::Any;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;

/// A binary format's reader: events in time order, and what the file says about its
/// recording. Text formats are line parsers behind the shared text reader instead.
pub(crate) trait Binary: Send + Any {
    /// The next event, lent.
    fn next_ref(&mut self, s: &mut Interner) -> Result<Option<&Event>, ReadError>;
    /// The next event, owned.
    fn next_decoded(&mut self, s: &mut Interner) -> Result<Option<Event>, ReadError>;
    /// What was not understood, lost or cut.
    fn diag(&self) -> &Diag;
    /// How far out of time order the events came.
    fn order(&self) -> OrderStats;
    /// The file's size (decompressed).
    fn bytes(&self) -> u64;
    /// Read in place through decompressing cursors: (bytes decompressed only to skip,
    /// cursors started).
    fn unpack_cost(&self) -> Option<(u64, u64)> {
        None
    }
    /// whylate's record-time snapshot, when the file carries one.
    fn snapshot(&self) -> Option<&crate::snapshot::Snapshot> {
        None
    }
    /// Where its kernel symbols came from; None when it needs none.
    fn symbols(&self) -> Option<ksyms::SymbolSource> {
        None
    }
    /// Why its kernel code addresses stay unresolved and how to resolve them.
    fn symbol_note(&self) -> Option<String> {
        None
    }
    /// The recording machine as the file says it (uname, perf's arch header).
    fn machine(&self) -> Option<String> {
        None
    }
    /// What the file says about how it was recorded, for the report's notes.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
    /// Splits off the decoding half, to run on another thread than the reading half
    /// (`pipeline/apart.rs`); None when this reader cannot split.
    fn decode_apart(&mut self) -> Option<Box<dyn DecodingHalf>> {
        None
    }
    /// An empty batch for [`Binary::fill`], made on the reading thread.
    fn batch(&self) -> Box<dyn Any + Send> {
        Box::new(())
    }
    /// Called first on the reading thread: gives what the reading half touches on every
    /// record memory of this thread's own.
    fn settle_here(&mut self) {}
    /// The reading half: fills `out` (a batch its decoding half made) with up to `max`
    /// records; false at the end. `help`: the decoding thread is behind, so this one
    /// also decodes what it can.
    fn fill(&mut self, _out: &mut dyn Any, _max: usize, _help: bool) -> Result<bool, ReadError> {
        Ok(false)
    }
    /// Takes its decoding half back.
    fn rejoin(&mut self, _half: Box<dyn DecodingHalf>) {}
    /// For tests and tools that need the concrete reader.
    fn as_any(&self) -> &dyn Any;
}

/// The decoding half of a split [`Binary`], on the thread that feeds the timeline.
pub(crate) trait DecodingHalf: Send {
    /// Decodes `batch` in order, handing each event to `f`, and empties it. One call per
    /// batch of thousands of records: the concrete type is found once per batch.
    fn drain(
        &mut self,
        s: &mut Interner,
        batch: &mut dyn Any,
        f: &mut dyn FnMut(&Event, &Interner),
    );
    /// For the reader's `rejoin`.
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

/// Where an input's bytes come from: a file read by offset, a stream read once, or bytes
/// in memory.
#[derive(Clone)]
pub(crate) enum Origin {
    File(Arc<File>),
    Stream,
    Memory(Arc<memory::Pieces>),
}

/// The concrete batch behind `batch` (a split reader's own type; anything else is a bug).
pub(crate) fn batch_of<T: 'static>(batch: &mut dyn Any) -> &mut T {
    match batch.downcast_mut::<T>() {
        Some(b) => b,
        None => unreachable!("a decoding half fills only the batches it made"),
    }
}

/// A binary input as sniffing left it: its name, its decompressed bytes (the head already
/// read), where they come from, and the options.
pub(crate) struct Opening<'a> {
    /// The name messages give it.
    pub path: &'a Path,
    /// Its decompressed bytes from the first (the head sniffed included).
    pub(super) stream: Box<dyn Read + Send>,
    pub(super) origin: &'a Origin,
    /// Its compression.
    pub compression: Compression,
    pub(super) cut: &'a decompress::Cut,
    /// The options it was opened with.
    pub opts: &'a OpenOptions,
}

impl Opening<'_> {
    fn io_err(&self, source: io::Error) -> ReadError {
        ReadError::Io {
            path: self.path.to_path_buf(),
            source,
        }
    }

    /// Progress is counted in events: a reader that seeks around its file has no
    /// meaningful byte position.
    pub fn progress_in_events(&self) {
        if let Some(p) = &self.opts.progress {
            p.binary.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// The compressed file, when the input is one that could be read in place through
    /// decompressing cursors ([`unpack`]).
    pub fn compressed_file(&self) -> Option<&Arc<File>> {
        match self.origin {
            Origin::File(f) if self.compression != Compression::None => Some(f),
            _ => None,
        }
    }

    /// The decompressed bytes for random access: the file or memory itself when plain;
    /// otherwise decompressed into memory (an input from memory) or into an unnamed
    /// temporary file (a stream, or a compressed file not read in place).
    pub fn random_access(self) -> Result<unpack::Bytes, ReadError> {
        Ok(match (self.origin, self.compression) {
            // The same file, with an offset of its own: a reader that seeks (perf.data's
            // headers) must not move another's, and the file may be read twice at once
            // (a second pass opened before the first has read).
            (Origin::File(file), Compression::None) => {
                unpack::Bytes::File(own_offset(file).map_err(|e| self.io_err(e))?)
            }
            (Origin::Memory(b), Compression::None) => unpack::Bytes::Memory(b.clone()),
            (Origin::Memory(_), _) => {
                let all = whole(self.stream);
                unpack::Bytes::Memory(Arc::new(all.map_err(|source| ReadError::Io {
                    path: self.path.to_path_buf(),
                    source,
                })?))
            }
            _ => {
                let path = self.path;
                unpack::Bytes::File(spool(path, self.rest())?)
            }
        })
    }

    /// The decompressed stream from its first byte.
    pub fn rest(self) -> Box<dyn Read + Send> {
        self.stream
    }

    /// Where the input is read from.
    pub(crate) fn origin(&self) -> &Origin {
        self.origin
    }

    /// What cut its compressed stream short, if anything.
    pub fn cut(&self) -> decompress::Cut {
        self.cut.clone()
    }
}

/// An error opening a binary input, saying so when its compressed stream was `cut`.
pub(crate) fn with_cut(e: ReadError, cut: &decompress::Cut) -> ReadError {
    match (e, cut.get()) {
        (ReadError::Corrupt { path, offset, why }, Some(c)) => ReadError::Corrupt {
            path,
            offset,
            why: format!("{why} ({c})"),
        },
        (e, _) => e,
    }
}

/// Copies a decompressed stream into an unnamed temporary file (gone when closed, also
/// when whylate is killed), for binary formats that need random access.
pub(crate) fn spool(path: &Path, mut rd: Box<dyn Read + Send>) -> Result<File, ReadError> {
    let io_err = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut f = tempfile::tempfile().map_err(io_err)?;
    io::copy(&mut rd, &mut f).map_err(io_err)?;
    // Readers that stream (perf.data) start from the file position.
    io::Seek::rewind(&mut f).map_err(io_err)?;
    Ok(f)
}

/// All of `rd`, in memory.
pub(crate) fn whole(mut rd: impl Read) -> io::Result<memory::Pieces> {
    let mut all = Vec::new();
    rd.read_to_end(&mut all)?;
    let mut p = memory::Pieces::new();
    p.push(Arc::from(all));
    Ok(p)
}

/// `file` opened again as a new open file description (its own offset) of the same
/// file, through `/proc/self/fd` (the file it is now, whatever its name); where that
/// cannot be opened, a duplicate set back to its start.
fn own_offset(file: &File) -> std::io::Result<File> {
    use std::io::Seek;
    use std::os::fd::AsRawFd;
    match File::open(format!("/proc/self/fd/{}", file.as_raw_fd())) {
        Ok(f) => Ok(f),
        Err(_) => {
            let mut f = file.try_clone()?;
            f.rewind()?;
            Ok(f)
        }
    }
}
