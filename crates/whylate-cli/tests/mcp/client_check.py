#!/usr/bin/env python3
"""Drives `whylate mcp` with the official MCP Python SDK as the client.

Usage: client_check.py WHYLATE EXAMPLES_DIR SCRATCH_DIR

Starts `WHYLATE mcp --root EXAMPLES_DIR --root SCRATCH_DIR`, lists the tools, calls each
on the bundled examples and checks the results against `WHYLATE ... --json` run with the
same arguments; then paths outside the roots, a symlink out, /dev/zero, a missing file
and bad arguments (each must be a tool error, with the CLI's words where the CLI says
something, while the server keeps serving); then cancels a long call and checks that it
stopped. Exit 77 when the SDK is missing (the caller skips or fails), 1 on a failed check.
"""

import gzip
import json
import os
import subprocess
import sys
import time

try:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client
except ImportError as e:  # the caller decides: skip, or fail under WHYLATE_REQUIRE_LIVE=1
    print(f"the MCP Python SDK is missing ({e}); pip install mcp (scripts/test installs it)")
    sys.exit(77)

WHYLATE, EXAMPLES, SCRATCH = sys.argv[1], os.path.realpath(sys.argv[2]), os.path.realpath(sys.argv[3])
FROB = ["--from", "sys_enter_write[comm=frobnicator,count=7]",
        "--to", "sys_exit_read[comm=frobnicator,ret>0]", "--deadline", "3.5ms"]
FROB_ARGS = {"from": FROB[1], "to": [FROB[3]], "deadline": FROB[5]}
BIG_EVENTS = 3_000_000
# A build with the query engine offers `fleet`; without it the CLI says how to get it.
HAS_FLEET = "no query engine" not in subprocess.run([WHYLATE, "fleet", "x"], capture_output=True, text=True).stderr


def ex(name):
    return os.path.join(EXAMPLES, name)


