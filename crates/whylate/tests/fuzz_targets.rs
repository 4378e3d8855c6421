//! The fuzz targets (`fuzz/`, built with nightly and cargo-fuzz, not by this workspace)
//! are checked against the registry of readers here: every format `--format` accepts has
//! its target, written the one way every target is, so a new reader without one fails
//! this test rather than going unfuzzed.

use std::path::Path;

#[test]
fn every_reader_has_its_fuzz_target() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let manifest = std::fs::read_to_string(fuzz.join("Cargo.toml")).unwrap();
    let mut want = vec!["sniff".to_string()];
    for f in whylate::read::formats() {
        let name = f.arg().replace('-', "_");
        let path = fuzz.join(format!("fuzz_targets/{name}.rs"));
        let body = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: no fuzz target for {}: {e}", path.display(), f.arg()));
        let expected = format!(
            "#![no_main]\nmod common;\nlibfuzzer_sys::fuzz_target!(|data: &[u8]| common::run(data, Some(common::format(\"{}\"))));\n",
            f.arg()
        );
        assert_eq!(body, expected, "{}", path.display());
        let bin = format!("[[bin]]\nname = \"{name}\"\npath = \"fuzz_targets/{name}.rs\"\n");
        assert!(
            manifest.contains(&bin),
            "fuzz/Cargo.toml has no [[bin]] {name}"
        );
        want.push(name);
    }
    // And no target for a reader that is gone.
    let mut have: Vec<String> = std::fs::read_dir(fuzz.join("fuzz_targets"))
        .unwrap()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".rs")
                .map(str::to_string)
        })
        .filter(|n| n != "common")
        .collect();
    have.sort();
    want.sort();
    assert_eq!(have, want);
}
