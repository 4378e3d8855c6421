#!/usr/bin/env python3
"""Issue 21's benchmark: `whylate explain` and `latency` on one workload in four formats,
against peers run in the same session, with hyperfine (paired, warm cache).

Records (root needed) one workload three times with the same events (raw syscalls and
the scheduler): `perf record` (perf.data, and its `perf script` text), a tracefs instance
(ftrace text, as bench/run.py does) and `whylate record` (trace.dat). The workload is
bench/binary.py's: two `dd bs=1` copies, one per CPU, four syscall events per byte, so
each recording holds about --events events whatever the recorder.
Then one hyperfine run times, --runs times each, paired:
  whylate explain in cycle mode (the main job: a cycle per dd write, selected on the
  syscall's arguments, with a deadline; issue 51) on perf.data, perf script text,
  trace.dat, ftrace text
  whylate explain in automatic mode (no selectors) on the same four
  whylate explain with selectors that match nothing, on the same four (what testing the
  selectors costs, apart from the cycles)
  whylate latency and whylate report on perf.data, report in cycle mode on trace.dat
  whylate explain on perf.data and trace.dat as .zst, .xz and .gz (made with `zstd -T0
  FILE`, `xz -T0 -1 FILE` and `gzip FILE` when absent: one zstd frame, xz blocks of a
  few MiB, one gzip member)
  perf script (printing the perf.data), perf sched timehist (same file), cat of each text,
  zstd -dc of each .zst (decompression alone)
and GNU time gives each whylate command's peak RSS and CPU use (user+sys / wall). The
last line is the floor under the .zst runs that the plain run's CPU time and one
decompression set on this machine's cores (see docs/benchmarks.md).

Usage: sudo python3 bench/explain.py [--events 4000000] [--runs 5] [--keep DIR] [--reuse DIR]
                                     [--whylate BIN]
--reuse DIR times the recordings an earlier --keep DIR left (perf.data, perf.txt,
ftrace.txt, trace.dat) instead of recording again: two builds compared on one recording
(--whylate names the binary timed, target/release/whylate by default; recording always
uses the default).
Needs hyperfine (apt-get install hyperfine). Prints a table (min and median); nothing
here is a pass/fail test.
"""
import argparse, json, os, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import binary  # noqa: E402  (its dd workload)
import run  # noqa: E402  (its recorders)

WHYLATE = run.WHYLATE


def use_dd(events):
    """The recorders of bench/run.py run the dd workload of `events` events instead."""
    run.workload = lambda _secs: binary.dd_workload(events)


