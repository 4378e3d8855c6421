//! function_graph call notation (`  3.139 us  |    do_IRQ() {`), shared by the
//! function_graph format and graph records inside trace-cmd reports.

use crate::event::{Kind, Sym};
use crate::read::text::body::{dec, trim};
/// `+ 15.986 us`, `! 312.560 us`, `0.198 us` → ns.
pub(crate) fn duration(s: &[u8]) -> Option<u64> {
    let mut s = trim(s);
    if let Some((&m, rest)) = s.split_first() {
        if b"+!#*@$".contains(&m) {
            s = trim(rest);
        }
    }
    let num = trim(s.strip_suffix(b"us")?);
    match memchr::memchr(b'.', num) {
        Some(dot) => {
            let whole = dec(&num[..dot])?;
            let frac = &num[dot + 1..];
            if frac.is_empty() || frac.len() > 3 {
                return None;
            }
            let mut f = dec(frac)?;
            for _ in frac.len()..3 {
                f *= 10;
            }
            Some(whole * 1000 + f)
        }
        // The tracer prints 3 decimals unless the value has 7+ digits (`1000131 us`); a
        // shorter integer is the REL TIME column of latency-format graphs.
        None if num.len() >= 7 => dec(num).map(|v| v * 1000),
        None => None,
    }
}

/// trace-cmd report prints graph records as `funcgraph_entry: [dur us] |  <indent>call`.
/// Returns the kinds for that text (a leaf gives entry and exit), or None.
pub(crate) fn report_graph_body(body: &[u8], s: &mut crate::event::Interner) -> Option<Vec<Kind>> {
    let bar = memchr::memchr(b'|', body)?;
    let dur_txt = trim(&body[..bar]);
    let duration_ns = if dur_txt.is_empty() {
        None
    } else {
        Some(duration(dur_txt)?)
    };
    let call = &body[bar + 1..];
    let indent = call.iter().take_while(|c| **c == b' ').count();
    let depth = (indent.saturating_sub(2) / 2) as u16;
    let call = trim(call);
    if call.starts_with(b"}") {
        let func = memchr::memmem::find(call, b"/*")
            .map(|p| func_name(trim(&call[p + 2..])))
            .filter(|n| !n.is_empty())
            .map(|n| s.intern_bytes(n))
            .unwrap_or(Sym::EMPTY);
        return Some(vec![Kind::FuncExit {
            func,
            depth,
            duration_ns,
        }]);
    }
    let name = func_name(call);
    if name.is_empty() {
        return None;
    }
    let func = s.intern_bytes(name);
    let mut v = vec![Kind::FuncEntry { func, depth }];
    if !call.ends_with(b"{") {
        v.push(Kind::FuncExit {
            func,
            depth,
            duration_ns,
        });
    }
    Some(v)
}

/// `f(args) {` / `f(); /* = 0x0 */` → `f`.
pub(crate) fn func_name(b: &[u8]) -> &[u8] {
    let end = b
        .iter()
        .position(|c| *c == b'(' || *c == b' ' || *c == b';')
        .unwrap_or(b.len());
    &b[..end]
}
