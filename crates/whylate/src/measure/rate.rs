//! Counting one event (or summing one of its fields) per interval while the trace is
//! read: what the `throughput` measure reports.

use super::report::ThroughputOpts;
use crate::event::Interner;
use crate::selector::Selector;
use crate::syscalls::Arch;

/// Throughput accumulator, fed during the event pass.
#[derive(Debug)]
pub struct Throughput {
    pub(super) opts: ThroughputOpts,
    /// The stream: `opts.event` as a selector (none when it does not parse: nothing
    /// matches, and the report says the event was not seen).
    sel: Option<Selector>,
    pub(super) start: Option<u64>,
    /// (events, sum) per interval.
    pub(super) buckets: Vec<(u64, u64)>,
    pub(super) unsummable: u64,
}

impl Throughput {
    /// A new accumulator.
    pub fn new(opts: ThroughputOpts) -> Throughput {
        Throughput {
            sel: Selector::parse(&opts.event).ok(),
            opts,
            start: None,
            buckets: Vec::new(),
            unsummable: 0,
        }
    }

    /// Feeds one event.
    pub fn push(&mut self, e: &crate::event::Event, strings: &Interner) {
        use crate::event::Kind;
        let selected = self.sel.as_ref();
        if !selected.is_some_and(|s| s.matches(e, strings, Arch::default())) {
            return;
        }
        let start = *self.start.get_or_insert(e.ts);
        let i = (e.ts.saturating_sub(start) / self.opts.interval_ns.max(1)) as usize;
        if i >= 10_000_000 {
            return;
        }
        if i >= self.buckets.len() {
            self.buckets.resize(i + 1, (0, 0));
        }
        let v = match self.opts.field.as_deref() {
            None => 1,
            Some("len") => match &e.kind {
                Kind::Console { msg } => msg.len() as u64 + 1,
                Kind::Print { msg, .. } => msg.len() as u64 + 1,
                _ => {
                    self.unsummable += 1;
                    0
                }
            },
            Some(f) => match &e.kind {
                Kind::Other { fields, .. } => crate::event::fields(fields)
                    .find(|(k, _)| *k == f)
                    .and_then(|(_, v)| crate::event::parse_num(v.as_bytes()))
                    .map_or_else(
                        || {
                            self.unsummable += 1;
                            0
                        },
                        |v| v.max(0) as u64,
                    ),
                _ => {
                    self.unsummable += 1;
                    0
                }
            },
        };
        let b = &mut self.buckets[i];
        b.0 += 1;
        b.1 += v;
    }
}
