//! A large text input parsed on every core: the input is cut into chunks of whole lines,
//! worker threads parse chunks with a parser and an interner of their own, and the
//! reader takes the chunks back in input order, renaming each chunk's symbols into the
//! shared interner. Events, diagnostics and the interner's order come out as one pass
//! over the input gives them:
//!
//! - a chunk after the first is parsed from the usual state between two records
//!   ([`LineParser::rebase`]); when the chunk before it ended in another state (a lost
//!   events line waiting for the next event, an open stack trace, a blank line in perf
//!   script), the reader parses the chunk again itself, from that state;
//! - each worker keeps one interner for all its chunks and hands over the strings it
//!   added with each chunk, so a chunk's new strings enter the shared interner in the
//!   order one pass would have met them;
//! - line numbers in diagnostics are made absolute when a chunk is taken back.
//!
//! Memory is bounded: at most [`AHEAD`] chunks per worker are cut and not yet taken back.

use crate::event::{Event, Interner, Sym};
use crate::read::source::Diag;
use crate::read::source::{Cx, LineParser};
use std::collections::{HashMap, VecDeque};
use std::io::{self, Read};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};

/// Bytes per chunk: large enough that handing one over costs nothing next to parsing it
/// (about 10k events), small enough that a few per worker stay a few MiB.
pub(crate) const CHUNK: usize = 1 << 20;
/// Chunks cut ahead per worker: one being parsed, one waiting, one being taken back.
const AHEAD: usize = 3;
use super::lines::MAX_LINE;

std::thread_local! {
    /// Tests set (workers, chunk bytes) here to read even small inputs in chunks.
    static FORCED: std::cell::Cell<Option<(usize, usize)>> = const { std::cell::Cell::new(None) };
}

/// Inputs smaller than this are parsed in one pass: threads would cost more than they save.
const MIN_INPUT: usize = 4 * CHUNK;

