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

/// How often a running call's heap is checked against its budget: a read allocates a few
/// hundred MB a second at most, and stops within a few thousand events of being told.
const HEAP_EVERY: Duration = Duration::from_millis(5);

/// The tool server: the roots every path is checked against.
#[derive(Clone)]
pub struct Whylate {
    roots: Roots,
    offer: tools::Offer,
    /// Calls that read take it in turn, so that each one's heap is its own.
    gate: Arc<tokio::sync::Semaphore>,
    /// The heap one call may take (MiB).
    budget_mib: u64,
}

/// Serves on stdin/stdout until the client goes away.
pub async fn serve(roots: Roots, offer: tools::Offer, budget_mib: u64) -> anyhow::Result<()> {
    let (io, writer) = super::wire::wire();
    let gate = Arc::new(tokio::sync::Semaphore::new(1));
    let running = Whylate {
        roots,
        offer,
        gate,
        budget_mib,
    }
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
            Ok(parsed) => self.run_gated(tool, parsed, args, &context).await,
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

impl Whylate {
    /// Runs the call when the calls before it are done (`record` at once: it waits on
    /// the kernel, and its heap is small), held to the budget.
    async fn run_gated(
        &self,
        tool: String,
        parsed: argv::Parsed,
        args: serde_json::Map<String, serde_json::Value>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Answer, String> {
        let _turn = match tool.as_str() {
            "record" => None,
            _ => tokio::select! {
                p = self.gate.clone().acquire_owned() => p.ok(),
                _ = context.ct.cancelled() => return Err(format!("{tool} cancelled by the client before it ran")),
            },
        };
        let budget = usize::try_from(self.budget_mib << 20).unwrap_or(usize::MAX);
        run_blocking(tool, parsed, args, context, budget)
            .await
            .map_err(|e| match e {
                Over(tool) => super::memory::refusal(&tool, self.budget_mib),
                Failed(e) => e,
            })
    }
}

/// Why a call gave no answer.
enum Failure {
    /// Its heap grew past the budget (the tool's name).
    Over(String),
    /// The call's own error.
    Failed(String),
}
use Failure::{Failed, Over};

/// Runs the call on a blocking thread; reports progress while it reads; on the client's
/// cancellation, or when the heap grows more than `budget` bytes, tells the read to stop
/// and waits for it to.
async fn run_blocking(
    tool: String,
    parsed: argv::Parsed,
    args: serde_json::Map<String, serde_json::Value>,
    context: &RequestContext<RoleServer>,
    budget: usize,
) -> Result<Answer, Failure> {
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
    let heap0 = super::memory::live();
    let mut watch = tokio::time::interval(HEAP_EVERY);
    let mut over = false;
    let done = loop {
        tokio::select! {
            r = &mut job => break r,
            _ = watch.tick(), if !over => {
                if (super::memory::live() - heap0).max(0) as usize > budget {
                    over = true;
                    progress.cancel.store(true, Relaxed);
                }
            }
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
    if over && !matches!(done, Ok(Ok(Ok(_)))) {
        eprintln!(
            "whylate mcp: {tool} stopped at its memory budget after {} ms",
            t0.elapsed().as_millis()
        );
        return Err(Over(tool));
    }
    if progress.cancel.load(Relaxed) {
        // Said on stderr (the protocol is on stdout): the client gets no answer.
        eprintln!(
            "whylate mcp: {tool} cancelled by the client; stopped after {} ms, {} events read",
            t0.elapsed().as_millis(),
            progress.events.load(Relaxed)
        );
    }
    match done {
        Ok(Ok(r)) => r.map_err(Failed),
        Ok(Err(panic)) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(Failed(format!(
                "internal error in {tool} (a bug; please report it): {what}"
            )))
        }
        Err(e) => Err(Failed(format!("internal error in {tool}: {e}"))),
    }
}
