//! Every reader whylate has, in one list ([`READERS`]), and the decisions made from it:
//! which format an input's first bytes are, what `--format` accepts, which parser reads
//! a format. Each reader declares itself ([`Reader`]) in its own file; adding a format
//! is that file and one line here.

use crate::read::declare::{Build, Head, Reader};
use crate::read::format::Format;
use crate::read::{perfdata, perfetto, text, tracedat};

/// Every reader, in the order `--format` lists them.
pub(crate) const READERS: &[&Reader] = &[
    &text::ftrace::FTRACE,
    &text::ftrace::TRACE_CMD_REPORT,
    &text::ftrace::LATENCY_TRACER,
    &text::funcgraph::FUNCTION_GRAPH,
    &text::perf_script::PERF_SCRIPT,
    &text::sysdig::SYSDIG,
    &text::systrace::SYSTRACE,
    &text::kernlog::KERNEL_LOG,
    &tracedat::TRACE_DAT,
    &perfdata::PERF_DATA,
    &perfetto::PERFETTO,
];

/// Every format, in the order `--format` lists them.
pub fn formats() -> impl Iterator<Item = Format> {
    READERS.iter().map(|r| r.format)
}

impl Format {
    /// How `--format` spells it (`trace-dat` for trace.dat).
    pub fn arg(self) -> &'static str {
        reader(self).arg
    }

    /// A binary format (read as records, not lines).
    pub fn is_binary(self) -> bool {
        !matches!(reader(self).build, Build::Text(_))
    }
}

/// The declaration of `format`'s reader.
pub(crate) fn reader(format: Format) -> &'static Reader {
    let Some(r) = READERS.iter().find(|r| r.format == format) else {
        unreachable!("{format}: every format is made by a reader in READERS")
    };
    r
}

/// Readers of one kind (text or binary), in sniffing order.
fn by_priority(text: bool) -> Vec<&'static Reader> {
    let mut v: Vec<_> = (READERS.iter().copied())
        .filter(|r| matches!(r.build, Build::Text(_)) == text)
        .collect();
    v.sort_by_key(|r| r.sniff.priority);
    v
}

/// The text formats tried when sniffing, in order, for the error that none fits.
pub(crate) fn tried() -> String {
    let names: Vec<_> = by_priority(true).iter().map(|r| r.format.name()).collect();
    names.join(", ")
}

/// The binary reader for an input that starts with `head`: the first (by priority)
/// whose magic number it carries or that `forced` names. A binary magic number wins
/// over a forced text format.
pub(crate) fn binary(head: &[u8], forced: Option<Format>) -> Option<&'static Reader> {
    let all = by_priority(false);
    (all.iter().find(|r| forced == Some(r.format)))
        .or_else(|| (all.iter()).find(|r| r.sniff.magic.is_some_and(|magic| magic(head))))
        .copied()
}

/// The binary format whose magic number `head` carries, when it is not `forced` (a
/// binary format given with `--format`): the file is another format than the one given.
pub(crate) fn contradicts(head: &[u8], forced: Format) -> Option<Format> {
    (by_priority(false).into_iter())
        .find(|r| r.sniff.magic.is_some_and(|magic| magic(head)))
        .map(|r| r.format)
        .filter(|&f| f != forced)
}

/// Picks the text format of a file from its first bytes. Header lines decide when
/// present; otherwise each line parser votes on the first data lines.
pub fn sniff(bytes: &[u8]) -> Option<Format> {
    let readers = by_priority(true);
    if let Some(r) = (readers.iter()).find(|r| r.sniff.magic.is_some_and(|m| m(bytes))) {
        return Some(r.format);
    }
    let head = Head::new(bytes);
    if let Some(r) = (readers.iter()).find(|r| r.sniff.header.is_some_and(|h| h(&head))) {
        return Some(r.format);
    }
    // (votes, rank, reader): most votes, then the lowest rank.
    let mut best: Option<(usize, u8, &Reader)> = None;
    for r in &readers {
        let Some(vote) = &r.sniff.line else { continue };
        if vote.only.is_some_and(|only| !only(&head)) {
            continue;
        }
        let n = head.data.iter().filter(|l| (vote.probe)(l)).count();
        let better = best.is_none_or(|(bn, br, _)| n > bn || (n == bn && vote.rank < br));
        if n > 0 && better {
            best = Some((n, vote.rank, r));
        }
    }
    if let Some((_, _, r)) = best {
        return Some(r.format);
    }
    (readers.iter())
        .find(|r| r.sniff.lone.is_some_and(|l| l(&head)))
        .map(|r| r.format)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_spellings_are_unique_and_kept() {
        let names: Vec<_> = formats().map(Format::name).collect();
        let args: Vec<_> = formats().map(Format::arg).collect();
        for (i, n) in names.iter().enumerate() {
            assert!(!names[..i].contains(n), "{n} twice");
            assert!(!args[..i].contains(&args[i]), "{} twice", args[i]);
        }
        assert_eq!(Format::TraceDat.arg(), "trace-dat");
        assert_eq!(Format::PerfData.name(), "perf.data");
        assert_eq!(
            tried(),
            "systrace, function-graph, latency-tracer, trace-cmd-report, ftrace, \
             perf-script, sysdig, kernel-log"
        );
    }

    #[test]
    fn headers_decide_then_votes_then_lone_headers() {
        let graph = b"# tracer: function_graph\n# latency: x\n";
        assert_eq!(sniff(graph), Some(Format::FunctionGraph));
        assert_eq!(sniff(b"# latency: 5 us\n"), Some(Format::LatencyTracer));
        assert_eq!(sniff(b"cpus=2\n"), Some(Format::TraceCmdReport));
        assert_eq!(sniff(b"# tracer: nop\n"), Some(Format::Ftrace));
        assert_eq!(sniff(b"hello\nworld\n"), None);
        let line = b"  bash-1  [001] d..1  10.000100: sched_waking: comm=a pid=2\n";
        assert_eq!(sniff(line), Some(Format::Ftrace));
        let report = [&b"cpus=2\n"[..], line].concat();
        assert_eq!(sniff(&report), Some(Format::TraceCmdReport));
    }

    #[test]
    fn a_binary_magic_number_beats_a_forced_text_format() {
        let dat = b"\x17\x08\x44tracing6\0\0\0";
        let r = binary(dat, Some(Format::Ftrace)).map(|r| r.format);
        assert_eq!(r, Some(Format::TraceDat));
        let r = binary(b"PERFILE2", Some(Format::TraceDat)).map(|r| r.format);
        assert_eq!(r, Some(Format::TraceDat));
        assert!(binary(b"PERFILE2", None).is_some_and(|r| r.format == Format::PerfData));
        assert!(binary(b"text", None).is_none());
    }
}
