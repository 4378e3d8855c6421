#!/usr/bin/env python3
"""Benchmark of the pictures: what `--html`, `--svg` and `export --perfetto` cost on a
trace of millions of events, how big the page is, and how long a browser takes to open it.

Records (root needed) the busy-polling pty workload (lab/ptypoll.py with a CPU hog) with
`perf record -a` (raw syscalls, scheduler, softirq, workqueue and hrtimer tracepoints: the
busy-polling read() makes millions of events in seconds), then times on that perf.data:
  - `whylate explain` alone (terminal report) and with --html / --svg / export --perfetto;
  - `perf script` printing the same file (peer: the usual first step of a hand analysis);
  - headless Chromium loading the page until its script has run (`--dump-dom`), against
    an empty page (the browser's own start-up).

Usage: sudo python3 bench/report.py [--seconds 5] [--keep DIR]
Prints a table; nothing here is a pass/fail test.
"""
import argparse, json, os, shutil, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHYLATE = os.path.join(ROOT, "target", "release", "whylate")
EVENTS = ("raw_syscalls:sys_enter,raw_syscalls:sys_exit,sched:sched_switch,sched:sched_waking,"
          "sched:sched_wakeup,irq:softirq_raise,irq:softirq_entry,irq:softirq_exit,"
          "workqueue:workqueue_queue_work,workqueue:workqueue_execute_start,"
          "workqueue:workqueue_execute_end,timer:hrtimer_expire_entry,timer:hrtimer_expire_exit")
CYCLE = ["--from", "sys_enter_write[comm=frobnicator,count=7]",
         "--to", "sys_exit_read[comm=frobnicator,ret>0]", "--deadline", "3.5ms"]


def best_of(cmd, repeat=3, stdout=subprocess.DEVNULL):
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE)
        dt = time.perf_counter() - t0
        if p.returncode != 0:
            sys.exit(f"{cmd}: {p.stderr.decode()[-500:]}")
        best = dt if best is None else min(best, dt)
    return best


def chromium():
    for c in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(c):
            return c
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--keep", default=None)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (perf record -a)")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "whylate-cli"], cwd=ROOT, check=True)
    work = a.keep or tempfile.mkdtemp(prefix="whylate-report-bench-")
    os.makedirs(work, exist_ok=True)
    dat = os.path.join(work, "perf.data")
    if not os.path.exists(dat):
        # perf mounts tracefs to read event formats; leave the mount as we found it.
        was_mounted = os.path.exists("/sys/kernel/tracing/instances")
        subprocess.run(["perf", "record", "-q", "-a", "-m", "64M", "-e", EVENTS, "-o", dat, "--",
                        "python3", os.path.join(ROOT, "lab", "ptypoll.py"), "--duration",
                        str(a.seconds), "--reply-us", "0", "--hog"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not was_mounted:
            subprocess.run(["umount", "/sys/kernel/tracing"], stderr=subprocess.DEVNULL)
    st = json.loads(subprocess.run([WHYLATE, "stats", "--json", dat], check=True,
                                   capture_output=True).stdout)
    events = st["events"]
    size = os.path.getsize(dat)
    html = os.path.join(work, "report.html")
    svg = os.path.join(work, "svg")
    pf = os.path.join(work, "trace.json")
    t_text = best_of([WHYLATE, "explain", dat] + CYCLE)
    t_html = best_of([WHYLATE, "explain", dat] + CYCLE + ["--html", html])
    t_svg = best_of([WHYLATE, "explain", dat] + CYCLE + ["--svg", svg])
    t_pf = best_of([WHYLATE, "export", dat, "--perfetto", pf] + CYCLE)
    t_report = best_of([WHYLATE, "report", dat, "-o", os.path.join(work, "auto.html")])
    t_tc = best_of(["perf", "script", "-i", dat], repeat=1)
    rows = [
        ("explain (terminal only)", t_text, None),
        ("explain --html", t_html, os.path.getsize(html)),
        ("explain --svg", t_svg, sum(os.path.getsize(os.path.join(svg, f)) for f in os.listdir(svg))),
        ("export --perfetto", t_pf, os.path.getsize(pf)),
        ("report (automatic mode)", t_report, os.path.getsize(os.path.join(work, "auto.html"))),
    ]
    print(f"perf.data: {events:,} events, {size / 1e6:.1f} MB, {work}")
    print(f"{'command':28} {'time':>8} {'events/s':>12} {'output':>10}")
    for name, t, out in rows:
        o = f"{out / 1e6:.2f} MB" if out else ""
        print(f"{name:28} {t:7.2f}s {events / t / 1e6:10.2f} M {o:>10}")
    if t_tc:
        print(f"{'perf script (peer)':28} {t_tc:7.2f}s {events / t_tc / 1e6:10.2f} M"
              f"   explain --html = {t_html / t_tc:.2f}x perf script")
    br = chromium()
    if br:
        blank = os.path.join(work, "blank.html")
        with open(blank, "w") as f:
            f.write("<!DOCTYPE html><html><body></body></html>")
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"]
        t_blank = best_of([br] + flags + ["file://" + blank])
        t_page = best_of([br] + flags + ["file://" + html])
        print(f"chromium: page loaded and scripted in {t_page:.2f}s, an empty page {t_blank:.2f}s "
              f"(page cost {max(0.0, t_page - t_blank):.2f}s)")
    if not a.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
