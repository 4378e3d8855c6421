#!/usr/bin/env python3
"""Speed and memory benchmark for `whylate stats` and `whylate latency` on real traces
recorded here.

Records (root needed) a busy-polling pty workload (lab/ptypoll.py with CPU hogs) twice:
  1. with `perf record` -> perf.data -> `perf script` text   (peer: perf script itself)
  2. in a private tracefs instance -> ftrace `trace` text     (peer: cat)
then times `whylate stats` on each against `cat FILE > /dev/null` and against the time
`perf script` takes to print the same events (and on the ftrace text given twice as one
file, every event of the second copy late), and measures peak RSS on an input of at
least --big-gb GiB (the perf text repeated with shifted timestamps).
`whylate latency` (timeline plus every measure) is timed on the same inputs against
`whylate stats` (reading alone), with its peak RSS and the spans and edges it kept;
on the perf recording also against `perf sched timehist` on the perf.data.

Usage: sudo python3 bench/run.py [--events 4000000] [--big-gb 1.0] [--keep DIR]
Prints a table; nothing here is a pass/fail test.
"""
import argparse, os, re, resource, shutil, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHYLATE = os.path.join(ROOT, "target", "release", "whylate")
T = "/sys/kernel/tracing"
EVENTS = "raw_syscalls:sys_enter,raw_syscalls:sys_exit,sched:sched_switch,sched:sched_waking,sched:sched_wakeup"


def run_timed(cmd, stdout=subprocess.DEVNULL, repeat=1):
    """Best wall time of `repeat` runs and the peak RSS (KiB) of the last one."""
    best = None
    rss = 0
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t0 = time.perf_counter()
        p = subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE)
        dt = time.perf_counter() - t0
        if p.returncode != 0:
            sys.exit(f"{cmd}: {p.stderr.decode()}")
        rss = max(rss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before)
        best = dt if best is None else min(best, dt)
    return best, rss


def peak_rss(cmd):
    """Peak RSS of one command, via GNU time (ru_maxrss of children is cumulative)."""
    p = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, check=True)
    return int(p.stderr.decode().strip().splitlines()[-1])


def workload(seconds):
    return ["python3", os.path.join(ROOT, "lab", "ptypoll.py"), "--duration", str(seconds),
            "--reply-us", "0", "--hog"]


def record_perf(work, events):
    data = os.path.join(work, "perf.data")
    secs = max(1.0, events / 850_000)  # ~0.85 M events/s on the 2-CPU VM
    subprocess.run(["perf", "record", "-q", "-a", "-m", "64M", "-e", EVENTS, "-o", data, "--"]
                   + workload(secs), check=True, stderr=subprocess.DEVNULL)
    txt = os.path.join(work, "perf.txt")
    with open(txt, "wb") as f:
        t_script, _ = run_timed(["perf", "script", "-i", data], stdout=f)
    t_timehist, _ = run_timed(["perf", "sched", "timehist", "-i", data])
    return txt, t_script, t_timehist


