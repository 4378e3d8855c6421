//! The docs as a contract: the columns docs/parquet.md lists (the typed tables, each
//! table's bullets) and docs/fleet.md declares, with their types where given, are in the
//! files whylate writes, and every column of those files is documented; the schema version
//! the docs state is the one in the files.
//! The files are read with the `parquet` crate's own schema reader, not whylate's tables.

use parquet::arrow::parquet_to_arrow_schema;
use parquet::file::reader::{FileReader, SerializedFileReader};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use whylate_fleet::synth;

/// Per table: column -> Arrow type name, and the key-value metadata, of the files written.
type Written = BTreeMap<String, (BTreeMap<String, String>, BTreeMap<String, String>)>;

fn repo() -> PathBuf {
    synth::repo_from(env!("CARGO_MANIFEST_DIR"))
}

/// Writes one host per example (so every table has rows) and reads one file per table.
fn written(dir: &Path) -> Written {
    let reports = synth::explain_examples(&repo()).unwrap();
    let n = synth::examples().len();
    let hosts: Vec<synth::Host> = (0..n)
        .map(|i| synth::Host {
            example: i,
            ..synth::plan(n)[i].clone()
        })
        .collect();
    synth::write_fleet(dir, &reports, &hosts).unwrap();
    let mut out = Written::new();
    for t in whylate_fleet::TABLES {
        let mut cols = BTreeMap::new();
        let mut meta = BTreeMap::new();
        for f in files(&dir.join(t)) {
            let r = SerializedFileReader::new(std::fs::File::open(&f).unwrap()).unwrap();
            let fm = r.metadata().file_metadata();
            let schema = parquet_to_arrow_schema(fm.schema_descr(), None).unwrap();
            for field in schema.fields() {
                assert!(
                    field.is_nullable(),
                    "{t}.{}: docs say every column is nullable",
                    field.name()
                );
                cols.insert(field.name().clone(), field.data_type().to_string());
            }
            for kv in fm.key_value_metadata().into_iter().flatten() {
                meta.insert(kv.key.clone(), kv.value.clone().unwrap_or_default());
            }
        }
        assert!(!cols.is_empty(), "no {t} files written");
        out.insert(t.to_string(), (cols, meta));
    }
    out
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for h in std::fs::read_dir(dir).unwrap() {
        for d in std::fs::read_dir(h.unwrap().path()).unwrap() {
            for f in std::fs::read_dir(d.unwrap().path()).unwrap() {
                v.push(f.unwrap().path());
            }
        }
    }
    v
}

/// The Arrow type a documented type means.
fn arrow_type(doc: &str) -> &'static str {
    match doc.trim() {
        "string" | "varchar" => "Utf8",
        "int" | "bigint" => "Int64",
        "double" => "Float64",
        "boolean" | "bool" => "Boolean",
        other => panic!("a documented type no engine names: {other:?}"),
    }
}

/// Backticked words of `text`.
fn ticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The rows of the markdown table under `heading`: (columns, their types).
fn typed_rows(md: &str, heading: &str) -> Vec<(String, &'static str)> {
    let body = md
        .split(heading)
        .nth(1)
        .unwrap_or_else(|| panic!("no {heading}"));
    let mut out = Vec::new();
    for line in body.lines().skip_while(|l| !l.starts_with('|')) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (names, types) = (ticked(cells[1]), cells[2]);
        if names.is_empty() {
            continue;
        }
        let types: Vec<&str> = types.split(',').collect();
        assert_eq!(names.len(), types.len(), "{line}");
        out.extend(names.into_iter().zip(types.into_iter().map(arrow_type)));
    }
    out
}

