#!/usr/bin/env python3
"""Benchmark of `whylate fleet`: time and peak memory over the findings of many hosts,
against DuckDB and Apache Spark running the same SQL over the same files in the same run.

Writes the synthetic fleet (crates/whylate-fleet/src/synth.rs: the bundled examples,
explained once each, written for hosts that differ by kernel, labels and example) for each
--hosts size, then per size times, with hyperfine (-N, --runs, page cache warm):
  - `whylate fleet DIR --by kernel` (overview, causes, groups, changes, worst hosts);
  - DuckDB (Python package, 2 threads) running `whylate fleet DIR --by kernel --sql-only
    --engine duckdb` as printed: views over the committed files only, then the same eight
    queries, through crates/whylate-cli/tests/fleet/run_sql.py (the test's runner);
  - DuckDB on plain views of every file (no commit-marker filter): the queries alone;
  - Spark (pyspark, local[2]) running the `--engine spark` script the same way, with
    --spark-runs runs (its JVM start is part of its time; 0 leaves it out).
Peak RSS with /usr/bin/time (none for Spark: its JVM is not a process time waits for).

Usage: python3 bench/fleet.py [--hosts 1000,10000] [--runs 5] [--spark-runs 1] [--keep DIR]
Needs: cargo, hyperfine, /usr/bin/time, python3 with duckdb and pyspark, Java 17.
Prints a table; nothing here is a pass/fail test.
"""
import argparse, json, os, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from explain import gnu_time as peak  # noqa: E402  (peak RSS and CPUs of one run)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHYLATE = os.path.join(ROOT, "target", "release", "whylate")
RUN_SQL = os.path.join(ROOT, "crates", "whylate-cli", "tests", "fleet", "run_sql.py")
TABLES = ["traces", "samples", "misses", "links", "blame", "causes", "cpus", "irqs", "labels"]

# The queries of `--json` over plain views of every file: the bench's first peer (issue 23).
DUCK_PLAIN = r"""
import duckdb, json, sys
root, q = sys.argv[1], json.load(open(sys.argv[2]))
con = duckdb.connect()
con.execute("SET threads = 2")
for t in %s:
    con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{root}/{t}/*/*/*.parquet', "
                "hive_partitioning = true, hive_types_autocast = false)")
for s in q["sql"]:
    con.execute(s["sql"]).fetchall()
""" % TABLES


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)




def timed(n, info, pairs, runs, hf, memory=True):
    """Times [(name, argv)] with hyperfine and prints a row each; returns the medians.
    memory=False: no peak RSS nor CPUs (Spark's JVM is not a child /usr/bin/time waits for,
    so it would report the Python driver's)."""
    args = ["hyperfine", "-N", "-w", "1", "-r", str(runs), "--export-json", hf]
    for name, cmd in pairs:
        args += ["-n", name, " ".join(cmd)]
    sh(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    res = json.load(open(hf))["results"]
    meds = []
    for r, (_, cmd) in zip(res, pairs):
        rss, cpus = "-", "-"
        if memory:
            m, c = peak(cmd)
            rss, cpus = f"{m:.0f}", f"{c:.2f}"
        ts = sorted(r["times"])
        meds.append(ts[len(ts) // 2])
        print(f"{n:>6} {info['files']:>7} {info['rows']:>11} {info['bytes'] / 1e6:>6.0f} "
              f"{r['command']:<26} {ts[0]:>7.2f} {meds[-1]:>9.2f} {rss:>9} {cpus:>5}",
              flush=True)
    return meds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", default="1000,10000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--spark-runs", type=int, default=1)
    ap.add_argument("--keep", help="write the findings here and keep them")
    a = ap.parse_args()
    sh(["cargo", "build", "--release", "-q", "-p", "whylate-cli", "-p", "whylate-fleet",
        "--features", "whylate-cli/fleet", "--examples", "--bins"], cwd=ROOT)
    synth = os.path.join(ROOT, "target", "release", "examples", "synth_fleet")
    work = a.keep or tempfile.mkdtemp(prefix="whylate-fleet-bench-")
    os.makedirs(work, exist_ok=True)
    plain = os.path.join(work, "duck_plain.py")
    with open(plain, "w") as f:
        f.write(DUCK_PLAIN)
    print(f"{'hosts':>6} {'files':>7} {'rows':>11} {'MB':>6} {'command':<26} "
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
        scripts = {}
        for engine in ("duckdb", "spark"):
            scripts[engine] = os.path.join(work, f"fleet-{n}-{engine}.sql")
            with open(scripts[engine], "wb") as f:
                f.write(sh(fleet + ["--sql-only", "--engine", engine],
                           capture_output=True).stdout)
        run = lambda e: [sys.executable, RUN_SQL, e, scripts[e]]  # noqa: E731
        meds = timed(n, info, [("whylate fleet", fleet),
                               ("duckdb, printed script", run("duckdb")),
                               ("duckdb, plain views", [sys.executable, plain, d, q])],
                     a.runs, os.path.join(work, f"hyperfine-{n}.json"))
        if a.spark_runs > 0:
            meds += timed(n, info, [("spark, printed script", run("spark"))], a.spark_runs,
                          os.path.join(work, f"hyperfine-{n}-spark.json"), memory=False)
        print(f"{'':>6} whylate / duckdb (printed script) median time: {meds[0] / meds[1]:.2f}x; "
              f"/ duckdb (plain views): {meds[0] / meds[2]:.2f}x"
              + (f"; / spark: {meds[0] / meds[3]:.2f}x" if len(meds) > 3 else ""), flush=True)
    if not a.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