def cli(*args):
    """The CLI's JSON for these arguments, or (None, its stderr line) when it refuses."""
    p = subprocess.run([WHYLATE, *args], capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip()
    return json.loads(p.stdout), ""


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print(f"ok: {what}")


async def call(s, tool, args):
    r = await s.call_tool(tool, args)
    return r


def ok_json(r, tool):
    if r.is_error:
        raise AssertionError(f"{tool}: unexpected tool error: {r.content[0].text}")
    return r.structured_content


def error_text(r):
    check(r.is_error, "a tool error")
    return r.content[0].text


def big_trace():
    """A long ftrace text trace (sched_switch back and forth) in the scratch root."""
    path = os.path.join(SCRATCH, "big.ftrace.gz")
    with gzip.open(path, "wt", compresslevel=1) as f:
        f.write("# tracer: nop\n#\n")
        ts = 1000.0
        a = "            hog-100   [000] d..2. {:.6f}: sched_switch: prev_comm=hog prev_pid=100 prev_prio=120 prev_state=R ==> next_comm=other next_pid=200 next_prio=120\n"
        b = "          other-200   [000] d..2. {:.6f}: sched_switch: prev_comm=other prev_pid=200 prev_prio=120 prev_state=R ==> next_comm=hog next_pid=100 next_prio=120\n"
        lines = []
        for i in range(BIG_EVENTS // 2):
            ts += 0.000010
            lines.append(a.format(ts))
            ts += 0.000010
            lines.append(b.format(ts))
            if len(lines) >= 100_000:
                f.write("".join(lines))
                lines = []
        f.write("".join(lines))
    return path


async def equal_to_cli(s):
    frob = ex("frob.dat.zst")
    names = {t.name for t in (await s.list_tools()).tools}
    want_names = {"list_events", "stats", "latency", "explain", "explain_miss", "diff"} | ({"fleet"} if HAS_FLEET else set())
    check(names == want_names, f"the tools (no `record` without --allow-record): {sorted(names)}")

    ev = ok_json(await call(s, "list_events", {"files": ["frob.dat.zst"]}), "list_events")
    stats, _ = cli("stats", frob, "--json")
    check(ev["events"] == stats["events"], "list_events counts every event stats counts")
    w = next(e for e in ev["by_name"] if e["name"] == "sys_enter_write")
    check("count" in w["fields"] and any(c == "frobnicator" for c, _ in w["top_comms"]), "list_events names the selector's field and task")

    got = ok_json(await call(s, "stats", {"files": [frob]}), "stats")
    check(got == stats, "stats = `whylate stats --json`")

    got = ok_json(await call(s, "latency", {"files": ["timer.dat.zst"], "measure": ["wakeup", "timer"]}), "latency")
    want, _ = cli("latency", ex("timer.dat.zst"), "--measure", "wakeup,timer", "--json")
    check(got == want, "latency = `whylate latency --json`")

    want, _ = cli("explain", frob, *FROB, "--json")
    r = await call(s, "explain", {"files": ["frob.dat.zst"], **FROB_ARGS})
    got = ok_json(r, "explain")
    check(r.content[0].text.startswith("500 cycles, 16 missed"), f"the summary comes first: {r.content[0].text!r}")
    page = got.pop("page")
    misses = got.pop("misses")
    all_misses = want.pop("misses")
    check(got == want, "explain (cycles) = `whylate explain --json` but for the misses")
    check(misses == all_misses[:3] and page["total"] == len(all_misses) == 16 and page["next_offset"] == 3, "the worst 3 misses in full, the page says 16")
    got = ok_json(await call(s, "explain", {"files": ["frob.dat.zst"], **FROB_ARGS, "offset": 3, "limit": 5}), "explain")
    check(got["misses"] == all_misses[3:8], "offset/limit pages through the rest")

    one = ok_json(await call(s, "explain_miss", {"files": ["frob.dat.zst"], **FROB_ARGS, "index": 0}), "explain_miss")
    check(one["miss"] == all_misses[0] and len(one["miss"]["chain"]) > 0, "explain_miss index 0 = the worst miss, with its chain")
    at = all_misses[2]["start_ns"] + 1
    one = ok_json(await call(s, "explain_miss", {"files": ["frob.dat.zst"], **FROB_ARGS, "at_ns": at}), "explain_miss")
    check(one["index"] == 2 and one["miss"] == all_misses[2], "explain_miss at_ns picks the miss holding that time")

    modes = [
        (["timer.dat.zst"], {"timer": True, "task": "periodic", "deadline": "300us"}, ["--timer", "--task", "periodic", "--deadline", "300us"]),
        (["softirq.dat.zst"], {"softirq": "NET_RX", "deadline": "20us"}, ["--softirq", "NET_RX", "--deadline", "20us"]),
        (["pty-poll.ftrace.gz"], {}, []),
        (["frob.dat.zst"], {"expect": f"{FROB[1]} -> {FROB[3]} within 3.5ms", "same": "thread"},
         ["--expect", f"{FROB[1]} -> {FROB[3]} within 3.5ms", "--same", "thread"]),
    ]
    for files, args, flags in modes:
        want, err = cli("explain", *[ex(f) for f in files], *flags, "--json")
        r = await call(s, "explain", {"files": files, **args, "limit": 10**6})
        if want is None:
            check(error_text(r) == err.removeprefix("whylate: "), f"explain {flags}: the CLI's error")
            continue
        got = ok_json(r, "explain")
        got.pop("page")
        check(got == want, f"explain {flags or 'automatic'} = `whylate explain --json`")

    a, b = ex("softirq.dat.zst"), ex("softirq-mitigated.dat.zst")
    want, _ = cli("diff", a, b, "--timer", "--task", "periodic", "--deadline", "300us", "--json")
    got = ok_json(await call(s, "diff", {"a": "softirq.dat.zst", "b": b, "timer": True, "task": "periodic", "deadline": "300us"}), "diff")
    check(got == want, "diff = `whylate diff --json`")


async def fleet(s):
    """`fleet` on findings the CLI wrote for two hosts = `whylate fleet --json`."""
    if not HAS_FLEET:
        t = error_text(await call(s, "fleet", {"paths": ["findings"]}))
        check("--features fleet" in t, f"a build without the engine says how to get it: {t}")
        return
    findings = os.path.join(SCRATCH, "findings")
    for host, trace in [("a", "softirq.dat.zst"), ("b", "softirq-mitigated.dat.zst")]:
        p = subprocess.run([WHYLATE, "-q", "explain", ex(trace), "--timer", "--task", "periodic", "--deadline", "300us",
                            "--parquet", findings, "--host", host], capture_output=True, text=True)
        check(p.returncode in (0, 1), f"findings of host {host} written: {p.stderr.strip()[:200]}")
    want, err = cli("fleet", findings, "--by", "host", "--json")
    check(want is not None, f"the CLI's fleet report: {err}")
    got = ok_json(await call(s, "fleet", {"paths": ["findings"], "by": "host"}), "fleet")
    check(got == want, "fleet = `whylate fleet --json`")
    t = error_text(await call(s, "fleet", {"paths": ["frob.dat.zst"]}))
    check("not a directory" in t, f"fleet takes directories: {t}")
    t = error_text(await call(s, "fleet", {"paths": ["/tmp"]}))
    check("outside the roots" in t, f"fleet reads under the roots only: {t}")


async def recording():
    """A second server with --allow-record: `record` writes a new trace under a root that
    `stats` then reads; it refuses an existing name, a path outside the roots, a long
    duration and a command. Without root it says that recording needs root."""
    errlog_path = os.path.join(SCRATCH, "server-record.log")
    params = StdioServerParameters(command=WHYLATE, args=["mcp", "--root", SCRATCH, "--allow-record"])
    with open(errlog_path, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                try:
                    await record_checks(s)
                except AssertionError as e:
                    return str(e)
    return None


async def record_checks(s):
    names = {t.name for t in (await s.list_tools()).tools}
    check("record" in names, "--allow-record offers `record`")
    args = {"output": "rec.dat", "duration": "300ms", "events": ["sched"]}
    if os.geteuid() != 0:
        t = error_text(await call(s, "record", args))
        check("needs root" in t, f"recording without root is refused: {t}")
        return
    got = ok_json(await call(s, "record", args), "record")
    path = os.path.join(SCRATCH, "rec.dat")
    check(os.path.isfile(path) and got["events"] > 0, f"recorded {got['events']} events into rec.dat")
    st = ok_json(await call(s, "stats", {"files": ["rec.dat"]}), "stats")
    check(st["events"] == got["events"], f"stats reads every recorded event ({st['events']})")
    outside = "/tmp/whylate-mcp-rec.dat"
    for bad, words in [({**args}, "never overwrites"),
                       ({**args, "output": outside}, "outside the roots"),
                       ({**args, "output": "new.dat", "duration": "120s"}, "at most"),
                       ({**args, "output": "new.dat", "command": ["sh"]}, "takes no argument")]:
        t = error_text(await call(s, "record", bad))
        check(words in t, f"record refuses: {t}")
    check(not os.path.exists(outside) and not os.path.exists(os.path.join(SCRATCH, "new.dat")),
          "a refused recording writes nothing")


async def refusals(s):
    link = os.path.join(SCRATCH, "out.dat")
    if not os.path.islink(link):
        os.symlink("/etc/passwd", link)
    for path, words in [("/etc/passwd", "outside the roots"), ("out.dat", "outside the roots"),
                        ("/dev/zero", "outside the roots"), ("missing.dat", "no such file"),
                        (os.path.join(EXAMPLES, "..", "README.md"), "outside the roots")]:
        t = error_text(await call(s, "stats", {"files": [path]}))
        check(words in t, f"{path}: refused ({t})")
    os.makedirs(os.path.join(SCRATCH, "dir"), exist_ok=True)
    t = error_text(await call(s, "stats", {"files": ["dir"]}))
    check("not a regular file" in t, f"a directory under a root is refused ({t})")

    frob = ex("frob.dat.zst")
    for args, flags in [
        ({"from": "sys_enter_write[count=", "to": [FROB[3]]}, ["--from", "sys_enter_write[count=", "--to", FROB[3]]),
        ({"from": "sys_enter_wrte[comm=frobnicator]", "to": [FROB[3]]}, ["--from", "sys_enter_wrte[comm=frobnicator]", "--to", FROB[3]]),
        ({**FROB_ARGS, "deadline": "3"}, [*FROB[:4], "--deadline", "3"]),
    ]:
        _, err = cli("explain", frob, *flags, "--json")
        t = error_text(await call(s, "explain", {"files": ["frob.dat.zst"], **args}))
        check(err == "whylate: " + t, f"{flags}: the CLI's words: {t}")
    t = error_text(await call(s, "explain", {"files": ["frob.dat.zst"], "timer": True, "from": FROB[1], "to": [FROB[3]]}))
    check("cannot be used with" in t, f"conflicting modes, as clap says it: {t}")
    t = error_text(await call(s, "explain", {"files": ["frob.dat.zst"], "deadlin": "3ms"}))
    check("did you mean deadline" in t, f"an unknown argument is named: {t}")
    t = error_text(await call(s, "no_such_tool", {}))
    check("no tool" in t, f"an unknown tool: {t}")
    t = error_text(await call(s, "record", {"output": "x.dat", "duration": "1s"}))
    check("--allow-record" in t, f"no recording without --allow-record: {t}")
    got = ok_json(await call(s, "stats", {"files": ["frob.dat.zst"]}), "stats")
    check(got["events"] > 0, "the server still serves after the refusals")


async def cancellation(s, errlog_path):
    big = big_trace()
    t0 = time.monotonic()
    # Cancelled soon after it starts: on an idle 2-CPU machine the server reads this
    # trivial trace at about 5 M events/s, so 1.5 M events cancelled at 0.3 s could all be
    # read before the cancel came (the check below then failed though nothing was wrong).
    with anyio.move_on_after(0.1):
        await s.call_tool("explain", {"files": [big]})
        raise AssertionError("the long call ended before it could be cancelled")
    deadline = time.monotonic() + 20
    said = ""
    while time.monotonic() < deadline:
        with open(errlog_path) as f:
            said = [l for l in f if "cancelled by the client" in l]
        if said:
            break
        await anyio.sleep(0.05)
    check(said, f"the server says the call stopped: {said}")
    events = int(said[0].split(" ms, ")[1].split()[0])
    check(events < BIG_EVENTS, f"it stopped reading at {events} of {BIG_EVENTS} events ({time.monotonic() - t0:.1f}s)")
    got = ok_json(await call(s, "stats", {"files": ["frob.dat.zst"]}), "stats")
    check(got["events"] > 0, "the server still serves after the cancellation")


async def main():
    errlog_path = os.path.join(SCRATCH, "server.log")
    params = StdioServerParameters(command=WHYLATE, args=["mcp", "--root", EXAMPLES, "--root", SCRATCH])
    with open(errlog_path, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                try:
                    await equal_to_cli(s)
                    await fleet(s)
                    await refusals(s)
                    await cancellation(s, errlog_path)
                except AssertionError as e:
                    return str(e)
    return await recording()


if __name__ == "__main__":
    failed = anyio.run(main)
    if failed:
        print(f"FAILED: {failed}")
        sys.exit(1)
    print("all MCP checks passed")
