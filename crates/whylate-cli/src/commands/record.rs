//! `whylate record`.

use crate::args::RecordArgs;
use crate::output::{usage, EXIT_INTERRUPTED};
use crate::paths::Paths;
use std::process::ExitCode;

/// Records until the command ends, --duration passes or Ctrl-C.
pub fn run(a: RecordArgs) -> anyhow::Result<ExitCode> {
    let RecordArgs {
        events,
        duration,
        buffer_kb,
        output,
        reset,
        json,
        timerlat,
        command,
    } = a;
    let timerlat = timerlat.tracer();
    // The timerlat tracer's record is its text, not a trace.dat.
    let output = match timerlat.is_some() && output.as_os_str() == "trace.dat" {
        true => std::path::PathBuf::from("timerlat.txt"),
        false => output,
    };
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use whylate_live::record::{self, RecordOptions};
    if reset {
        return match record::reset() {
            Ok(v) if v.is_empty() => {
                println!("no instance left by a killed whylate run");
                Ok(ExitCode::SUCCESS)
            }
            Ok(v) => {
                println!("removed {}", v.join(", "));
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => usage(&e.to_string()),
        };
    }
    if let Err(e) = Paths::default().recording("-o", Some(&output)).check() {
        return usage(&e);
    }
    let duration = duration.map(std::time::Duration::from_nanos);
    if timerlat.is_some() {
        // Checked before any signal handler: a kernel without the tracer gets one line.
        if let Err(e) = record::check_timerlat() {
            return usage(&e.to_string());
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    if let Some(tl) = timerlat {
        if !command.is_empty() {
            return usage("--timerlat records the whole machine: give --duration, or stop it with Ctrl-C, instead of a command");
        }
        return match record::record_timerlat(tl, duration, &output, &stop) {
            Ok(p) => {
                println!(
                    "wrote {} (timerlat text); `whylate {}` explains it",
                    p.display(),
                    p.display()
                );
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => usage(&e.to_string()),
        };
    }
    // Ctrl-C while tracing a command exits 130 as the shell's own convention, whatever
    // the command made of its SIGINT (without a command Ctrl-C is the normal stop: 0).
    let interrupted = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, interrupted.clone())?;
    let opts = RecordOptions {
        events,
        duration,
        buffer_kb,
        output,
        command,
        command_stdout: None,
    };
    if opts.command.is_empty() && opts.duration.is_none() && !json {
        eprintln!("whylate: recording until Ctrl-C");
    }
    let r = match record::record(&opts, stop) {
        Ok(r) => r,
        Err(e) => return usage(&e.to_string()),
    };
    if json {
        serde_json::to_writer_pretty(std::io::stdout().lock(), &r)?;
        println!();
    } else {
        for s in &r.stale_instances {
            eprintln!(
                "whylate: tracefs instance {s} was left by a killed run; `whylate record --reset` removes it"
            );
        }
        println!(
            "{}: {} events in {}, {} lost, {} bytes ({} clock, {} tracepoints)",
            r.output.display(),
            r.events,
            whylate::units::dur(r.duration_ns),
            r.lost,
            r.bytes,
            r.clock,
            r.tracepoints.len()
        );
        for c in &r.cpus {
            println!("  cpu {}: {} events, {} lost", c.cpu, c.events, c.lost);
        }
        println!("  recorder CPU time {}", whylate::units::dur(r.cpu_time_ns));
        if let Some(s) = &r.suggestion {
            println!("  {s}");
        }
    }
    let ctrl_c = interrupted.load(std::sync::atomic::Ordering::Acquire);
    Ok(match r.exit_code {
        Some(_) if ctrl_c => ExitCode::from(EXIT_INTERRUPTED),
        Some(c) => ExitCode::from(c.clamp(0, 255) as u8),
        None => ExitCode::SUCCESS,
    })
}
