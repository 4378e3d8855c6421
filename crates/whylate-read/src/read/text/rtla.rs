//! The lines the kernel's timerlat and osnoise tracers print in place of `name: fields`
//! (kernel/trace/trace_output.c): `#<id> context <irq|thread|user-ret> timer_latency <N>
//! ns`, and osnoise's period summary `RUNTIME NOISE PCT MAX HW NMI IRQ SIRQ THREAD`.
//! Each becomes a generic event named as trace-cmd names the tracer's entry (`timerlat`,
//! `osnoise`), its text kept: `timeline::rtla::parse` reads it.

use crate::event::{Interner, Kind};
use crate::read::rtla::{parse, Parsed};

/// The event of a tracer line `body` (what follows the time), or None.
pub(crate) fn tracer_line(body: &[u8], s: &mut Interner) -> Option<Kind> {
    let text = std::str::from_utf8(body).ok()?.trim();
    let name = match text.as_bytes().first()? {
        b'#' => "timerlat",
        b'0'..=b'9' => "osnoise",
        _ => return None,
    };
    match parse(name, text)? {
        Parsed::Lat(..) | Parsed::Period(..) => Some(Kind::Other {
            name: s.intern(name),
            fields: text.into(),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracer_lines_become_named_events() {
        let mut s = Interner::new();
        let k = tracer_line(b" #1     context    irq timer_latency       932 ns", &mut s);
        assert!(matches!(k, Some(Kind::Other { name, .. }) if s.get(name) == "timerlat"));
        let k = tracer_line(
            b" 1000000        190  99.98100       9     18      0   1007     18      1",
            &mut s,
        );
        assert!(matches!(k, Some(Kind::Other { name, .. }) if s.get(name) == "osnoise"));
        assert!(tracer_line(b" #x context", &mut s).is_none());
        assert!(tracer_line(b" 12 34", &mut s).is_none());
    }
}
