//! The generic path: records through `linux-perf-data`, for layouts the in-place path
//! leaves to it.

use super::*;

impl EventSource for Generic {
    fn next_event(&mut self, s: &mut Interner) -> Result<Option<Event>, ReadError> {
        self.smp.seed(s);
        loop {
            // The error is built only when there is one: cloning the path per call showed
            // up as an allocation per event.
            let Some(rec) = self
                .rd
                .record_iter
                .next_record(&mut self.rd.perf_file)
                .map_err(|e| ReadError::Corrupt {
                    path: self.path.clone(),
                    offset: 0,
                    why: format!("perf.data record: {e}"),
                })?
            else {
                return Ok(None);
            };
            let PerfFileRecord::EventRecord { attr_index, record } = rec else {
                continue;
            };
            let Ok(parsed) = record.parse() else {
                self.smp.diag.unparsed += 1;
                continue;
            };
            match parsed {
                EventRecord::Comm(c) => {
                    let name = s.intern_bytes(&c.name.as_slice());
                    self.smp.comms.set(c.tid, name);
                }
                EventRecord::Lost(l) => {
                    let ts = record.timestamp().unwrap_or(0);
                    let cpu = record.common_data().ok().and_then(|c| c.cpu);
                    let cpu = cpu.unwrap_or(Event::NO_CPU);
                    return Ok(Some(Event::lost(ts, cpu, Some(l.count))));
                }
                EventRecord::Sample(smp) => {
                    let raw = smp.raw.as_ref().map(|r| r.as_slice());
                    if let Some(e) = self.smp.event(
                        s,
                        smp.timestamp.unwrap_or(0),
                        smp.cpu.unwrap_or(Event::NO_CPU),
                        smp.tid.unwrap_or(-1),
                        smp.pid.unwrap_or(-1),
                        raw.as_deref(),
                        || Some(attr_index),
                    ) {
                        return Ok(Some(e));
                    }
                }
                _ => {}
            }
        }
    }
    fn diag(&self) -> &Diag {
        &self.smp.diag
    }
    fn order(&self) -> OrderStats {
        self.smp.order.stats
    }
}
