#!/usr/bin/env python3
"""Issue 72's scale bench: does a command's memory grow with the trace, and its time
linearly?

Records (root needed) bench/binary.py's dd workload as ftrace text (bench/run.py's tracefs
instance: raw syscalls and the scheduler, about --events events), then makes copies of it
repeated x4 and x16 (each copy's timestamps shifted past the one before, bench/run.py's
repeat_shifted), and runs each command once per size under GNU time:
  explain in cycle mode (the main job: a cycle per dd write, bench/explain.py's selectors),
    in windows (the default) and held whole (--window-events 0)
  explain in automatic mode (no selectors), with --expect, --softirq NET_RX and --timer
  latency (the timeline and every measure)
  stats (counts only)
  cat (the floor: reading the file from the page cache)
Prints, per command and size: events, wall time, time per copy against x1 (1.00 is
linear), peak RSS, and the time against cat's on the same file. Nothing here is a
pass/fail test; docs/benchmarks.md keeps the results with the machine.

Usage: sudo python3 bench/scale.py [--events 6000000] [--times 1,4,16] [--keep DIR]
                                   [--reuse DIR] [--whylate BIN] [--json FILE]
--reuse DIR reads the ftrace.txt (and the copies) an earlier --keep DIR left.
"""
import argparse, json, os, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import binary  # noqa: E402  (its dd workload)
import run  # noqa: E402  (its recorder and repeat_shifted)

CYCLES = ["--from", "sys_enter_write[comm=dd,count=1]", "--to", "sys_exit_write[comm=dd,ret=1]",
          "--deadline", "1ms"]

EXPECT = "sys_enter_write[comm=dd] -> sys_exit_write within 1ms"


def timed(cmd):
    """(wall s, cpu s, peak RSS MiB) of one run of `cmd`, its output discarded."""
    p = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M"] + cmd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed: {p.stderr.decode()[-2000:]}")
    e, u, s, m = p.stderr.decode().strip().splitlines()[-1].split()
    return float(e), float(u) + float(s), int(m) / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=6_000_000)
    ap.add_argument("--times", default="1,4,16")
    ap.add_argument("--keep", default=None)
    ap.add_argument("--reuse", default=None)
    ap.add_argument("--whylate", default=run.WHYLATE)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    work = a.reuse or a.keep or tempfile.mkdtemp(prefix="whylate-bench-scale-")
    os.makedirs(work, exist_ok=True)
    base = os.path.join(work, "ftrace.txt")
    if not a.reuse:
        run.workload = lambda _secs: binary.dd_workload(a.events)
        run.record_ftrace(work, a.events)
    times = [int(t) for t in a.times.split(",")]
    files = {}
    for k in times:
        f = base if k == 1 else os.path.join(work, f"ftrace-x{k}.txt")
        if k > 1 and not os.path.exists(f):
            size = os.path.getsize(base)
            run.repeat_shifted(base, f, size * k - size // 2)
        files[k] = f
    w = a.whylate
    commands = {
        "explain cycles": lambda f: [w, "explain", "--json", f] + CYCLES,
        # The same held whole: what the windows save, at what cost in time.
        "explain whole": lambda f: [w, "explain", "--json", f, "--window-events", "0"] + CYCLES,
        "explain auto": lambda f: [w, "explain", "--json", f],
        # The other modes read in windows: --expect in one pass, softirq mode in two,
        # timer mode without a deadline in three (the workload has few timers and
        # softirqs: what is measured is each pass's memory and time).
        "explain expect": lambda f: [w, "explain", "--json", f, "--same", "thread",
                                     "--expect", EXPECT],
        "explain softirq": lambda f: [w, "explain", "--json", f, "--softirq", "NET_RX"],
        "explain timer": lambda f: [w, "explain", "--json", f, "--timer"],
        "latency": lambda f: [w, "latency", "--json", f],
        "stats": lambda f: [w, "stats", "--json", f],
        "cat": lambda f: ["cat", f],
    }
    events = {k: json.loads(subprocess.run([w, "stats", "--json", f], capture_output=True,
                                           check=True).stdout)["events"]
              for k, f in files.items()}
    rows = []
    for name, cmd in commands.items():
        for k, f in files.items():
            wall, cpu, rss = timed(cmd(f))
            rows.append({"command": name, "times": k, "events": events[k], "wall_s": wall,
                         "cpu_s": cpu, "peak_mib": rss, "bytes": os.path.getsize(f)})
            print(f"{name:15} x{k:<3} {events[k]:>12,} events {wall:8.2f} s {rss:9.1f} MiB",
                  flush=True)
    by = {(r["command"], r["times"]): r for r in rows}
    print("\ncommand          size      events      time   per copy vs x1   peak RSS   vs cat")
    for name in commands:
        one = by[(name, times[0])]
        for k in times:
            r = by[(name, k)]
            linear = (r["wall_s"] / k) / max(one["wall_s"] / times[0], 1e-9)
            cat = by[("cat", k)]["wall_s"]
            print(f"{name:15} x{k:<4} {r['events']:>12,} {r['wall_s']:8.2f} s {linear:10.2f}"
                  f" {r['peak_mib']:10.1f} MiB {r['wall_s'] / max(cat, 1e-3):7.1f}x")
    if a.json:
        with open(a.json, "w") as out:
            json.dump(rows, out, indent=1)


if __name__ == "__main__":
    main()
