//! Kernel symbols for binary traces whose events carry code addresses (work functions,
//! hrtimer callbacks, tasklets): where they come from, and whether this machine's own
//! `/proc/kallsyms` may stand in for the recording machine's.
//!
//! trace.dat carries the recording machine's symbols; perf.data does not. Using this
//! machine's symbols for a perf.data is only right when it runs the very kernel image the
//! trace was recorded on, at the same load address: the same kernel build-id (a release
//! string such as `6.18.44` is shared by many builds) and the same `_text` (KASLR moves
//! it on every boot). Anything else would name the wrong functions, so whylate leaves the
//! addresses in hex and says how to resolve them (`--kallsyms FILE`).

use super::ReadError;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

/// Symbols given by the user (`--kallsyms FILE`): the file's name (for notes), its text,
/// and the text parsed once for every trace opened with them (`watch` opens a window each
/// tick with the same symbols: parsing 5 MB of text again was three quarters of a tick).
#[derive(Clone, Debug)]
pub struct Given {
    name: String,
    text: Arc<[u8]>,
    /// `text` parsed, when a trace first asked for a symbol (private with `text`: a
    /// text changed under it would be served another text's symbols).
    pub(crate) parsed: Arc<std::sync::OnceLock<Syms>>,
}

impl Given {
    /// The symbols of `text`, named `name` in notes.
    pub fn new(name: impl Into<String>, text: Arc<[u8]>) -> Given {
        Given {
            name: name.into(),
            text,
            parsed: Arc::default(),
        }
    }

    /// The file's name, for notes.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its text.
    pub fn text(&self) -> &Arc<[u8]> {
        &self.text
    }
}

/// Kernel symbols (address, name) sorted by address, and the address of `_stext` (for
/// `caller_offs`-style fields).
#[derive(Clone, Debug, Default)]
pub(crate) struct Syms {
    pub(crate) list: std::sync::Arc<[(u64, Box<str>)]>,
    pub(crate) stext: Option<u64>,
}

impl Syms {
    /// The code symbols of `/proc/kallsyms` text (data symbols would shadow functions).
    pub(crate) fn parse(text: &[u8]) -> Syms {
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

/// Where a trace's kernel symbols came from.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "source", content = "detail")]
pub enum SymbolSource {
    /// The trace carries them (trace.dat).
    Trace,
    /// Given with `--kallsyms FILE`.
    Given(String),
    /// This machine's `/proc/kallsyms`: it runs the recording kernel at the same address.
    ThisMachine,
    /// None: code addresses stay hex; why this machine's symbols were not used.
    Unresolved(String),
}

/// What identifies a running kernel image: its GNU build-id and where `_text` was loaded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelId {
    /// The GNU build-id, as hex.
    pub build_id: Option<String>,
    /// The address of `_text` (differs per boot under KASLR).
    pub text: Option<u64>,
}

impl KernelId {
    /// This machine's kernel: build-id from `/sys/kernel/notes`, `_text` from
    /// `/proc/kallsyms`. Read once per process.
    pub fn here() -> &'static KernelId {
        static HERE: std::sync::OnceLock<KernelId> = std::sync::OnceLock::new();
        HERE.get_or_init(|| KernelId {
            build_id: std::fs::read("/sys/kernel/notes")
                .ok()
                .and_then(|n| gnu_build_id(&n)),
            text: kallsyms_text_addr(),
        })
    }
}

