//! `whylate fleet`: findings of many hosts, ranked by the embedded engine (built with
//! the `fleet` feature; without it the command says how to get it).

use crate::args::FleetArgs;
use crate::output::{usage, Out};
use std::process::ExitCode;

/// What a build without the engine says to `whylate fleet` (checked by a unit test in
/// every build, so CI need not build the default binary only to run it).
#[cfg_attr(feature = "fleet", allow(dead_code))]
const NOT_BUILT: &str = "fleet: this build has no query engine (DataFusion); build it with `cargo install --locked --path crates/whylate-cli --features fleet`";

/// Ranks causes across the findings under `a.paths`.
#[cfg(not(feature = "fleet"))]
pub fn run(a: FleetArgs, out: &Out) -> anyhow::Result<ExitCode> {
    let _ = (a, out);
    usage(NOT_BUILT)
}

/// Ranks causes across the findings under `a.paths`.
#[cfg(feature = "fleet")]
pub fn run(a: FleetArgs, out: &Out) -> anyhow::Result<ExitCode> {
    // One line, exit 2: a findings file that does not fit its table is bad input.
    let r = match report(&a) {
        Ok(r) => r,
        Err(e) => return usage(&e),
    };
    if let Some(engine) = a.engine.filter(|_| a.sql_only) {
        let queries: Vec<(&str, &str)> = (r.sql.iter())
            .map(|q| (q.name.as_str(), q.sql.as_str()))
            .collect();
        let roots = expand(&a.paths).map_err(|e| anyhow::anyhow!(e))?;
        return match whylate_fleet::dialect::script(engine, &roots, &queries) {
            Ok(s) => {
                for n in &s.notes {
                    eprintln!("whylate: {n}");
                }
                out.text(&s.text)?;
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => usage(&e),
        };
    }
    if let Some(path) = &a.html {
        let page = r.render_html();
        std::fs::write(path, &page).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        eprintln!(
            "whylate: wrote {} ({} KiB)",
            path.display(),
            page.len().div_ceil(1024)
        );
    }
    if a.json {
        out.json(&r)?;
    } else {
        let mut text = r.render_text(&out.paint());
        if a.sql {
            for q in &r.sql {
                text.push_str(&format!("\n-- {}\n{};\n", q.name, q.sql));
            }
        }
        out.text(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The fleet report over `a.paths` (globs expanded), or the one-line reason it cannot be
/// made (shared with the MCP `fleet` tool).
#[cfg(feature = "fleet")]
pub fn report(a: &FleetArgs) -> Result<whylate_fleet::report::FleetReport, String> {
    use crate::paths::Paths;
    use whylate_fleet::engine::Engine;
    use whylate_fleet::query::FleetOptions;
    let roots = expand(&a.paths)?;
    let checked = roots
        .iter()
        .fold(Paths::default(), |p, r| p.reads(Some(r)))
        .file("--html", a.html.as_deref())
        .check();
    checked?;
    let eng = Engine::open(&roots).map_err(|e| e.to_string())?;
    let o = FleetOptions {
        by: a.by.clone(),
        deadline_ns: a.deadline,
        mode: a.mode.clone(),
        top: a.top,
    };
    whylate_fleet::report::fleet(&eng, &o).map_err(|e| e.to_string())
}

#[cfg(feature = "fleet")]
use std::path::PathBuf;

/// Paths as given; a glob (`*`, `?`, `[`) is expanded one path component at a time, in
/// name order. A glob that matches nothing is an error naming it.
#[cfg(feature = "fleet")]
fn expand(args: &[String]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for a in args {
        if !a.contains(['*', '?', '[']) {
            out.push(PathBuf::from(a));
            continue;
        }
        let mut cur = vec![if a.starts_with('/') {
            PathBuf::from("/")
        } else {
            PathBuf::from(".")
        }];
        for part in a.split('/').filter(|p| !p.is_empty() && *p != ".") {
            cur = step(&cur, part)?;
        }
        if cur.is_empty() {
            return Err(format!("{a}: the pattern matches no directory"));
        }
        out.extend(cur);
    }
    Ok(out)
}

#[cfg(feature = "fleet")]
fn step(cur: &[PathBuf], part: &str) -> Result<Vec<PathBuf>, String> {
    if !part.contains(['*', '?', '[']) {
        return Ok(cur
            .iter()
            .map(|c| c.join(part))
            .filter(|p| p.exists())
            .collect());
    }
    let m = globset::Glob::new(part)
        .map_err(|e| format!("{part}: {e}"))?
        .compile_matcher();
    let mut next = Vec::new();
    for c in cur {
        let Ok(rd) = std::fs::read_dir(c) else {
            continue;
        };
        let mut names: Vec<PathBuf> = rd
            .filter_map(Result::ok)
            .filter(|e| m.is_match(e.file_name()))
            .map(|e| e.path())
            .collect();
        names.sort();
        next.extend(names);
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_build_without_the_engine_says_how_to_get_it() {
        assert!(super::NOT_BUILT.contains("--features fleet"));
        assert!(super::NOT_BUILT.starts_with("fleet: this build has no query engine"));
    }
}
