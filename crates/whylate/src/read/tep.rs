//! Tracepoint `format` files and binary records: the part trace.dat and perf.data share.
//!
//! A record's fields are decoded structurally from the offsets and sizes the kernel
//! published in each event's `format` file; `print fmt` is never evaluated (it calls
//! kernel helpers like `__print_flags`), only read for the conversion (`%03d`, `%ps`) of
//! each field it prints directly, which libtraceevent's raw printer also uses. [`Formats::render_raw`] prints the fields the way
//! `trace-cmd report -R` (libtraceevent's raw printer) does, so the two can be compared
//! field by field. [`Decoder`] turns a record into the typed [`Kind`] every reader produces.

use crate::event::{flags, Interner, Kind, SchedStat, Sym, TaskState};
use rustc_hash::FxHashMap;
use std::fmt::Write as _;

/// How a field's bytes are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// A scalar integer of `size` bytes.
    Int,
    /// A fixed array (`char comm[16]`, `unsigned long args[6]`) of `elem` bytes each.
    Array {
        /// Element size in bytes.
        elem: u32,
    },
    /// `__data_loc T[] x`: a u32 of (length << 16 | offset from the record start).
    DataLoc {
        /// Element size in bytes.
        elem: u32,
    },
    /// `__rel_loc T[] x`: like DataLoc, the offset counted from the end of this field.
    RelLoc {
        /// Element size in bytes.
        elem: u32,
    },
}

/// One field of an event.
#[derive(Clone, Debug)]
pub struct Field {
    /// Field name.
    pub name: Box<str>,
    /// C type as declared (`char[16]`, `unsigned long`, `void *`).
    pub ty: Box<str>,
    /// Offset in the record.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
    /// Signedness as the format says.
    pub signed: bool,
    /// Layout.
    pub layout: Layout,
    /// The type is character data (char/u8 arrays): printed as a string when printable.
    pub string: bool,
    /// A pointer type: printed in hex.
    pub pointer: bool,
    /// The type says `long`: with no conversion of its own, printed in hex.
    pub long: bool,
    /// The `print fmt` conversion that prints this field directly (`REC->field`).
    pub spec: Option<Spec>,
}

/// A printf conversion from `print fmt`: `%-08lx` = flags `-0`, width 8, length `l`, `x`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// `-`.
    pub left: bool,
    /// `0`.
    pub zero: bool,
    /// `+`.
    pub plus: bool,
    /// `#`.
    pub alt: bool,
    /// Minimum width.
    pub width: usize,
    /// Bits of the length modifier (8 hh, 16 h, 32 none, 64 l/ll/z).
    pub bits: u32,
    /// Conversion letter (`d i u x X o c s p`).
    pub conv: u8,
    /// Letter after `%p` (`s` = symbol, `S` = symbol+offset), 0 when none.
    pub psuffix: u8,
    /// The format text right before it ends in `0x` (printed before the value).
    pub after_0x: bool,
}

/// The conversions of a printf format, in order; `*` width/precision take an argument
/// (returned as `None`).
fn conversions(fmt: &[u8]) -> Vec<Option<Spec>> {
    let mut v = Vec::new();
    let mut i = 0;
    while i < fmt.len() {
        if fmt[i] != b'%' {
            i += 1;
            continue;
        }
        i += 1;
        if fmt.get(i) == Some(&b'%') {
            i += 1;
            continue;
        }
        let after_0x = i >= 3 && &fmt[i - 3..i - 1] == b"0x";
        let mut sp = Spec {
            after_0x,
            left: false,
            zero: false,
            plus: false,
            alt: false,
            width: 0,
            bits: 32,
            conv: 0,
            psuffix: 0,
        };
        while let Some(&c) = fmt.get(i) {
            match c {
                b'-' => sp.left = true,
                b'0' => sp.zero = true,
                b'+' => sp.plus = true,
                b'#' => sp.alt = true,
                b' ' => {}
                _ => break,
            }
            i += 1;
        }
        if fmt.get(i) == Some(&b'*') {
            v.push(None);
            i += 1;
        }
        while let Some(d) = fmt.get(i).filter(|c| c.is_ascii_digit()) {
            sp.width = sp.width * 10 + (d - b'0') as usize;
            i += 1;
        }
        if fmt.get(i) == Some(&b'.') {
            i += 1;
            if fmt.get(i) == Some(&b'*') {
                v.push(None);
                i += 1;
            }
            while fmt.get(i).is_some_and(|c| c.is_ascii_digit()) {
                i += 1;
            }
        }
        loop {
            match fmt.get(i) {
                Some(b'h') => sp.bits = if sp.bits == 16 { 8 } else { 16 },
                Some(b'l' | b'z' | b'j' | b't' | b'L' | b'q') => sp.bits = 64,
                _ => break,
            }
            i += 1;
        }
        let Some(&c) = fmt.get(i) else { break };
        sp.conv = c;
        i += 1;
        if c == b'p' {
            if let Some(&s) = fmt.get(i).filter(|c| c.is_ascii_alphabetic()) {
                sp.psuffix = s;
                i += 1;
            }
        }
        v.push(Some(sp));
    }
    v
}

/// Splits the argument list of `print fmt` at top-level commas.
fn split_args(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let (mut depth, mut start, mut quote) = (0i32, 0usize, false);
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if quote => i += 1,
            b'"' => quote = !quote,
            b'(' | b'[' | b'{' if !quote => depth += 1,
            b')' | b']' | b'}' if !quote => depth -= 1,
            b',' if !quote && depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(s[start..].trim());
    out
}

/// The field an argument prints directly: `REC->x`, `(void *)REC->x`, `(REC->x)`.
fn direct_field(arg: &str) -> Option<&str> {
    let mut a = arg.trim();
    loop {
        if let Some(f) = a.strip_prefix("REC->") {
            return f
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'_')
                .then_some(f);
        }
        let inner = a.strip_prefix('(')?;
        let close = inner.find(')')?;
        if inner[..close].contains("REC->") {
            // `(REC->x)`: parentheses around the whole argument.
            a = inner.strip_suffix(')')?.trim();
        } else {
            // A cast: `(void *)REC->x`.
            a = inner[close + 1..].trim();
        }
    }
}

