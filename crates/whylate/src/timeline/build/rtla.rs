//! The real-time latency tracers' events (timerlat samples, osnoise noise, threshold
//! hits, period summaries) into [`Timeline::rtla`].

use super::super::rtla::{LatSample, Noise, Period, Threshold};
use super::*;
use crate::read::rtla::{parse, Parsed};

impl Builder {
    /// Keeps a timerlat or osnoise event; false for any other generic event.
    pub(super) fn on_rtla(
        &mut self,
        at: At,
        tid: i32,
        name: &str,
        text: &str,
        _strings: &Interner,
    ) -> bool {
        let Some(p) = parse(name, text) else {
            return false;
        };
        let (ts, cpu) = (at.ts, at.cpu);
        let r = &mut self.tl.rtla;
        match p {
            Parsed::Lat(seq, ctx, lat_ns) => r.samples.push(LatSample {
                ts,
                cpu,
                tid,
                seq,
                ctx,
                lat_ns,
            }),
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
                start,
                dur_ns,
                interference,
            }),
            Parsed::Period(p) => r.periods.push(Period { ts, cpu, ..p }),
        }
        true
    }
}
