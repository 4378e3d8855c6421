//! What names an input format ([`Format`]). What each reader declares about itself is in
//! `declare.rs`.

use std::fmt;

/// An input format whylate reads, named as reports and JSON write it (`ftrace`,
/// `trace.dat`...). Each reader declares its own as an associated constant
/// (`Format::Ftrace`) in its file.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Format(&'static str);

impl Format {
    /// The format called `name` (a reader's declaration makes it).
    pub(crate) const fn named(name: &'static str) -> Format {
        Format(name)
    }

    /// Human name.
    pub fn name(self) -> &'static str {
        self.0
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl fmt::Debug for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl serde::Serialize for Format {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}
