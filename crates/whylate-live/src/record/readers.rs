//! One thread per CPU moving whole ring-buffer pages from `trace_pipe_raw` to a sink
//! (an unlinked spool file for `record`, a channel for `watch`), counting records as it goes.

use super::error::{ioe, RecordError};
use super::turn::{Fill, Turn};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use whylate::read::ringbuf::{PageCursor, PageLayout};

/// Where a reader puts the pages it reads.
pub(crate) trait PageSink: Send + 'static {
    /// One page, zero-filled past what the kernel committed.
    fn page(&mut self, page: &[u8]) -> io::Result<()>;
    /// The reader stopped: flush what is buffered.
    fn done(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `record`'s sink: an unlinked spool file, joined behind the trace.dat header at the end.
pub(super) struct Spool {
    pub(super) file: File,
    /// Where it was created, for error messages.
    pub(super) path: PathBuf,
    /// Bytes per page.
    pub(super) page_size: u64,
    out: BufWriter<File>,
}

impl PageSink for Spool {
    fn page(&mut self, page: &[u8]) -> io::Result<()> {
        self.out.write_all(page)
    }
    fn done(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// One CPU's reader: pages from trace_pipe_raw to its sink.
pub(crate) struct Reader<S> {
    pub(crate) cpu: u32,
    pub(crate) sink: S,
    pub(crate) pages: u64,
    pub(crate) events: u64,
}

pub(super) fn read_cpu<S: PageSink>(
    pipe: PathBuf,
    mut r: Reader<S>,
    page: usize,
    layout: PageLayout,
    stop: Arc<AtomicBool>,
) -> io::Result<Reader<S>> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&pipe)?;
    let fd = f.as_raw_fd();
    let mut f = f;
    let mut buf = vec![0u8; page];
    let mut draining = false;
    let mut fill = pipe.parent().and_then(Fill::open);
    loop {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        if !draining {
            // SAFETY: one valid pollfd.
            unsafe {
                libc::poll(&mut pfd, 1, 100);
            }
        }
        let mut turn = Turn::start();
        loop {
            match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    // A short read is a partial page: the header's commit says how much.
                    buf[n..].fill(0);
                    let mut used = 0;
                    if let Some(mut c) = PageCursor::new(&buf, &layout) {
                        used = c.len();
                        while c.next(&buf, layout.endian).is_some() {
                            r.events += 1;
                        }
                    }
                    r.sink.page(&buf)?;
                    r.pages += 1;
                    // The final drain after the stop disturbs nothing traced: no yields.
                    if !draining {
                        turn.give_way(|| fill.as_mut().is_some_and(Fill::roomy));
                    }
                    // A page less than half full means we caught up with the writer. Reading
                    // on would chase our own read() syscalls' events one page each.
                    if !draining && used < (page - layout.data_off) / 2 {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        if draining {
            break;
        }
        if stop.load(Ordering::Acquire) {
            // tracing_on is already 0: one more pass empties the buffer.
            draining = true;
        }
    }
    r.sink.done()?;
    Ok(r)
}

/// A running reader: it hands its `Reader` back when joined.
pub(crate) type ReaderThread<S> = std::thread::JoinHandle<io::Result<Reader<S>>>;

/// An unlinked spool file in `out_dir` for `cpu`'s pages.
pub(super) fn spool(out_dir: &Path, cpu: u32, page_size: u64) -> Result<Spool, RecordError> {
    let path = out_dir.join(format!(".whylate-{}-cpu{cpu}", std::process::id()));
    // A new file only (O_EXCL): a name planted beforehand, a symlink above all, is
    // refused rather than followed.
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(ioe(&path))?;
    // Unlinked at once: the open file is all we need, and a killed run leaves nothing.
    let _ = fs::remove_file(&path);
    let out = BufWriter::with_capacity(1 << 20, file.try_clone().map_err(ioe(&path))?);
    Ok(Spool {
        file,
        path,
        page_size,
        out,
    })
}

/// One reader thread per CPU, each moving its CPU's pages to the sink `sink(cpu)` makes;
/// returns their handles and the recorder's thread ids (this thread first).
pub(crate) fn spawn_readers<S: PageSink>(
    cpus: &[u32],
    inst: &Path,
    page: usize,
    layout: PageLayout,
    reader_stop: &Arc<AtomicBool>,
    mut sink: impl FnMut(u32, usize, PageLayout) -> Result<S, RecordError>,
) -> Result<(Vec<ReaderThread<S>>, Vec<i32>), RecordError> {
    let mut handles = Vec::new();
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    for &cpu in cpus {
        let r = Reader {
            cpu,
            sink: sink(cpu, page, layout)?,
            pages: 0,
            events: 0,
        };
        let pipe = inst.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
        let st = reader_stop.clone();
        let tx = tid_tx.clone();
        handles.push(std::thread::spawn(move || {
            let _ = tx.send(reader_thread_setup());
            read_cpu(pipe, r, page, layout, st)
        }));
    }
    drop(tid_tx);
    // SAFETY: gettid has no preconditions.
    let mut own = vec![unsafe { libc::gettid() }];
    // Each reader sends its tid first thing (and keeps its sender: take, not drain).
    own.extend(tid_rx.iter().take(handles.len()));
    Ok((handles, own))
}

/// A reader thread's first step: its tid (to keep its syscalls out of the trace), and
/// SCHED_BATCH: at its fair share of CPU it drains the buffers as fast as at nice 0, but
/// its wakeup never preempts the task that is running (a traced workload's), it waits for
/// that task's slice to end.
pub(crate) fn reader_thread_setup() -> i32 {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: valid param; 0 = the calling thread. Best effort: a failure leaves nice 0.
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_BATCH, &p);
        libc::gettid()
    }
}

/// The readers' results, and the error of the first that failed.
pub(crate) fn join_readers<S>(
    handles: Vec<ReaderThread<S>>,
) -> (Vec<Reader<S>>, Option<io::Error>) {
    let mut readers = Vec::new();
    let mut reader_err = None;
    for h in handles {
        match h.join() {
            Ok(Ok(r)) => readers.push(r),
            Ok(Err(e)) => reader_err = Some(e),
            Err(_) => reader_err = Some(io::Error::other("a reader thread panicked")),
        }
    }
    (readers, reader_err)
}
