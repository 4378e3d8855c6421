#!/usr/bin/env python3
"""Benchmark of the Perfetto reader (issue 52): one recording, read as trace.dat, as the
ftrace text `trace-cmd report` makes of it, and as Perfetto protobuf (typed events, and
compact_sched) written by Google's own classes (crates/whylate-cli/tests/perfetto/
convert.py, `pip install perfetto`).

Workload: two `dd bs=1` copies, one per CPU (every byte a read() and a write()), recorded
with `whylate record -e syscalls,sched` to >= --events events.

For each copy: `whylate stats` and `whylate explain` in cycle mode with selectors (the
main job: each read() of the first dd closed by its write()), best of --repeat wall
seconds and peak RSS; the peer in the same run is `trace-cmd report` of the trace.dat.
`late`: events that arrived after the reorder window had gone past them (left out of the
analyses; it must be 0 for the times to compare). The compact copy is also read laid out
CPU by CPU (all of CPU0's bundles first), plain and gzipped: a file is indexed first and
its bundles read in time order, whatever the layout. `prost s`, for the Perfetto copies: the
best time prost alone takes to decode every packet on one core (examples/read_speed.rs
`--prost`; whylate shares that work between its two threads).

Usage: sudo python3 bench/perfetto.py [--events 1000000] [--repeat 3] [--keep DIR]
       python3 bench/perfetto.py --reuse DIR [--repeat 3]   (the files a --keep run left)
Prints a table; nothing here is a pass/fail test.
"""
import argparse, json, os, shutil, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHYLATE = os.path.join(ROOT, "target", "release", "whylate")
SPEED = os.path.join(ROOT, "target", "release", "examples", "read_speed")
CONVERT = os.path.join(ROOT, "crates", "whylate-cli", "tests", "perfetto", "convert.py")


