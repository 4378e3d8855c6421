//! Kernel stack traces saved in a trace: what the `stacktrace` option, `print_stack` and
//! the timerlat/osnoise tracers add after an event. The kernel prints one as a
//! `<stack trace>` line and ` => function` lines (kernel/trace/trace_output.c,
//! `trace_stack_print`); trace-cmd report as `kernel_stack: <stack trace >` and
//! `=> function (address)` lines; a trace.dat holds an `ftrace:kernel_stack` record of
//! addresses. Every reader gives one as a generic event named [`EVENT`] whose fields are
//! the frames, innermost first, each as `=> name` ([`push_frame`], [`frames`]); it
//! belongs to the event before it on its CPU.

/// The name of a stack's event (trace-cmd's name for the kernel's entry).
pub const EVENT: &str = "kernel_stack";

/// The function of one frame line (`=> name`, `=> name+0x1f/0x40`, `=> name (ffff..)`,
/// `=> name <ffff..>`), offsets and addresses dropped; None when it is not a frame line.
pub fn frame(line: &str) -> Option<&str> {
    let f = line.trim().strip_prefix("=>")?.trim();
    let end = f.find([' ', '+', '\t']).unwrap_or(f.len());
    let name = &f[..end];
    (!name.is_empty()).then_some(name)
}

/// Appends a frame to a stack's fields.
pub fn push_frame(fields: &mut String, name: &str) {
    if !fields.is_empty() {
        fields.push(' ');
    }
    fields.push_str("=> ");
    fields.push_str(name);
}

/// The frames of a stack event's fields, innermost first.
pub fn frames(fields: &str) -> impl Iterator<Item = &str> {
    fields.split("=>").map(str::trim).filter(|f| !f.is_empty())
}

/// Is `line` (trimmed) the header of a stack block: ftrace's `<stack trace>` or
/// trace-cmd's `kernel_stack: <stack trace >`?
pub fn is_header(line: &[u8]) -> bool {
    let t = line.trim_ascii();
    let t = match t.strip_prefix(b"kernel_stack:") {
        Some(r) => r.trim_ascii(),
        None => t,
    };
    t == b"<stack trace>" || t == b"<stack trace >"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_in_every_form() {
        assert_eq!(frame(" => native_safe_halt"), Some("native_safe_halt"));
        assert_eq!(frame("=> do_idle+0x1f/0x40"), Some("do_idle"));
        assert_eq!(frame("=> schedule (ffffffff8105e1a7)"), Some("schedule"));
        assert_eq!(
            frame(" => ksys_write <ffffffff81234567>"),
            Some("ksys_write")
        );
        assert_eq!(frame(" => "), None);
        assert_eq!(frame("foo"), None);
        let mut f = String::new();
        push_frame(&mut f, "a");
        push_frame(&mut f, "b");
        assert_eq!(f, "=> a => b");
        assert_eq!(frames(&f).collect::<Vec<_>>(), ["a", "b"]);
        assert!(is_header(b" <stack trace>"));
        assert!(is_header(b"kernel_stack:         <stack trace >"));
        assert!(!is_header(b"kernel_stack: x"));
    }
}
