//! A progress bar on stderr while inputs are read: shown only on a terminal, only after a
//! second, never with --quiet.

use std::path::PathBuf;
use whylate::read::OpenOptions;

/// A progress bar on stderr while inputs are read: shown only on a terminal, only after a
/// second, never with --quiet. Dropping it clears the bar.
pub struct ProgressGuard {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for ProgressGuard {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Options that report progress, and the bar that shows it (dropping it clears it).
pub fn with_progress(
    mut open: OpenOptions,
    files: &[PathBuf],
    quiet: bool,
) -> (OpenOptions, Option<ProgressGuard>) {
    use std::io::IsTerminal;
    use std::sync::atomic::Ordering::Relaxed;
    if quiet || !std::io::stderr().is_terminal() {
        return (open, None);
    }
    let p = std::sync::Arc::new(whylate::read::Progress::default());
    open.progress = Some(p.clone());
    let total: u64 = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let thread = std::thread::spawn(move || {
        let t0 = std::time::Instant::now();
        let mut bar: Option<indicatif::ProgressBar> = None;
        while !stop2.load(Relaxed) {
            std::thread::sleep(std::time::Duration::from_millis(100));
            if t0.elapsed() < std::time::Duration::from_secs(1) {
                continue;
            }
            let b = bar.get_or_insert_with(|| {
                let b = indicatif::ProgressBar::with_draw_target(
                    Some(total.max(1)),
                    indicatif::ProgressDrawTarget::stderr_with_hz(10),
                )
                .with_elapsed(t0.elapsed());
                // Bytes give a bar for text inputs; a binary one (read out of order)
                // shows its events and the time only.
                let template = if p.binary.load(Relaxed) {
                    "{spinner} {msg} {elapsed}"
                } else {
                    "{spinner} {msg} [{wide_bar}] {percent}% {elapsed}"
                };
                b.set_style(
                    indicatif::ProgressStyle::with_template(template)
                        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                        .progress_chars("=> "),
                );
                b
            });
            b.set_position(p.bytes.load(Relaxed).min(total));
            let ev = p.events.load(Relaxed);
            // A long trace read in passes (explain's windows): which one.
            let pass = match (p.pass.load(Relaxed), p.passes.load(Relaxed)) {
                (k, n) if n > 1 => format!("pass {k} of {n}, "),
                _ => String::new(),
            };
            b.set_message(if p.read_done.load(Relaxed) {
                format!("{pass}{:.1} M events read; analysing", ev as f64 / 1e6)
            } else {
                format!("{pass}reading: {:.1} M events", ev as f64 / 1e6)
            });
        }
        if let Some(b) = bar {
            b.finish_and_clear();
        }
    });
    (
        open,
        Some(ProgressGuard {
            stop,
            thread: Some(thread),
        }),
    )
}
