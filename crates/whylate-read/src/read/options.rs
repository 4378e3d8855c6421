//! How an input is to be opened: the options every reader shares ([`OpenOptions`]), the
//! progress a long read reports ([`Progress`]), and the default reorder windows.

use crate::read::format::Format;
use crate::read::ksyms;
use std::sync::Arc;

/// Options for opening an input.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// Force a format instead of sniffing.
    pub format: Option<Format>,
    /// Fail on the first line that does not parse.
    pub strict: bool,
    /// Reorder window in events (0 = default).
    pub window: usize,
    /// Where a long read reports how far it got (a progress bar polls it).
    pub progress: Option<std::sync::Arc<Progress>>,
    /// The recording machine's `/proc/kallsyms` (`--kallsyms FILE`, read by
    /// [`ksyms::load_file`]): names code addresses in binary traces, over any other source.
    pub kallsyms: Option<ksyms::Given>,
    /// The syscall table that names raw syscall numbers (`--arch`), over what the file
    /// says; x86_64 when neither says.
    pub arch: Option<crate::syscalls::Arch>,
    /// Files the caller already opened (and checked): a path listed here is read through
    /// its file and never opened by name, so what was checked is what is read (the MCP
    /// server's roots; see [`super::ident::Held`]).
    pub held: Option<Arc<super::ident::Held>>,
}

/// How far a read has got, updated by the readers and polled by a progress display.
#[derive(Debug, Default)]
pub struct Progress {
    /// Bytes of the input files consumed (compressed bytes for compressed text inputs).
    pub bytes: std::sync::atomic::AtomicU64,
    /// A binary input (trace.dat, perf.data) is read: its bytes are not counted, as its
    /// reader seeks around the file; progress is its events.
    pub binary: std::sync::atomic::AtomicBool,
    /// Events read so far (updated every 64 Ki events).
    pub events: std::sync::atomic::AtomicU64,
    /// Reading is over (the analysis runs).
    pub read_done: std::sync::atomic::AtomicBool,
    /// Set by the caller to stop the read: every input opened with these options then
    /// fails with [`ReadError::Cancelled`](crate::read::ReadError::Cancelled) within a few thousand events.
    pub cancel: std::sync::atomic::AtomicBool,
    /// The pass over the inputs under way, from 1, of [`Progress::passes`] (0: one pass).
    pub pass: std::sync::atomic::AtomicU64,
    /// Passes over the inputs the analysis makes (0: one).
    pub passes: std::sync::atomic::AtomicU64,
}

impl Progress {
    /// Pass `pass` of `passes` begins: the bytes and events count from nothing again.
    pub fn begin_pass(p: &Option<std::sync::Arc<Progress>>, pass: u64, passes: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        if let Some(p) = p {
            p.bytes.store(0, Relaxed);
            p.events.store(0, Relaxed);
            p.read_done.store(false, Relaxed);
            p.pass.store(pass, Relaxed);
            p.passes.store(passes, Relaxed);
        }
    }

    /// Publishes the event count every 64 Ki events: cheap enough for the hot loop.
    #[inline]
    pub fn tick(p: &Option<std::sync::Arc<Progress>>, events: u64) {
        if events & 0xffff == 0 {
            if let Some(p) = p {
                p.events.store(events, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
}

/// Default reorder window. Text tools already print in time order; what is left is
/// small skew (trappy's unsorted sample, hand-merged captures). 4096 events (about 400 KB)
/// stay in L2 cache; a larger window measurably slows the hot path. `--reorder` raises it.
pub const DEFAULT_WINDOW: usize = 1 << 12;

/// Reorder window for perf.data: a perf round can hold tens of thousands of events.
pub const PERF_WINDOW: usize = 1 << 16;