/// Attaches to each field the conversion `print fmt` prints it with, the way
/// libtraceevent's raw printer pairs them: fields in order, each looked up among the
/// conversions circularly from just after the previous match; arrays never take one; once
/// the last conversion has matched, the remaining fields take none.
fn attach_specs(print_fmt: &str, fields: &mut [Field]) {
    let Some(rest) = print_fmt.trim().strip_prefix('"') else {
        return;
    };
    // The format string ends at the first unescaped quote.
    let b = rest.as_bytes();
    let mut end = None;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'"' => {
                end = Some(i);
                break;
            }
            _ => {}
        }
        i += 1;
    }
    let Some(end) = end else { return };
    let convs = conversions(&b[..end]);
    let args_text = rest[end + 1..].trim_start().trim_start_matches(',');
    let args = split_args(args_text);
    let items: Vec<(Option<Spec>, Option<&str>)> = convs
        .into_iter()
        .zip(args)
        .map(|(c, a)| (c, direct_field(a)))
        .collect();
    if items.is_empty() {
        return;
    }
    let mut cursor = Some(0usize);
    for f in fields.iter_mut() {
        if !matches!(f.layout, Layout::Int) {
            continue;
        }
        let Some(start) = cursor else { break };
        let mut i = start;
        loop {
            if let (Some(sp), Some(name)) = (&items[i].0, items[i].1) {
                if name == &*f.name {
                    f.spec = Some(sp.clone());
                    cursor = (i + 1 < items.len()).then_some(i + 1);
                    break;
                }
            }
            i = (i + 1) % items.len();
            if i == start {
                break;
            }
        }
    }
}

/// One event's format.
#[derive(Clone, Debug)]
pub struct EventFormat {
    /// Numeric id (`common_type`).
    pub id: u32,
    /// Subsystem (`sched`), from the trace's layout.
    pub system: Box<str>,
    /// Event name (`sched_switch`).
    pub name: Box<str>,
    /// The fields after the common ones.
    pub fields: Vec<Field>,
    /// The common fields (`common_type`, `common_flags`, ...).
    pub common: Vec<Field>,
}

impl EventFormat {
    /// Index of field `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| &*f.name == name)
    }
}

/// A `format` file that does not parse.
#[derive(Debug, Clone)]
pub struct FormatError {
    /// 1-based line in the format text.
    pub line: usize,
    /// What was wrong.
    pub why: String,
}

fn num_after(s: &str, key: &str) -> Option<i64> {
    let p = s.find(key)? + key.len();
    let rest = &s[p..];
    let end = rest.find(';').unwrap_or(rest.len());
    rest[..end].trim().parse().ok()
}

/// Parses one field line: `\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;`.
pub fn parse_field(line: &str) -> Option<Field> {
    let decl_start = line.find("field:")? + 6;
    let decl_end = decl_start + line[decl_start..].find(';')?;
    let decl = line[decl_start..decl_end].trim();
    let offset = num_after(line, "offset:")? as u32;
    let size = num_after(line, "size:")? as u32;
    // Very old kernels have no `signed:`; the type decides then.
    let signed = match num_after(line, "signed:") {
        Some(v) => v != 0,
        None => !decl.starts_with("unsigned") && !decl.starts_with('u'),
    };
    // Split `type name[len]` into type and name.
    let (mut ty, mut name) = match decl.rfind([' ', '*']) {
        Some(p) => (
            decl[..=p].trim().to_string(),
            decl[p + 1..].trim().to_string(),
        ),
        None => return None,
    };
    let mut array_len: Option<u32> = None;
    if let Some(lb) = name.find('[') {
        let inner = &name[lb + 1..name.rfind(']').unwrap_or(name.len())];
        array_len = Some(inner.trim().parse().unwrap_or(0));
        ty.push_str(&name[lb..]);
        name.truncate(lb);
    }
    let dyn_kind = if ty.starts_with("__data_loc") {
        Some(false)
    } else if ty.starts_with("__rel_loc") {
        Some(true)
    } else {
        None
    };
    let base = ty
        .trim_start_matches("__data_loc")
        .trim_start_matches("__rel_loc")
        .trim();
    let base_no_arr = base.split('[').next().unwrap_or(base).trim();
    let pointer = base_no_arr.ends_with('*');
    let is_char = {
        let b = base_no_arr
            .trim_start_matches("const ")
            .trim_start_matches("unsigned ")
            .trim_start_matches("signed ");
        b == "char" || b == "u8" || b == "__u8" || b == "s8"
    };
    let long = matches!(base_no_arr, "long" | "unsigned long");
    let elem_of = |b: &str| -> u32 {
        let b = b.trim_start_matches("const ");
        match b {
            _ if b.ends_with('*') => 8,
            "char" | "unsigned char" | "signed char" | "u8" | "s8" | "__u8" | "bool" => 1,
            "short" | "unsigned short" | "u16" | "s16" | "__u16" => 2,
            "int" | "unsigned int" | "u32" | "s32" | "__u32" | "pid_t" => 4,
            "long" | "unsigned long" | "long long" | "unsigned long long" | "u64" | "s64"
            | "__u64" => 8,
            _ => 1,
        }
    };
    let layout = match dyn_kind {
        Some(rel) => {
            let elem = elem_of(base_no_arr);
            if rel {
                Layout::RelLoc { elem }
            } else {
                Layout::DataLoc { elem }
            }
        }
        None => match array_len {
            Some(n) if n > 0 => Layout::Array {
                elem: (size / n).max(1),
            },
            // `char data[]` at the end, or a count we could not read: bytes to the end.
            Some(_) => Layout::Array { elem: 1 },
            // ftrace's own events declare `char buf[]` as `char buf;` with size 0.
            None if size == 0 => Layout::Array { elem: 1 },
            None => Layout::Int,
        },
    };
    let string = is_char && !matches!(layout, Layout::Int);
    Some(Field {
        name: name.into(),
        ty: ty.into(),
        offset,
        size,
        signed,
        layout,
        string,
        pointer,
        long,
        spec: None,
    })
}

