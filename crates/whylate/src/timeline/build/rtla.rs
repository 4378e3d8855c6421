//! The real-time latency tracers' events (timerlat samples, osnoise noise, threshold
//! hits, period summaries) into [`Timeline::rtla`].

use super::super::rtla::{LatSample, Noise, Period, Stack, Threshold};
use super::*;
use crate::read::rtla::{parse, Parsed};

impl Builder {
    /// Keeps a timerlat or osnoise event, or a saved stack; false for any other generic
    /// event.
    pub(super) fn on_rtla(
        &mut self,
        at: At,
        tid: i32,
        name: &str,
        text: &str,
        _strings: &Interner,
    ) -> bool {
        if name == crate::read::stack::EVENT {
            self.on_stack(at, tid, text);
            return true;
        }
        let (ts, cpu) = (at.ts, at.cpu);
        let r = &mut self.tl.rtla;
        let Some(p) = parse(name, text) else {
            if !crate::read::rtla::is_rtla_event(name) {
                return false;
            }
            // One of these tracers' events with values no trace can hold: counted and
            // said, never read as a number it is not.
            r.unreadable += 1;
            if r.first_unreadable.is_none() {
                r.first_unreadable = Some((ts, cpu, format!("{name}: {}", text.trim())));
            }
            return true;
        };
        match p {
            Parsed::Lat(seq, ctx, lat_ns) => {
                self.rtla_now = u32::try_from(r.samples.len()).ok();
                if self.rtla_last.len() <= at.c {
                    self.rtla_last.resize(at.c + 1, None);
                }
                r.samples.push(LatSample {
                    ts,
                    cpu,
                    tid,
                    seq,
                    ctx,
                    lat_ns,
                    stack: None,
                })
            }
            Parsed::Noise(kind, who, id, start, dur_ns) => r.noise.push(Noise {
                ts,
                cpu,
                kind,
                name: who.into(),
                id,
                start,
                dur_ns,
            }),
            Parsed::Threshold(start, dur_ns, interference) => r.thresholds.push(Threshold {
                ts,
                cpu,
                tid,
                start,
                dur_ns,
                interference,
            }),
            Parsed::Period(p) => r.periods.push(Period { ts, cpu, ..p }),
        }
        true
    }

    /// A saved stack: kept, and given to the timerlat sample that was its CPU's event
    /// just before it.
    fn on_stack(&mut self, at: At, tid: i32, text: &str) {
        let r = &mut self.tl.rtla;
        let i = u32::try_from(r.stacks.len()).ok();
        r.stacks.push(Stack {
            ts: at.ts,
            cpu: at.cpu,
            tid,
            frames: text.into(),
        });
        let owner = self.rtla_last.get(at.c).copied().flatten();
        if let Some(s) = owner.and_then(|o| r.samples.get_mut(o as usize)) {
            s.stack = i;
        }
    }
}
