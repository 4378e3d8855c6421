//! The trace.dat (v6) written at the end: header, event formats, kallsyms, printk formats, saved cmdlines, options (clock, uname, CPU stats, the snapshot) and the spools.

use super::error::{ioe, RecordError};
use super::readers::{Reader, Spool};
use super::tracefs::read_tracefs;
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

pub(super) fn uname() -> String {
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: valid out pointer.
    if unsafe { libc::uname(&mut u) } != 0 {
        return String::new();
    }
    let f = |b: &[libc::c_char]| {
        let bytes: Vec<u8> = b
            .iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!(
        "{} {} {} {} {}",
        f(&u.sysname),
        f(&u.nodename),
        f(&u.release),
        f(&u.version),
        f(&u.machine)
    )
}

/// Formats to store: ftrace's own (print, function...) and each enabled event, by system.
pub(super) fn collect_formats(
    root: &Path,
    events: &[(String, String)],
) -> Vec<(String, Vec<Vec<u8>>)> {
    let mut out: Vec<(String, Vec<Vec<u8>>)> = Vec::new();
    let mut ftrace = Vec::new();
    if let Ok(rd) = fs::read_dir(root.join("events/ftrace")) {
        let mut names: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        names.sort();
        for p in names {
            let t = read_tracefs(&p.join("format"));
            if !t.is_empty() {
                ftrace.push(t);
            }
        }
    }
    out.push(("ftrace".into(), ftrace));
    for (sys, ev) in events {
        let t = read_tracefs(&root.join("events").join(sys).join(ev).join("format"));
        if t.is_empty() {
            continue;
        }
        match out.iter_mut().find(|(s, _)| s == sys) {
            Some((_, v)) => v.push(t),
            None => out.push((sys.clone(), vec![t])),
        }
    }
    out
}

/// Everything a trace.dat holds besides the pages.
#[derive(Clone)]
pub(crate) struct Meta {
    pub(crate) page: usize,
    pub(crate) header_page: String,
    pub(crate) header_event: String,
    pub(crate) formats: Vec<(String, Vec<Vec<u8>>)>,
    pub(crate) kallsyms: Vec<u8>,
    pub(crate) printk: Vec<u8>,
    pub(crate) cmdlines: Vec<u8>,
    pub(crate) clock: String,
    pub(crate) uname: String,
    pub(crate) cpustats: Vec<String>,
    pub(crate) snapshot: Vec<u8>,
}

/// One CPU's pages, wherever they are kept.
pub(crate) trait CpuPages {
    /// The CPU.
    fn cpu(&self) -> u32;
    /// Bytes of pages (whole pages).
    fn bytes(&self) -> u64;
    /// Appends them to `out` (named `path` in errors).
    fn copy_to(&mut self, out: &mut fs::File, path: &Path) -> Result<(), RecordError>;
}

impl CpuPages for Reader<Spool> {
    fn cpu(&self) -> u32 {
        self.cpu
    }
    fn bytes(&self) -> u64 {
        self.pages * self.sink.page_size
    }
    fn copy_to(&mut self, f: &mut fs::File, path: &Path) -> Result<(), RecordError> {
        let want = self.bytes();
        let spool = &mut self.sink;
        spool
            .file
            .seek(SeekFrom::Start(0))
            .map_err(ioe(&spool.path))?;
        let n = io::copy(&mut (&spool.file).take(want), f).map_err(ioe(path))?;
        if n != want {
            return Err(RecordError::Io {
                path: spool.path.clone(),
                source: io::Error::other(format!("spool holds {n} bytes, expected {want}")),
            });
        }
        Ok(())
    }
}

/// Pages held in memory (a `watch` window), shared with the ring that holds them.
pub(crate) struct MemPages {
    pub(crate) cpu: u32,
    pub(crate) pages: Vec<std::sync::Arc<[u8]>>,
}

/// The trace.dat of `cpus` in memory, as pieces: the header composed here, then the pages
/// themselves, not copied (`watch` hands its windows to the analysis so).
pub(crate) fn dat_in_memory(m: &Meta, cpus: Vec<MemPages>) -> whylate::read::memory::Pieces {
    let mut out = whylate::read::memory::Pieces::new();
    let (h, at) = dat_header(m, &cpus);
    out.push(h[..at].into());
    if !m.kallsyms.is_empty() {
        out.push(m.kallsyms.as_slice().into());
    }
    out.push(h[at..].into());
    for c in cpus {
        for p in c.pages {
            out.push(p);
        }
    }
    out
}

impl CpuPages for MemPages {
    fn cpu(&self) -> u32 {
        self.cpu
    }
    fn bytes(&self) -> u64 {
        self.pages.iter().map(|p| p.len() as u64).sum()
    }
    fn copy_to(&mut self, f: &mut fs::File, path: &Path) -> Result<(), RecordError> {
        for p in &self.pages {
            f.write_all(p).map_err(ioe(path))?;
        }
        Ok(())
    }
}

/// Bytes per write() call: a few microseconds of copying each.
const WRITE_PIECE: usize = 64 << 10;

/// A trace.dat v6 up to its CPU data: header, formats, symbols, options and the CPU
/// table, padded to the page where the data of `cpus` starts (laid out in their order).
/// `m.kallsyms` is not copied in: it goes at the offset returned (5 MB copied into a
/// fresh buffer for every window `watch` keeps cost more than writing them).
fn dat_header<C: CpuPages>(m: &Meta, cpus: &[C]) -> (Vec<u8>, usize) {
    let mut h: Vec<u8> = Vec::new();
    h.extend_from_slice(whylate::read::tracedat::MAGIC);
    h.extend_from_slice(b"6\0");
    h.push(0); // little endian
    h.push(8); // long size
    h.extend_from_slice(&(m.page as u32).to_le_bytes());
    h.extend_from_slice(b"header_page\0");
    h.extend_from_slice(&(m.header_page.len() as u64).to_le_bytes());
    h.extend_from_slice(m.header_page.as_bytes());
    h.extend_from_slice(b"header_event\0");
    h.extend_from_slice(&(m.header_event.len() as u64).to_le_bytes());
    h.extend_from_slice(m.header_event.as_bytes());
    let (ftrace, systems) = m
        .formats
        .split_first()
        .expect("ftrace entry is always first");
    h.extend_from_slice(&(ftrace.1.len() as u32).to_le_bytes());
    for f in &ftrace.1 {
        h.extend_from_slice(&(f.len() as u64).to_le_bytes());
        h.extend_from_slice(f);
    }
    h.extend_from_slice(&(systems.len() as u32).to_le_bytes());
    for (sys, fs_) in systems {
        h.extend_from_slice(sys.as_bytes());
        h.push(0);
        h.extend_from_slice(&(fs_.len() as u32).to_le_bytes());
        for f in fs_ {
            h.extend_from_slice(&(f.len() as u64).to_le_bytes());
            h.extend_from_slice(f);
        }
    }
    h.extend_from_slice(&(m.kallsyms.len() as u32).to_le_bytes());
    let kallsyms_at = h.len();
    h.extend_from_slice(&(m.printk.len() as u32).to_le_bytes());
    h.extend_from_slice(&m.printk);
    h.extend_from_slice(&(m.cmdlines.len() as u64).to_le_bytes());
    h.extend_from_slice(&m.cmdlines);
    let ncpu = cpus.iter().map(|r| r.cpu() + 1).max().unwrap_or(0);
    h.extend_from_slice(&ncpu.to_le_bytes());
    h.extend_from_slice(b"options  \0");
    let mut opt = |id: u16, data: &[u8]| {
        h.extend_from_slice(&id.to_le_bytes());
        h.extend_from_slice(&(data.len() as u32).to_le_bytes());
        h.extend_from_slice(data);
    };
    let cstr = |s: &str| {
        let mut v = s.as_bytes().to_vec();
        v.push(0);
        v
    };
    opt(4, &cstr(&m.clock)); // TRACECLOCK
    opt(5, &cstr(&m.uname)); // UNAME
    for s in &m.cpustats {
        opt(2, &cstr(s)); // CPUSTAT
    }
    opt(whylate::snapshot::OPTION_ID, &m.snapshot);
    h.extend_from_slice(&0u16.to_le_bytes()); // DONE
    h.extend_from_slice(b"flyrecord\0");
    // Per CPU (offset, size); data starts page-aligned after this table.
    let table_at = h.len();
    h.resize(table_at + 16 * ncpu as usize, 0);
    let page = m.page as u64;
    let whole = |h: &Vec<u8>| (h.len() + m.kallsyms.len()) as u64;
    let mut off = whole(&h).div_ceil(page) * page;
    let mut sizes = vec![(0u64, 0u64); ncpu as usize];
    for r in cpus.iter() {
        let size = r.bytes();
        sizes[r.cpu() as usize] = (if size > 0 { off } else { 0 }, size);
        off += size;
    }
    for (i, (o, s)) in sizes.iter().enumerate() {
        let at = table_at + 16 * i;
        h[at..at + 8].copy_from_slice(&o.to_le_bytes());
        h[at + 8..at + 16].copy_from_slice(&s.to_le_bytes());
    }
    let data_start = whole(&h).div_ceil(page) * page;
    h.resize(data_start as usize - m.kallsyms.len(), 0);
    (h, kallsyms_at)
}

/// Writes a trace.dat v6: header, formats, symbols, options, then each CPU's pages.
pub(crate) fn write_dat<C: CpuPages>(
    path: &Path,
    m: &Meta,
    cpus: &mut [C],
) -> Result<u64, RecordError> {
    let (h, at) = dat_header(m, cpus);
    // O_NOFOLLOW: run as root, a symlink planted at the output's name must not make
    // the recorder truncate whatever it points to.
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(ioe(path))?;
    // An existing file keeps its old mode with `create`: make it private anyway.
    use std::os::unix::fs::PermissionsExt;
    f.set_permissions(fs::Permissions::from_mode(0o600))
        .map_err(ioe(path))?;
    // In pieces: one write() of the whole header (5 MB of kallsyms) is one long stretch
    // in the kernel, which a non-preemptible kernel lets no real-time task interrupt
    // (`watch` writes windows while the workload runs).
    let pieces = [&h[..at], &m.kallsyms[..], &h[at..]];
    for piece in pieces.iter().flat_map(|p| p.chunks(WRITE_PIECE)) {
        f.write_all(piece).map_err(ioe(path))?;
    }
    for r in cpus.iter_mut() {
        if r.bytes() > 0 {
            r.copy_to(&mut f, path)?;
        }
    }
    f.flush().map_err(ioe(path))?;
    Ok(f.metadata().map(|m| m.len()).unwrap_or(0))
}
