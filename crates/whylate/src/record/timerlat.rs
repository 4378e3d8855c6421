//! `record --timerlat`: whether this kernel has the timerlat tracer.

use super::error::{check_root, RecordError};
use std::path::Path;

/// Whether the tracefs at `root` offers the timerlat tracer (`available_tracers`);
/// `kernel` names the kernel in the error.
pub fn timerlat_in(root: &Path, kernel: &str) -> Result<(), RecordError> {
    let p = root.join("available_tracers");
    let tracers = std::fs::read_to_string(&p).map_err(super::error::ioe(&p))?;
    if tracers.split_whitespace().any(|t| t == "timerlat") {
        return Ok(());
    }
    Err(RecordError::NoTimerlat {
        kernel: kernel.to_string(),
        tracers: tracers.split_whitespace().collect::<Vec<_>>().join(" "),
    })
}

/// Checks that this machine can record with the timerlat tracer: root, tracefs, the
/// tracer (else [`RecordError::NoTimerlat`], naming `CONFIG_TIMERLAT_TRACER`).
pub fn check_timerlat() -> Result<(), RecordError> {
    check_root()?;
    let m = super::tracefs::mount_tracefs()?;
    timerlat_in(&m.root, &super::dat::uname())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_without_the_tracer_gets_one_line_naming_its_option() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("available_tracers"), "blk function nop\n").unwrap();
        let e = timerlat_in(d.path(), "6.1.0").unwrap_err().to_string();
        assert_eq!(e, "this kernel (6.1.0) has no timerlat tracer (available_tracers: blk function nop): it needs CONFIG_TIMERLAT_TRACER=y; a timerlat trace recorded elsewhere reads with `whylate FILE`");
        assert!(!e.contains('\n'));
        std::fs::write(d.path().join("available_tracers"), "timerlat osnoise nop\n").unwrap();
        assert!(timerlat_in(d.path(), "6.1.0").is_ok());
    }
}
