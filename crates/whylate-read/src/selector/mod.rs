//! Event selectors for cycles: `EVENT[FIELD OP VALUE,...]`.
//!
//! `sys_enter_write[comm=frobnicator,count=7]`, `sys_exit_read[ret>0]`,
//! `irq:irq_handler_entry[irq=16]`, `sched_wakeup[comm~kworker/*]`, `marker[msg~start*]`.
//! EVENT is a tracepoint name with or without its system; `sys_enter_NAME`/`sys_exit_NAME`
//! also match raw_syscalls events whose number is NAME on the trace's architecture.
//! Fields: the event's own (they win), then `comm pid tid tgid cpu`; syscall arguments by
//! name (raw syscalls: names of common syscalls, or `arg0`..`arg5`) and `ret` on exit;
//! `path`, the file behind the event's `fd` (see [`crate::fdpath`]).

pub mod catalog;
mod check;
mod expr;
mod plan;

pub use check::{no_key_field, Names, Seen};
pub use expr::{key_of, Op, Selector, SelectorError};
