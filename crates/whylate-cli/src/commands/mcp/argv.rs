//! A tool call's arguments as the command line the CLI parses: each argument `name` is
//! the option `--name`, paths are resolved under the roots first, and clap checks the
//! values, so a bad value gets the same words as on the command line.

use super::roots::Roots;
use super::tools::Offer;
use crate::args::{Cli, Cmd};
use clap::Parser;
use serde_json::{Map, Value};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use whylate::read::Held;

/// Arguments a tool reads itself (paging, which miss): never passed to the CLI.
pub const LOCAL: [&str; 4] = ["offset", "limit", "index", "at_ns"];

/// Arguments that name trace files (or fleet's findings directories), positional on the
/// command line, in this order.
const POSITIONAL: [&str; 4] = ["files", "a", "b", "paths"];

/// The command a tool's arguments are parsed as (`list_events` reads as `stats` does,
/// `explain_miss` explains as `explain` does).
fn command_of(tool: &str) -> &str {
    match tool {
        "list_events" => "stats",
        "explain_miss" => "explain",
        t => t,
    }
}

/// A tool call parsed: the command, and what its paths were opened as (read those, never
/// the paths).
pub struct Parsed {
    /// The command the CLI would run.
    pub cmd: Cmd,
    /// The trace files (and `--kallsyms`), by their canonical paths.
    pub held: Held,
    /// `fleet`'s findings directories: (canonical path, descriptor).
    pub dirs: Vec<(PathBuf, OwnedFd)>,
    /// `record`'s output, written through its directory's descriptor.
    pub output: Option<super::roots::NewFile>,
}

/// The parsed command for `tool` called with `args`, or the error in the CLI's words.
pub fn parse(
    tool: &str,
    args: &Map<String, Value>,
    roots: &Roots,
    offer: Offer,
) -> Result<Parsed, String> {
    let mut held = Held::default();
    let mut dirs = Vec::new();
    let mut output = None;
    let known = super::tools::properties(tool, offer).ok_or_else(|| missing(tool))?;
    let mut argv = vec!["whylate".to_string(), command_of(tool).to_string()];
    for name in POSITIONAL {
        if let Some(v) = args.get(name).filter(|_| known.iter().any(|k| k == name)) {
            for s in strings(name, v)? {
                let p = match name {
                    "paths" => {
                        let (p, fd) = roots.resolve_dir(&s)?;
                        dirs.push((p.clone(), fd));
                        p
                    }
                    _ => {
                        let (p, f) = roots.resolve(&s)?;
                        held.insert(p.clone(), f);
                        p
                    }
                };
                argv.push(p.display().to_string());
            }
        }
    }
    for (name, v) in args {
        if POSITIONAL.contains(&name.as_str()) && known.contains(name) {
            continue;
        }
        if !known.contains(name) {
            let close = whylate::suggest::closest(name, known.iter().map(String::as_str), 3);
            return Err(format!(
                "`{tool}` takes no argument `{name}`{}; it takes: {}",
                whylate::suggest::did_you_mean(&close),
                known.join(", ")
            ));
        }
        if LOCAL.contains(&name.as_str()) {
            continue;
        }
        let flag = format!("--{}", name.replace('_', "-"));
        if let Value::Bool(b) = v {
            if *b {
                argv.push(flag);
            }
            continue;
        }
        for s in strings(name, v)? {
            let s = match name.as_str() {
                "kallsyms" => {
                    let (p, f) = roots.resolve(&s)?;
                    held.insert(p.clone(), f);
                    p.display().to_string()
                }
                "output" => {
                    let n = roots.resolve_new(&s)?;
                    let to = n.write_to.display().to_string();
                    output = Some(n);
                    to
                }
                _ => s,
            };
            // `--opt=value`: a value that starts with `-` stays a value.
            argv.push(format!("{flag}={s}"));
        }
    }
    match Cli::try_parse_from(&argv) {
        Ok(Cli { cmd: Some(cmd), .. }) => Ok(Parsed {
            cmd,
            held,
            dirs,
            output,
        }),
        Ok(_) => Err(format!("`{tool}`: no command parsed")),
        Err(e) => Err(crate::output::clap_message(&e)),
    }
}

