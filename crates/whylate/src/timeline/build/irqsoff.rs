//! Irqs-off and preempt-off sections (preemptirq events).

use super::*;

impl Builder {
    /// Irqs-off and preempt-off sections (preemptirq events).
    pub(super) fn on_irqsoff(&mut self, at: At, e: &Event, _strings: &Interner) {
        let At { c, ts, .. } = at;
        match &e.kind {
            Kind::IrqDisable { caller, .. } => {
                self.cpus[c].irqsoff.get_or_insert((ts, *caller));
            }
            Kind::IrqEnable { caller, .. } => {
                let open = self.cpus[c].irqsoff.take();
                self.close_off(c, SpanKind::IrqsOff, open, ts, *caller);
            }
            Kind::PreemptDisable { caller, .. } => {
                self.cpus[c].preemptoff.get_or_insert((ts, *caller));
            }
            Kind::PreemptEnable { caller, .. } => {
                let open = self.cpus[c].preemptoff.take();
                self.close_off(c, SpanKind::PreemptOff, open, ts, *caller);
            }
            _ => {}
        }
    }

    /// Ends an irqs-off or preempt-off section opened by `open` (start, disabling caller).
    pub(super) fn close_off(
        &mut self,
        c: usize,
        kind: SpanKind,
        open: Option<(u64, Sym)>,
        ts: u64,
        by: Sym,
    ) {
        if let Some((start, caller)) = open {
            let cpu = c as u32;
            let fl = self.loss_flag(cpu, start, ts);
            let (curr, comm) = (self.cpus[c].curr, self.cpus[c].curr_comm);
            self.tl
                .spans
                .push(kind, cpu, curr, comm, start, ts, caller.0, by.0, fl);
        }
    }
}