/// Each table's section of parquet.md: from `**`T`**` to the next table or heading.
fn sections(md: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut cur: Option<(String, String)> = None;
    for line in md.lines() {
        let starts = line.starts_with("**`") || line.starts_with("## ");
        if starts {
            if let Some((t, body)) = cur.take() {
                out.insert(t, body);
            }
            if let Some(rest) = line.strip_prefix("**`") {
                let t = rest.split('`').next().unwrap().to_string();
                cur = Some((t, String::new()));
            }
        }
        if let Some((_, body)) = cur.as_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out.extend(cur);
    out
}

#[test]
fn the_docs_name_the_columns_and_version_the_files_have() {
    let tmp = tempfile::tempdir().unwrap();
    let w = written(tmp.path());
    let parquet_md = std::fs::read_to_string(repo().join("docs/parquet.md")).unwrap();
    let fleet_md = std::fs::read_to_string(repo().join("docs/fleet.md")).unwrap();

    let common = typed_rows(&parquet_md, "## Columns every table starts with");
    let culprit = typed_rows(&parquet_md, "## Culprit columns");
    assert_eq!(common.len(), 4);
    let culprit_tables = ["links", "blame", "causes"];
    for (t, (cols, _)) in &w {
        for (c, ty) in &common {
            assert_eq!(cols.get(c).map(String::as_str), Some(*ty), "{t}.{c}");
        }
        if culprit_tables.contains(&t.as_str()) {
            for (c, ty) in &culprit {
                assert_eq!(cols.get(c).map(String::as_str), Some(*ty), "{t}.{c}");
            }
        }
        for ty in cols.values() {
            assert!(!ty.starts_with("UInt"), "{t}: docs say integers are signed");
        }
    }

    // Every column of a table's files is named in its section (or the shared tables).
    let sections = sections(&parquet_md);
    let shared: BTreeSet<&str> = common
        .iter()
        .chain(&culprit)
        .map(|c| c.0.as_str())
        .collect();
    for (t, (cols, _)) in &w {
        let body = sections
            .get(t)
            .unwrap_or_else(|| panic!("docs/parquet.md: no section for {t}"));
        let named: BTreeSet<String> = ticked(body).into_iter().collect();
        for c in cols.keys() {
            assert!(
                shared.contains(c.as_str()) || named.contains(c),
                "docs/parquet.md: the {t} section does not name its column `{c}`"
            );
        }
        // And the other way: a bullet that opens with a name opens with a column.
        for line in body.lines().filter(|l| l.starts_with("- `")) {
            let c = &ticked(line)[0];
            assert!(
                cols.contains_key(c),
                "docs/parquet.md: the {t} section lists `{c}`, which its files do not have: {line}"
            );
        }
    }

    // fleet.md's Trino declaration of causes: every column, with its type, and no other.
    let decl = fleet_md
        .split("CREATE TABLE hive.whylate.causes (")
        .nth(1)
        .and_then(|s| s.split(")\nWITH").next())
        .expect("docs/fleet.md declares causes for Trino");
    let mut declared = BTreeMap::new();
    for pair in decl.split(',') {
        let mut it = pair.split_whitespace();
        let (name, ty) = (it.next().unwrap(), it.next().unwrap());
        declared.insert(name.to_string(), arrow_type(ty).to_string());
    }
    let mut causes = w["causes"].0.clone();
    causes.insert("host".into(), "Utf8".into());
    causes.insert("date".into(), "Utf8".into());
    assert_eq!(
        declared, causes,
        "docs/fleet.md's Trino columns against the causes files"
    );

    // The tables fleet.md says its queries read exist.
    let named = fleet_md
        .split("reads the\ntables by their names (")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .expect("docs/fleet.md names the tables its queries read");
    for t in ticked(named) {
        assert!(
            w.contains_key(&t),
            "docs/fleet.md names a table `{t}` that is not written"
        );
    }

    // The schema version: the docs' number, each file's metadata, the traces column.
    let stated: String = parquet_md
        .split("The layout this page describes is schema version ")
        .nth(1)
        .expect("docs/parquet.md states the schema version")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    for (t, (_, meta)) in &w {
        assert_eq!(meta.get("whylate.schema_version"), Some(&stated), "{t}");
        assert_eq!(meta.get("whylate.table"), Some(t), "{t}");
    }
    assert_eq!(stated, whylate_fleet::SCHEMA_VERSION.to_string());
}
