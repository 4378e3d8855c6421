//! What each reader declares about itself ([`Reader`]): the format it reads, how
//! `--format` spells it, how it is recognised from an input's first bytes ([`Sniff`]),
//! whether a large input of it can be parsed on every core, and how its reader is built
//! ([`Build`]: a line parser, or a binary reader). Each declaration sits in its reader's
//! own folder; `read/registry.rs` lists them and decides.

use crate::read::format::Format;
use crate::read::source::LineParser;

/// What a reader declares about itself: one per format, beside the reader.
pub(crate) struct Reader {
    /// The format it reads.
    pub format: Format,
    /// How `--format` spells it.
    pub arg: &'static str,
    /// How it is recognised.
    pub sniff: Sniff,
    /// Its lines stand on their own: a large input is cut into chunks parsed on every
    /// core (`read/text/chunked.rs`).
    pub split: bool,
    /// How its reader is built.
    pub build: Build,
}

/// How a reader is built once its format is known.
pub(crate) enum Build {
    /// A text format: the line parser, given the first bytes of the input.
    Text(fn(&[u8]) -> Box<dyn LineParser>),
    /// A binary format: its reader, opened from the sniffed input
    /// ([`Opening`](super::binary::Opening)).
    Binary(
        fn(super::binary::Opening<'_>) -> Result<Box<dyn super::binary::Binary>, super::ReadError>,
    ),
}

/// How a format is recognised from the first bytes of an input. Readers are asked in
/// `priority` order (lower first), one way after the other: by `magic`, by `header`,
/// then by line votes, then by `lone`.
pub(crate) struct Sniff {
    /// Order in which readers are asked (lower first), and listed when none fits.
    pub priority: u8,
    /// Decides from the bytes alone (a binary magic number, an HTML page).
    pub magic: Option<fn(&[u8]) -> bool>,
    /// Decides from the comment and header lines, before any line is looked at.
    pub header: Option<fn(&Head<'_>) -> bool>,
    /// Votes on each of the first data lines: the reader with most votes wins.
    pub line: Option<Vote>,
    /// Claims an input where no data line got a vote, from its headers alone.
    pub lone: Option<fn(&Head<'_>) -> bool>,
}

impl Sniff {
    /// No way to be recognised: the base the declarations fill in.
    pub const NONE: Sniff = Sniff {
        priority: u8::MAX,
        magic: None,
        header: None,
        line: None,
        lone: None,
    };
}

/// A reader's vote on data lines.
pub(crate) struct Vote {
    /// Does this line look like one of the format's?
    pub probe: fn(&[u8]) -> bool,
    /// Wins a tie against a higher rank.
    pub rank: u8,
    /// Votes only when the headers allow it.
    pub only: Option<fn(&Head<'_>) -> bool>,
}

/// Data lines looked at to decide a format by votes.
const VOTED_LINES: usize = 200;

/// Header lines of `trace-cmd report` that are neither comments nor data.
pub(crate) const REPORT_HEADERS: [&[u8]; 2] = [b"cpus=", b"version = "];

/// The first bytes of an input, taken apart the way every sniffer wants them.
pub(crate) struct Head<'a> {
    /// Comment lines' text (after `#`, trimmed).
    pub comments: Vec<&'a [u8]>,
    /// `trace-cmd report` header lines ([`REPORT_HEADERS`]).
    pub headers: Vec<&'a [u8]>,
    /// The first [`VOTED_LINES`] data lines (not blank, no comment or header).
    pub data: Vec<&'a [u8]>,
}

impl<'a> Head<'a> {
    /// Takes `bytes` apart; a possibly cut last line is left out, and comments after
    /// the last data line looked at are not read.
    pub fn new(bytes: &'a [u8]) -> Head<'a> {
        let mut h = Head {
            comments: Vec::new(),
            headers: Vec::new(),
            data: Vec::new(),
        };
        let usable = memchr::memrchr(b'\n', bytes).map_or(bytes, |p| &bytes[..p]);
        for raw in usable.split(|c| *c == b'\n') {
            let line = raw.strip_suffix(b"\r").unwrap_or(raw);
            if let Some(c) = line.strip_prefix(b"#") {
                h.comments.push(c.trim_ascii());
            } else if REPORT_HEADERS.iter().any(|p| line.starts_with(p)) {
                h.headers.push(line);
            } else if !line.trim_ascii().is_empty() {
                h.data.push(line);
                if h.data.len() >= VOTED_LINES {
                    break;
                }
            }
        }
        h
    }

    /// The tracer a `# tracer: NAME` comment names (the last such comment).
    pub fn tracer(&self) -> Option<&'a [u8]> {
        (self.comments.iter().rev())
            .find_map(|c| c.strip_prefix(b"tracer:"))
            .map(|t| t.trim_ascii())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_sorts_lines_and_stops_at_the_voted_lines() {
        let mut text = b"# tracer: nop\n#\ncpus=4\n\n  \r\n".to_vec();
        for i in 0..250 {
            text.extend_from_slice(format!("line {i}\n").as_bytes());
        }
        text.extend_from_slice(b"# latency: late\ncut");
        let h = Head::new(&text);
        assert_eq!(h.comments, [&b"tracer: nop"[..], b""]);
        assert_eq!(h.headers, [&b"cpus=4"[..]]);
        assert_eq!(h.data.len(), 200);
        assert_eq!(h.data[199], b"line 199");
        assert_eq!(h.tracer(), Some(&b"nop"[..]));
    }

    #[test]
    fn a_cut_last_line_is_no_data() {
        let h = Head::new(b"one\r\ntwo");
        assert_eq!(h.data, [&b"one"[..]]);
        assert_eq!(h.tracer(), None);
    }
}