def record_dat(work, events):
    """A trace.dat of the same workload, recorded by `whylate record`."""
    dat = os.path.join(work, "trace.dat")
    subprocess.run([WHYLATE, "record", "-e", "sched,syscalls", "--buffer-kb",
                    str(max(65536, events // 10)), "-o", dat, "--"] + binary.dd_workload(events),
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return dat


def gnu_time(cmd):
    """(peak RSS MiB, CPUs used) of one run."""
    p = subprocess.run(["/usr/bin/time", "-f", "%M %U %S %e"] + cmd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, check=True)
    rss, u, s, e = p.stderr.decode().strip().splitlines()[-1].split()
    return int(rss) / 1024, (float(u) + float(s)) / max(float(e), 1e-9)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=4_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", default=None)
    ap.add_argument("--reuse", default=None)
    ap.add_argument("--whylate", default=None)
    a = ap.parse_args()
    if not shutil.which("hyperfine"):
        sys.exit("hyperfine is needed: apt-get install hyperfine")
    # perf mounts tracefs to read event formats and leaves it mounted: put it back.
    was_mounted = os.path.exists(os.path.join(run.T, "instances"))
    try:
        bench(a)
    finally:
        if not was_mounted and os.path.exists(os.path.join(run.T, "instances")):
            subprocess.run(["umount", run.T])


def bench(a):
    """Records, times and prints the table."""
    work = a.reuse or a.keep or tempfile.mkdtemp(prefix="whylate-bench-explain-")
    os.makedirs(work, exist_ok=True)
    perf_data = os.path.join(work, "perf.data")
    if a.reuse:
        perf_txt, ftrace_txt, dat = (os.path.join(work, f)
                                     for f in ("perf.txt", "ftrace.txt", "trace.dat"))
    else:
        use_dd(a.events)
        perf_txt, _, _ = run.record_perf(work, a.events)
        ftrace_txt = run.record_ftrace(work, a.events)
        dat = record_dat(work, a.events)
    inputs = {"perf.data": perf_data, "perf script text": perf_txt, "trace.dat": dat,
              "ftrace text": ftrace_txt}
    whylate = a.whylate or WHYLATE
    # The main job first: cycle mode where cycles are many, one per dd write (about a
    # quarter of the events), selected on the syscall's arguments (a write of one byte,
    # its return of one), with a deadline, so that what explain keeps per cycle shows in
    # its peak RSS and a few thousand misses are explained.
    cycles = ("--from sys_enter_write[comm=dd,count=1] --to sys_exit_write[comm=dd,ret=1] "
              "--deadline 1ms")
    cmds = {f"explain cycles {k}": f"{whylate} explain --json {v} {cycles}"
            for k, v in inputs.items()}
    cmds.update({f"explain {k}": f"{whylate} explain --json {v}" for k, v in inputs.items()})
    # Cycle mode whose selectors match nothing (no write has 7 bytes): every event still
    # goes through the cutter and every write is tested, but no cycle is made. Between
    # automatic mode and the main job, it splits what cycle mode adds into testing the
    # selectors and the cycles themselves (printed at the end).
    none = "--from sys_enter_write[count=7] --to sys_exit_write[ret=7] --deadline 1ms"
    cmds.update({f"explain no-match {k}": f"{whylate} explain --json {v} {none}"
                 for k, v in inputs.items()})
    cmds["latency perf.data"] = f"{whylate} latency --json {perf_data}"
    cmds["report perf.data"] = f"{whylate} report {perf_data} -o /dev/null"
    cmds["report cycles trace.dat"] = f"{whylate} report {dat} {cycles} -o /dev/null"
    # The binary formats compressed as `zstd`, `xz` and `gzip` write them (read in place,
    # no copy).
    pack = {"zst": ["zstd", "-q", "-T0", "-c"], "xz": ["xz", "-T0", "-1", "-c"],
            "gz": ["gzip", "-c"]}
    for k in ("perf.data", "trace.dat"):
        plain = inputs[k]
        for ext, tool in pack.items():
            if not os.path.exists(f"{plain}.{ext}"):
                with open(f"{plain}.{ext}", "wb") as out:
                    subprocess.run(tool + [plain], stdout=out, check=True)
            cmds[f"explain {k}.{ext}"] = f"{whylate} explain --json {plain}.{ext}"
    cmds["perf script"] = f"perf script -i {perf_data}"
    cmds["perf sched timehist"] = f"perf sched timehist -i {perf_data}"
    cmds["cat perf script text"] = f"cat {perf_txt}"
    cmds["cat ftrace text"] = f"cat {ftrace_txt}"
    # Decompression alone, for the floor under the .zst runs (see the end).
    for k in ("perf.data", "trace.dat"):
        cmds[f"zstd -dc {k}.zst"] = f"zstd -q -dc {inputs[k]}.zst"
    out = os.path.join(work, "hyperfine.json")
    args = ["hyperfine", "-N", "--warmup", "1", "--runs", str(a.runs), "--export-json", out,
            "--output", "null"]
    for name, c in cmds.items():
        args += ["--command-name", name, c]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    res = {r["command"]: r for r in json.load(open(out))["results"]}
    events = {k: run.events_of(v) for k, v in inputs.items()}
    events.update({f"{k}.{x}": events[k] for k in ("perf.data", "trace.dat") for x in pack})
    print(f"{'command':<34} {'events':>10} {'min s':>8} {'median s':>9} {'peak MiB':>9} {'CPUs':>5}")
    used = {}
    for name, c in cmds.items():
        r = res[name]
        ours = name.startswith(("explain", "latency", "report"))
        rss, cpus = gnu_time(c.split()) if ours else (0, 0)
        used[name] = cpus
        ev = next((n for k, n in events.items() if ours and name.endswith(k)), "")
        print(f"{name:<34} {ev:>10} {r['min']:>8.3f} {r['median']:>9.3f} "
              f"{rss:>9.1f} {cpus:>5.2f}")
    med = lambda n: res[n]["median"]
    print(f"\ncycle mode: perf script / explain cycles perf.data: "
          f"{med('perf script') / med('explain cycles perf.data'):.1f}x; "
          f"explain cycles ftrace text / cat: "
          f"{med('explain cycles ftrace text') / med('cat ftrace text'):.1f}x")
    print("cycle / automatic mode: " + ", ".join(
        f"{k} {med(f'explain cycles {k}') / med(f'explain {k}'):.2f}x" for k in inputs))
    # What cycle mode adds over automatic mode, in ms of medians: testing the selectors,
    # then the cycles; and what the goals leave for both (1.2x automatic mode; perf.data:
    # 20x faster than perf script).
    ms = lambda n: med(n) * 1e3
    for k in inputs:
        auto, none_, cyc = (ms(f"explain {k}"), ms(f"explain no-match {k}"),
                            ms(f"explain cycles {k}"))
        left = (ms("perf script") / 20 if k == "perf.data" else 1.2 * auto) - auto
        print(f"cycle mode over automatic, {k}: selectors {none_ - auto:.0f} ms, "
              f"cycles {cyc - none_:.0f} ms; the goal leaves {left:.0f} ms")
    print(f"automatic mode: perf script / explain perf.data: "
          f"{med('perf script') / med('explain perf.data'):.1f}x; explain ftrace text / cat: "
          f"{med('explain ftrace text') / med('cat ftrace text'):.1f}x"
          f"; latency / perf sched timehist: {med('latency perf.data') / med('perf sched timehist'):.2f}x")
    for x in pack:
        print(f"{x} / plain: " + ", ".join(
            f"{k} {med(f'explain {k}.{x}') / med(f'explain {k}'):.2f}x"
            for k in ("perf.data", "trace.dat")))
    # What no reader of a single-frame .zst can beat on this machine's cores, given the
    # plain run's CPU time: perf.data keeps its event formats after the data, so one whole
    # decompression comes before the first event, then the plain work with a second
    # decompression beside it; trace.dat's work and one decompression share the cores.
    cores = os.cpu_count() or 1
    def shared(k):
        return max(med(f"explain {k}"),
                   (med(f"explain {k}") * used[f"explain {k}"] + med(f"zstd -dc {k}.zst")) / cores)
    pd, td = "perf.data", "trace.dat"
    print(f"zst floor on {cores} cores: {pd} "
          f"{(med(f'zstd -dc {pd}.zst') + shared(pd)) / med(f'explain {pd}'):.2f}x, "
          f"{td} {shared(td) / med(f'explain {td}'):.2f}x")
    if not (a.keep or a.reuse):
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