/// True for a perf event (its attr's name, None when unnamed) whose records carry no
/// kernel code address whylate would name: system calls, the scheduler's typed events,
/// interrupt and softirq entries and exits, perf's `dummy`. Untyped events are rendered
/// field by field, and a field may be a function (`sched_kthread_work_execute_start`).
pub fn names_no_code(event: Option<&str>) -> bool {
    const TYPED: &[&str] = &[
        "sched:sched_switch",
        "sched:sched_waking",
        "sched:sched_wakeup",
        "sched:sched_wakeup_new",
        "sched:sched_migrate_task",
        "sched:sched_process_fork",
        "sched:sched_process_exec",
        "sched:sched_process_exit",
        "irq:irq_handler_entry",
        "irq:irq_handler_exit",
        "irq:softirq_raise",
        "irq:softirq_entry",
        "irq:softirq_exit",
        "raw_syscalls:sys_enter",
        "raw_syscalls:sys_exit",
    ];
    let Some(e) = event else {
        return false;
    };
    TYPED.contains(&e) || e.starts_with("syscalls:sys_") || e.starts_with("dummy")
}

/// Decides whether this machine's symbols may resolve a trace recorded on `rec`; the
/// error says why not, in words for a note.
pub fn host_may_resolve(rec: &KernelId, here: &KernelId) -> Result<(), String> {
    let Some(want) = &rec.build_id else {
        return Err("the trace does not record its kernel's build-id".into());
    };
    match &here.build_id {
        None => return Err("this machine's kernel build-id is unreadable".into()),
        Some(have) if have != want => {
            return Err(format!(
                "recorded on kernel build-id {}, this machine runs {}",
                short(want),
                short(have)
            ))
        }
        Some(_) => {}
    }
    match (rec.text, here.text) {
        (Some(a), Some(b)) if a == b => Ok(()),
        (Some(a), Some(b)) => Err(format!(
            "same kernel build, loaded at {a:#x} then and {b:#x} now (another boot: KASLR)"
        )),
        (None, _) => Err("the trace does not record where the kernel was loaded".into()),
        (_, None) => Err("this machine's kernel address is unreadable (kptr_restrict?)".into()),
    }
}

fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

/// The GNU build-id in an ELF note section (`/sys/kernel/notes`), as hex.
pub fn gnu_build_id(notes: &[u8]) -> Option<String> {
    const NT_GNU_BUILD_ID: u32 = 3;
    let u32_at = |o: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(notes.get(o..o + 4)?.try_into().ok()?))
    };
    let pad = |n: usize| n.div_ceil(4) * 4;
    let mut o = 0;
    while o + 12 <= notes.len() {
        let (namesz, descsz, ty) = (u32_at(o)? as usize, u32_at(o + 4)? as usize, u32_at(o + 8)?);
        let name = notes.get(o + 12..o + 12 + namesz)?;
        let desc_at = o + 12 + pad(namesz);
        let desc = notes.get(desc_at..desc_at + descsz)?;
        if ty == NT_GNU_BUILD_ID && name.starts_with(b"GNU") {
            return Some(desc.iter().map(|b| format!("{b:02x}")).collect());
        }
        o = desc_at + pad(descsz);
    }
    None
}

/// `_text` from this machine's `/proc/kallsyms` (zero when addresses are hidden: None).
fn kallsyms_text_addr() -> Option<u64> {
    let f = std::fs::File::open("/proc/kallsyms").ok()?;
    let mut head = Vec::new();
    // `_text` is among the first lines; stop early rather than read 10 MB.
    f.take(64 << 10).read_to_end(&mut head).ok()?;
    text_addr(&head)
}

/// The address of `_text` in kallsyms text (0 when hidden: kptr_restrict).
pub fn text_addr(kallsyms: &[u8]) -> Option<u64> {
    for line in kallsyms.split(|&b| b == b'\n').take(4096) {
        let line = std::str::from_utf8(line).ok()?;
        let mut it = line.split_whitespace();
        if let (Some(a), Some(_), Some("_text")) = (it.next(), it.next(), it.next()) {
            return u64::from_str_radix(a, 16).ok().filter(|&a| a != 0);
        }
    }
    None
}

