//! Memory per tool call. One server answers many calls, and one call on a hostile or just
//! huge input must not take the server down with it (two concurrent `stats` on one file
//! once took 7 GB and the server was killed). The heap is counted (a thin wrapper over the
//! system allocator, counting only once the server runs), calls that read run one at a
//! time ([`Gate`]), and a call whose heap grows past its budget is stopped like a
//! cancelled one and answered with a refusal that says so.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering::Relaxed};

/// The system allocator, counting the bytes live once [`start`] was called.
pub struct Counting;

#[global_allocator]
static ALLOC: Counting = Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);

#[inline]
fn count(bytes: isize) {
    // One relaxed load when the server is not running: the CLI's own commands pay nothing.
    if COUNTING.load(Relaxed) {
        LIVE.fetch_add(bytes, Relaxed);
    }
}

// SAFETY: every call goes to the system allocator unchanged; only sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            count(l.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            count(l.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(p, l) };
        count(-(l.size() as isize));
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            count(new as isize - l.size() as isize);
        }
        q
    }
}

/// Starts counting (bytes allocated before are not known: counts are taken as
/// differences).
pub fn start() {
    COUNTING.store(true, Relaxed);
}

/// Heap bytes live, as counted since [`start`] (a difference of two is what a span of
/// time allocated and kept).
pub fn live() -> isize {
    LIVE.load(Relaxed)
}

/// The default budget of one call: a quarter of the machine's memory, from 256 MiB to
/// 4 GiB.
pub fn default_budget_mib() -> u64 {
    let total_kib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let l = m.lines().find(|l| l.starts_with("MemTotal:"))?;
            l.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .unwrap_or(4 << 20);
    (total_kib / 1024 / 4).clamp(256, 4096)
}

/// The refusal of a call stopped at its budget.
pub fn refusal(tool: &str, budget_mib: u64) -> String {
    format!(
        "refused: {tool} needed more than {budget_mib} MiB of memory, the most one call may \
         take here (whylate mcp --call-memory); it was stopped and the server goes on. Read \
         fewer files or a shorter trace, or start the server with a larger --call-memory"
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn allocations_are_counted_once_started() {
        super::start();
        // The count is the process's: other tests free on their threads meanwhile (memory
        // allocated before counting started, too), which lowers it. A try that no free
        // crossed sees the whole vector; one of a hundred is enough.
        let seen = (0..100).any(|_| {
            let before = super::live();
            let v = std::hint::black_box(vec![0u8; 1 << 20]);
            let grew = super::live() - before >= 1 << 20;
            drop(v);
            grew
        });
        assert!(seen);
        assert!(super::refusal("stats", 64).contains("more than 64 MiB"));
        assert!((256..=4096).contains(&super::default_budget_mib()));
    }
}
