//! Legacy systrace: ftrace text inside an HTML page, either as a JS string
//! (`var linuxPerfData = "\` with every line ending in `\n\`) or in
//! `<script class="trace-data">` blocks; or that JS payload saved on its own. The text is
//! unwrapped line by line and handed to the ftrace parser.

use super::body::trim;
use super::ftrace::FtraceParser;
use crate::read::declare::{Build, Reader, Sniff};
use crate::read::format::Format;
use crate::read::source::{Cx, LineParser};

/// Legacy systrace (HTML or the JS payload) holding ftrace text: the page decides before any line is read.
pub(crate) const SYSTRACE: Reader = Reader {
    format: Format::Systrace,
    arg: "systrace",
    sniff: Sniff {
        priority: 2,
        magic: Some(sniff),
        ..Sniff::NONE
    },
    split: false,
    build: Build::Text(|head| Box::new(SystraceParser::new(head))),
};

impl Format {
    /// Legacy systrace (HTML or the JS payload) holding ftrace text.
    #[allow(non_upper_case_globals)]
    pub const Systrace: Format = Format::named("systrace");
}

/// Does the head of a file look like systrace?
pub(crate) fn sniff(head: &[u8]) -> bool {
    let t = trim(&head[..head.len().min(4096)]);
    let html =
        t.starts_with(b"<!DOCTYPE html") || t.starts_with(b"<html") || t.starts_with(b"<!--");
    if html {
        return true;
    }
    // A bare JS payload: the first lines end in `\n\`.
    let mut n = 0;
    for l in head.split(|c| *c == b'\n').take(20) {
        let l = l.strip_suffix(b"\r").unwrap_or(l);
        if l.is_empty() {
            continue;
        }
        if !l.ends_with(b"\\n\\") {
            return false;
        }
        n += 1;
    }
    n >= 3
}

pub(crate) struct SystraceParser {
    inner: FtraceParser,
    inside: bool,
    js: bool,
    json_block: bool,
    block_started: bool,
}

impl SystraceParser {
    pub fn new(head: &[u8]) -> Self {
        let bare = !trim(&head[..head.len().min(4096)]).starts_with(b"<");
        SystraceParser {
            inner: FtraceParser::new(),
            inside: bare,
            js: bare,
            json_block: false,
            block_started: false,
        }
    }

    fn feed(&mut self, l: &[u8], cx: &mut Cx<'_>) {
        if !self.block_started {
            let t = trim(l);
            if t.is_empty() {
                return;
            }
            self.block_started = true;
            self.json_block = t.starts_with(b"{") || t.starts_with(b"[");
        }
        if self.json_block {
            cx.diag.skipped_lines += 1;
            return;
        }
        // The dummy clock-sync record systrace appends at ts 0 is the tool's, not the kernel's.
        if memchr::memmem::find(l, b"trace_event_clock_sync: parent_ts=").is_some()
            && trim(l).starts_with(b"dummy-")
        {
            cx.diag.comment_lines += 1;
            return;
        }
        if self.js {
            let mut v = Vec::with_capacity(l.len());
            let mut i = 0;
            while i < l.len() {
                if l[i] == b'\\' && i + 1 < l.len() {
                    match l[i + 1] {
                        b'n' => {}
                        b't' => v.push(b'\t'),
                        c => v.push(c),
                    }
                    i += 2;
                } else {
                    v.push(l[i]);
                    i += 1;
                }
            }
            self.inner.line(&v, cx);
        } else {
            self.inner.line(l, cx);
        }
    }
}

impl LineParser for SystraceParser {
    fn line(&mut self, line: &[u8], cx: &mut Cx<'_>) {
        if !self.inside {
            if let Some(p) = memchr::memmem::find(line, b"class=\"trace-data\"") {
                self.inside = true;
                self.js = false;
                self.block_started = false;
                cx.diag.comment_lines += 1;
                let after = &line[p..];
                if let Some(gt) = memchr::memchr(b'>', after) {
                    let rest = &after[gt + 1..];
                    if !trim(rest).is_empty() {
                        self.line(rest, cx);
                    }
                }
                return;
            }
            if let Some(p) = memchr::memmem::find(line, b"linuxPerfData = \"") {
                self.inside = true;
                self.js = true;
                self.block_started = false;
                cx.diag.comment_lines += 1;
                let rest = &line[p + 17..];
                let rest = rest.strip_suffix(b"\\").unwrap_or(rest);
                if !rest.is_empty() {
                    self.feed(rest, cx);
                }
                return;
            }
            cx.diag.skipped_lines += 1;
            return;
        }
        if self.js {
            let t = line.strip_suffix(b"\r").unwrap_or(line);
            if let Some(body) = t.strip_suffix(b"\\n\\") {
                self.feed(body, cx);
            } else if let Some(body) = t.strip_suffix(b"\\n\";").or_else(|| t.strip_suffix(b"\";"))
            {
                self.feed(body, cx);
                self.inside = false;
            } else {
                self.feed(t, cx);
            }
        } else if let Some(p) = memchr::memmem::find(line, b"</script>") {
            let before = &line[..p];
            if !trim(before).is_empty() {
                self.feed(before, cx);
            }
            cx.diag.comment_lines += 1;
            self.inside = false;
        } else {
            self.feed(line, cx);
        }
    }

    fn finish(&mut self, cx: &mut Cx<'_>) {
        self.inner.finish(cx);
    }
}