/// Whether symbols given with `--kallsyms` (named `name`) can belong to a trace recorded
/// on `rec`: the kernel's load address the trace recorded against the given `_text`, and
/// for this machine's own `/proc/kallsyms` the build-id too. Symbols of another build or
/// boot name the wrong functions with full confidence, which is worse than hex.
pub fn given_matches(rec: &KernelId, name: &str, text: &[u8]) -> Result<(), String> {
    let here = Path::new(name).canonicalize().ok();
    if here.as_deref() == Some(Path::new("/proc/kallsyms")) {
        let have = KernelId::here();
        if let (Some(want), Some(have)) = (&rec.build_id, &have.build_id) {
            if want != have {
                return Err(format!(
                    "{name} is this machine's kernel (build-id {}), but the trace was recorded on build-id {}: its symbols would name the wrong functions; give the recording machine's kallsyms",
                    short(have),
                    short(want)
                ));
            }
        }
    }
    match (rec.text, text_addr(text)) {
        (Some(a), Some(b)) if a != b => Err(format!(
            "the trace's kernel was loaded at {a:#x}, but {name} has _text at {b:#x}: these symbols are of another kernel or boot (KASLR) and would name the wrong functions"
        )),
        _ => Ok(()),
    }
}

/// Reads a `/proc/kallsyms` copy (plain or .gz/.zst/.xz) for `--kallsyms FILE`, checking
/// that it is one: the first line that is not one names its line and what was found.
pub fn load_file(path: &Path) -> Result<Arc<[u8]>, ReadError> {
    let f = std::fs::File::open(path).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    load_opened(path, f)
}

/// [`load_file`] of a file the caller opened (`path` names it in messages).
pub fn load_opened(path: &Path, f: std::fs::File) -> Result<Arc<[u8]>, ReadError> {
    let io_err = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let (mut rd, _, _) = super::decompress::open(path, Box::new(f)).map_err(io_err)?;
    let mut text = Vec::new();
    rd.read_to_end(&mut text).map_err(io_err)?;
    check(&text).map_err(|(line, why)| ReadError::Strict {
        path: path.to_path_buf(),
        line,
        why,
        text: String::from_utf8_lossy(nth_line(&text, line))
            .chars()
            .take(80)
            .collect(),
    })?;
    Ok(text.into())
}

fn nth_line(text: &[u8], line: u64) -> &[u8] {
    text.split(|c| *c == b'\n')
        .nth(line.saturating_sub(1) as usize)
        .unwrap_or_default()
}

