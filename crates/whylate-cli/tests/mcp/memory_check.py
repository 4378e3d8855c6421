#!/usr/bin/env python3
"""Memory per call, driven by the official MCP Python SDK as the client.

Usage: memory_check.py WHYLATE SCRATCH_DIR

Starts `WHYLATE mcp --root SCRATCH/root --call-memory 64` with a root holding a large
Perfetto trace (4 M compact switches in one bundle: `latency` keeps about 400 MB for it)
and a small ftrace one. Two `latency` calls on the large trace and one `stats` on each
trace are sent at once: the latency calls must be refused with words that say why, the
stats calls answered, the server must stay up, and a call after them must be answered.
Exit 77 when the SDK is missing, 1 on a failed check.
"""

import os
import sys

try:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client
except ImportError as e:
    print(f"the MCP Python SDK is missing ({e}); pip install mcp (scripts/test installs it)")
    sys.exit(77)

WHYLATE, SCRATCH = sys.argv[1], os.path.realpath(sys.argv[2])
ROOT = os.path.join(SCRATCH, "root")
SWITCHES = 4_000_000


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print(f"ok: {what}")


def varint(v):
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(n, payload):
    """A length-delimited protobuf field."""
    return varint(n << 3 | 2) + varint(len(payload)) + payload


def giant(n):
    """One Perfetto packet whose bundle holds `n` compact switches between two tasks,
    1 µs apart (as a converter writes a CPU's whole trace)."""
    cs = field(5, b"taska") + field(5, b"taskb")
    cs += field(1, varint(1_000_000_000) + b"\xe8\x07" * (n - 1))
    cs += field(2, b"\x01" * n) + field(3, b"\x64\x65" * (n // 2))
    cs += field(4, b"\x78" * n) + field(6, b"\x00\x01" * (n // 2))
    bundle = varint(1 << 3) + varint(0) + field(4, cs)
    return field(1, field(1, bundle))


def small():
    lines = ["# tracer: nop", "#"]
    for k in range(100):
        lines.append(f"           a-7     [000] d..2. {100 + k / 1000:.6f}: sched_switch: prev_comm=a prev_pid=7 "
                     "prev_prio=120 prev_state=S ==> next_comm=b next_pid=8 next_prio=120")
    return "\n".join(lines) + "\n"


def server_peak_kib():
    """The high-water mark of the server serving ROOT (its VmHWM), None if not found."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if b"mcp" not in argv or ROOT.encode() not in argv:
                continue
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1])
        except OSError:
            continue
    return None


async def call(s, tool, args, out, key):
    with anyio.fail_after(120):
        r = await s.call_tool(tool, args)
    out[key] = (r.is_error, " ".join(c.text for c in r.content if hasattr(c, "text")), r.structured_content)


async def main():
    os.makedirs(ROOT)
    with open(os.path.join(ROOT, "big.pftrace"), "wb") as f:
        f.write(giant(SWITCHES))
    with open(os.path.join(ROOT, "small.ftrace"), "w") as f:
        f.write(small())
    params = StdioServerParameters(command=WHYLATE, args=["mcp", "--root", ROOT, "--call-memory", "64"])
    errlog = open(os.path.join(SCRATCH, "server.log"), "w")
    async with stdio_client(params, errlog=errlog) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            got = {}
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, s, "latency", {"files": ["big.pftrace"]}, got, "latency1")
                tg.start_soon(call, s, "stats", {"files": ["big.pftrace"]}, got, "stats_big")
                tg.start_soon(call, s, "latency", {"files": ["big.pftrace"]}, got, "latency2")
                tg.start_soon(call, s, "stats", {"files": ["small.ftrace"]}, got, "stats_small")
            for k in ("latency1", "latency2"):
                err, text, _ = got[k]
                check(err and "refused" in text and "more than 64 MiB" in text and "--call-memory" in text,
                      f"{k} on 4 M switches is refused at the budget: {text[:200]}")
            err, text, js = got["stats_big"]
            check(not err and js["events"] == SWITCHES, f"stats of the large trace answers in the budget: {text[:200]}")
            err, text, js = got["stats_small"]
            check(not err and js["events"] == 100, f"stats of the small trace answers: {text[:200]}")
            with anyio.fail_after(60):
                r2 = await s.call_tool("stats", {"files": ["small.ftrace"]})
            check(not r2.is_error, "the server answers after the refusals")
            peak = server_peak_kib()
            # Unbounded, the two latency calls together held about 800 MB.
            check(peak is not None and peak < 300_000, f"the server's peak RSS stayed low: {peak} KiB")
    print("all memory checks passed")


if __name__ == "__main__":
    anyio.run(main)
