#!/usr/bin/env python3
"""Benchmark of the binary readers and the recorder (issue 3's speed targets).

Workload: two `dd bs=1` copies, one per CPU: every byte is a read() and a write(), i.e.
four raw_syscalls events, plus the scheduler events around them.

1. perf.data of >= --events tracepoint samples (perf record -a): time whylate reading it
   (events decoded, one core) against `perf script` printing it; also the generic
   (linux-perf-data) path the fast in-place one replaced.
2. trace.dat recorded with `whylate record` (>= --events events): events/s recorded and
   events lost at the default buffer.
3. Recorder CPU time: `whylate record --duration D` and `perf record -a -- sleep D` while
   the same workload runs beside them (user+sys of the recorder alone).
4. trace.dat read speed on one core: raw records (container + pages) and fully decoded
   events, in MB/s of uncompressed CPU data, against `trace-cmd report`.

Usage: sudo python3 bench/binary.py [--events 4000000] [--keep DIR]
Prints a table; nothing here is a pass/fail test.
"""
import argparse, json, os, shutil, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHYLATE = os.path.join(ROOT, "target", "release", "whylate")
SPEED = os.path.join(ROOT, "target", "release", "examples", "read_speed")
T = "/sys/kernel/tracing"
PERF_EVENTS = "raw_syscalls:sys_enter,raw_syscalls:sys_exit,sched:sched_switch,sched:sched_waking,sched:sched_wakeup"


def dd_workload(events):
    n = max(1000, events // 8)
    return ["sh", "-c",
            f"dd if=/dev/zero of=/dev/null bs=1 count={n} 2>/dev/null & "
            f"dd if=/dev/zero of=/dev/null bs=1 count={n} 2>/dev/null; wait"]


def best(cmd, repeat=3, stdout=subprocess.DEVNULL):
    t = None
    out = b""
    for _ in range(repeat):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, stdout=subprocess.PIPE if stdout is None else stdout,
                           stderr=subprocess.PIPE)
        dt = time.perf_counter() - t0
        if p.returncode != 0:
            sys.exit(f"{cmd}: {p.stderr.decode()}")
        out = p.stdout or b""
        t = dt if t is None else min(t, dt)
    return t, out


def cpu_time(cmd):
    """user+sys seconds of `cmd` itself (GNU time)."""
    p = subprocess.run(["/usr/bin/time", "-f", "%U %S"] + cmd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    u, s = p.stderr.decode().strip().splitlines()[-1].split()
    return float(u) + float(s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=4_000_000)
    ap.add_argument("--keep", default=None)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (perf -a and tracefs)")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "whylate-cli"], cwd=ROOT, check=True)
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "whylate-read", "--example", "read_speed"],
                   cwd=ROOT, check=True)
    was_mounted = os.path.exists(os.path.join(T, "instances"))
    work = a.keep or tempfile.mkdtemp(prefix="whylate-binbench-")
    os.makedirs(work, exist_ok=True)
    try:
        # 1. perf.data
        pdata = os.path.join(work, "perf.data")
        subprocess.run(["perf", "record", "-q", "-a", "-m", "64M", "-e", PERF_EVENTS, "-o", pdata, "--"]
                       + dd_workload(a.events), check=True, stderr=subprocess.DEVNULL)
        t_script, _ = best(["perf", "script", "-i", pdata], repeat=2)
        t_read, out = best([SPEED, pdata], stdout=None)
        n_perf = int(out.split()[0])
        t_generic, _ = best([SPEED, pdata, "--perf-generic"], stdout=None)
        t_stats, _ = best([WHYLATE, "stats", pdata])
        # 2. whylate record
        dat = os.path.join(work, "t.dat")
        p = subprocess.run([WHYLATE, "record", "--json", "-e", "syscalls,sched", "-o", dat, "--"]
                           + dd_workload(a.events), stdout=subprocess.PIPE, check=True)
        r = json.loads(p.stdout)
        rate = r["events"] / (r["duration_ns"] / 1e9)
        # 3. recorder CPU time beside the same workload
        dur = 3
        def beside(rec_cmd):
            w = subprocess.Popen(dd_workload(a.events * 4))
            try:
                return cpu_time(rec_cmd)
            finally:
                w.kill()
                w.wait()
        cpu_w = beside([WHYLATE, "record", "-e", "syscalls,sched", "--duration", f"{dur}s",
                        "-o", os.path.join(work, "cpu.dat")])
        cpu_p = beside(["perf", "record", "-q", "-a", "-m", "64M", "-e", PERF_EVENTS, "-o",
                        os.path.join(work, "cpu.data"), "--", "sleep", str(dur)])
        # 4. trace.dat read speed
        t_raw, out_raw = best([SPEED, dat, "--raw"], stdout=None)
        n_dat, data_bytes = int(out_raw.split()[0]), int(out_raw.split()[1])
        t_dec, _ = best([SPEED, dat], stdout=None)
        t_dat_stats, _ = best([WHYLATE, "stats", dat])
        t_tc = None
        if shutil.which("trace-cmd"):
            t_tc, _ = best(["trace-cmd", "report", "-i", dat], repeat=1)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
        if not was_mounted and os.path.exists(os.path.join(T, "instances")):
            subprocess.run(["umount", T])
    print(f"perf.data, {n_perf} samples:")
    print(f"  perf script            {t_script:8.3f} s")
    print(f"  whylate read (decode)  {t_read:8.3f} s  = {t_read / t_script:.3f}x perf script "
          f"({n_perf / t_read / 1e6:.1f} M events/s)")
    print(f"  (linux-perf-data path) {t_generic:8.3f} s  = {t_generic / t_script:.3f}x perf script")
    print(f"  whylate stats          {t_stats:8.3f} s  = {t_stats / t_script:.3f}x perf script")
    print(f"whylate record, {r['events']} events in {r['duration_ns'] / 1e9:.2f} s: "
          f"{rate / 1e6:.2f} M events/s, {r['lost']} lost (buffer {r['cpus'] and 'default'})")
    print(f"recorder CPU time over {dur} s beside the workload: whylate {cpu_w:.2f} s, "
          f"perf record {cpu_p:.2f} s ({cpu_w / cpu_p:.2f}x)")
    mb = data_bytes / 1e6
    print(f"trace.dat, {n_dat} events, {mb:.0f} MB of CPU data:")
    print(f"  raw records            {t_raw:8.3f} s  = {mb / t_raw:7.0f} MB/s")
    print(f"  decoded events         {t_dec:8.3f} s  = {mb / t_dec:7.0f} MB/s ({n_dat / t_dec / 1e6:.1f} M events/s)")
    print(f"  whylate stats          {t_dat_stats:8.3f} s")
    if t_tc:
        print(f"  trace-cmd report       {t_tc:8.3f} s  ({t_tc / t_dat_stats:.1f}x whylate stats)")


if __name__ == "__main__":
    main()
