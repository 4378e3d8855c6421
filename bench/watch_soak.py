#!/usr/bin/env python3
"""Soak benchmark for `whylate watch` (not a test): the frob lab (seed 000) under watch
for a fixed time, with RSS of the watch process and the bytes of its kept windows
sampled every 10 s. Flat RSS and capped disk are the point; misses per minute and the
recorder's CPU share are printed from watch's own summary, and so is what each minute
cost (the summary's `minutes`): the windows' analysis time per second traced, the
process's CPU share, and the last full minute against the first (growth).

    sudo python3 bench/watch_soak.py --minutes 10 [--whylate BIN]

Needs root, cc, and a built `target/release/whylate` (or --whylate BIN).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WQ_MASK = "/sys/devices/virtual/workqueue/cpumask"


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def du(path):
    return sum(
        os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--keep-mb", type=int, default=64)
    ap.add_argument("--whylate", default=os.path.join(ROOT, "target/release/whylate"))
    a = ap.parse_args()
    whylate = a.whylate
    tmp = tempfile.mkdtemp(prefix="whylate-soak-")
    frob = os.path.join(tmp, "frob")
    subprocess.run(["cc", "-O2", "-o", frob, os.path.join(ROOT, "lab/frob.c")], check=True)
    keep = os.path.join(tmp, "kept")
    secs = int(a.minutes * 60)
    old_mask = open(WQ_MASK).read().strip()
    open(WQ_MASK, "w").write("2")
    cmd = [
        whylate, "watch", "--json", "--duration", f"{secs}s",
        "-e", "sched,irq,wq,syscalls:sys_enter_write,syscalls:sys_exit_read[ret > 0]",
        "--from", "sys_enter_write[comm=frobnicator,count=7]",
        "--to", "sys_exit_read[comm=frobnicator,ret>0]", "--deadline", "3.5ms",
        "--keep", keep, "--keep-mb", str(a.keep_mb),
        "--", frob, "--cycles", "100000000", "--client-cpu", "0", "--device-cpu", "1",
        "--hog-cpu", "1", "--hogs", "2", "--log", os.path.join(tmp, "frob.log"),
        "--complaints", os.path.join(tmp, "c.log"),
    ]
    out = open(os.path.join(tmp, "watch.jsonl"), "w")
    p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
    rows = []
    t0 = time.time()
    try:
        while p.poll() is None:
            time.sleep(10)
            r = rss_kb(p.pid)
            if r is not None:
                rows.append((time.time() - t0, r, du(keep) if os.path.isdir(keep) else 0))
                print(f"{rows[-1][0]:6.0f} s  RSS {r / 1024:7.1f} MiB  kept {rows[-1][2] / 2**20:7.1f} MiB", flush=True)
    finally:
        open(WQ_MASK, "w").write(old_mask)
    out.close()
    summary = None
    misses = 0
    for line in open(os.path.join(tmp, "watch.jsonl")):
        j = json.loads(line)
        if "miss" in j:
            misses += 1
        elif "summary" in j:
            summary = j["summary"]
    if not rows or summary is None:
        sys.exit("watch ended without a summary")
    after = [r for r in rows if r[0] >= 60] or rows
    print(f"\nRSS after the first minute: min {min(r[1] for r in after) / 1024:.1f} MiB, "
          f"max {max(r[1] for r in after) / 1024:.1f} MiB; kept windows max "
          f"{max(r[2] for r in rows) / 2**20:.1f} MiB (cap {a.keep_mb} MiB)")
    st = summary["status"]
    cyc = summary["report"]["cycles"] if summary.get("report") else {}
    print(f"{cyc.get('count', 0)} cycles, {misses} misses in {st['elapsed_ns'] / 6e10:.1f} min "
          f"= {misses / (st['elapsed_ns'] / 6e10):.1f} misses/min; recorder "
          f"{st['recorder_cpu'] * 100:.1f}% of a CPU; {st['windows']} windows explained; "
          f"kernel lost {sum(st['lost'])} events; {len(summary['kept'])} windows kept, "
          f"{summary['dropped']} dropped")
    minute_costs(st.get("minutes", []))


def minute_costs(minutes):
    """Per wall-clock minute: windows, analysis ms per second traced, CPU shares; then
    the last full minute against the first."""
    print("\nminute  windows  misses  traced s  analysis ms/traced s  analysis CPU %  process CPU %")
    rows, misses = [], []
    for i, m in enumerate(minutes):
        misses.append(m.get("misses", 0))
        traced = m["traced_ns"] / 1e9
        per = m["analysis_ns"] / 1e6 / traced if traced else 0.0
        rows.append(per)
        print(f"{i + 1:6d}  {m['windows']:7d}  {m.get('misses', 0):6d}  {traced:8.1f}  {per:20.2f}  "
              f"{m['analysis_cpu_ns'] / 6e8:14.1f}  {m['cpu_ns'] / 6e8:13.1f}")
    # The first minute learns, the last is cut short. Each miss costs its explanation and
    # its kept window: compare the cost with the misses of the same minutes.
    full, fm = (rows[1:-1], misses[1:-1]) if len(rows) > 2 else (rows, misses)
    if len(full) >= 2 and full[0] > 0:
        print(f"analysis ms per traced s: minute {2 if len(rows) > 2 else 1} {full[0]:.2f} "
              f"({fm[0]} misses), last full minute {full[-1]:.2f} ({fm[-1]} misses): "
              f"{full[-1] / full[0]:.2f}x")


if __name__ == "__main__":
    main()