def dd_workload(events):
    n = max(1000, events // 8)
    return ["sh", "-c",
            f"dd if=/dev/zero of=/dev/null bs=1 count={n} 2>/dev/null & "
            f"dd if=/dev/zero of=/dev/null bs=1 count={n} 2>/dev/null; wait"]


def measure(cmd, repeat):
    """Best wall seconds over `repeat` runs and the peak RSS (MB) of the best one."""
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
        dt = time.perf_counter() - t0
        if p.returncode not in (0, 1):  # explain exits 1 when there are misses
            sys.exit(f"{cmd}: {p.stderr.decode()[-2000:]}")
        rss = int(p.stderr.decode().strip().splitlines()[-1]) / 1024
        if best is None or dt < best[0]:
            best = (dt, rss)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", default=None)
    ap.add_argument("--reuse", default=None)
    a = ap.parse_args()
    if os.geteuid() != 0 and not a.reuse:
        sys.exit("needs root (tracefs)")
    for tool in ["trace-cmd", "/usr/bin/time"]:
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not installed")
    if a.reuse:
        want = ["t.dat", "t.txt", "t.perfetto-trace", "t.compact.perfetto-trace"]
        missing = [f for f in want if not os.path.exists(os.path.join(a.reuse, f))]
        if missing:
            sys.exit(f"--reuse {a.reuse}: no {', '.join(missing)} there (a --keep run leaves them)")
    elif subprocess.run([sys.executable, "-c", "import perfetto"]).returncode != 0:
        sys.exit("the perfetto Python package is missing: pip install perfetto")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "whylate-cli"], cwd=ROOT, check=True)
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "whylate-read", "--example",
                    "read_speed"], cwd=ROOT, check=True)
    work = a.reuse or a.keep or tempfile.mkdtemp(prefix="whylate-pfbench-")
    os.makedirs(work, exist_ok=True)
    try:
        dat = os.path.join(work, "t.dat")
        txt = os.path.join(work, "t.txt")
        typed = os.path.join(work, "t.perfetto-trace")
        compact = os.path.join(work, "t.compact.perfetto-trace")
        if not a.reuse:
            record(dat, txt, typed, compact, a.events)
        # The compact copy as a converter may lay it out (all of CPU0's bundles, then
        # CPU1's: read through the index) and gzipped (the index's cursors decompress).
        by_cpu = os.path.join(work, "t.compact.cpu-by-cpu.perfetto-trace")
        gz = os.path.join(work, "t.compact.cpu-by-cpu.perfetto-trace.gz")
        if not os.path.exists(gz):
            subprocess.run([sys.executable, CONVERT, "convert", txt, by_cpu, "--compact",
                            "--names-from-events", "--layout", "cpu-by-cpu"], check=True)
            with open(gz, "wb") as f:
                subprocess.run(["gzip", "-c", by_cpu], stdout=f, check=True)
        # The first dd's reads, each closed by its write (thread-paired).
        cycles = ["--from", "sys_enter_read[comm=dd]", "--to", "sys_exit_write[comm=dd]",
                  "--deadline", "1ms"]
        rows = []
        t_peer, rss_peer = measure(["trace-cmd", "report", "-i", dat], a.repeat)
        for name, path in [("trace.dat", dat), ("ftrace text (report -l -t)", txt),
                           ("perfetto, typed", typed), ("perfetto, compact_sched", compact),
                           ("perfetto, compact, CPU by CPU", by_cpu),
                           ("  the same, gzip", gz)]:
            mb = os.path.getsize(path) / 1e6
            ts, rs = measure([WHYLATE, "-q", "stats", path], a.repeat)
            te, re_ = measure([WHYLATE, "-q", "explain", path] + cycles, a.repeat)
            # Events arriving after the reorder window had moved past them are left out
            # of the analyses: a fast reader that drops a fifth of them is no win.
            st = json.loads(subprocess.run([WHYLATE, "-q", "stats", "--json", path],
                                           capture_output=True, check=True).stdout)
            late = sum(i["order"]["unsorted"] for i in st["inputs"])
            floor = prost_floor(path, a.repeat) if path in (typed, compact, by_cpu) else None
            rows.append((name, mb, ts, rs, te, re_, late, floor))
        print(f"{st['events']} events (the last copy's); peer: trace-cmd report of the trace.dat "
              f"{t_peer:.2f} s, {rss_peer:.0f} MB")
        print(f"{'input':30} {'MB':>7} {'stats s':>8} {'RSS MB':>7} {'explain s':>10} {'RSS MB':>7} {'vs peer':>8} {'late':>7} {'prost s':>8}")
        for name, mb, ts, rs, te, re_, late, floor in rows:
            fl = f"{floor:8.3f}" if floor is not None else f"{'':8}"
            print(f"{name:30} {mb:7.1f} {ts:8.3f} {rs:7.0f} {te:10.3f} {re_:7.0f} {t_peer / te:7.1f}x {late:7} {fl}")
    finally:
        if not a.keep and not a.reuse:
            shutil.rmtree(work, ignore_errors=True)


def record(dat, txt, typed, compact, events):
    """Records the workload and writes its text and its two Perfetto copies."""
    subprocess.run([WHYLATE, "record", "-q", "-e", "syscalls,sched", "-o", dat, "--"]
                   + dd_workload(events), check=True, stdout=subprocess.DEVNULL)
    with open(txt, "wb") as f:
        subprocess.run(["trace-cmd", "report", "-l", "-t", "-i", dat], stdout=f, check=True)
    subprocess.run([sys.executable, CONVERT, "convert", txt, typed, "--names-from-events"], check=True)
    subprocess.run([sys.executable, CONVERT, "convert", txt, compact, "--compact",
                    "--names-from-events"], check=True)


def prost_floor(path, repeat):
    """Best seconds prost alone takes to decode every packet of `path` on one core."""
    best = None
    for _ in range(repeat):
        out = subprocess.run([SPEED, path, "--prost"], capture_output=True, check=True)
        secs = float(out.stdout.split()[2])
        best = secs if best is None else min(best, secs)
    return best


if __name__ == "__main__":
    main()
