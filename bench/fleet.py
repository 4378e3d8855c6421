#!/usr/bin/env python3
"""Benchmark of `whylate fleet`: time and peak memory over the findings of many hosts,
against DuckDB (Python package) running the same SQL over the same files in the same run.

Writes the synthetic fleet (crates/whylate-fleet/src/synth.rs: the bundled examples,
explained once each, written for hosts that differ by kernel, labels and example) for each
--hosts size, then per size:
  - `whylate fleet DIR --by kernel` (overview, causes, groups, changes, worst hosts);
  - DuckDB: the same queries (taken from `whylate fleet --json`'s `sql`), verbatim, over
    views of the same Parquet files;
paired with hyperfine (-N, --runs, page cache warm), peak RSS with /usr/bin/time.

Usage: python3 bench/fleet.py [--hosts 2500,10000] [--runs 5] [--keep DIR]
Needs: cargo, hyperfine, /usr/bin/time, python3 with duckdb (pip install duckdb).
Prints a table; nothing here is a pass/fail test.
"""
import argparse, json, os, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from explain import gnu_time as peak  # noqa: E402  (peak RSS and CPUs of one run)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHYLATE = os.path.join(ROOT, "target", "release", "whylate")
TABLES = ["traces", "samples", "misses", "links", "blame", "causes", "cpus", "irqs", "labels"]

DUCK = r"""
import duckdb, json, sys
root, q = sys.argv[1], json.load(open(sys.argv[2]))
con = duckdb.connect()
for t in %s:
    con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{root}/{t}/*/*/*.parquet', "
                "hive_partitioning = true, hive_types_autocast = false)")
for s in q["sql"]:
    con.execute(s["sql"]).fetchall()
""" % TABLES


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)




def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", default="2500,10000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", help="write the findings here and keep them")
    a = ap.parse_args()
    sh(["cargo", "build", "--release", "-q", "-p", "whylate-cli", "-p", "whylate-fleet",
        "--examples", "--bins"], cwd=ROOT)
    synth = os.path.join(ROOT, "target", "release", "examples", "synth_fleet")
    work = a.keep or tempfile.mkdtemp(prefix="whylate-fleet-bench-")
    os.makedirs(work, exist_ok=True)
    duck = os.path.join(work, "duck.py")
    with open(duck, "w") as f:
        f.write(DUCK)
    print(f"{'hosts':>6} {'files':>7} {'rows':>11} {'MB':>6} {'command':<18} "
          f"{'min s':>7} {'median s':>9} {'peak MiB':>9} {'CPUs':>5}")
    for n in [int(x) for x in a.hosts.split(",")]:
        d = os.path.join(work, f"fleet-{n}")
        if not os.path.isdir(d):
            out = sh([synth, d, str(n)], capture_output=True).stdout
            with open(d + ".json", "wb") as f:
                f.write(out)
        info = json.load(open(d + ".json"))
        fleet = [WHYLATE, "fleet", d, "--by", "kernel"]
        q = os.path.join(work, f"fleet-{n}-sql.json")
        with open(q, "wb") as f:
            f.write(sh(fleet + ["--json"], capture_output=True).stdout)
        duckdb = [sys.executable, duck, d, q]
        hf = os.path.join(work, f"hyperfine-{n}.json")
        sh(["hyperfine", "-N", "-w", "1", "-r", str(a.runs), "--export-json", hf,
            "-n", "whylate fleet", " ".join(fleet),
            "-n", "duckdb (same SQL)", " ".join(duckdb)],
           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        res = json.load(open(hf))["results"]
        for r, cmd in zip(res, [fleet, duckdb]):
            rss, cpus = peak(cmd)
            ts = sorted(r["times"])
            print(f"{n:>6} {info['files']:>7} {info['rows']:>11} {info['bytes'] / 1e6:>6.0f} "
                  f"{r['command']:<18} {ts[0]:>7.2f} {ts[len(ts) // 2]:>9.2f} {rss:>9.0f} "
                  f"{cpus:>5.2f}")
        med = [sorted(r["times"])[len(r["times"]) // 2] for r in res]
        print(f"{'':>6} whylate / duckdb median time: {med[0] / med[1]:.2f}x")
    if not a.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
