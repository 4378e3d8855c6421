//! What a stack saved at an interrupt says about the code it interrupted: the stack
//! starts in the tracer and the interrupt's entry path (`timerlat_irq`,
//! `hrtimer_interrupt`, `sysvec_apic_timer_interrupt`, `asm_*`, `el1_*`...); the first
//! frames past them are where the CPU was. When interrupts were off, that is where they
//! were turned back on, so it names the code that held the timer's interrupt off.

/// How many frames past the entry path are named.
const SHOWN: usize = 3;

/// Frame name prefixes of the tracers and the interrupt entry path (x86 and arm64).
const ENTRY: [&str; 24] = [
    "asm_",
    "sysvec_",
    "__sysvec_",
    "timerlat_",
    "osnoise_",
    "hrtimer_interrupt",
    "__hrtimer_run_queues",
    "__run_hrtimer",
    "handle_",
    "__handle_",
    "generic_handle_",
    "irq_",
    "__irq_",
    "do_IRQ",
    "common_interrupt",
    "el0_",
    "el1_",
    "gic_handle",
    "arch_timer_handler",
    "__ftrace_trace_stack",
    "__trace_stack",
    "trace_",
    "ftrace_",
    "call_on_irq_stack",
];

/// Is `f` a frame of a tracer or of the interrupt entry path?
fn is_entry(f: &str) -> bool {
    ENTRY.iter().any(|p| f.starts_with(p))
}

/// The first frames (innermost first) past the tracer and the interrupt entry path;
/// frames the trace could not name (`0x...`) are left out. Empty when the stack has
/// nothing past them.
pub(in crate::explain) fn interrupted<'a>(frames: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    frames
        .skip_while(|f| is_entry(f))
        .filter(|f| !f.starts_with("0x"))
        .take(SHOWN)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_entry_path() {
        let x86 = [
            "timerlat_irq",
            "__hrtimer_run_queues",
            "hrtimer_interrupt",
            "__sysvec_apic_timer_interrupt",
            "sysvec_apic_timer_interrupt",
            "asm_sysvec_apic_timer_interrupt",
            "_raw_spin_unlock_irqrestore",
            "0xffffffffc0a01234",
            "hog_ioctl",
            "__x64_sys_ioctl",
            "do_syscall_64",
        ];
        assert_eq!(
            interrupted(x86.into_iter()),
            [
                "_raw_spin_unlock_irqrestore",
                "hog_ioctl",
                "__x64_sys_ioctl"
            ]
        );
        assert!(interrupted(["timerlat_irq", "asm_sysvec_x"].into_iter()).is_empty());
    }
}