/// Why `tool` is not offered.
fn missing(tool: &str) -> String {
    match tool {
        "record" => "`record` is offered only when the server is started with --allow-record \
            (recording needs root)"
            .into(),
        "fleet" => "`fleet` needs a build with the query engine (`--features fleet`)".into(),
        _ => format!("no tool `{tool}`"),
    }
}

/// An argument's values as text: a string or number is one, an array each of its items,
/// null none.
fn strings(name: &str, v: &Value) -> Result<Vec<String>, String> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Number(n) => Ok(vec![n.to_string()]),
        Value::Bool(b) => Ok(vec![b.to_string()]),
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                _ => Err(format!("`{name}`: expected strings, found {i}")),
            })
            .collect(),
        Value::Object(_) => Err(format!(
            "`{name}`: expected a string or a list, found an object"
        )),
    }
}

/// A local (non-CLI) integer argument, or None when absent.
pub fn local_u64(args: &Map<String, Value>, name: &str) -> Result<Option<u64>, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("`{name}`: expected an integer 0 or more, found {v}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn roots() -> (tempfile::TempDir, Roots) {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("t.dat"), "x").unwrap();
        let r = Roots::new(&[d.path().to_path_buf()]).unwrap();
        (d, r)
    }

    fn call(tool: &str, v: Value) -> Result<Cmd, String> {
        let (_d, r) = roots();
        parse(tool, v.as_object().unwrap(), &r, Offer { record: true }).map(|p| p.cmd)
    }

    fn err(tool: &str, v: Value) -> String {
        match call(tool, v) {
            Ok(_) => panic!("{tool}: parsed"),
            Err(e) => e,
        }
    }

    #[test]
    fn arguments_are_the_clis_options() {
        let c = call(
            "explain",
            json!({"files": ["t.dat"], "from": "-x", "to": ["b"], "deadline": "3.5ms", "top": 2, "limit": 9}),
        )
        .unwrap();
        let Cmd::Explain(a) = c else { panic!() };
        assert_eq!(a.mode.from.as_deref(), Some("-x"));
        assert_eq!(a.mode.deadline, Some(3_500_000));
        assert_eq!(a.mode.top, 2);
        assert!(a.files[0].is_absolute());
    }

    #[test]
    fn a_bad_value_is_said_as_the_cli_says_it() {
        let e = err(
            "explain",
            json!({"files": ["t.dat"], "timer": true, "deadline": "3"}),
        );
        assert!(
            e.contains("--deadline") && e.contains("a number and a unit"),
            "{e}"
        );
        let e = err("explain", json!({"files": ["t.dat"], "dedline": "3ms"}));
        assert!(e.contains("did you mean deadline"), "{e}");
        let e = err("stats", json!({"files": ["/etc/passwd"]}));
        assert!(e.contains("outside the roots"), "{e}");
        assert!(err("nope", json!({})).contains("no tool"));
    }

    #[test]
    fn a_recording_goes_to_a_new_file_under_a_root_and_only_when_offered() {
        let (d, r) = roots();
        let args = json!({"output": "new.dat", "duration": "2s", "events": ["sched"]});
        let c = parse(
            "record",
            args.as_object().unwrap(),
            &r,
            Offer { record: true },
        )
        .unwrap()
        .cmd;
        let Cmd::Record(a) = c else { panic!() };
        assert!(a.output.starts_with("/proc/self/fd/") && a.output.ends_with("new.dat"));
        let _ = d;
        assert_eq!(a.duration, Some(2_000_000_000));
        assert!(a.command.is_empty());
        let e = match parse("record", args.as_object().unwrap(), &r, Offer::default()) {
            Ok(_) => panic!("record parsed without --allow-record"),
            Err(e) => e,
        };
        assert!(e.contains("--allow-record"), "{e}");
        let e = err("record", json!({"output": "t.dat", "duration": "1s"}));
        assert!(e.contains("never overwrites"), "{e}");
        let e = err(
            "record",
            json!({"output": "x.dat", "duration": "1s", "command": ["sh"]}),
        );
        assert!(e.contains("takes no argument `command`"), "{e}");
    }
}
