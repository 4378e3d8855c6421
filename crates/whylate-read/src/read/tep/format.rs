//! Event `format` files parsed: each field's name, offset, size, sign and layout, and
//! `print fmt` read (never evaluated) for the conversion of each field it prints
//! directly.

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

pub(super) fn num_after(s: &str, key: &str) -> Option<i64> {
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
pub(super) fn conversions(fmt: &[u8]) -> Vec<Option<Spec>> {
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
pub(super) fn split_args(s: &str) -> Vec<&str> {
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
pub(super) fn direct_field(arg: &str) -> Option<&str> {
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
pub(super) fn attach_specs(print_fmt: &str, fields: &mut [Field]) {
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
