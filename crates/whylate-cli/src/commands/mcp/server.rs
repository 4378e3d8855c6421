//! The protocol side: the tools listed, each call parsed, run on a blocking thread with
//! its panics caught, reported as progress while it reads, and stopped when the client
//! cancels it. A failed call is a tool error (`isError`), never the server's end.

use super::call::{self, Answer};
use super::roots::Roots;
use super::{argv, tools};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use whylate::read::Progress;

/// How often a running call reports progress (when the client asked for it).
const PROGRESS_EVERY: Duration = Duration::from_millis(500);

/// The tool server: the roots every path is checked against.
#[derive(Clone)]
pub struct Whylate {
    roots: Roots,
    offer: tools::Offer,
}

/// Serves on stdin/stdout until the client goes away.
pub async fn serve(roots: Roots, offer: tools::Offer) -> anyhow::Result<()> {
    let (io, writer) = super::wire::wire();
    let running = Whylate { roots, offer }
        .serve(io)
        .await
        .map_err(|e| anyhow::anyhow!("mcp: the client's initialisation failed: {e}"))?;
    running.waiting().await?;
    // The SDK is done: its last replies are on their way to stdout.
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
    Ok(())
}

impl ServerHandler for Whylate {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("whylate", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "{} Roots: {}.",
                tools::INSTRUCTIONS,
                self.roots.describe()
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::all(self.offer)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        let result = match argv::parse(&tool, &args, &self.roots, self.offer) {
            Ok(parsed) => run_blocking(tool, parsed, args, &context).await,
            Err(e) => Err(e),
        };
        Ok(match result {
            Ok(a) => answered(a),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e)]),
        }
        .into())
    }
}

/// The answer as a tool result: the summary first, then the JSON (also as structured
/// content).
fn answered(a: Answer) -> CallToolResult {
    let mut r = CallToolResult::structured(a.json);
    r.content.insert(0, ContentBlock::text(a.summary));
    r
}

/// Runs the call on a blocking thread; reports progress while it reads; on the client's
/// cancellation tells the read to stop and waits for it to.
async fn run_blocking(
    tool: String,
    parsed: argv::Parsed,
    args: serde_json::Map<String, serde_json::Value>,
    context: &RequestContext<RoleServer>,
) -> Result<Answer, String> {
    let progress = Arc::new(Progress::default());
    let p = progress.clone();
    let name = tool.clone();
    let mut job = tokio::task::spawn_blocking(move || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            call::run(&name, parsed, &args, p)
        }))
    });
    let token = context.meta.get_progress_token();
    let mut tick = tokio::time::interval(PROGRESS_EVERY);
    tick.tick().await;
    let t0 = std::time::Instant::now();
    let done = loop {
        tokio::select! {
            r = &mut job => break r,
            _ = context.ct.cancelled(), if !progress.cancel.load(Relaxed) => {
                progress.cancel.store(true, Relaxed);
            }
            _ = tick.tick() => {
                if let Some(t) = &token {
                    let events = progress.events.load(Relaxed);
                    let mut n = ProgressNotificationParam::new(t.clone(), events as f64);
                    n.message = Some(format!("{events} events read"));
                    let _ = context.peer.notify_progress(n).await;
                }
            }
        }
    };
    if progress.cancel.load(Relaxed) {
        // Said on stderr (the protocol is on stdout): the client gets no answer.
        eprintln!(
            "whylate mcp: {tool} cancelled by the client; stopped after {} ms, {} events read",
            t0.elapsed().as_millis(),
            progress.events.load(Relaxed)
        );
    }
    match done {
        Ok(Ok(r)) => r,
        Ok(Err(panic)) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(format!(
                "internal error in {tool} (a bug; please report it): {what}"
            ))
        }
        Err(e) => Err(format!("internal error in {tool}: {e}")),
    }
}
