//! Shell-style name patterns (`kworker/*`, `frob?icator`, `irq/[0-9]*`) for task comms and
//! selector fields, compiled once by globset. A pattern without wildcards matches exactly;
//! `*` also crosses `/` (comms such as `kworker/u8:1` are one name, not a path).

/// A compiled pattern that remembers how it was written.
#[derive(Clone, Debug)]
pub struct Glob {
    text: String,
    matcher: globset::GlobMatcher,
}

impl Glob {
    /// Compiles `pattern`; the error says what is wrong with it.
    pub fn new(pattern: &str) -> Result<Glob, String> {
        let g = globset::GlobBuilder::new(pattern)
            .literal_separator(false)
            .backslash_escape(true)
            .build()
            .map_err(|e| format!("{pattern:?} is not a valid pattern: {}", e.kind()))?;
        Ok(Glob {
            text: pattern.to_string(),
            matcher: g.compile_matcher(),
        })
    }

    /// Whether `s` matches the whole pattern.
    pub fn is_match(&self, s: &str) -> bool {
        self.matcher.is_match(s)
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl PartialEq for Glob {
    fn eq(&self, other: &Glob) -> bool {
        self.text == other.text
    }
}

#[cfg(test)]
mod tests {
    use super::Glob;

    #[test]
    fn comm_patterns() {
        let m = |p: &str, s: &str| Glob::new(p).unwrap().is_match(s);
        assert!(m("kworker/*", "kworker/0:1"));
        assert!(m("frob?icator", "frobnicator"));
        assert!(!m("frob", "frobnicator"));
        assert!(m("irq/[0-9]*", "irq/16-ehci_hcd"));
        assert!(m("*", ""));
        assert!(Glob::new("[abc").unwrap_err().contains("[abc"));
    }
}
