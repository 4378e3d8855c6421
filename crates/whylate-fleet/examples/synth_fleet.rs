//! Writes the synthetic fleet's findings (see `whylate_fleet::synth`) for benchmarks:
//! `cargo run --release -p whylate-fleet --example synth_fleet -- DIR HOSTS`.
#![allow(clippy::print_stdout)]

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().ok_or("usage: synth_fleet DIR HOSTS")?);
    let hosts: usize = args.next().ok_or("usage: synth_fleet DIR HOSTS")?.parse()?;
    let repo = whylate_fleet::synth::repo_from(env!("CARGO_MANIFEST_DIR"));
    let reports = whylate_fleet::synth::explain_examples(&repo)?;
    let w = whylate_fleet::synth::write_fleet(&dir, &reports, &whylate_fleet::synth::plan(hosts))?;
    println!(
        "{{\"hosts\": {hosts}, \"files\": {}, \"rows\": {}, \"bytes\": {}}}",
        w.files, w.rows, w.bytes
    );
    Ok(())
}
