//! Syscall numbers and argument names, so `raw_syscalls:sys_enter NR 1 (...)` can be
//! selected as `sys_enter_write[fd=7]`.

#[allow(missing_docs)]
#[rustfmt::skip]
mod table {
    include!("syscalls_table.rs");
}

/// The syscall table a trace uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Arch {
    /// x86_64 (the default: what this tool is developed and tested on).
    #[default]
    X86_64,
    /// arm64 (the asm-generic table).
    Aarch64,
}

impl Arch {
    /// The table of the machine whylate runs on (for traces it records itself).
    pub fn native() -> Arch {
        if cfg!(target_arch = "aarch64") {
            Arch::Aarch64
        } else {
            Arch::X86_64
        }
    }

    /// `x86_64` / `aarch64`.
    pub fn label(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
        }
    }

    /// Parses `x86_64` / `aarch64` (`arm64`).
    pub fn parse(s: &str) -> Option<Arch> {
        match s {
            "x86_64" | "amd64" | "x86-64" => Some(Arch::X86_64),
            "aarch64" | "arm64" => Some(Arch::Aarch64),
            _ => None,
        }
    }

    fn table(self) -> &'static [&'static str] {
        match self {
            Arch::X86_64 => &table::X86_64,
            Arch::Aarch64 => &table::AARCH64,
        }
    }

    /// Every syscall name of this architecture.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        self.table().iter().copied().filter(|n| !n.is_empty())
    }

    /// The name of syscall `nr`.
    pub fn name(self, nr: i64) -> Option<&'static str> {
        let t = self.table();
        usize::try_from(nr)
            .ok()
            .and_then(|i| t.get(i))
            .copied()
            .filter(|s| !s.is_empty())
    }

    /// The number of syscall `name`.
    pub fn number(self, name: &str) -> Option<i64> {
        self.table()
            .iter()
            .position(|&n| n == name)
            .map(|i| i as i64)
    }
}

/// Argument names of common syscalls, as the kernel's syscalls:sys_enter_* events name
/// them, so raw_syscalls arguments can be filtered by name.
pub fn arg_names(name: &str) -> &'static [&'static str] {
    match name {
        "read" | "write" => &["fd", "buf", "count"],
        "pread64" | "pwrite64" => &["fd", "buf", "count", "pos"],
        "readv" | "writev" => &["fd", "vec", "vlen"],
        "ioctl" => &["fd", "cmd", "arg"],
        "openat" => &["dfd", "filename", "flags", "mode"],
        "open" => &["filename", "flags", "mode"],
        "close" => &["fd"],
        "poll" => &["ufds", "nfds", "timeout_msecs"],
        "ppoll" => &["ufds", "nfds", "tsp", "sigmask", "sigsetsize"],
        "select" | "pselect6" => &["n", "inp", "outp", "exp", "tvp"],
        "epoll_wait" | "epoll_pwait" => &["epfd", "events", "maxevents", "timeout"],
        "sendto" => &["fd", "buff", "len", "flags", "addr", "addr_len"],
        "recvfrom" => &["fd", "ubuf", "size", "flags", "addr", "addr_len"],
        "sendmsg" | "recvmsg" => &["fd", "msg", "flags"],
        "nanosleep" => &["rqtp", "rmtp"],
        "clock_nanosleep" => &["which_clock", "flags", "rqtp", "rmtp"],
        "futex" => &["uaddr", "op", "val", "utime", "uaddr2", "val3"],
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_tables() {
        assert_eq!(Arch::X86_64.name(0), Some("read"));
        assert_eq!(Arch::X86_64.name(1), Some("write"));
        assert_eq!(Arch::X86_64.number("openat"), Some(257));
        assert_eq!(Arch::Aarch64.name(63), Some("read"));
        assert_eq!(Arch::Aarch64.name(64), Some("write"));
        assert_eq!(Arch::Aarch64.number("openat"), Some(56));
        assert_eq!(Arch::Aarch64.name(79), Some("newfstatat"));
        assert_eq!(Arch::X86_64.name(-1), None);
    }
}
