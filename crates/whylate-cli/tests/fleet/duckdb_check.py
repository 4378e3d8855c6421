"""Reads whylate's Parquet findings with DuckDB, an engine independent of whylate's own
(DataFusion), and runs the SQL `whylate fleet --json` says it ran, verbatim.

usage: duckdb_check.py FINDINGS_DIR FLEET_JSON
prints {"rows": {query name: [row, ...]}, "tables": {table: row count}} as JSON
exit 3 when the duckdb module is missing (the test says so and how to install it)
"""
import json
import sys

try:
    import duckdb
except ImportError:
    sys.exit(3)

TABLES = ["traces", "samples", "misses", "links", "blame", "causes", "cpus", "irqs", "labels"]


def main():
    root, fleet_json = sys.argv[1], sys.argv[2]
    fleet = json.load(open(fleet_json))
    con = duckdb.connect()
    counts = {}
    for t in TABLES:
        # Partition values stay strings, as whylate's engine reads them.
        con.execute(
            f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{root}/{t}/*/*/*.parquet', "
            "hive_partitioning = true, hive_types_autocast = false)"
        )
        counts[t] = con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
    rows = {}
    for q in fleet["sql"]:
        cur = con.execute(q["sql"])
        names = [d[0] for d in cur.description]
        rows[q["name"]] = [dict(zip(names, r)) for r in cur.fetchall()]
    json.dump({"rows": rows, "tables": counts}, sys.stdout, default=str)


main()
