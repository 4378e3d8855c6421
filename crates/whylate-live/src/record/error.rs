//! Why recording failed, and the checks made before tracefs is touched.

use std::io;
use std::path::{Path, PathBuf};

/// Why recording failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// Not root.
    #[error("recording (whylate record, watch, demo) needs root: tracefs and the per-CPU ring buffers are root-only. Run it with sudo, or analyse a trace you already have (whylate FILE)")]
    NotRoot,
    /// No tracefs.
    #[error("tracefs is not available: {0}")]
    NoTracefs(String),
    /// An event name that does not exist here.
    #[error("event `{name}` does not exist on this kernel ({kernel}){hint}")]
    UnknownEvent {
        /// As given.
        name: String,
        /// Kernel release.
        kernel: String,
        /// A close match or where to look.
        hint: String,
    },
    /// A filter the kernel refused.
    #[error(
        "event `{event}`: the kernel refused the filter `{filter}` ({why}); its fields: {fields}"
    )]
    BadFilter {
        /// `system:event`.
        event: String,
        /// As given.
        filter: String,
        /// The kernel's reason.
        why: String,
        /// The event's own fields, to write a filter with.
        fields: String,
    },
    /// An I/O error on a named path.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The kernel has no timerlat tracer.
    #[error("this kernel ({kernel}) has no timerlat tracer (available_tracers: {tracers}): it needs CONFIG_TIMERLAT_TRACER=y; a timerlat trace recorded elsewhere reads with `whylate FILE`")]
    NoTimerlat {
        /// Kernel release.
        kernel: String,
        /// The tracers it has.
        tracers: String,
    },
    /// The command could not be started.
    #[error("cannot run `{cmd}`: {source}")]
    Spawn {
        /// The command.
        cmd: String,
        /// The cause.
        source: io::Error,
    },
}

pub(super) fn ioe(path: &Path) -> impl FnOnce(io::Error) -> RecordError + '_ {
    move |source| RecordError::Io {
        path: path.to_path_buf(),
        source,
    }
}

pub(super) fn check_root() -> Result<(), RecordError> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err(RecordError::NotRoot);
    }
    Ok(())
}