/// Parses a `format` file's text. `system` is used when the text does not name it.
pub fn parse_format(text: &str, system: &str) -> Result<EventFormat, FormatError> {
    let mut name = None;
    let mut id = None;
    let mut fields = Vec::new();
    let mut common = Vec::new();
    let mut in_format = false;
    for (i, line) in text.lines().enumerate() {
        if let Some(n) = line.strip_prefix("name:") {
            name = Some(n.trim().to_string());
        } else if let Some(n) = line.strip_prefix("ID:") {
            id = Some(n.trim().parse::<u32>().map_err(|_| FormatError {
                line: i + 1,
                why: format!("expected a numeric ID, found {:?}", n.trim()),
            })?);
        } else if line.starts_with("format:") {
            in_format = true;
        } else if let Some(pf) = line.strip_prefix("print fmt:") {
            attach_specs(pf, &mut fields);
            break;
        } else if in_format && line.trim_start().starts_with("field:") {
            let f = parse_field(line).ok_or_else(|| FormatError {
                line: i + 1,
                why: format!(
                    "expected `field:TYPE NAME; offset:N; size:N; signed:N;`, found {:?}",
                    line.trim()
                ),
            })?;
            if f.name.starts_with("common_") {
                common.push(f);
            } else {
                fields.push(f);
            }
        }
    }
    Ok(EventFormat {
        id: id.ok_or(FormatError {
            line: 0,
            why: "no `ID:` line".into(),
        })?,
        system: system.into(),
        name: name
            .ok_or(FormatError {
                line: 0,
                why: "no `name:` line".into(),
            })?
            .into(),
        fields,
        common,
    })
}

/// A decoded field value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    /// Unsigned integer.
    U(u64),
    /// Signed integer.
    I(i64),
    /// Character data up to its first NUL.
    Str(&'a [u8]),
    /// Any other array.
    Bytes(&'a [u8]),
}

/// Byte order of the traced machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Endian {
    /// Big endian.
    pub big: bool,
}

impl Endian {
    /// Reads an unsigned integer of `size` (1, 2, 4, 8) bytes; None when out of range.
    #[inline(always)]
    pub fn uint(self, d: &[u8], off: usize, size: usize) -> Option<u64> {
        // Fast path: one 8-byte load, then a shift, when 8 bytes are there to load. Fields
        // are read once or more per record; a jump on (size, order) cost ~40 instructions.
        if let (Some(w), 1..=8) = (d.get(off..off.wrapping_add(8)), size) {
            if size.is_power_of_two() {
                let w: [u8; 8] = w.try_into().ok()?;
                let drop = (64 - size * 8) as u32;
                // drop < 64: size is at least 1.
                return Some(if self.big {
                    u64::from_be_bytes(w) >> drop
                } else {
                    (u64::from_le_bytes(w) << drop) >> drop
                });
            }
        }
        let b = d.get(off..off + size)?;
        Some(match (size, self.big) {
            (1, _) => b[0] as u64,
            (2, false) => u16::from_le_bytes([b[0], b[1]]) as u64,
            (2, true) => u16::from_be_bytes([b[0], b[1]]) as u64,
            (4, false) => u32::from_le_bytes(b.try_into().ok()?) as u64,
            (4, true) => u32::from_be_bytes(b.try_into().ok()?) as u64,
            (8, false) => u64::from_le_bytes(b.try_into().ok()?),
            (8, true) => u64::from_be_bytes(b.try_into().ok()?),
            _ => return None,
        })
    }
    /// u32 at `off`.
    #[inline]
    pub fn u32(self, d: &[u8], off: usize) -> Option<u32> {
        self.uint(d, off, 4).map(|v| v as u32)
    }
    /// u64 at `off`.
    #[inline]
    pub fn u64(self, d: &[u8], off: usize) -> Option<u64> {
        self.uint(d, off, 8)
    }
}

/// A planned field's integer value, 0 when the format lacks it. Always inlined into the
/// decoder: as a call it cost about as much as the read itself.
#[inline(always)]
fn opt_int(f: &Option<Field>, data: &[u8], e: Endian) -> i64 {
    match f {
        Some(f) => f.int(data, e),
        None => 0,
    }
}

/// [`opt_int`] without sign extension.
#[inline(always)]
fn opt_uint(f: &Option<Field>, data: &[u8], e: Endian) -> u64 {
    match f {
        Some(f) => f.uint(data, e),
        None => 0,
    }
}

#[inline]
fn sign_extend(v: u64, size: u32) -> i64 {
    match size {
        1 => v as u8 as i8 as i64,
        2 => v as u16 as i16 as i64,
        4 => v as u32 as i32 as i64,
        _ => v as i64,
    }
}

fn cstr(b: &[u8]) -> &[u8] {
    &b[..memchr::memchr(0, b).unwrap_or(b.len())]
}

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
fn render_spec<'s>(
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
fn printable(b: &[u8]) -> bool {
    let n = memchr::memchr(0, b).unwrap_or(b.len());
    b[..n]
        .iter()
        .all(|c| c.is_ascii_graphic() || c.is_ascii_whitespace())
}

/// The event formats of one trace, by id.
#[derive(Clone, Debug, Default)]
pub struct Formats {
    /// Index into `list` by id (ids are 16-bit `common_type` values): no hashing per record.
    by_id: Vec<u32>,
    /// All formats in the order they were read.
    pub list: Vec<EventFormat>,
    /// Byte order.
    pub endian: Endian,
    /// Kernel `long` size: 4 or 8.
    pub long_size: u32,
    /// The trace's `/proc/kallsyms` text, parsed into `syms` on first use: most analyses
    /// never ask for a symbol, and parsing 100k+ lines costs tens of ms.
    kallsyms_text: Option<std::sync::Arc<[u8]>>,
    syms: std::sync::OnceLock<Syms>,
}

