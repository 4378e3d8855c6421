//! One thread per CPU moving whole ring-buffer pages from `trace_pipe_raw` to an unlinked spool file, counting records as it goes.

use super::error::{ioe, RecordError};
use crate::read::ringbuf::{PageCursor, PageLayout};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// One CPU's reader: pages from trace_pipe_raw to a spool file.
pub(super) struct Reader {
    pub(super) cpu: u32,
    pub(super) spool: File,
    /// Where the (unlinked) spool was created, for error messages.
    pub(super) spool_path: PathBuf,
    pub(super) pages: u64,
    pub(super) events: u64,
}

pub(super) fn read_cpu(
    pipe: PathBuf,
    mut r: Reader,
    page: usize,
    layout: PageLayout,
    stop: Arc<AtomicBool>,
) -> io::Result<Reader> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&pipe)?;
    let fd = f.as_raw_fd();
    let mut f = f;
    let mut buf = vec![0u8; page];
    let mut out = BufWriter::with_capacity(1 << 20, r.spool.try_clone()?);
    let mut draining = false;
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
                    out.write_all(&buf)?;
                    r.pages += 1;
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
    out.flush()?;
    drop(out);
    Ok(r)
}

/// A running reader: it hands its `Reader` back when joined.
pub(super) type ReaderThread = std::thread::JoinHandle<io::Result<Reader>>;

/// One reader thread per CPU, each moving its CPU's pages to an unlinked spool file in
/// `out_dir`; returns their handles and the recorder's thread ids (this thread first).
pub(super) fn spawn_readers(
    cpus: &[u32],
    out_dir: &Path,
    inst: &Path,
    page: usize,
    layout: PageLayout,
    reader_stop: &Arc<AtomicBool>,
) -> Result<(Vec<ReaderThread>, Vec<i32>), RecordError> {
    let mut handles = Vec::new();
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    for &cpu in cpus {
        let spool_path = out_dir.join(format!(".whylate-{}-cpu{cpu}", std::process::id()));
        let spool = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&spool_path)
            .map_err(ioe(&spool_path))?;
        // Unlinked at once: the open file is all we need, and a killed run leaves nothing.
        let _ = fs::remove_file(&spool_path);
        let r = Reader {
            cpu,
            spool,
            spool_path,
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
pub(super) fn reader_thread_setup() -> i32 {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: valid param; 0 = the calling thread. Best effort: a failure leaves nice 0.
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_BATCH, &p);
        libc::gettid()
    }
}

/// The readers' results, and the error of the first that failed.
pub(super) fn join_readers(handles: Vec<ReaderThread>) -> (Vec<Reader>, Option<io::Error>) {
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
