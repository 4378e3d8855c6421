//! What a trace holds for a selector to name: every event name, how often it occurs, the
//! fields a selector can test on it, and the tasks that emit it most. An agent (or a
//! person) reads this before writing `--from`/`--to`.

use super::check::field_names;
use crate::event::{Event, Interner, Kind, Sym};
use crate::read::{self, Merged, OpenOptions, Opened, ReadError};
use crate::syscalls::Arch;
use rustc_hash::FxHashMap;
use serde::Serialize;

/// Tasks listed per event, busiest first.
const TOP_COMMS: usize = 3;

/// The events of one name in the traces.
#[derive(Debug, Clone, Serialize)]
pub struct EventInfo {
    /// The name as a selector writes it (`sched_switch`, `sys_enter_write`; a raw
    /// syscall under its name on the trace's architecture).
    pub name: String,
    /// How many there are.
    pub count: u64,
    /// The fields a selector can test, from the first such event (the event's own, then
    /// `comm pid tid tgid cpu` and the like).
    pub fields: Vec<String>,
    /// The task names that emit it most, `[comm, count]`.
    pub top_comms: Vec<(String, u64)>,
}

/// Every event name of the traces, most frequent first.
#[derive(Debug, Clone, Serialize)]
pub struct Catalog {
    /// Events read.
    pub events: u64,
    /// Distinct names.
    pub names: usize,
    /// One entry per name, most frequent first (ties by name).
    pub by_name: Vec<EventInfo>,
}

#[derive(Default)]
struct Acc {
    count: u64,
    fields: Vec<String>,
    comms: FxHashMap<Sym, u64>,
}

/// Reads the inputs (merged by time) and lists what each event name holds.
pub fn catalog(inputs: Opened, opts: &OpenOptions) -> Result<Catalog, ReadError> {
    let (_, sources) = inputs.into_parts();
    let arch = opts
        .arch
        .or_else(|| sources.iter().find_map(|s| s.arch()))
        .unwrap_or_default();
    let mut strings = Interner::new();
    let mut merged = Merged::new(sources);
    let mut acc: FxHashMap<String, Acc> = FxHashMap::default();
    let mut n = 0u64;
    while let Some((_, e)) = merged.next_ref(&mut strings)? {
        n += 1;
        read::Progress::tick(&opts.progress, n);
        let a = acc.entry(name_of(e, &strings, arch)).or_default();
        if a.count == 0 {
            a.fields = field_names(e, &strings, arch);
        }
        a.count += 1;
        *a.comms.entry(e.comm).or_default() += 1;
    }
    let mut by_name: Vec<EventInfo> = acc
        .into_iter()
        .map(|(name, a)| {
            let mut comms: Vec<(String, u64)> = a
                .comms
                .into_iter()
                .map(|(c, k)| (strings.get(c).to_string(), k))
                .collect();
            comms.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
            comms.truncate(TOP_COMMS);
            EventInfo {
                name,
                count: a.count,
                fields: a.fields,
                top_comms: comms,
            }
        })
        .collect();
    by_name.sort_by(|x, y| y.count.cmp(&x.count).then_with(|| x.name.cmp(&y.name)));
    Ok(Catalog {
        events: n,
        names: by_name.len(),
        by_name,
    })
}

/// The name a selector gives `e`: raw syscalls by their number's name.
fn name_of(e: &Event, s: &Interner, arch: Arch) -> String {
    match &e.kind {
        Kind::SysEnter { nr, .. } => match arch.name(*nr) {
            Some(n) => format!("sys_enter_{n}"),
            None => "sys_enter".into(),
        },
        Kind::SysExit { nr, .. } => match arch.name(*nr) {
            Some(n) => format!("sys_exit_{n}"),
            None => "sys_exit".into(),
        },
        _ => e.name().render(s),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_frob_example_lists_its_selectors_events_and_fields() {
        let p =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/frob.dat.zst");
        let opts = Default::default();
        let c = super::catalog(crate::read::Opened::files(&[p], &opts).unwrap(), &opts).unwrap();
        let w = c
            .by_name
            .iter()
            .find(|e| e.name == "sys_enter_write")
            .unwrap();
        assert!(w.fields.iter().any(|f| f == "count"), "{:?}", w.fields);
        assert!(w.fields.iter().any(|f| f == "comm"), "{:?}", w.fields);
        assert!(
            w.top_comms.iter().any(|(c, _)| c == "frobnicator"),
            "{:?}",
            w.top_comms
        );
        assert_eq!(c.by_name.iter().map(|e| e.count).sum::<u64>(), c.events);
    }

    #[test]
    fn a_cancelled_read_stops_with_its_own_error() {
        let p =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/frob.dat.zst");
        let progress = std::sync::Arc::new(crate::read::Progress::default());
        progress
            .cancel
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let opts = crate::read::OpenOptions {
            progress: Some(progress),
            ..Default::default()
        };
        let at = || crate::read::Opened::files(std::slice::from_ref(&p), &opts).unwrap();
        let r = super::catalog(at(), &opts);
        assert!(matches!(r, Err(crate::read::ReadError::Cancelled)), "{r:?}");
    }
}
