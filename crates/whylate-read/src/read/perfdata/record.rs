//! One record of the fast path: the fields it holds (`fields_of`, read where the record
//! is) and the event they make (`event_of`, where decoding is). Both run in turn on one
//! thread, or on the two sides of the hand-over in `apart.rs`.

use super::*;

impl Fast {
    /// Decodes the record at `off` (its size was checked by the scan).
    pub(super) fn decode(&mut self, s: &mut Interner, ts: u64, off: usize) -> Option<Event> {
        let size = record_size(self.data.get(off, off + 8));
        let r = self.data.get(off, off + size);
        let keys = Keys {
            lays: &self.lays,
            ids: &self.ids,
            one_attr: self.one_attr,
        };
        // Not `self.keys()`: the samples are borrowed mutably beside them.
        event_of(&mut self.smp, s, ts, fields_of(&keys, off, r))
    }
}

/// What a record holds for the event it makes, read out of it.
pub(super) enum Fields<'r> {
    /// A sample: its task, CPU, RAW payload and attr.
    Sample {
        cpu: u32,
        tid: i32,
        tgid: i32,
        raw: Option<&'r [u8]>,
        attr: Option<usize>,
    },
    /// A task named (COMM).
    Comm { tid: i32, name: &'r [u8] },
    /// Events perf lost, and the CPU whose buffer lost them (its sample_id trailer's).
    Lost { count: Option<u64>, cpu: u32 },
    /// A sample that does not fit its layout: what it is, and what was expected.
    Bad { what: String, why: &'static str },
    /// A record that makes no event.
    Nothing,
}

/// The fields of record `r` (at byte `off`).
#[inline]
pub(super) fn fields_of<'r>(keys: &Keys, off: usize, r: &'r [u8]) -> Fields<'r> {
    let size = r.len();
    let bad = |what: String, why| Fields::Bad { what, why };
    match u32_at(r, 0) {
        Some(REC_SAMPLE) => {
            let Some(l) = keys.layout(r, true) else {
                let why = "a sample id listed in the file's attrs";
                return bad(format!("sample record at byte {off}"), why);
            };
            let ids = match l.tid {
                Some(o) => u32_at(r, o).zip(u32_at(r, o + 4)),
                None => Some((u32::MAX, u32::MAX)),
            };
            let cpu = match l.cpu {
                Some(o) => u32_at(r, o),
                None => Some(Event::NO_CPU),
            };
            let (Some((tgid, tid)), Some(cpu)) = (ids, cpu) else {
                return Fields::Nothing;
            };
            let mut p = l.fixed;
            if l.callchain {
                let nr = u64_at(r, p).map(|n| n as usize);
                p = match nr.and_then(|n| n.checked_mul(8)) {
                    Some(n) => p.saturating_add(8 + n),
                    None => usize::MAX,
                };
            }
            let raw = if l.raw {
                let body =
                    u32_at(r, p).and_then(|n| r.get(p + 4..(p + 4).checked_add(n as usize)?));
                if body.is_none() {
                    let why = "a RAW payload inside the sample";
                    return bad(format!("sample record at byte {off}, {size} bytes"), why);
                }
                body
            } else {
                None
            };
            // Samples without a decodable payload are named after their attr.
            let attr = attr_by_id(keys.ids, keys.one_attr, r, keys.lays[0].id);
            let (tid, tgid) = (tid as i32, tgid as i32);
            Fields::Sample {
                cpu,
                tid,
                tgid,
                raw,
                attr,
            }
        }
        Some(REC_COMM) => match (u32_at(r, 12), r.get(16..)) {
            (Some(tid), Some(name)) => Fields::Comm {
                tid: tid as i32,
                name: &name[..memchr::memchr(0, name).unwrap_or(name.len())],
            },
            _ => Fields::Nothing,
        },
        Some(REC_LOST) => Fields::Lost {
            count: u64_at(r, 16),
            cpu: trailer_cpu(keys, r).unwrap_or(Event::NO_CPU),
        },
        _ => Fields::Nothing,
    }
}

/// The CPU in the sample_id trailer of non-sample record `r`, when its layout has one.
fn trailer_cpu(keys: &Keys, r: &[u8]) -> Option<u32> {
    // Where every attr's trailer has its CPU at one place, the record's id (which
    // picks the attr) is not needed, as for its time.
    let first = keys.lays.first()?;
    let same = (keys.lays.iter()).all(|l| (l.trail, l.trail_cpu) == (first.trail, first.trail_cpu));
    let l = if same { first } else { keys.layout(r, false)? };
    let at = r.len().checked_sub(l.trail)? + l.trail_cpu?;
    u32_at(r, at)
}

/// The event `f` makes (due at `ts`); None for records that make none (counted in the
/// diagnostics when they should have made one).
#[inline]
pub(super) fn event_of(smp: &mut Samples, s: &mut Interner, ts: u64, f: Fields) -> Option<Event> {
    match f {
        Fields::Sample {
            cpu,
            tid,
            tgid,
            raw,
            attr,
        } => smp.event(s, ts, cpu, tid, tgid, raw, || attr),
        Fields::Comm { tid, name } => {
            let name = s.intern_bytes(name);
            smp.comms.set(tid, name);
            None
        }
        Fields::Lost { count, cpu } => Some(Event::lost(ts, cpu, count)),
        Fields::Bad { what, why } => {
            smp.diag.bad(0, what.as_bytes(), why);
            None
        }
        Fields::Nothing => None,
    }
}
