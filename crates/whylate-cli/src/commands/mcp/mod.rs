//! `whylate mcp`: the analyses as tools of the Model Context Protocol, served on stdio to
//! an AI agent (built with the `mcp` feature; without it the command says how to get it).
//!
//! One concern per module: [`roots`] decides which paths a call may read and opens them
//! once, [`argv`] turns a call's arguments into the command line the CLI parses (so a
//! bad value gets the CLI's words), [`tools`] describes the tools, [`call`] runs one on
//! the library, `private` copies `fleet`'s findings by descriptor, [`page`] sizes a
//! result for a model's context, [`memory`] holds each call to its budget, [`wire`] answers malformed JSON-RPC lines as JSON-RPC
//! says, and [`server`] speaks the protocol.

use crate::args::McpArgs;
use std::process::ExitCode;

#[cfg(feature = "mcp")]
mod argv;
#[cfg(feature = "mcp")]
mod call;
#[cfg(feature = "mcp")]
mod memory;
#[cfg(feature = "mcp")]
mod page;
#[cfg(all(feature = "mcp", feature = "fleet"))]
mod private;
#[cfg(feature = "mcp")]
mod roots;
#[cfg(feature = "mcp")]
mod server;
#[cfg(feature = "mcp")]
mod tools;
#[cfg(feature = "mcp")]
mod wire;

/// What a build without the MCP server says to `whylate mcp` (checked by a unit test in
/// every build).
#[cfg_attr(feature = "mcp", allow(dead_code))]
const NOT_BUILT: &str = "mcp: this build has no MCP server; build it with `cargo install --locked --path crates/whylate-cli --features mcp`";

/// Serves the tools on stdin/stdout until the client closes stdin.
#[cfg(not(feature = "mcp"))]
pub fn run(a: McpArgs) -> anyhow::Result<ExitCode> {
    let _ = a;
    crate::output::usage(NOT_BUILT)
}

/// Serves the tools on stdin/stdout until the client closes stdin.
#[cfg(feature = "mcp")]
pub fn run(a: McpArgs) -> anyhow::Result<ExitCode> {
    let roots = match roots::Roots::new(&a.roots) {
        Ok(r) => r,
        Err(e) => return crate::output::usage(&e),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let offer = tools::Offer {
        record: a.allow_record,
    };
    let budget = a.call_memory.unwrap_or_else(memory::default_budget_mib);
    memory::start();
    rt.block_on(server::serve(roots, offer, budget))?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_build_without_the_server_says_how_to_get_it() {
        assert!(super::NOT_BUILT.contains("--features mcp"));
        assert!(super::NOT_BUILT.starts_with("mcp: this build has no MCP server"));
    }
}
