#!/usr/bin/env python3
"""The MCP root under a race, driven by the official MCP Python SDK as the client.

Usage: race_check.py WHYLATE SCRATCH_DIR [SWAPS]

Starts `WHYLATE mcp --root SCRATCH/root` and, while a second process exchanges names
under the root (renameat2 RENAME_EXCHANGE, atomic) as fast as it can, calls the tools
that read them:
  - `root/r.ftrace` takes turns being a trace inside the root, a symlink to a trace
    outside it, and a FIFO: `stats` and `list_events` must answer for the inside trace
    or refuse, never read the outside one, never quote it, and never hang on the FIFO;
  - `root/fl/traces` (a findings table) takes turns being the real table and a symlink
    to another host's findings outside the root: `fleet` must never name that host.
It runs until SWAPS (default 10000) exchanges of each name have happened. Then raw
JSON-RPC lines: a line that is not JSON gets -32700, a `tools/call` with bad params
-32602 with its id. Exit 77 when the SDK is missing, 1 on a failed check.
"""

import ctypes
import json
import os
import subprocess
import sys
import time

try:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client
except ImportError as e:
    print(f"the MCP Python SDK is missing ({e}); pip install mcp (scripts/test installs it)")
    sys.exit(77)

WHYLATE, SCRATCH = sys.argv[1], os.path.realpath(sys.argv[2])
SWAPS = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000
ROOT, OUT = os.path.join(SCRATCH, "root"), os.path.join(SCRATCH, "outside")
CALL_TIMEOUT_S = 20
HAS_FLEET = "no query engine" not in subprocess.run([WHYLATE, "fleet", "x"], capture_output=True, text=True).stderr


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print(f"ok: {what}")


