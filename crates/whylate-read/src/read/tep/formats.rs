//! The formats of a trace (every event by id) and its kernel symbols, loaded on first use.

use super::format::EventFormat;
use super::value::Endian;
use crate::read::ksyms::{Given, Syms};
use std::sync::{Arc, OnceLock};

/// The event formats of one trace, by id.
#[derive(Clone, Debug, Default)]
pub struct Formats {
    /// Index into `list` by id (ids are 16-bit `common_type` values): no hashing per record.
    pub(super) by_id: Vec<u32>,
    /// All formats in the order they were read.
    pub list: Vec<EventFormat>,
    /// Byte order.
    pub endian: Endian,
    /// Kernel `long` size: 4 or 8.
    pub long_size: u32,
    /// The trace's `/proc/kallsyms` text, parsed into `syms` on first use: most analyses
    /// never ask for a symbol, and parsing 100k+ lines costs tens of ms.
    pub(super) kallsyms_text: Option<Arc<[u8]>>,
    pub(super) syms: OnceLock<Syms>,
    /// Where symbols given by the user are parsed once for every trace opened with them
    /// ([`Given`]).
    given: Option<Arc<OnceLock<Syms>>>,
    /// Symbols are this machine's (see [`Formats::load_this_machines_kallsyms`]).
    this_machine: bool,
}

/// Puts the calling thread in `SCHED_IDLE`: it then runs only on a core nothing else
/// wants, so reading symbols ahead takes no time from decoding on a busy machine. A
/// thread waiting for the symbols sleeps, which frees a core for it.
fn idle_priority() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread, and `param` outlives the call. A refusal
    // (a seccomp filter, another OS's libc) only leaves the thread at its priority.
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
    }
}

/// This machine's symbols, read on first call; a call while the reading thread is at
/// it waits for it.
fn this_machines_syms() -> &'static Syms {
    static HERE: std::sync::OnceLock<Syms> = std::sync::OnceLock::new();
    HERE.get_or_init(|| Syms::parse(&std::fs::read("/proc/kallsyms").unwrap_or_default()))
}

impl Formats {
    /// No formats yet, for a machine of byte order `endian` and `long_size`-byte longs.
    pub fn new(endian: Endian, long_size: u32) -> Self {
        Formats {
            endian,
            long_size,
            ..Formats::default()
        }
    }
    /// Adds a format (a later one with the same id replaces the earlier).
    pub fn add(&mut self, f: EventFormat) {
        let i = self.list.len();
        let id = f.id as usize;
        if id < (1 << 16) {
            if self.by_id.len() <= id {
                self.by_id.resize(id + 1, u32::MAX);
            }
            self.by_id[id] = i as u32;
        }
        self.list.push(f);
    }
    /// The format of event id `id`.
    pub fn get(&self, id: u32) -> Option<&EventFormat> {
        match self.by_id.get(id as usize) {
            Some(&i) if i != u32::MAX => self.list.get(i as usize),
            _ => None,
        }
    }
    /// Number of formats.
    pub fn len(&self) -> usize {
        self.list.len()
    }
    /// No formats.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Takes `/proc/kallsyms` text (`ffffffff81000000 T _stext`), parsed when first needed.
    pub fn load_kallsyms(&mut self, text: &[u8]) {
        self.kallsyms_text = Some(text.into());
        self.syms = Default::default();
        self.given = None;
    }

    /// Takes the symbols the user gave, parsed when first needed by any trace given them.
    pub fn load_given(&mut self, g: &Given) {
        self.kallsyms_text = Some(g.text().clone());
        self.syms = Default::default();
        self.given = Some(g.parsed.clone());
    }

    /// Uses this machine's `/proc/kallsyms`, read once per process: with `ahead`, on a
    /// thread of its own while the trace is decoded (the kernel takes tens of ms of CPU to
    /// print it, and `diff` or a test opens many files); else when a symbol is first
    /// asked for, which a trace whose events carry no code address never does.
    pub fn load_this_machines_kallsyms(&mut self, ahead: bool) {
        static STARTED: std::sync::Once = std::sync::Once::new();
        // Not marked started without `ahead`: a later file (`diff`) may need the thread.
        if ahead {
            STARTED.call_once(|| {
                // Without a thread, the first symbol asked for reads it.
                let _ = std::thread::Builder::new()
                    .name("kallsyms".into())
                    .spawn(|| {
                        idle_priority();
                        this_machines_syms();
                    });
            });
        }
        self.kallsyms_text = None;
        self.syms = Default::default();
        self.given = None;
        self.this_machine = true;
    }

    /// True when symbols were loaded, without parsing them (which costs tens of ms).
    pub fn carries_kallsyms(&self) -> bool {
        match self.syms.get() {
            Some(s) => !s.list.is_empty(),
            None => self.kallsyms_text.as_ref().is_some_and(|t| !t.is_empty()),
        }
    }

    /// True when the trace carries kernel code symbols (or this machine's were loaded).
    pub fn has_kallsyms(&self) -> bool {
        !self.syms().list.is_empty()
    }

    /// The symbols, parsed at the first call (or shared with every trace given the same).
    pub(crate) fn syms(&self) -> &Syms {
        self.syms
            .get_or_init(|| match (&self.kallsyms_text, &self.given) {
                (Some(t), Some(shared)) => shared.get_or_init(|| Syms::parse(t)).clone(),
                (Some(t), None) => Syms::parse(t),
                (None, _) if self.this_machine => this_machines_syms().clone(),
                (None, _) => Syms::default(),
            })
    }

    /// Address of `_stext`, when the symbols are known.
    pub fn stext(&self) -> Option<u64> {
        self.syms().stext
    }

    /// The function containing `addr`, when the symbols are known and `addr` lies
    /// within them.
    pub fn symbol(&self, addr: u64) -> Option<&str> {
        let syms = &self.syms().list;
        let last = syms.last()?.0;
        if addr == 0 || addr > last.saturating_add(1 << 16) {
            return None;
        }
        let i = syms.partition_point(|(a, _)| *a <= addr);
        if i == 0 {
            return None;
        }
        Some(&syms[i - 1].1)
    }

    /// Renders a record's non-common fields as `name=value` pairs, as `trace-cmd report -R`.
    pub fn render_raw(&self, f: &EventFormat, data: &[u8], out: &mut String) {
        for (i, fld) in f.fields.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            out.push_str(&fld.name);
            out.push('=');
            fld.render(data, self.endian, &|a| self.symbol(a), out);
        }
    }
}
