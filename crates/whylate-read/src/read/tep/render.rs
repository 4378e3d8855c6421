//! A field's value rendered the way `trace-cmd report -R` prints it, with the `print fmt`
//! conversion attached to it (`format.rs`).

use super::format::{Field, Layout, Spec};
use super::value::{cstr, sign_extend, Endian, Value};
use std::fmt::Write as _;

impl Field {
    /// The bytes of an array or dynamic field within `data`.
    pub fn bytes<'a>(&self, data: &'a [u8], e: Endian) -> Option<&'a [u8]> {
        let off = self.offset as usize;
        match self.layout {
            Layout::Int => data.get(off..off + self.size as usize),
            Layout::Array { .. } => {
                if self.size == 0 {
                    data.get(off..)
                } else {
                    data.get(off..off + self.size as usize)
                }
            }
            Layout::DataLoc { .. } | Layout::RelLoc { .. } => {
                let v = e.u32(data, off)?;
                let len = (v >> 16) as usize;
                let mut start = (v & 0xffff) as usize;
                if matches!(self.layout, Layout::RelLoc { .. }) {
                    start += off + self.size as usize;
                }
                data.get(start..start + len)
            }
        }
    }

    /// The field's value in `data`.
    pub fn value<'a>(&self, data: &'a [u8], e: Endian) -> Option<Value<'a>> {
        if let Layout::Int = self.layout {
            let v = e.uint(data, self.offset as usize, self.size as usize)?;
            return Some(if self.signed {
                Value::I(sign_extend(v, self.size))
            } else {
                Value::U(v)
            });
        }
        let b = self.bytes(data, e)?;
        Some(if self.string {
            Value::Str(cstr(b))
        } else {
            Value::Bytes(b)
        })
    }

    /// Integer value (sign-extended when signed); 0 when the record is too short.
    #[inline(always)]
    pub fn int(&self, data: &[u8], e: Endian) -> i64 {
        let v = e
            .uint(data, self.offset as usize, self.size as usize)
            .unwrap_or(0);
        if self.signed {
            sign_extend(v, self.size)
        } else {
            v as i64
        }
    }

    /// Unsigned integer value.
    #[inline(always)]
    pub fn uint(&self, data: &[u8], e: Endian) -> u64 {
        e.uint(data, self.offset as usize, self.size as usize)
            .unwrap_or(0)
    }

    /// String value (char arrays and `__data_loc char[]`), up to the first NUL.
    #[inline]
    pub fn str<'a>(&self, data: &'a [u8], e: Endian) -> &'a [u8] {
        self.bytes(data, e).map(cstr).unwrap_or(b"")
    }

    /// Appends the value the way libtraceevent's raw printer (`trace-cmd report -R`) does.
    /// `sym` names a kernel function by address (a `long` that points into kernel text
    /// prints as the function's name).
    pub fn render<'s>(
        &self,
        data: &[u8],
        e: Endian,
        sym: &dyn Fn(u64) -> Option<&'s str>,
        out: &mut String,
    ) {
        if !matches!(self.layout, Layout::Int) {
            let Some(b) = self.bytes(data, e) else {
                out.push_str("ARRAY[]");
                return;
            };
            if self.string && printable(b) {
                out.push_str(&String::from_utf8_lossy(cstr(b)));
            } else {
                out.push_str("ARRAY[");
                for (i, c) in b.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    let _ = write!(out, "{c:02x}");
                }
                out.push(']');
            }
            return;
        }
        let v = self.uint(data, e);
        if let Some(sp) = &self.spec {
            if sp.after_0x {
                out.push_str("0x");
            }
            if render_spec(sp, v, sym, out) {
                return;
            }
        }
        if self.pointer {
            let _ = write!(out, "0x{v:x}");
        } else if self.signed {
            // A 32-bit signed `long` usually holds a pointer: libtraceevent prints it in hex.
            if self.long && self.size == 4 {
                let _ = write!(out, "0x{:x}", v as u32);
            } else {
                let _ = write!(out, "{}", sign_extend(v, self.size));
            }
        } else if self.long {
            let _ = write!(out, "0x{v:x}");
        } else {
            let _ = write!(out, "{v}");
        }
    }
}

/// Formats integer `v` with printf conversion `sp`; false when
/// the conversion is not one for integers.
pub(super) fn render_spec<'s>(
    sp: &Spec,
    v: u64,
    sym: &dyn Fn(u64) -> Option<&'s str>,
    out: &mut String,
) -> bool {
    let mask = |bits: u32| {
        if bits >= 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        }
    };
    // The field's bytes are read zero-extended and printed as the length modifier says,
    // as C's printf would see them.
    let bits = sp.bits;
    let body = match sp.conv {
        b'd' | b'i' => {
            let x = sign_extend(v & mask(bits), bits / 8);
            if sp.plus && x >= 0 {
                format!("+{x}")
            } else {
                x.to_string()
            }
        }
        b'u' => (v & mask(bits)).to_string(),
        b'x' => {
            let x = format!("{:x}", v & mask(bits));
            if sp.alt && v != 0 {
                format!("0x{x}")
            } else {
                x
            }
        }
        b'X' => {
            let x = format!("{:X}", v & mask(bits));
            if sp.alt && v != 0 {
                format!("0X{x}")
            } else {
                x
            }
        }
        b'o' => format!("{:o}", v & mask(bits)),
        b'c' => ((v & 0xff) as u8 as char).to_string(),
        b'p' => match sp.psuffix {
            b's' | b'f' | b'S' | b'F' | b'B' => {
                sym(v).map_or_else(|| format!("0x{v:x}"), str::to_string)
            }
            _ => format!("0x{v:x}"),
        },
        _ => return false,
    };
    let pad = sp.width.saturating_sub(body.len());
    if pad == 0 {
        out.push_str(&body);
    } else if sp.left {
        out.push_str(&body);
        out.extend(std::iter::repeat_n(' ', pad));
    } else if sp.zero && matches!(sp.conv, b'd' | b'i' | b'u' | b'x' | b'X' | b'o') {
        let (sign, digits) = match body.strip_prefix('-') {
            Some(d) => ("-", d),
            None => ("", body.as_str()),
        };
        out.push_str(sign);
        out.extend(std::iter::repeat_n('0', pad));
        out.push_str(digits);
    } else {
        out.extend(std::iter::repeat_n(' ', pad));
        out.push_str(&body);
    }
    true
}

/// libtraceevent's test: a string is printed as text when every byte before the first NUL
/// is printable or whitespace (what follows the NUL does not matter).
pub(super) fn printable(b: &[u8]) -> bool {
    let n = memchr::memchr(0, b).unwrap_or(b.len());
    b[..n]
        .iter()
        .all(|c| c.is_ascii_graphic() || c.is_ascii_whitespace())
}
