//! The events whose records decode without the interner: raw system calls and the
//! numeric interrupt and timer ends. Their plans intern nothing and neither does their
//! decoding, so a thread that holds no interner ([`Pure`], on a binary reader's reading
//! thread) can make their kinds while the interner's thread makes the rest, and every
//! string is still interned in one-thread order.

use super::format::{EventFormat, Field};
use super::formats::Formats;
use super::plan::{common, Common, Plan, Rec};
use crate::event::Kind;

/// The plan of `fmt` when it is one of the pure events.
pub(super) fn plan(fmt: &EventFormat) -> Option<Plan> {
    let g = |n: &str| fmt.field(n).cloned();
    let system = &*fmt.system;
    Some(match &*fmt.name {
        "sys_enter" if system == "raw_syscalls" => Plan::SysEnter([g("id"), g("args")]),
        "sys_exit" if system == "raw_syscalls" => Plan::SysExit([g("id"), g("ret")]),
        "irq_handler_exit" => Plan::IrqExit([g("irq"), g("ret")]),
        "softirq_raise" => Plan::Softirq(0, g("vec")),
        "softirq_entry" => Plan::Softirq(1, g("vec")),
        "softirq_exit" => Plan::Softirq(2, g("vec")),
        "hrtimer_expire_exit" => Plan::HrOne(0, g("hrtimer")),
        "hrtimer_cancel" => Plan::HrOne(1, g("hrtimer")),
        "timer_expire_exit" => Plan::TimerOne(0, g("timer")),
        "timer_cancel" => Plan::TimerOne(1, g("timer")),
        _ => return None,
    })
}

/// The kind of a record of a pure plan; None for a plan of another group.
#[inline]
pub(super) fn kind(plan: &Plan, r: Rec) -> Option<Kind> {
    Some(match plan {
        Plan::SysEnter(f) => Kind::SysEnter {
            nr: r.i(&f[0]),
            args: sys_args(&f[1], r),
        },
        Plan::SysExit(f) => Kind::SysExit {
            nr: r.i(&f[0]),
            ret: r.i(&f[1]),
        },
        Plan::IrqExit(f) => Kind::IrqExit {
            irq: r.i(&f[0]) as i32,
            handled: r.i(&f[1]) != 0,
        },
        Plan::Softirq(k, f) => {
            let vec = r.u(f) as u8;
            match k {
                0 => Kind::SoftirqRaise { vec },
                1 => Kind::SoftirqEntry { vec },
                _ => Kind::SoftirqExit { vec },
            }
        }
        Plan::HrOne(k, f) => match k {
            0 => Kind::HrtimerExpireExit { timer: r.u(f) },
            _ => Kind::HrtimerCancel { timer: r.u(f) },
        },
        Plan::TimerOne(k, f) => match k {
            0 => Kind::TimerExpireExit { timer: r.u(f) },
            _ => Kind::TimerCancel { timer: r.u(f) },
        },
        _ => return None,
    })
}

/// raw_syscalls:sys_enter's six arguments (zeros where the record has none).
fn sys_args(f: &Option<Field>, r: Rec) -> [u64; 6] {
    let mut args = [0u64; 6];
    let Some(b) = f.as_ref().and_then(|a| a.bytes(r.data, r.e)) else {
        return args;
    };
    let w = (r.fmts.long_size as usize).max(4);
    if w == 8 && !r.e.big && b.len() >= 48 {
        // The usual 64-bit little-endian machine: no per-word dispatch on size and byte
        // order (sys_enter is the commonest event).
        for (slot, c) in args.iter_mut().zip(b.chunks_exact(8)) {
            *slot = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
        }
    } else {
        for (k, slot) in args.iter_mut().enumerate() {
            *slot = r.e.uint(b, k * w, w).unwrap_or(0);
        }
    }
    args
}

/// Decodes the pure events of one file's formats, with no interner: the reading thread's
/// share of decoding when a binary reader runs on two threads.
#[derive(Clone)]
pub struct Pure {
    /// By event id, as in `Decoder`; None for the events left to the interner's thread.
    plans: Vec<Option<Plan>>,
    /// The file's byte order and `long` size (no formats, no symbols: none are read).
    shell: Formats,
}