def record_ftrace(work, events):
    mounted = False
    if not os.path.exists(os.path.join(T, "instances")):
        subprocess.run(["mount", "-t", "tracefs", "nodev", T], check=True)
        mounted = True
    inst = os.path.join(T, "instances", f"whylate-bench-{os.getpid()}")
    os.mkdir(inst)
    try:
        def w(rel, v):
            with open(os.path.join(inst, rel), "w") as f:
                f.write(v)
        w("buffer_size_kb", str(max(65536, events // 10)))
        for e in ["raw_syscalls/sys_enter", "raw_syscalls/sys_exit", "sched/sched_switch",
                  "sched/sched_waking", "sched/sched_wakeup"]:
            w(f"events/{e}/enable", "1")
        w("tracing_on", "1")
        subprocess.run(workload(max(1.0, events / 700_000)), check=True, stderr=subprocess.DEVNULL)
        w("tracing_on", "0")
        txt = os.path.join(work, "ftrace.txt")
        shutil.copyfile(os.path.join(inst, "trace"), txt)
        return txt
    finally:
        with open(os.path.join(inst, "tracing_on"), "w") as f:
            f.write("0")
        os.rmdir(inst)
        if mounted:
            subprocess.run(["umount", T])


def repeat_shifted(src, dst, min_bytes, min_events=0):
    """dst = src repeated with each copy's timestamps shifted past the previous copy."""
    # The first `secs.frac:` of a line is its timestamp in both perf script and ftrace text.
    ts_re = re.compile(rb"( )(\d+)\.(\d+):")
    data = open(src, "rb").read()
    stamps = [int(m.group(2)) for m in ts_re.finditer(data)]
    span = stamps[-1] - stamps[0] + 1
    with open(dst, "wb") as out:
        k = 0
        written = 0
        while written < min_bytes or k * len(stamps) < min_events:
            shift = k * span
            chunk = data if k == 0 else ts_re.sub(
                lambda m: m.group(1) + str(int(m.group(2)) + shift).encode() + b"." + m.group(3) + b":", data)
            out.write(chunk)
            written += len(chunk)
            k += 1
    return written


def events_of(path):
    out = subprocess.run([WHYLATE, "stats", "--json", path], capture_output=True, check=True).stdout
    import json
    return json.loads(out)["events"]


def latency_kept(path):
    """Spans and edges the timeline kept for `path`."""
    import json
    out = subprocess.run([WHYLATE, "latency", "--json", "--top", "1", path], capture_output=True,
                         check=True).stdout
    j = json.loads(out)
    return j["spans"], j["edges"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=4_000_000)
    ap.add_argument("--big-gb", type=float, default=1.0)
    ap.add_argument("--keep", default=None, help="keep the recorded files in this directory")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (perf -a and tracefs)")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "whylate-cli"], cwd=ROOT, check=True)
    # perf mounts tracefs to read event formats; leave the mount as we found it.
    was_mounted = os.path.exists(os.path.join(T, "instances"))
    work = a.keep or tempfile.mkdtemp(prefix="whylate-bench-")
    os.makedirs(work, exist_ok=True)
    rows = []
    lat_rows = []
    ex_rows = []
    try:
        txt, t_script, t_timehist = record_perf(work, a.events)
        rec = record_ftrace(work, a.events)
        # This workload yields fewer events under tracefs than under perf; reach the target
        # count with time-shifted copies of the real recording.
        ftxt = os.path.join(work, "ftrace-big.txt")
        repeat_shifted(rec, ftxt, 0, a.events)
        for name, path, peer in [("perf script text", txt, ("perf script", t_script)),
                                 ("ftrace text", ftxt, None)]:
            size = os.path.getsize(path)
            n = events_of(path)
            t_cat, _ = run_timed(["cat", path], repeat=3)
            t_w, _ = run_timed([WHYLATE, "stats", path], repeat=3)
            rss = peak_rss([WHYLATE, "stats", path])
            rows.append((name, n, size, t_w, t_cat, peer, rss))
            t_l, _ = run_timed([WHYLATE, "latency", path], repeat=3)
            rss_l = peak_rss([WHYLATE, "latency", path])
            kept = latency_kept(path)
            lat_rows.append((name, n, t_w, t_l, rss, rss_l, kept,
                             t_timehist if name.startswith("perf") else None))
            # explain: the workload's own request/reply cycles (ptypoll's frobnicator).
            t_x, _ = run_timed([WHYLATE, "explain", path, "--from",
                                "sys_enter_write[comm=frobnicator,count=7]", "--to",
                                "sys_exit_read[comm=frobnicator,ret>0]", "--deadline", "3.5ms"],
                               repeat=3)
            ex_rows.append((name, n, t_w, t_x))
        # Two captures of the same span as one file (the second starts back at the first's
        # start): every event of the second is late. The cost must stay linear in the input
        # whatever the window: compare with cat on the same bytes.
        twice = os.path.join(work, "ftrace-twice.txt")
        with open(twice, "wb") as out:
            for _ in range(2):
                with open(ftxt, "rb") as f:
                    shutil.copyfileobj(f, out)
        for name, extra in [("ftrace text x2, late", []),
                            ("  same, --reorder 100000", ["--reorder", "100000"])]:
            t_cat, _ = run_timed(["cat", twice], repeat=3)
            t_w, _ = run_timed([WHYLATE, "stats", twice] + extra, repeat=3)
            rss = peak_rss([WHYLATE, "stats", twice] + extra)
            rows.append((name, events_of(twice), os.path.getsize(twice), t_w, t_cat, None, rss))
        big = os.path.join(work, "big.txt")
        size = repeat_shifted(txt, big, int(a.big_gb * (1 << 30)))
        t_big, _ = run_timed([WHYLATE, "stats", big])
        rss_big = peak_rss([WHYLATE, "stats", big])
        rows.append(("perf text x N (memory)", events_of(big), size, t_big, None, None, rss_big))
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
        if not was_mounted and os.path.exists(os.path.join(T, "instances")):
            subprocess.run(["umount", T])
    print(f"{'input':<24} {'events':>10} {'MB':>8} {'whylate s':>10} {'MB/s':>7} {'vs cat':>7} {'vs peer':>22} {'peak RSS':>10}")
    for name, n, size, t_w, t_cat, peer, rss in rows:
        mb = size / 1e6
        vs_cat = f"{t_w / t_cat:.1f}x" if t_cat else "-"
        vs_peer = f"{peer[0]} {peer[1]:.2f}s (whylate {peer[1] / t_w:.1f}x faster)" if peer else "-"
        print(f"{name:<24} {n:>10} {mb:>8.0f} {t_w:>10.3f} {mb / t_w:>7.0f} {vs_cat:>7} {vs_peer:>22} {rss / 1024:>8.1f}MB")
    print()
    print(f"{'latency (all measures)':<24} {'events':>10} {'stats s':>8} {'latency s':>10} {'ratio':>6} "
          f"{'RSS stats':>10} {'RSS lat':>9} {'spans':>9} {'edges':>8} {'B/span':>7} {'vs timehist':>16}")
    for name, n, t_s, t_l, rss_s, rss_l, (spans, edges), t_th in lat_rows:
        extra = (rss_l - rss_s) * 1024
        per = extra / max(1, spans + edges)
        th = f"{t_th:.2f}s = {t_th / t_l:.1f}x" if t_th else "-"
        print(f"{name:<24} {n:>10} {t_s:>8.3f} {t_l:>10.3f} {t_l / t_s:>5.2f}x {rss_s / 1024:>8.1f}MB "
              f"{rss_l / 1024:>7.1f}MB {spans:>9} {edges:>8} {per:>7.0f} {th:>16}")
    print()
    print(f"{'explain (frob cycles)':<24} {'events':>10} {'stats s':>8} {'explain s':>10} {'ratio':>6}")
    for name, n, t_s, t_x in ex_rows:
        print(f"{name:<24} {n:>10} {t_s:>8.3f} {t_x:>10.3f} {t_x / t_s:>5.2f}x")


if __name__ == "__main__":
    main()