/// Kernel symbols (address, name) sorted by address, and the address of `_stext` (for
/// `caller_offs`-style fields).
#[derive(Clone, Debug, Default)]
struct Syms {
    list: std::sync::Arc<[(u64, Box<str>)]>,
    stext: Option<u64>,
}

impl Syms {
    fn parse(text: &[u8]) -> Syms {
        let mut v = Vec::new();
        let mut stext = None;
        for line in text.split(|c| *c == b'\n') {
            let mut it = line.split(|c| *c == b' ');
            let (Some(a), Some(t), Some(n)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            let Some(addr) = crate::event::parse_hex(a) else {
                continue;
            };
            // Only code: data symbols would shadow functions at equal addresses.
            if !matches!(t, b"T" | b"t" | b"W" | b"w") || addr == 0 {
                continue;
            }
            let n = n.split(|c| *c == b'\t').next().unwrap_or(n);
            if n == b"_stext" {
                stext = Some(addr);
            }
            v.push((addr, String::from_utf8_lossy(n).into()));
        }
        v.sort_by_key(|x| x.0);
        Syms {
            list: v.into(),
            stext,
        }
    }
}

impl Formats {
    /// No formats yet, for a machine of byte order `endian` and `long_size`-byte longs.
    pub fn new(endian: Endian, long_size: u32) -> Self {
        Formats {
            endian,
            long_size,
            ..Formats::default()
        }
    }
    /// Adds a format (a later one with the same id replaces the earlier).
    pub fn add(&mut self, f: EventFormat) {
        let i = self.list.len();
        let id = f.id as usize;
        if id < (1 << 16) {
            if self.by_id.len() <= id {
                self.by_id.resize(id + 1, u32::MAX);
            }
            self.by_id[id] = i as u32;
        }
        self.list.push(f);
    }
    /// The format of event id `id`.
    pub fn get(&self, id: u32) -> Option<&EventFormat> {
        match self.by_id.get(id as usize) {
            Some(&i) if i != u32::MAX => self.list.get(i as usize),
            _ => None,
        }
    }
    /// Number of formats.
    pub fn len(&self) -> usize {
        self.list.len()
    }
    /// No formats.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Takes `/proc/kallsyms` text (`ffffffff81000000 T _stext`), parsed when first needed.
    pub fn load_kallsyms(&mut self, text: &[u8]) {
        self.kallsyms_text = Some(text.into());
        self.syms = Default::default();
    }

    /// Uses this machine's `/proc/kallsyms`, read once per process: the kernel takes tens
    /// of ms to print it, and `diff` or a test opens many files.
    pub fn load_this_machines_kallsyms(&mut self) {
        static HERE: std::sync::OnceLock<Syms> = std::sync::OnceLock::new();
        let here =
            HERE.get_or_init(|| Syms::parse(&std::fs::read("/proc/kallsyms").unwrap_or_default()));
        self.kallsyms_text = None;
        self.syms = here.clone().into();
    }

    /// True when symbols were loaded, without parsing them (which costs tens of ms).
    pub fn carries_kallsyms(&self) -> bool {
        match self.syms.get() {
            Some(s) => !s.list.is_empty(),
            None => self.kallsyms_text.as_ref().is_some_and(|t| !t.is_empty()),
        }
    }

    /// True when the trace carries kernel code symbols (or this machine's were loaded).
    pub fn has_kallsyms(&self) -> bool {
        !self.syms().list.is_empty()
    }

    fn syms(&self) -> &Syms {
        self.syms.get_or_init(|| match &self.kallsyms_text {
            Some(t) => Syms::parse(t),
            None => Syms::default(),
        })
    }

    /// Address of `_stext`, when the symbols are known.
    pub fn stext(&self) -> Option<u64> {
        self.syms().stext
    }

    /// The function containing `addr`, when the symbols are known and `addr` lies
    /// within them.
    pub fn symbol(&self, addr: u64) -> Option<&str> {
        let syms = &self.syms().list;
        let last = syms.last()?.0;
        if addr == 0 || addr > last.saturating_add(1 << 16) {
            return None;
        }
        let i = syms.partition_point(|(a, _)| *a <= addr);
        if i == 0 {
            return None;
        }
        Some(&syms[i - 1].1)
    }

    /// Renders a record's non-common fields as `name=value` pairs, as `trace-cmd report -R`.
    pub fn render_raw(&self, f: &EventFormat, data: &[u8], out: &mut String) {
        for (i, fld) in f.fields.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            out.push_str(&fld.name);
            out.push('=');
            fld.render(data, self.endian, &|a| self.symbol(a), out);
        }
    }
}

/// The common header of a record.
#[derive(Clone, Copy, Debug, Default)]
pub struct Common {
    /// `common_type`.
    pub id: u32,
    /// `common_flags` and preempt depth packed as [`crate::event::flags`].
    pub flags: u16,
    /// `common_pid`.
    pub pid: i32,
}

/// Reads the common fields; the layout is fixed since 2.6.32.
#[inline]
pub fn common(data: &[u8], e: Endian) -> Option<Common> {
    let id = e.uint(data, 0, 2)? as u32;
    let fl = *data.get(2)? as u16;
    let pc = *data.get(3)? as u16;
    let pid = e.u32(data, 4)? as i32;
    Some(Common {
        id,
        flags: fl | ((pc & 0xf) << flags::PREEMPT_SHIFT) | flags::KNOWN,
        pid,
    })
}

/// How one event id becomes a typed [`Kind`]: field handles resolved once per format.
#[derive(Clone, Debug)]
enum Plan {
    Switch([Option<Field>; 7]),
    Wake {
        f: [Option<Field>; 4],
        waking: bool,
        new: bool,
    },
    Migrate([Option<Field>; 5]),
    Fork([Option<Field>; 4]),
    Exec([Option<Field>; 3]),
    Exit([Option<Field>; 3]),
    Stat(SchedStat, [Option<Field>; 3]),
    IrqEntry([Option<Field>; 2]),
    IrqExit([Option<Field>; 2]),
    Softirq(u8, Option<Field>),
    Tasklet(bool, Option<Field>),
    WorkQueue([Option<Field>; 5]),
    Work(u8, [Option<Field>; 2]),
    SysEnter([Option<Field>; 2]),
    SysExit([Option<Field>; 2]),
    SyscallEnter(Sym, Vec<(Sym, Field)>),
    SyscallExit(Sym, Option<Field>),
    HrStart([Option<Field>; 4]),
    HrEntry([Option<Field>; 3]),
    HrOne(u8, Option<Field>),
    TimerStart([Option<Field>; 3]),
    TimerEntry([Option<Field>; 3]),
    TimerOne(u8, Option<Field>),
    Napi([Option<Field>; 4]),
    CallerParent(u8, [Option<Field>; 2]),
    Print(Sym, Option<Field>),
    Console(Option<Field>),
    Function([Option<Field>; 2]),
    Other(Sym),
}

