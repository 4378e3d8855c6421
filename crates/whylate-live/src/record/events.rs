//! Which tracepoints to enable: presets and names (with the kernel's `[filter]`) resolved against the machine's tracefs, with the closest names for a typo, and the filter that keeps the recorder's own syscalls out.

use super::error::RecordError;
use std::fs::{self};
use std::path::Path;

/// Event presets: name → tracepoints (`system:event`).
pub const PRESETS: &[(&str, &[&str])] = &[
    (
        "sched",
        &[
            "sched:sched_switch",
            "sched:sched_waking",
            "sched:sched_wakeup",
            "sched:sched_wakeup_new",
            "sched:sched_migrate_task",
            "sched:sched_process_fork",
            "sched:sched_process_exec",
            "sched:sched_process_exit",
        ],
    ),
    (
        "irq",
        &[
            "irq:irq_handler_entry",
            "irq:irq_handler_exit",
            "irq:softirq_raise",
            "irq:softirq_entry",
            "irq:softirq_exit",
            "irq:tasklet_entry",
            "irq:tasklet_exit",
        ],
    ),
    (
        "wq",
        &[
            "workqueue:workqueue_queue_work",
            "workqueue:workqueue_activate_work",
            "workqueue:workqueue_execute_start",
            "workqueue:workqueue_execute_end",
        ],
    ),
    (
        "syscalls",
        &["raw_syscalls:sys_enter", "raw_syscalls:sys_exit"],
    ),
    // Messages printk logs: the console printing them with interrupts off is a latency
    // cause (seeds 001 and 004), and a quiet system logs few.
    ("printk", &["printk:console"]),
    (
        "timer",
        &[
            "timer:hrtimer_start",
            "timer:hrtimer_cancel",
            "timer:hrtimer_expire_entry",
            "timer:hrtimer_expire_exit",
            "timer:timer_start",
            "timer:timer_cancel",
            "timer:timer_expire_entry",
            "timer:timer_expire_exit",
        ],
    ),
];

/// The default preset: the union of all of them.
pub const DEFAULT_PRESET: &str = "latency";

/// Splits `-e` values at commas outside `[...]` (a filter may hold commas).
pub(super) fn split_events(names: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for n in names {
        let (mut depth, mut cur) = (0i32, String::new());
        for ch in n.chars() {
            match ch {
                '[' => depth += 1,
                ']' => depth -= 1,
                ',' if depth <= 0 => {
                    out.push(std::mem::take(&mut cur).trim().to_string());
                    continue;
                }
                _ => {}
            }
            cur.push(ch);
        }
        out.push(cur.trim().to_string());
    }
    out.retain(|s| !s.is_empty());
    out
}

/// An event to enable: system, name, and the kernel filter from `EVENT[FILTER]`.
pub(super) type Wanted = (String, String, Option<String>);

/// Resolves presets and names to `system:event` (with any `[filter]`), checking each
/// exists. A filtered event named after a preset's replaces the preset's unfiltered one.
pub(super) fn resolve_events(root: &Path, names: &[String]) -> Result<Vec<Wanted>, RecordError> {
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_string();
    let mut want: Vec<String> = Vec::new();
    let names: Vec<String> = if names.is_empty() {
        vec![DEFAULT_PRESET.to_string()]
    } else {
        split_events(names)
    };
    for n in &names {
        if n == DEFAULT_PRESET {
            for (_, evs) in PRESETS {
                want.extend(evs.iter().map(|s| s.to_string()));
            }
        } else if let Some((_, evs)) = PRESETS.iter().find(|(p, _)| p == n) {
            want.extend(evs.iter().map(|s| s.to_string()));
        } else {
            want.push(n.clone());
        }
    }
    let events = root.join("events");
    let mut out: Vec<Wanted> = Vec::new();
    for w in want {
        let (w, filter) = match w.split_once('[') {
            Some((name, rest)) => {
                let f = rest.strip_suffix(']').unwrap_or(rest).trim().to_string();
                (name.trim().to_string(), (!f.is_empty()).then_some(f))
            }
            None => (w, None),
        };
        let (sys, ev) = match w.split_once([':', '/']) {
            Some((s, e)) => (s.to_string(), e.to_string()),
            None => {
                // A bare name: find its system.
                let mut found = None;
                if let Ok(rd) = fs::read_dir(&events) {
                    for s in rd.flatten() {
                        if s.path().join(&w).join("format").is_file() {
                            found = Some(s.file_name().to_string_lossy().to_string());
                            break;
                        }
                    }
                }
                match found {
                    Some(s) => (s, w.clone()),
                    None => {
                        return Err(unknown_event(&events, &w, &kernel));
                    }
                }
            }
        };
        if !events.join(&sys).join(&ev).join("format").is_file() {
            // Presets name events some kernels lack (tasklet_* before 5.x): skip those.
            if PRESETS
                .iter()
                .any(|(_, evs)| evs.contains(&format!("{sys}:{ev}").as_str()))
            {
                continue;
            }
            return Err(unknown_event(&events, &w, &kernel));
        }
        match out.iter_mut().find(|o| o.0 == sys && o.1 == ev) {
            Some(o) => {
                if filter.is_some() {
                    o.2 = filter;
                }
            }
            None => out.push((sys, ev, filter)),
        }
    }
    Ok(out)
}

pub(super) fn unknown_event(events: &Path, name: &str, kernel: &str) -> RecordError {
    let bare = name.rsplit([':', '/']).next().unwrap_or(name);
    let mut all = Vec::new();
    if let Ok(rd) = fs::read_dir(events) {
        for s in rd.flatten() {
            if let Ok(evs) = fs::read_dir(s.path()) {
                for e in evs.flatten() {
                    if e.path().is_dir() {
                        let n = e.file_name().to_string_lossy().to_string();
                        all.push((n, s.file_name().to_string_lossy().to_string()));
                    }
                }
            }
        }
    }
    let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
    let close: Vec<String> = whylate::suggest::closest(bare, names, 5)
        .into_iter()
        .filter_map(|n| {
            all.iter()
                .find(|(e, _)| *e == n)
                .map(|(e, s)| format!("{s}:{e}"))
        })
        .collect();
    let hint = if close.is_empty() {
        format!(
            "; presets: {}, {DEFAULT_PRESET}; all events: ls {}",
            PRESETS.iter().map(|p| p.0).collect::<Vec<_>>().join(", "),
            events.display()
        )
    } else {
        format!("; did you mean {}?", close.join(", "))
    };
    RecordError::UnknownEvent {
        name: name.into(),
        kernel: kernel.into(),
        hint,
    }
}

/// Keeps the recorder's own syscalls (page reads, /proc rescans) out of the syscall
/// events: each page read would otherwise write events into the next page, and a /proc
/// rescan thousands. Only syscall events are filtered: the recorder's scheduling and the
/// interrupts that land on it stay traced, so its cost to the workload is measured.
pub(super) fn exclude_own_syscalls(inst: &Path, events: &[Wanted], own: &[i32]) {
    let not_us = own
        .iter()
        .map(|t| format!("common_pid != {t}"))
        .collect::<Vec<_>>()
        .join(" && ");
    for (sys, ev, filter) in events {
        if sys != "syscalls" && sys != "raw_syscalls" {
            continue;
        }
        let f = match filter {
            Some(f) => format!("({f}) && {not_us}"),
            None => not_us.clone(),
        };
        // Best effort: the user's own filter was checked when it was set.
        let _ = fs::write(inst.join(format!("events/{sys}/{ev}/filter")), f);
    }
}
