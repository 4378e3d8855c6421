//! The JSON-RPC lines between the client and the SDK: each line from stdin is checked
//! before the SDK sees it, so that what JSON-RPC 2.0 defines is answered as it defines
//! it: a line that is not JSON gets `-32700 Parse error`, a `tools/call` whose params are
//! not `{name: string, arguments?: object}` gets `-32602 Invalid params` with the
//! request's id. Everything else goes to the SDK unchanged. One task writes stdout, so a
//! reply of ours never lands inside one of the SDK's.

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;

/// The longest request line read, bytes: tool arguments are paths and options.
const MAX_LINE: usize = 16 << 20;

/// Lines between the server and the SDK, in bytes: a request larger than this would have
/// to be split, and no tool's arguments come near it.
const PIPE: usize = 1 << 20;

/// The SDK's side of the wire: (what it reads, what it writes), and the stdout writer
/// (await it once the SDK is done, so the last replies are written). Spawns the tasks
/// that check stdin and write stdout on the current runtime.
pub fn wire() -> ((DuplexStream, DuplexStream), tokio::task::JoinHandle<()>) {
    let (to_sdk, sdk_in) = tokio::io::duplex(PIPE);
    let (sdk_out, from_sdk) = tokio::io::duplex(PIPE);
    let (tx, rx) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(write_stdout(rx));
    tokio::spawn(forward_sdk(from_sdk, tx.clone()));
    tokio::spawn(check_stdin(to_sdk, tx));
    ((sdk_in, sdk_out), writer)
}

/// Reads stdin line by line: a line we answer ourselves goes to stdout, any other to the
/// SDK. The SDK's input closes when stdin does.
async fn check_stdin(mut to_sdk: DuplexStream, out: mpsc::UnboundedSender<String>) {
    let mut stdin = BufReader::new(tokio::io::stdin());
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // Bytes, not text: a line that is not UTF-8 gets its -32700 and the session
        // goes on; one longer than MAX_LINE is refused as a whole, never held whole.
        let n = match (&mut stdin)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .await
        {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if n > MAX_LINE && buf.last() != Some(&b'\n') {
            let _ = out.send(
                error(
                    Value::Null,
                    -32700,
                    format!("Parse error: a line over {MAX_LINE} bytes"),
                )
                .to_string(),
            );
            // The rest of that line is dropped.
            let mut rest = Vec::new();
            loop {
                rest.clear();
                match (&mut stdin)
                    .take(1 << 16)
                    .read_until(b'\n', &mut rest)
                    .await
                {
                    Ok(0) | Err(_) => break,
                    Ok(_) if rest.last() == Some(&b'\n') => break,
                    Ok(_) => {}
                }
            }
            continue;
        }
        let line = match std::str::from_utf8(&buf) {
            Ok(l) => l.trim_end_matches(['\n', '\r']),
            Err(e) => {
                let _ = out.send(
                    error(Value::Null, -32700, format!("Parse error: not UTF-8 ({e})")).to_string(),
                );
                continue;
            }
        };
        match refusal(line) {
            Some(reply) => {
                let _ = out.send(reply.to_string());
            }
            None => {
                let ok = to_sdk.write_all(line.as_bytes()).await.is_ok()
                    && to_sdk.write_all(b"\n").await.is_ok();
                if !ok {
                    break;
                }
            }
        }
    }
    let _ = to_sdk.shutdown().await;
}

/// Copies the SDK's lines to the stdout writer.
async fn forward_sdk(from_sdk: DuplexStream, out: mpsc::UnboundedSender<String>) {
    let mut lines = BufReader::new(from_sdk).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if out.send(line).is_err() {
            break;
        }
    }
}

/// The only writer of stdout: one whole line at a time.
async fn write_stdout(mut rx: mpsc::UnboundedReceiver<String>) {
    let mut stdout = tokio::io::stdout();
    while let Some(mut line) = rx.recv().await {
        line.push('\n');
        if stdout.write_all(line.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
            break;
        }
    }
}

/// The error reply JSON-RPC 2.0 prescribes for `line`, or None to hand it to the SDK.
pub fn refusal(line: &str) -> Option<Value> {
    if line.trim().is_empty() {
        return None;
    }
    let msg: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return Some(error(Value::Null, -32700, format!("Parse error: {e}"))),
    };
    let obj = msg.as_object()?;
    if obj.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    let id = obj.get("id")?.clone();
    let why = match obj.get("params") {
        Some(Value::Object(p)) => match (p.get("name"), p.get("arguments")) {
            (Some(Value::String(_)), None | Some(Value::Null) | Some(Value::Object(_))) => {
                return None
            }
            (Some(Value::String(_)), Some(a)) => {
                format!("`arguments` must be an object, found {}", kind(a))
            }
            (Some(n), _) => format!("`name` must be a string, found {}", kind(n)),
            (None, _) => "`name` is missing (the tool to call)".to_string(),
        },
        Some(p) => format!("params must be an object, found {}", kind(p)),
        None => "params are missing (`name` and `arguments`)".to_string(),
    };
    Some(error(id, -32602, format!("Invalid params: {why}")))
}

fn error(id: Value, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::refusal;

    #[test]
    fn parse_errors_and_bad_params_get_the_codes_json_rpc_defines() {
        let r = refusal("{not json").unwrap();
        assert_eq!(r["error"]["code"], -32700);
        assert!(r["id"].is_null());
        let r = refusal(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"nam":"x"}}"#)
            .unwrap();
        assert_eq!(
            (r["id"].as_i64(), r["error"]["code"].as_i64()),
            (Some(7), Some(-32602))
        );
        assert!(r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`name` is missing"));
        let r = refusal(r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":5}"#).unwrap();
        assert_eq!(r["id"], "a");
        let bad_args = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stats","arguments":[1]}}"#;
        assert!(refusal(bad_args).unwrap()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`arguments` must be an object"));
        let fine = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stats","arguments":{}}}"#;
        assert!(refusal(fine).is_none());
        assert!(refusal(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).is_none());
        assert!(refusal("").is_none());
    }
}