/// (workers, chunk bytes) for an input of `size` bytes (None: compressed or a pipe) that
/// starts with `head` bytes (`head_max` were asked for), whose lines stand on their own
/// when `by_line` (its reader's `split`): every core for a large input whose lines stand
/// on their own, no worker otherwise.
pub(crate) fn plan(
    by_line: bool,
    head: usize,
    head_max: usize,
    size: Option<u64>,
) -> (usize, usize) {
    let large = match size {
        Some(n) => n >= MIN_INPUT as u64,
        // A compressed input or a pipe: its head filled what was asked.
        None => head >= head_max,
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    match FORCED.with(|f| f.get()) {
        Some(f) if by_line => f,
        _ if large && by_line && cores > 1 => (cores, CHUNK),
        _ => (0, CHUNK),
    }
}

/// Runs `f` with inputs opened on this thread parsed in chunks of `size` bytes by
/// `workers` threads, whatever their size and format (tests).
#[cfg(test)]
pub(crate) fn forced<T>(workers: usize, size: usize, f: impl FnOnce() -> T) -> T {
    FORCED.with(|c| c.set(Some((workers, size))));
    let r = f();
    FORCED.with(|c| c.set(None));
    r
}

/// A run of whole lines, the `index`-th of the input.
struct Piece {
    index: u64,
    bytes: Vec<u8>,
    last: bool,
}

/// A chunk as a worker parsed it.
struct Parsed {
    piece: Piece,
    worker: usize,
    /// Strings the worker interned while parsing it.
    strings: Vec<Box<str>>,
    events: VecDeque<Event>,
    diag: Diag,
    /// The state the chunk ended in, when it is not the usual one.
    carry: Option<Box<dyn LineParser>>,
}

/// Cuts the input into pieces; shared by the workers behind a lock.
struct Splitter {
    src: Box<dyn Read + Send>,
    rest: Vec<u8>,
    next: u64,
    done: bool,
    in_flight: usize,
    stop: bool,
    size: usize,
    /// Pieces' buffers the reader is done with, to be filled again.
    spare: Vec<Vec<u8>>,
}

impl Splitter {
    /// The next piece: `size` bytes or more, cut after a newline; None after the last.
    fn take(&mut self) -> io::Result<Option<Piece>> {
        if self.done {
            return Ok(None);
        }
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(&self.rest);
        let mut eof = false;
        let mut searched = 0;
        let mut after = None;
        let cut = loop {
            if buf.len() >= self.size + searched || eof {
                if let Some(p) = memchr::memrchr(b'\n', &buf[searched..]) {
                    break searched + p + 1;
                }
                if eof {
                    break buf.len();
                }
                if buf.len() > MAX_LINE {
                    // `buf` is one line (no newline in it): cut it as `LineReader` does.
                    buf.truncate(MAX_LINE + 1);
                    let (end, rest) = self.skip_line()?;
                    (eof, after) = (end, Some(rest));
                    buf.push(b'\n');
                    break buf.len();
                }
                searched = buf.len();
            }
            eof = read_some(&mut *self.src, &mut buf, self.size)? == 0;
        };
        self.rest.clear();
        self.rest.extend_from_slice(&buf[cut..]);
        if let Some(rest) = after {
            self.rest = rest;
        }
        buf.truncate(cut);
        let last = eof && self.rest.is_empty();
        self.done = last;
        let index = self.next;
        self.next += 1;
        Ok(Some(Piece {
            index,
            bytes: buf,
            last,
        }))
    }
}

impl Splitter {
    /// Drops the input up to its next newline, reading a chunk at a time: (at the
    /// input's end, what follows the newline).
    fn skip_line(&mut self) -> io::Result<(bool, Vec<u8>)> {
        let mut scratch = Vec::new();
        loop {
            scratch.clear();
            if read_some(&mut *self.src, &mut scratch, self.size)? == 0 {
                return Ok((true, scratch));
            }
            if let Some(p) = memchr::memchr(b'\n', &scratch) {
                scratch.drain(..=p);
                return Ok((false, scratch));
            }
        }
    }
}

/// Appends up to `want` bytes read from `src` to `buf`; the count (0 at the end).
fn read_some(src: &mut dyn Read, buf: &mut Vec<u8>, want: usize) -> io::Result<usize> {
    // Into the spare capacity: a file reads there without the bytes being zeroed first.
    let old = buf.len();
    match src.take(want as u64).read_to_end(buf) {
        Ok(n) => Ok(n),
        Err(e) => {
            buf.truncate(old);
            Err(e)
        }
    }
}

/// The splitter and the wake-up of workers waiting for room.
struct Shared {
    split: Mutex<Splitter>,
    room: Condvar,
    ahead: usize,
    /// Event queues the reader emptied, for the workers to fill again: a fresh one per
    /// chunk cost page faults on the worker and growth copies on both sides.
    spare: Mutex<Vec<VecDeque<Event>>>,
}

/// Parses `bytes` line by line (as `LineReader` splits them), line numbers after `base`.
fn parse_piece(
    parser: &mut dyn LineParser,
    bytes: &[u8],
    strings: &mut Interner,
    out: &mut VecDeque<Event>,
    diag: &mut Diag,
    base: u64,
) {
    let mut n = base;
    let mut rest = bytes;
    while !rest.is_empty() {
        let (line, next) = match memchr::memchr(b'\n', rest) {
            Some(p) => (&rest[..p], &rest[p + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        rest = next;
        n += 1;
        diag.lines += 1;
        if super::lines::too_long(line) {
            diag.bad(n, line, super::lines::TOO_LONG);
            continue;
        }
        let mut cx = Cx {
            strings: &mut *strings,
            out: &mut *out,
            diag: &mut *diag,
            lineno: n,
        };
        parser.line(super::lines::chomp(line), &mut cx);
    }
}

/// One worker: takes pieces until the input (or the reader) ends.
fn work(
    me: usize,
    shared: Arc<Shared>,
    mut parser: Box<dyn LineParser>,
    tx: Sender<io::Result<Parsed>>,
) {
    let mut strings = Interner::new();
    let mut handed = strings.len();
    loop {
        let piece = {
            let mut s = shared.split.lock().unwrap_or_else(|p| p.into_inner());
            while s.in_flight >= shared.ahead && !s.stop {
                s = shared.room.wait(s).unwrap_or_else(|p| p.into_inner());
            }
            if s.stop {
                return;
            }
            let p = s.take();
            if matches!(p, Ok(Some(_))) {
                s.in_flight += 1;
            }
            p
        };
        let piece = match piece {
            Ok(Some(p)) => p,
            Ok(None) => return,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        if piece.index > 0 {
            // Whatever the last chunk this worker parsed ended in, this one starts usual.
            parser.rebase();
        }
        let spare = shared.spare.lock().map(|mut v| v.pop()).ok().flatten();
        let (mut events, mut diag) = (spare.unwrap_or_default(), Diag::default());
        parse_piece(
            &mut *parser,
            &piece.bytes,
            &mut strings,
            &mut events,
            &mut diag,
            0,
        );
        // At the input's end too: the reader finishes a carried parser, as it alone
        // knows when the input's last event was.
        let carry = parser.rebase();
        let added: Vec<Box<str>> = strings.strings_from(handed).map(Into::into).collect();
        handed = strings.len();
        let last = piece.last;
        let done = Parsed {
            piece,
            worker: me,
            strings: added,
            events,
            diag,
            carry,
        };
        if tx.send(Ok(done)).is_err() || last {
            return;
        }
    }
}

/// The reader's side: chunks taken back in input order.
pub(crate) struct Chunked {
    shared: Arc<Shared>,
    rx: Receiver<io::Result<Parsed>>,
    early: HashMap<u64, Parsed>,
    next: u64,
    /// Per worker, its symbols in the shared interner.
    renames: Vec<Vec<Sym>>,
    carry: Option<Box<dyn LineParser>>,
    lines_before: u64,
    /// When the last event taken back was (what a carried parser's `last_ts` is).
    last_ts: u64,
    bytes: u64,
    done: bool,
}

impl Chunked {
    /// Starts `workers` threads parsing `src` with forks of `parser` (which must fork),
    /// in chunks of `size` bytes.
    pub(crate) fn start(
        src: Box<dyn Read + Send>,
        parser: &dyn LineParser,
        workers: usize,
        size: usize,
    ) -> Chunked {
        let workers = workers.max(1);
        let shared = Arc::new(Shared {
            split: Mutex::new(Splitter {
                src,
                rest: Vec::new(),
                next: 0,
                done: false,
                in_flight: 0,
                stop: false,
                size: size.max(1),
                spare: Vec::new(),
            }),
            room: Condvar::new(),
            ahead: AHEAD * workers,
            spare: Mutex::new(Vec::new()),
        });
        let (tx, rx) = channel();
        for me in 0..workers {
            let p = parser
                .fork()
                .expect("chunked parsing needs a parser that forks");
            let (sh, tx) = (shared.clone(), tx.clone());
            std::thread::Builder::new()
                .name(format!("parse-{me}"))
                .spawn(move || work(me, sh, p, tx))
                .expect("a parsing thread");
        }
        Chunked {
            shared,
            rx,
            early: HashMap::new(),
            next: 0,
            renames: vec![vec![Sym::EMPTY]; workers],
            carry: None,
            lines_before: 0,
            last_ts: 0,
            bytes: 0,
            done: false,
        }
    }

    /// Bytes of the input taken back so far.
    pub(crate) fn bytes_read(&self) -> u64 {
        self.bytes
    }

    /// The next chunk in input order, from whichever worker parsed it.
    fn receive(&mut self) -> io::Result<Parsed> {
        loop {
            if let Some(p) = self.early.remove(&self.next) {
                return Ok(p);
            }
            let p = self
                .rx
                .recv()
                .map_err(|_| io::Error::other("a text-parsing thread stopped"))??;
            self.early.insert(p.piece.index, p);
        }
    }

    /// Appends the next chunk's events to `out` and its diagnostics to `diag`; false
    /// once the input has ended.
    pub(crate) fn fill(
        &mut self,
        strings: &mut Interner,
        out: &mut VecDeque<Event>,
        diag: &mut Diag,
    ) -> io::Result<bool> {
        if self.done {
            return Ok(false);
        }
        let p = self.receive()?;
        self.next += 1;
        let names = &mut self.renames[p.worker];
        names.extend(p.strings.iter().map(|s| strings.intern(s)));
        let pushed = out.len();
        if let Some(mut c) = self.carry.take() {
            // The chunk before ended in an unusual state: read this one on from it.
            c.continue_after(self.last_ts);
            let before = diag.lines;
            let base = self.lines_before;
            parse_piece(&mut *c, &p.piece.bytes, strings, out, diag, base);
            self.lines_before += diag.lines - before;
            self.carry = c.rebase();
        } else {
            let names = &self.renames[p.worker];
            // Renamed in place, then moved over in bulk: cheaper than one by one.
            let mut events = p.events;
            for e in events.iter_mut() {
                e.map_syms(|s| names[s.0 as usize]);
            }
            out.append(&mut events);
            if let Ok(mut spare) = self.shared.spare.lock() {
                spare.push(events);
            }
            let n = p.diag.lines;
            diag.absorb(p.diag, self.lines_before);
            self.lines_before += n;
            self.carry = p.carry;
        }
        if out.len() > pushed {
            self.last_ts = out.back().map_or(self.last_ts, |e| e.ts);
        }
        self.bytes += p.piece.bytes.len() as u64;
        {
            let mut s = self.shared.split.lock().unwrap_or_else(|p| p.into_inner());
            s.in_flight -= 1;
            s.spare.push(p.piece.bytes);
            self.shared.room.notify_one();
        }
        if p.piece.last {
            self.done = true;
            if let Some(mut c) = self.carry.take() {
                c.continue_after(self.last_ts);
                let mut cx = Cx {
                    strings,
                    out,
                    diag,
                    lineno: self.lines_before + 1,
                };
                c.finish(&mut cx);
            }
        }
        Ok(true)
    }
}

impl Drop for Chunked {
    fn drop(&mut self) {
        let mut s = self.shared.split.lock().unwrap_or_else(|p| p.into_inner());
        s.stop = true;
        self.shared.room.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::{open, EventSource};
    use std::path::Path;

    /// Every event, the diagnostics and the interner of `path`, read in one pass or in
    /// chunks of `size` bytes on two threads.
    fn read(path: &Path, size: Option<usize>) -> (Vec<Event>, String, Vec<String>) {
        let go = || {
            let mut s = Interner::new();
            let mut src = open(path, &Default::default()).unwrap();
            let mut v = vec![];
            while let Some(e) = src.next_event(&mut s).unwrap() {
                v.push(e);
            }
            let strings = s.strings_from(0).map(String::from).collect();
            (v, format!("{:?}", src.diag()), strings)
        };
        match size {
            Some(n) => forced(2, n, go),
            None => go(),
        }
    }

    fn same(path: &Path, size: usize) {
        let (a, da, sa) = read(path, None);
        let (b, db, sb) = read(path, Some(size));
        let at = format!("{} in chunks of {size}", path.display());
        assert_eq!(a.len(), b.len(), "{at}: events");
        if let Some(i) = (0..a.len()).find(|&i| a[i] != b[i]) {
            panic!("{at}: event {i}: {:?} != {:?}", a[i], b[i]);
        }
        // The interner's order is one pass's, so symbols compare as numbers too.
        assert_eq!(sa, sb, "{at}: strings");
        assert_eq!(da, db, "{at}: diagnostics");
    }

    /// Lines whose meaning depends on the lines before them, at every possible cut:
    /// lost-events lines waiting for the next event, stack traces, comments and lines
    /// that do not parse (their line numbers), perf script callchains and blank lines.
    #[test]
    fn chunks_read_as_one_pass_at_every_cut() {
        let dir = tempfile::tempdir().unwrap();
        let ftrace = "# tracer: nop\n#\n\
 bash-1  [000] d..1. 10.000001: sched_waking: comm=a pid=2 prio=120 target_cpu=001\n\
CPU:1 [LOST 12 EVENTS]\n\
 a-2  [001] d..1. 10.000002: sched_switch: prev_comm=a prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=b pid=3 next_prio=120\n\
 b-3  [001] ...1. 10.000003: <stack trace>\n => foo\n => bar\n\
 not a trace line [x] - y\n\
##### CPU 0 buffer started ####\n\
 c-4  [000] ...1. 10.000004: sys_exit: NR 1 = 5\n\
 c-4  [000] ...1. 10.000005: tracing_mark_write: hello\n\
CPU:0 [LOST 3 EVENTS]\n";
        let perf = "# header\n\
 a  2 [001] 10.000001: sched:sched_wakeup: comm=b pid=3 prio=120 target_cpu=001\n\
\tffffffff81000000 foo+0x1 ([kernel.kallsyms])\n\
\tffffffff81000010 bar+0x2 ([kernel.kallsyms])\n\
\n\
\tffffffff81000020 orphan+0x3 ([kernel.kallsyms])\n\
 b  3 [001] 10.000002: raw_syscalls:sys_exit: NR 0 = 1\n\
 c  4 [000] 10.000003: sched:sched_switch: prev_comm=c prev_pid=4 prev_prio=120 prev_state=R ==> next_comm=d next_pid=5 next_prio=120\n\
\tffffffff81000030 baz+0x4 ([kernel.kallsyms])\n";
        for (name, text) in [("f.txt", ftrace), ("p.txt", perf)] {
            let p = dir.path().join(name);
            std::fs::write(&p, text.repeat(3)).unwrap();
            for size in 1..text.len() {
                same(&p, size);
            }
        }
    }

    /// A line far over the cap (here 3x) is one line not understood, located, with the
    /// lines after it read, whether the input is read in one pass or in chunks.
    #[test]
    fn a_line_longer_than_the_cap_is_one_line_not_understood() {
        let dir = tempfile::tempdir().unwrap();
        let ev = " a-2  [001] ...1. 10.000002: sys_exit: NR 0 = 1\n";
        let text = format!("# tracer: nop\n{ev}{}\n{ev}{ev}", "x".repeat(3 * MAX_LINE));
        let p = dir.path().join("long.txt");
        std::fs::write(&p, text).unwrap();
        let (events, diag, _) = read(&p, None);
        assert_eq!(events.len(), 3, "{diag}");
        assert!(diag.contains("unparsed: 1,"), "{diag}");
        assert!(diag.contains("line: 3,"), "{diag}");
        assert!(diag.contains("65536 bytes"), "{diag}");
        for size in [100, 4096, CHUNK] {
            same(&p, size);
        }
    }

    /// Every text trace we have, in small chunks and in the default ones.
    #[test]
    fn chunks_change_nothing_on_any_text_trace() {
        use crate::read::Format;
        let files = [Format::Ftrace, Format::TraceCmdReport, Format::PerfScript];
        let mut compared = 0;
        for f in crate::testfiles::every_trace_of(&files) {
            for size in [100, 4096, CHUNK] {
                same(&f, size);
            }
            compared += 1;
        }
        assert!(compared >= 5, "only {compared} text traces found");
    }
}