impl Pure {
    /// The pure events of `fmts`.
    pub fn new(fmts: &Formats) -> Pure {
        let mut plans = vec![None; fmts.by_id.len()];
        for (slot, &i) in plans.iter_mut().zip(&fmts.by_id) {
            *slot = fmts.list.get(i as usize).and_then(plan);
        }
        Pure {
            plans,
            shell: Formats::new(fmts.endian, fmts.long_size),
        }
    }

    /// The common fields and kind of `data` (a whole record), when its event is pure.
    #[inline]
    pub fn decode(&self, data: &[u8]) -> Option<(Common, Kind)> {
        let c = common(data, self.shell.endian)?;
        let plan = self.plans.get(c.id as usize)?.as_ref()?;
        let r = Rec {
            data,
            e: self.shell.endian,
            fmts: &self.shell,
        };
        Some((c, kind(plan, r)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Interner;
    use crate::read::tep::{parse_format, Decoder, Endian};

    const COMMON: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;
";

    fn format(name: &str, id: u32, fields: &str, system: &str) -> EventFormat {
        let text =
            format!("name: {name}\nID: {id}\nformat:\n{COMMON}\n{fields}\nprint fmt: \"x\"\n");
        parse_format(&text, system).expect("a valid format")
    }

    /// A record of event `id` by pid 77, with `body` after the common fields.
    fn record(id: u16, body: &[u64]) -> Vec<u8> {
        let mut d = id.to_le_bytes().to_vec();
        d.extend_from_slice(&[1, 2]);
        d.extend_from_slice(&77i32.to_le_bytes());
        body.iter()
            .for_each(|v| d.extend_from_slice(&v.to_le_bytes()));
        d
    }

    #[test]
    fn pure_events_decode_as_the_decoder_does_and_intern_nothing() {
        let mut fm = Formats::new(Endian::default(), 8);
        let enter = "\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;
\tfield:unsigned long args[6];\toffset:16;\tsize:48;\tsigned:0;";
        let exit = "\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;
\tfield:long ret;\toffset:16;\tsize:8;\tsigned:1;";
        let vec = "\tfield:unsigned int vec;\toffset:8;\tsize:4;\tsigned:0;";
        let name = "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;";
        fm.add(format("sys_enter", 21, enter, "raw_syscalls"));
        fm.add(format("sys_exit", 20, exit, "raw_syscalls"));
        fm.add(format("softirq_entry", 30, vec, "irq"));
        // Same name, another system: not raw_syscalls, so not pure.
        fm.add(format("sys_enter", 40, enter, "other"));
        fm.add(format("task_newtask", 50, name, "task"));
        let pure = Pure::new(&fm);
        let records = [
            (record(21, &[1, 10, 11, 12, 13, 14, 15]), true),
            (record(20, &[1, u64::MAX]), true),
            (record(30, &[3]), true),
            (record(40, &[1, 0, 0, 0, 0, 0, 0]), false),
            (record(50, &[0x6873_6162, 0]), false),
        ];
        let mut s = Interner::new();
        let mut dec = Decoder::new();
        for (data, is_pure) in &records {
            let before = s.len();
            let id = u32::from(data[0]);
            let kind = dec.decode(&fm, fm.get(id).expect("added"), data, &mut s);
            match pure.decode(data) {
                Some((c, k)) => {
                    assert!(is_pure, "event {id} decoded as pure");
                    assert_eq!(k, kind);
                    assert_eq!((c.id, c.pid), (id, 77));
                    assert_eq!(s.len(), before, "event {id} interned");
                }
                None => assert!(!is_pure, "event {id} not decoded as pure"),
            }
        }
        let Some((_, Kind::SysExit { nr: 1, ret: -1 })) = pure.decode(&records[1].0) else {
            panic!("sys_exit: {:?}", pure.decode(&records[1].0));
        };
        // A record cut before its common fields, and an id no format has.
        assert!(pure.decode(&records[0].0[..6]).is_none());
        assert!(pure.decode(&record(999, &[0])).is_none());
    }
}
