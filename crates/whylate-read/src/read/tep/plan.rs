//! What decoding and its pure share: a record's common fields, the plan of each event
//! id (its field handles resolved once), and the record being read.

use super::format::Field;
use super::formats::Formats;
use super::value::{opt_int, opt_uint, Endian};
use crate::event::{flags, Interner, SchedStat, Sym};

/// The common header of a record.
#[derive(Clone, Copy, Debug, Default)]
pub struct Common {
    /// `common_type`.
    pub id: u32,
    /// `common_flags` and preempt depth packed as [`crate::event::flags`].
    pub flags: u16,
    /// `common_pid`.
    pub pid: i32,
}

/// Reads the common fields; the layout is fixed since 2.6.32.
#[inline]
pub fn common(data: &[u8], e: Endian) -> Option<Common> {
    let id = e.uint(data, 0, 2)? as u32;
    let fl = *data.get(2)? as u16;
    let pc = *data.get(3)? as u16;
    let pid = e.u32(data, 4)? as i32;
    Some(Common {
        id,
        // The preempt count's low nibble is the preempt depth, the high one the
        // migrate-disable depth (5.13+), as the text's last two flag columns print them.
        flags: fl | ((pc & 0xf) << flags::PREEMPT_SHIFT) | flags::migrate(pc >> 4) | flags::KNOWN,
        pid,
    })
}

/// How one event id becomes a typed [`Kind`]: field handles resolved once per format.
#[derive(Clone, Debug)]
pub(super) enum Plan {
    Switch([Option<Field>; 7]),
    Wake {
        f: [Option<Field>; 4],
        waking: bool,
        new: bool,
    },
    Migrate([Option<Field>; 5]),
    Fork([Option<Field>; 4]),
    Exec([Option<Field>; 3]),
    Exit([Option<Field>; 3]),
    Stat(SchedStat, [Option<Field>; 3]),
    IrqEntry([Option<Field>; 2]),
    IrqExit([Option<Field>; 2]),
    Softirq(u8, Option<Field>),
    Tasklet(bool, Option<Field>),
    WorkQueue([Option<Field>; 5]),
    Work(u8, [Option<Field>; 2]),
    SysEnter([Option<Field>; 2]),
    SysExit([Option<Field>; 2]),
    SyscallEnter(Sym, Vec<(Sym, Field)>),
    SyscallExit(Sym, Option<Field>),
    HrStart([Option<Field>; 4]),
    HrEntry([Option<Field>; 3]),
    HrOne(u8, Option<Field>),
    TimerStart([Option<Field>; 3]),
    TimerEntry([Option<Field>; 3]),
    TimerOne(u8, Option<Field>),
    Napi([Option<Field>; 4]),
    CallerParent(u8, [Option<Field>; 2]),
    Print(Sym, Option<Field>),
    Console(Option<Field>),
    Function([Option<Field>; 2]),
    /// function_graph: entry (func, depth) or exit (func, depth, calltime, rettime).
    FuncGraph(bool, [Option<Field>; 4]),
    /// ftrace's kernel_stack: (name, size: how many entries, caller: the addresses).
    Stack(Sym, [Option<Field>; 2]),
    Other(Sym),
}

/// One record being decoded: its bytes, their byte order, and the file's formats.
#[derive(Clone, Copy)]
pub(super) struct Rec<'a> {
    pub(super) data: &'a [u8],
    pub(super) e: Endian,
    pub(super) fmts: &'a Formats,
}

impl Rec<'_> {
    // Always inlined, as `opt_int` is: as calls they cost about what the reads do.
    #[inline(always)]
    pub(super) fn i(&self, f: &Option<Field>) -> i64 {
        opt_int(f, self.data, self.e)
    }

    #[inline(always)]
    pub(super) fn u(&self, f: &Option<Field>) -> u64 {
        opt_uint(f, self.data, self.e)
    }

    #[inline]
    pub(super) fn st(&self, f: &Option<Field>, s: &mut Interner) -> Sym {
        f.as_ref()
            .map_or(Sym::EMPTY, |f| s.intern_bytes(f.str(self.data, self.e)))
    }

    /// A string field's text without its trailing newline (printk and trace_printk).
    pub(super) fn msg(&self, f: &Option<Field>) -> Box<str> {
        let msg = f.as_ref().map_or(&b""[..], |f| f.str(self.data, self.e));
        let msg = msg.strip_suffix(b"\n").unwrap_or(msg);
        String::from_utf8_lossy(msg).into()
    }
}
