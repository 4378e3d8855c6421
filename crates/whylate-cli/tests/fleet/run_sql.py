"""Runs `whylate fleet --sql-only --engine ENGINE` scripts on that engine, statement by
statement as printed, and prints each named statement's rows: an engine independent of
whylate's own (DataFusion) checks both the files and the SQL.

usage: run_sql.py spark|duckdb SCRIPT... (`-` reads the script from stdin)
prints [{statement name: [row, ...]}, ...] as JSON, one object per script, in order
exit 3 when the engine's Python package is missing (the test says so and how to install it)

A statement ends with `;` at the end of a line (the script's own layout); the `-- NAME`
comment line just before a statement names it (a blank line between them does not). Both engines run with 2 threads; Spark with
2 shuffle partitions (its default, 200, is for clusters), its UI off: settings of the
session, not of the SQL.
"""
import json
import sys


def statements(text):
    """(name or None, SQL) of each statement, in order."""
    out, name, cur = [], None, []
    for line in text.splitlines():
        if not cur and line.startswith("-- "):
            name = line[3:].strip()
            continue
        if not cur and not line.strip():
            name = None
            continue
        cur.append(line)
        if line.rstrip().endswith(";"):
            sql = "\n".join(cur).rstrip()[:-1]
            out.append((name, sql))
            name, cur = None, []
    if cur:
        sys.exit(f"run_sql.py: the script ends inside a statement: {cur[0][:80]}")
    return out


def spark_runner():
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        sys.exit(3)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("whylate-fleet-check")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.extraJavaOptions", "-Dlog4j2.level=ERROR")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")

    def run(sql):
        df = spark.sql(sql)
        return [r.asDict() for r in df.collect()]

    return run, spark.stop


def duckdb_runner():
    try:
        import duckdb
    except ImportError:
        sys.exit(3)
    con = duckdb.connect()
    con.execute("SET threads = 2")

    def run(sql):
        cur = con.execute(sql)
        if cur.description is None:
            return []
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    return run, con.close


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("spark", "duckdb"):
        sys.exit(__doc__)
    run, stop = (spark_runner if sys.argv[1] == "spark" else duckdb_runner)()
    results = []
    for path in sys.argv[2:]:
        text = sys.stdin.read() if path == "-" else open(path).read()
        rows = {}
        for name, sql in statements(text):
            try:
                got = run(sql)
            except Exception as e:  # the statement is the news, not the traceback
                sys.exit(f"{path}: {sys.argv[1]} refused:\n{sql}\n{e}")
            if name is not None:
                rows[name] = got
        results.append(rows)
    stop()
    json.dump(results, sys.stdout, default=str)


main()