/// A kallsyms text has lines `ADDRESS TYPE NAME [MODULE]` with nonzero addresses.
fn check(text: &[u8]) -> Result<(), (u64, String)> {
    let mut seen = 0u64;
    let mut nonzero = false;
    for (i, l) in text.split(|c| *c == b'\n').enumerate() {
        if l.is_empty() {
            continue;
        }
        let mut it = l.split(|c| *c == b' ');
        let addr = it.next().and_then(crate::event::parse_hex);
        let ty = it.next().filter(|t| t.len() == 1);
        let name = it.next().filter(|n| !n.is_empty());
        let (Some(a), Some(_), Some(_)) = (addr, ty, name) else {
            return Err((
                i as u64 + 1,
                "expected a /proc/kallsyms line (`ffffffff81000000 T _stext`)".into(),
            ));
        };
        nonzero |= a != 0;
        seen += 1;
        if seen >= 1000 && nonzero {
            break;
        }
    }
    match (seen, nonzero) {
        (0, _) => Err((1, "empty: expected /proc/kallsyms lines".into())),
        (_, false) => Err((
            1,
            "every address is 0 (copied without root, or kptr_restrict hid them)".into(),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_symbols_are_parsed_once_for_every_trace_opened_with_them() {
        let text = b"ffffffff81000000 T _stext\nffffffff81000100 t frob_work\n";
        let given = Given::new("k.txt", Arc::from(&text[..]));
        let fmts = || {
            let mut f = crate::read::tep::Formats::default();
            f.load_given(&given);
            f
        };
        let (a, b) = (fmts(), fmts());
        assert!(
            given.parsed.get().is_none(),
            "parsed before any symbol was asked for"
        );
        assert_eq!(a.symbol(0xffffffff81000104), Some("frob_work"));
        assert_eq!(b.symbol(0xffffffff81000104), Some("frob_work"));
        let parsed = given.parsed.get().expect("parsed at the first symbol");
        // Both traces share the one parse (the list is not copied).
        assert!(Arc::ptr_eq(&parsed.list, &b.syms().list));
        assert!(Arc::ptr_eq(&parsed.list, &a.syms().list));
        assert_eq!(a.stext(), Some(0xffffffff81000000));
        // Symbols loaded after the given ones no longer use the shared parse.
        let mut c = fmts();
        c.load_kallsyms(b"ffffffff81000100 t other_work\n");
        assert_eq!(c.symbol(0xffffffff81000104), Some("other_work"));
        assert_eq!(given.parsed.get().unwrap().list.len(), 2);
    }

    fn id(b: &str, t: u64) -> KernelId {
        KernelId {
            build_id: Some(b.into()),
            text: Some(t),
        }
    }

    #[test]
    fn host_symbols_need_the_same_build_and_the_same_load_address() {
        let rec = id("e4f18d9dc1d0e6fc", 0xffffffff81000000);
        assert_eq!(host_may_resolve(&rec, &rec.clone()), Ok(()));
        // A different build of the same release string: the case a release compare missed.
        let e = host_may_resolve(&rec, &id("85c7e4e2ed76f441", 0xffffffff81000000));
        assert!(e.unwrap_err().contains("e4f18d9dc1d0"));
        // The same build, another boot under KASLR.
        let e = host_may_resolve(&rec, &id("e4f18d9dc1d0e6fc", 0xffffffff9a000000));
        assert!(e.unwrap_err().contains("KASLR"));
        let none = KernelId::default();
        assert!(host_may_resolve(&none, &rec).is_err());
        assert!(host_may_resolve(&rec, &none).is_err());
    }

    /// Only events typed without a code address skip reading the symbols ahead.
    #[test]
    fn events_without_code_addresses_are_named_exactly() {
        for e in [
            "raw_syscalls:sys_enter",
            "syscalls:sys_exit_read",
            "sched:sched_switch",
            "irq:softirq_entry",
            "dummy:HG",
        ] {
            assert!(names_no_code(Some(e)), "{e}");
        }
        for e in [
            "sched:sched_kthread_work_execute_start",
            "workqueue:workqueue_execute_start",
            "timer:hrtimer_expire_entry",
            "irq:tasklet_entry",
            "cpu-clock",
        ] {
            assert!(!names_no_code(Some(e)), "{e}");
        }
        assert!(!names_no_code(None));
    }

    #[test]
    fn build_id_from_an_elf_note_section() {
        // A Xen note first, then the GNU build-id note, as /sys/kernel/notes has them.
        let mut n = Vec::new();
        for (name, ty, desc) in [
            (&b"Xen\0"[..], 6u32, &[0u8; 4][..]),
            (&b"GNU\0"[..], 3, &[0x85, 0xc7, 0xe4, 0xe2][..]),
        ] {
            n.extend((name.len() as u32).to_ne_bytes());
            n.extend((desc.len() as u32).to_ne_bytes());
            n.extend(ty.to_ne_bytes());
            n.extend(name);
            n.extend(desc);
        }
        assert_eq!(gnu_build_id(&n).as_deref(), Some("85c7e4e2"));
        assert_eq!(gnu_build_id(&n[..20]), None);
    }

    #[test]
    fn a_kallsyms_file_is_checked() {
        assert!(check(b"ffffffff81000000 T _stext\nffffffff81000010 t foo\t[mod]\n").is_ok());
        let e = check(b"ffffffff81000000 T _stext\nhello world\n").unwrap_err();
        assert_eq!(e.0, 2);
        assert!(check(b"0000000000000000 T _stext\n")
            .unwrap_err()
            .1
            .contains("0"));
        assert_eq!(check(b"").unwrap_err().0, 1);
    }
}