/// Turns binary records into [`Kind`]s, caching per event id the fields it needs and the
/// symbol names of function pointers.
pub struct Decoder {
    /// By event id (16-bit): a vector, not a map, on the per-record path.
    plans: Vec<Option<Plan>>,
    funcs: FxHashMap<u64, Sym>,
    text: String,
}

impl Default for Decoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Decoder {
    /// A decoder with nothing cached.
    pub fn new() -> Self {
        Decoder {
            plans: Vec::new(),
            funcs: FxHashMap::default(),
            text: String::new(),
        }
    }

    fn plan(fmt: &EventFormat, s: &mut Interner) -> Plan {
        let g = |n: &str| fmt.field(n).cloned();
        let name = &*fmt.name;
        match name {
            "sched_switch" => Plan::Switch([
                g("prev_comm"),
                g("prev_pid"),
                g("prev_prio"),
                g("prev_state"),
                g("next_comm"),
                g("next_pid"),
                g("next_prio"),
            ]),
            "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => Plan::Wake {
                f: [g("comm"), g("pid"), g("prio"), g("target_cpu")],
                waking: name == "sched_waking",
                new: name == "sched_wakeup_new",
            },
            "sched_migrate_task" => {
                Plan::Migrate([g("comm"), g("pid"), g("prio"), g("orig_cpu"), g("dest_cpu")])
            }
            "sched_process_fork" => Plan::Fork([
                g("parent_comm"),
                g("parent_pid"),
                g("child_comm"),
                g("child_pid"),
            ]),
            "sched_process_exec" => Plan::Exec([g("filename"), g("pid"), g("old_pid")]),
            "sched_process_exit" => Plan::Exit([g("comm"), g("pid"), g("prio")]),
            "sched_stat_wait" | "sched_stat_sleep" | "sched_stat_iowait" | "sched_stat_blocked"
            | "sched_stat_runtime" => {
                let st = match name {
                    "sched_stat_wait" => SchedStat::Wait,
                    "sched_stat_sleep" => SchedStat::Sleep,
                    "sched_stat_iowait" => SchedStat::Iowait,
                    "sched_stat_blocked" => SchedStat::Blocked,
                    _ => SchedStat::Runtime,
                };
                let d = if st == SchedStat::Runtime {
                    g("runtime")
                } else {
                    g("delay")
                };
                Plan::Stat(st, [g("comm"), g("pid"), d])
            }
            "irq_handler_entry" => Plan::IrqEntry([g("irq"), g("name")]),
            "irq_handler_exit" => Plan::IrqExit([g("irq"), g("ret")]),
            "softirq_raise" => Plan::Softirq(0, g("vec")),
            "softirq_entry" => Plan::Softirq(1, g("vec")),
            "softirq_exit" => Plan::Softirq(2, g("vec")),
            "tasklet_entry" | "tasklet_exit" => {
                Plan::Tasklet(name == "tasklet_entry", g("func").or_else(|| g("tasklet")))
            }
            "workqueue_queue_work" => Plan::WorkQueue([
                g("work"),
                g("function"),
                g("workqueue"),
                g("req_cpu"),
                g("cpu"),
            ]),
            "workqueue_activate_work" => Plan::Work(0, [g("work"), g("function")]),
            "workqueue_execute_start" => Plan::Work(1, [g("work"), g("function")]),
            "workqueue_execute_end" => Plan::Work(2, [g("work"), g("function")]),
            "sys_enter" if &*fmt.system == "raw_syscalls" => Plan::SysEnter([g("id"), g("args")]),
            "sys_exit" if &*fmt.system == "raw_syscalls" => Plan::SysExit([g("id"), g("ret")]),
            _ if name.starts_with("sys_enter_") && &*fmt.system == "syscalls" => {
                let args = fmt
                    .fields
                    .iter()
                    .filter(|f| &*f.name != "__syscall_nr")
                    .map(|f| (s.intern(&f.name), f.clone()))
                    .collect();
                Plan::SyscallEnter(s.intern(&name["sys_enter_".len()..]), args)
            }
            _ if name.starts_with("sys_exit_") && &*fmt.system == "syscalls" => {
                Plan::SyscallExit(s.intern(&name["sys_exit_".len()..]), g("ret"))
            }
            "hrtimer_start" => {
                Plan::HrStart([g("hrtimer"), g("function"), g("expires"), g("softexpires")])
            }
            "hrtimer_expire_entry" => Plan::HrEntry([g("hrtimer"), g("function"), g("now")]),
            "hrtimer_expire_exit" => Plan::HrOne(0, g("hrtimer")),
            "hrtimer_cancel" => Plan::HrOne(1, g("hrtimer")),
            "timer_start" => Plan::TimerStart([g("timer"), g("function"), g("expires")]),
            "timer_expire_entry" => Plan::TimerEntry([g("timer"), g("function"), g("now")]),
            "timer_expire_exit" => Plan::TimerOne(0, g("timer")),
            "timer_cancel" => Plan::TimerOne(1, g("timer")),
            "napi_poll" => Plan::Napi([g("napi"), g("dev_name"), g("work"), g("budget")]),
            "irq_disable" | "irq_enable" | "preempt_disable" | "preempt_enable"
                if &*fmt.system == "preemptirq" =>
            {
                let k = match name {
                    "irq_disable" => 0,
                    "irq_enable" => 1,
                    "preempt_disable" => 2,
                    _ => 3,
                };
                Plan::CallerParent(k, [g("caller_offs"), g("parent_offs")])
            }
            "print" if &*fmt.system == "ftrace" => Plan::Print(s.intern("print"), g("buf")),
            "tracing_mark_write" => Plan::Print(s.intern(name), g("buf")),
            "console" if &*fmt.system == "printk" => Plan::Console(g("msg")),
            "function" if &*fmt.system == "ftrace" => Plan::Function([g("ip"), g("parent_ip")]),
            _ => Plan::Other(s.intern(name)),
        }
    }

    fn func(&mut self, fmts: &Formats, addr: u64, s: &mut Interner) -> Sym {
        if let Some(&x) = self.funcs.get(&addr) {
            return x;
        }
        let sym = match fmts.symbol(addr) {
            Some(n) => s.intern(n),
            None => s.intern(&format!("0x{addr:x}")),
        };
        self.funcs.insert(addr, sym);
        sym
    }

    /// Decodes `data` (a whole record, common fields first) of format `fmt`.
    pub fn decode(
        &mut self,
        fmts: &Formats,
        fmt: &EventFormat,
        data: &[u8],
        s: &mut Interner,
    ) -> Kind {
        let e = fmts.endian;
        let id = (fmt.id as usize).min(1 << 16);
        if self.plans.len() <= id {
            self.plans.resize(id + 1, None);
        }
        if self.plans[id].is_none() {
            self.plans[id] = Some(Self::plan(fmt, s));
        }
        // The plan is cloned out only for the rare kinds that need `self` again.
        let plan = self.plans[id].as_ref().expect("just planned");
        let i = |f: &Option<Field>| opt_int(f, data, e);
        let u = |f: &Option<Field>| opt_uint(f, data, e);
        let st = |f: &Option<Field>, s: &mut Interner| {
            f.as_ref()
                .map_or(Sym::EMPTY, |f| s.intern_bytes(f.str(data, e)))
        };
        match plan {
            Plan::Switch(f) => {
                let state = u(&f[3]);
                Kind::SchedSwitch {
                    prev_comm: st(&f[0], s),
                    prev_pid: i(&f[1]) as i32,
                    prev_prio: i(&f[2]) as i32,
                    prev_state: TaskState::Numeric(state),
                    next_comm: st(&f[4], s),
                    next_pid: i(&f[5]) as i32,
                    next_prio: i(&f[6]) as i32,
                }
            }
            Plan::Wake { f, waking, new } => Kind::wake(
                st(&f[0], s),
                i(&f[1]) as i32,
                i(&f[2]) as i32,
                i(&f[3]) as i32,
                *waking,
                *new,
            ),
            Plan::Migrate(f) => Kind::SchedMigrate {
                comm: st(&f[0], s),
                pid: i(&f[1]) as i32,
                prio: i(&f[2]) as i32,
                orig_cpu: i(&f[3]) as i32,
                dest_cpu: i(&f[4]) as i32,
            },
            Plan::Fork(f) => Kind::SchedFork {
                parent_comm: st(&f[0], s),
                parent_pid: i(&f[1]) as i32,
                child_comm: st(&f[2], s),
                child_pid: i(&f[3]) as i32,
            },
            Plan::Exec(f) => Kind::SchedExec {
                filename: st(&f[0], s),
                pid: i(&f[1]) as i32,
                old_pid: i(&f[2]) as i32,
            },
            Plan::Exit(f) => Kind::SchedExit {
                comm: st(&f[0], s),
                pid: i(&f[1]) as i32,
                prio: i(&f[2]) as i32,
            },
            Plan::Stat(stat, f) => Kind::SchedStat {
                stat: *stat,
                comm: st(&f[0], s),
                pid: i(&f[1]) as i32,
                delay_ns: u(&f[2]),
            },
            Plan::IrqEntry(f) => Kind::IrqEntry {
                irq: i(&f[0]) as i32,
                name: st(&f[1], s),
            },
            Plan::IrqExit(f) => Kind::IrqExit {
                irq: i(&f[0]) as i32,
                handled: i(&f[1]) != 0,
            },
            Plan::Softirq(k, f) => {
                let vec = u(f) as u8;
                match k {
                    0 => Kind::SoftirqRaise { vec },
                    1 => Kind::SoftirqEntry { vec },
                    _ => Kind::SoftirqExit { vec },
                }
            }
            Plan::Tasklet(entry, f) => {
                let (entry, addr) = (*entry, u(f));
                let func = self.func(fmts, addr, s);
                if entry {
                    Kind::TaskletEntry { func }
                } else {
                    Kind::TaskletExit { func }
                }
            }
            Plan::WorkQueue(f) => {
                let (work, fa, req_cpu, cpu) = (u(&f[0]), u(&f[1]), i(&f[3]), i(&f[4]));
                let workqueue = match &f[2] {
                    Some(w) if w.string => s.intern_bytes(w.str(data, e)),
                    Some(w) => s.intern(&format!("0x{:x}", w.uint(data, e))),
                    None => Sym::EMPTY,
                };
                Kind::WorkQueue {
                    work,
                    function: self.func(fmts, fa, s),
                    workqueue,
                    req_cpu: req_cpu as i32,
                    cpu: cpu as i32,
                }
            }
            Plan::Work(k, f) => {
                let (k, work, fa) = (*k, u(&f[0]), u(&f[1]));
                let function = if f[1].is_some() {
                    self.func(fmts, fa, s)
                } else {
                    Sym::EMPTY
                };
                match k {
                    0 => Kind::WorkActivate { work, function },
                    1 => Kind::WorkStart { work, function },
                    _ => Kind::WorkEnd { work, function },
                }
            }
            Plan::SysEnter(f) => {
                let mut args = [0u64; 6];
                if let Some(a) = &f[1] {
                    if let Some(b) = a.bytes(data, e) {
                        let w = (fmts.long_size as usize).max(4);
                        if w == 8 && !e.big && b.len() >= 48 {
                            // The usual 64-bit little-endian machine: no per-word dispatch
                            // on size and byte order (sys_enter is the commonest event).
                            for (slot, c) in args.iter_mut().zip(b.chunks_exact(8)) {
                                *slot = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
                            }
                        } else {
                            for (k, slot) in args.iter_mut().enumerate() {
                                *slot = e.uint(b, k * w, w).unwrap_or(0);
                            }
                        }
                    }
                }
                Kind::SysEnter { nr: i(&f[0]), args }
            }
            Plan::SysExit(f) => Kind::SysExit {
                nr: i(&f[0]),
                ret: i(&f[1]),
            },
            Plan::SyscallEnter(name, fs) => Kind::SyscallEnter {
                name: *name,
                args: fs
                    .iter()
                    .map(|(n, f)| (*n, f.uint(data, e)))
                    .collect::<Vec<_>>()
                    .into_boxed_slice(),
            },
            Plan::SyscallExit(name, f) => Kind::SyscallExit {
                name: *name,
                ret: i(f),
            },
            Plan::HrStart(f) => {
                let (timer, fa, ex, sex) = (u(&f[0]), u(&f[1]), u(&f[2]), u(&f[3]));
                Kind::HrtimerStart {
                    timer,
                    function: self.func(fmts, fa, s),
                    expires_ns: ex,
                    softexpires_ns: sex,
                }
            }
            Plan::HrEntry(f) => {
                let (timer, fa, now) = (u(&f[0]), u(&f[1]), f[2].as_ref().map(|x| x.uint(data, e)));
                Kind::HrtimerExpireEntry {
                    timer,
                    function: self.func(fmts, fa, s),
                    now_ns: now,
                }
            }
            Plan::HrOne(k, f) => {
                let timer = u(f);
                if *k == 0 {
                    Kind::HrtimerExpireExit { timer }
                } else {
                    Kind::HrtimerCancel { timer }
                }
            }
            Plan::TimerStart(f) => {
                let (timer, fa, expires) = (u(&f[0]), u(&f[1]), u(&f[2]));
                Kind::TimerStart {
                    timer,
                    function: self.func(fmts, fa, s),
                    expires,
                }
            }
            Plan::TimerEntry(f) => {
                let (timer, fa, now) = (u(&f[0]), u(&f[1]), u(&f[2]));
                Kind::TimerExpireEntry {
                    timer,
                    function: self.func(fmts, fa, s),
                    now,
                }
            }
            Plan::TimerOne(k, f) => {
                let timer = u(f);
                if *k == 0 {
                    Kind::TimerExpireExit { timer }
                } else {
                    Kind::TimerCancel { timer }
                }
            }
            Plan::Napi(f) => Kind::NapiPoll {
                napi: u(&f[0]),
                dev: st(&f[1], s),
                work: i(&f[2]) as i32,
                budget: i(&f[3]) as i32,
            },
            Plan::CallerParent(k, f) => {
                let (k, c, p) = (*k, i(&f[0]), i(&f[1]));
                let base = fmts.stext().unwrap_or(0);
                let (caller, parent) = if base != 0 {
                    (
                        self.func(fmts, base.wrapping_add(c as u64), s),
                        self.func(fmts, base.wrapping_add(p as u64), s),
                    )
                } else {
                    (
                        s.intern(&format!("_stext{c:+#x}")),
                        s.intern(&format!("_stext{p:+#x}")),
                    )
                };
                match k {
                    0 => Kind::IrqDisable { caller, parent },
                    1 => Kind::IrqEnable { caller, parent },
                    2 => Kind::PreemptDisable { caller, parent },
                    _ => Kind::PreemptEnable { caller, parent },
                }
            }
            Plan::Print(name, f) => {
                let msg = f.as_ref().map_or(&b""[..], |f| f.str(data, e));
                let msg = msg.strip_suffix(b"\n").unwrap_or(msg);
                Kind::Print {
                    name: *name,
                    msg: String::from_utf8_lossy(msg).into(),
                }
            }
            Plan::Console(f) => {
                let msg = f.as_ref().map_or(&b""[..], |f| f.str(data, e));
                let msg = msg.strip_suffix(b"\n").unwrap_or(msg);
                Kind::Console {
                    msg: String::from_utf8_lossy(msg).into(),
                }
            }
            Plan::Function(f) => {
                let (ip, pip) = (u(&f[0]), u(&f[1]));
                Kind::Function {
                    func: self.func(fmts, ip, s),
                    parent: self.func(fmts, pip, s),
                }
            }
            Plan::Other(name) => {
                let name = *name;
                self.text.clear();
                fmts.render_raw(fmt, data, &mut self.text);
                Kind::Other {
                    name,
                    fields: self.text.as_str().into(),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uint_reads_every_size_and_order_at_every_offset() {
        let d: Vec<u8> = (1..=20u8).map(|x| x.wrapping_mul(37)).collect();
        for big in [false, true] {
            let e = Endian { big };
            for size in 0..=9usize {
                for off in 0..=d.len() + 1 {
                    let want = d.get(off..off + size).and_then(|b| {
                        matches!(size, 1 | 2 | 4 | 8).then(|| {
                            let it = b.iter();
                            let fold = |v: u64, x: &u8| v << 8 | *x as u64;
                            if big {
                                it.fold(0, fold)
                            } else {
                                it.rev().fold(0, fold)
                            }
                        })
                    });
                    assert_eq!(
                        e.uint(&d, off, size),
                        want,
                        "big {big} size {size} off {off}"
                    );
                }
            }
        }
    }

    #[test]
    fn kallsyms_parse_on_first_use() {
        let mut f = Formats::default();
        assert!(!f.has_kallsyms());
        f.load_kallsyms(
            b"ffffffff81000000 T _stext\nffffffff81001000 t do_one\tmod\nffffffff81002000 D data\nffffffff81003000 T two\n",
        );
        assert_eq!(f.stext(), Some(0xffffffff81000000));
        assert_eq!(f.symbol(0xffffffff81001010), Some("do_one"));
        // A data symbol does not shadow the function before it.
        assert_eq!(f.symbol(0xffffffff81002010), Some("do_one"));
        assert_eq!(f.symbol(0xffffffff81003004), Some("two"));
        assert_eq!(f.symbol(0x1000), None);
        assert!(f.has_kallsyms());
        // A clone shares the parsed table.
        assert_eq!(f.clone().symbol(0xffffffff81003000), Some("two"));
    }

    const SWITCH: &str = "name: sched_switch
ID: 316
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;

print fmt: \"prev_comm=%s\", REC->prev_comm
";

    #[test]
    fn parses_a_format_and_renders_raw() {
        let f = parse_format(SWITCH, "sched").unwrap();
        assert_eq!(f.id, 316);
        assert_eq!(f.fields.len(), 7);
        assert_eq!(f.common.len(), 4);
        let comm = f.field("prev_comm").unwrap();
        assert!(comm.string);
        assert_eq!(comm.layout, Layout::Array { elem: 1 });
        let mut d = vec![0u8; 64];
        d[0..2].copy_from_slice(&316u16.to_le_bytes());
        d[8..12].copy_from_slice(b"bash");
        d[24..28].copy_from_slice(&42i32.to_le_bytes());
        d[28..32].copy_from_slice(&120i32.to_le_bytes());
        d[32..40].copy_from_slice(&1i64.to_le_bytes());
        d[40..47].copy_from_slice(b"swapper");
        d[60..64].copy_from_slice(&(-1i32).to_le_bytes());
        let mut fm = Formats::new(Endian::default(), 8);
        fm.add(f.clone());
        let mut out = String::new();
        fm.render_raw(&f, &d, &mut out);
        assert_eq!(
            out,
            "prev_comm=bash prev_pid=42 prev_prio=120 prev_state=1 next_comm=swapper next_pid=0 next_prio=-1"
        );
        let mut s = Interner::new();
        let k = Decoder::new().decode(&fm, &f, &d, &mut s);
        match k {
            Kind::SchedSwitch {
                prev_pid,
                prev_state,
                next_prio,
                ..
            } => {
                assert_eq!(prev_pid, 42);
                assert_eq!(next_prio, -1);
                assert!(!prev_state.is_runnable());
            }
            _ => panic!("{k:?}"),
        }
    }

    #[test]
    fn data_loc_and_rel_loc() {
        let dl =
            parse_field("\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;").unwrap();
        assert_eq!(dl.layout, Layout::DataLoc { elem: 1 });
        assert!(dl.string);
        let mut d = vec![0u8; 32];
        // 5 bytes ("eth0\0") at offset 20.
        d[12..16].copy_from_slice(&((5u32 << 16) | 20).to_le_bytes());
        d[20..25].copy_from_slice(b"eth0\0");
        assert_eq!(dl.str(&d, Endian::default()), b"eth0");
        let rl =
            parse_field("\tfield:__rel_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;").unwrap();
        // Relative to the end of the field (16): offset 4 → 20.
        d[12..16].copy_from_slice(&((5u32 << 16) | 4).to_le_bytes());
        assert_eq!(rl.str(&d, Endian::default()), b"eth0");
        let arr =
            parse_field("\tfield:unsigned long args[6];\toffset:16;\tsize:48;\tsigned:0;").unwrap();
        assert_eq!(arr.layout, Layout::Array { elem: 8 });
        assert!(!arr.string);
        assert!(parse_field("\tfield:garbage").is_none());
    }

    #[test]
    fn print_fmt_conversions_pair_with_fields_like_libtraceevent() {
        // Fields hrtimer, now, function; print fmt order hrtimer, function, now. `now`
        // takes the last conversion, after which `function` takes none (hex, not %ps).
        let text = "name: hrtimer_expire_entry\nID: 9\nformat:\n\tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:s64 now;\toffset:16;\tsize:8;\tsigned:1;\n\tfield:void * function;\toffset:24;\tsize:8;\tsigned:0;\n\nprint fmt: \"hrtimer=%p function=%ps now=%llu\", REC->hrtimer, REC->function, (unsigned long long) REC->now\n";
        let f = parse_format(text, "timer").unwrap();
        assert_eq!(
            f.field("hrtimer").unwrap().spec.as_ref().unwrap().conv,
            b'p'
        );
        assert_eq!(f.field("now").unwrap().spec.as_ref().unwrap().conv, b'u');
        assert!(f.field("function").unwrap().spec.is_none());
        let w = "name: sched_wakeup\nID: 3\nformat:\n\tfield:int target_cpu;\toffset:8;\tsize:4;\tsigned:1;\n\nprint fmt: \"target_cpu=%03d x=0x%lx\", REC->target_cpu, REC->x\n";
        let f = parse_format(w, "sched").unwrap();
        let mut d = vec![0u8; 12];
        d[8..12].copy_from_slice(&7i32.to_le_bytes());
        let mut out = String::new();
        f.fields[0].render(&d, Endian::default(), &|_| None, &mut out);
        assert_eq!(out, "007");
        let c = conversions(b"a=0x%lx b=%-5s c=%*d %%");
        assert!(c[0].as_ref().unwrap().after_0x);
        assert_eq!(c[0].as_ref().unwrap().bits, 64);
        assert!(c[1].as_ref().unwrap().left);
        assert!(c[2].is_none(), "`*` takes an argument");
        assert_eq!(c.len(), 4);
        assert_eq!(
            split_args("REC->a, __print_flags(REC->f, \"|\", { 1, \"A\" }), (long)REC->b - REC->c"),
            vec![
                "REC->a",
                "__print_flags(REC->f, \"|\", { 1, \"A\" })",
                "(long)REC->b - REC->c"
            ]
        );
        assert_eq!(direct_field("(void *)REC->ip"), Some("ip"));
        assert_eq!(direct_field("(long)REC->b - REC->c"), None);
    }

    #[test]
    fn big_endian_numbers() {
        let e = Endian { big: true };
        assert_eq!(e.u32(&[0, 0, 1, 2], 0), Some(258));
        assert_eq!(e.uint(&[1, 2], 0, 2), Some(258));
        assert_eq!(e.u64(&[0; 4], 0), None);
    }
}