def ftrace(comm, first_line, n):
    """A small ftrace text trace of `comm` switching with `other`; its first line is
    `first_line` (what an error quoting the file would show)."""
    lines = [first_line, "# tracer: nop", "#"]
    ts = 100.0
    for _ in range(n // 2):
        for a, b in ((comm, "other"), ("other", comm)):
            ts += 0.00001
            pa, pb = (7, 8) if a == comm else (8, 7)
            lines.append(f"{a:>16}-{pa:<5} [000] d..2. {ts:.6f}: sched_switch: prev_comm={a} prev_pid={pa} "
                         f"prev_prio=120 prev_state=R ==> next_comm={b} next_pid={pb} next_prio=120")
    return "\n".join(lines) + "\n"


SWAPPER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
pairs = [(a.encode(), b.encode()) for a, b in zip(sys.argv[2::2], sys.argv[3::2])]
stop, counts = sys.argv[1], [0] * len(pairs)
while not os.path.exists(stop):
    for i, (a, b) in enumerate(pairs):
        if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0:
            counts[i] += 1
print(" ".join(map(str, counts)))
"""


def layout():
    """The root, the outside, and the pairs of names the swapper exchanges."""
    os.makedirs(ROOT)
    os.makedirs(OUT)
    with open(os.path.join(ROOT, "r.ftrace"), "w") as f:
        f.write(ftrace("insider", "# inside trace", 200))
    with open(os.path.join(OUT, "secret.ftrace"), "w") as f:
        f.write(ftrace("OUTSIDER", "OUTSIDE-FIRST-LINE not a trace line", 300))
    os.symlink(os.path.join(OUT, "secret.ftrace"), os.path.join(ROOT, "link.alt"))
    os.mkfifo(os.path.join(ROOT, "fifo.alt"))
    pairs = [(os.path.join(ROOT, "r.ftrace"), os.path.join(ROOT, "link.alt")),
             (os.path.join(ROOT, "r.ftrace"), os.path.join(ROOT, "fifo.alt"))]
    if HAS_FLEET:
        for host, where in (("insidehost", os.path.join(ROOT, "fl")), ("outsidehost", os.path.join(OUT, "fl"))):
            p = subprocess.run([WHYLATE, "-q", "stats", os.path.join(ROOT, "r.ftrace")], capture_output=True, text=True)
            check(p.returncode == 0, f"the trace reads: {p.stderr[:200]}")
            p = subprocess.run([WHYLATE, "-q", "latency", os.path.join(ROOT, "r.ftrace"), "--parquet", where, "--host", host],
                               capture_output=True, text=True)
            check(p.returncode in (0, 1), f"findings of {host} written: {p.stderr.strip()[:300]}")
        os.symlink(os.path.join(OUT, "fl", "traces"), os.path.join(ROOT, "fl", "traces.alt"))
        pairs.append((os.path.join(ROOT, "fl", "traces"), os.path.join(ROOT, "fl", "traces.alt")))
    return pairs


def leaked(text):
    return "OUTSIDE" in text or "outsidehost" in text


async def race(s, pairs):
    stop = os.path.join(SCRATCH, "stop")
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, stop, *[x for p in pairs for x in p]],
                               stdout=subprocess.PIPE, text=True)
    calls = {"read": 0, "refused": 0}
    answered = {}
    tools = [("stats", {"files": ["r.ftrace"]}), ("list_events", {"files": ["r.ftrace"]})]
    if HAS_FLEET:
        tools.append(("fleet", {"paths": ["fl"]}))
    t0 = time.monotonic()
    try:
        i = 0
        while True:
            tool, args = tools[i % len(tools)]
            i += 1
            with anyio.fail_after(CALL_TIMEOUT_S):
                r = await s.call_tool(tool, args)
            text = " ".join(c.text for c in r.content if hasattr(c, "text"))
            if leaked(text) or leaked(json.dumps(r.structured_content or {})):
                raise AssertionError(f"{tool} call {i} read outside the root: {text[:300]}")
            if r.is_error:
                calls["refused"] += 1
            else:
                calls["read"] += 1
                answered[tool] = answered.get(tool, 0) + 1
                if tool == "stats" and r.structured_content["events"] != 200:
                    raise AssertionError(f"stats read another file: {text[:300]}")
            # The swapper's counts are known only at its end: call for long enough that
            # each pair is exchanged SWAPS times with a wide margin (checked below).
            if time.monotonic() - t0 > max(3.0, SWAPS / 2000) and i >= 600:
                break
    finally:
        open(stop, "w").close()
        out, _ = swapper.communicate(timeout=30)
    counts = [int(c) for c in out.split()]
    calls["answered"] = answered
    return counts, calls, i


async def main():
    pairs = layout()
    params = StdioServerParameters(command=WHYLATE, args=["mcp", "--root", ROOT])
    errlog = open(os.path.join(SCRATCH, "server.log"), "w")
    async with stdio_client(params, errlog=errlog) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            counts, calls, n = await race(s, pairs)
            print(f"{n} calls ({calls['read']} answered, {calls['refused']} refused), exchanges per pair: {counts}")
            check(min(counts) >= SWAPS, f"every name was exchanged at least {SWAPS} times: {counts}")
            check(calls["refused"] > 0, "some calls were refused")
            want = {t for t, _ in [("stats", 0), ("list_events", 0)] + ([("fleet", 0)] if HAS_FLEET else [])}
            check(set(calls["answered"]) == want, f"each tool answered for what is inside the root: {calls['answered']}")
            check(True, "no call read, named or quoted anything outside the root, and none hung")
    raw_json_rpc()
    print("all race checks passed")


def raw_json_rpc():
    """Lines a client library would never send, written by hand."""
    p = subprocess.Popen([WHYLATE, "mcp", "--root", ROOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
    lines = [json.dumps(init), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), "{not json",
             json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"nam": "stats"}}),
             json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": 5}),
             json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "stats", "arguments": [1]}}),
             json.dumps({"jsonrpc": "2.0", "id": 5, "method": "nosuch"})]
    raw = ("\n".join(lines) + "\n").encode() + b'{"jsonrpc":"2.0","id":6,"method":"tools/list","x":"\xff"}\n' \
        + json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}).encode() + b"\n"
    out, _ = p.communicate(raw, timeout=30)
    out = out.decode()
    replies = [json.loads(l) for l in out.splitlines() if l.strip()]
    by_id = {json.dumps(r.get("id")): r for r in replies}
    check(by_id.get("null", {}).get("error", {}).get("code") == -32700, f"a line that is not JSON: -32700 ({out[:300]})")
    for i in (2, 3, 4):
        check(by_id.get(str(i), {}).get("error", {}).get("code") == -32602, f"tools/call {i} with bad params: -32602")
    check(by_id.get("5", {}).get("error", {}).get("code") == -32601, "an unknown method: -32601")
    parse_errors = [r for r in replies if r.get("error", {}).get("code") == -32700]
    check(len(parse_errors) == 2 and "UTF-8" in parse_errors[1]["error"]["message"], "a line that is not UTF-8: -32700")
    check("result" in by_id.get("7", {}), "the session goes on after it")


if __name__ == "__main__":
    anyio.run(main)
