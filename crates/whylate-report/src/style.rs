//! Terminal styles, applied while a report is rendered (never by re-reading its text):
//! headings bold, a miss bold red, what held a chain up red, a link still pending at the
//! deadline yellow. [`Paint::plain`] renders the same text with no escape codes.

use anstyle::{AnsiColor, Style};

/// Whether, and how, to style terminal text.
#[derive(Clone, Copy, Debug, Default)]
pub struct Paint {
    on: bool,
}

const BOLD: Style = Style::new().bold();
const ALARM: Style = Style::new()
    .bold()
    .fg_color(Some(anstyle::Color::Ansi(AnsiColor::Red)));
const BAD: Style = Style::new().fg_color(Some(anstyle::Color::Ansi(AnsiColor::Red)));
const WARN: Style = Style::new().fg_color(Some(anstyle::Color::Ansi(AnsiColor::Yellow)));

impl Paint {
    /// Styled when `on`.
    pub fn new(on: bool) -> Paint {
        Paint { on }
    }

    /// No styles: the text as pipes and files get it.
    pub fn plain() -> Paint {
        Paint { on: false }
    }

    fn wrap(&self, style: Style, text: &str) -> String {
        if self.on {
            format!("{}{text}{}", style.render(), style.render_reset())
        } else {
            text.to_string()
        }
    }

    /// A verdict or a section heading.
    pub fn heading(&self, text: &str) -> String {
        self.wrap(BOLD, text)
    }

    /// A missed cycle's title.
    pub fn alarm(&self, text: &str) -> String {
        self.wrap(ALARM, text)
    }

    /// Time lost: the excess over usual, a bucket over the deadline.
    pub fn bad(&self, text: &str) -> String {
        self.wrap(BAD, text)
    }

    /// Something to look at: a link still pending at the deadline.
    pub fn warn(&self, text: &str) -> String {
        self.wrap(WARN, text)
    }
}

#[cfg(test)]
mod tests {
    use super::Paint;

    #[test]
    fn plain_is_the_text_and_styled_wraps_it() {
        assert_eq!(Paint::plain().alarm("miss at 1.0"), "miss at 1.0");
        let s = Paint::new(true).heading("advice:");
        assert!(s.starts_with("\x1b[1m") && s.ends_with("\x1b[0m"));
        assert!(s.contains("advice:"));
    }
}
