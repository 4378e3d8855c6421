"""Reads whylate's Parquet findings with DuckDB, an engine independent of whylate's own
(DataFusion), and runs the SQL `whylate fleet --json` says it ran, verbatim.

usage: duckdb_check.py FINDINGS_DIR FLEET_JSON
prints {"rows": {query name: [row, ...]}, "tables": {table: row count}} as JSON
exit 3 when the duckdb module is missing (the test says so and how to install it)
"""
import json
import os
import sys

try:
    import duckdb
except ImportError:
    sys.exit(3)

TABLES = ["traces", "samples", "misses", "links", "blame", "causes", "cpus", "irqs", "labels"]


def committed(root):
    """The traces with a commit marker, _committed/host=H/date=D/TRACE_ID: the only ones
    whose tables are whole (docs/fleet.md)."""
    marks = []
    base = os.path.join(root, "_committed")
    for h in sorted(os.listdir(base)):
        if not h.startswith("host="):
            continue
        for d in sorted(os.listdir(os.path.join(base, h))):
            if not d.startswith("date="):
                continue
            for f in sorted(os.listdir(os.path.join(base, h, d))):
                if not f.startswith("."):
                    marks.append((h[len("host="):], d[len("date="):], f))
    return marks


def main():
    root, fleet_json = sys.argv[1], sys.argv[2]
    fleet = json.load(open(fleet_json))
    con = duckdb.connect()
    con.execute("CREATE TABLE committed (host VARCHAR, date VARCHAR, trace_id VARCHAR)")
    con.executemany("INSERT INTO committed VALUES (?, ?, ?)", committed(root))
    counts = {}
    for t in TABLES:
        # Partition values stay strings, as whylate's engine reads them.
        # A file counts by its name: a copy under another name holds rows whose
        # trace_id is a marked trace's.
        con.execute(
            f"CREATE VIEW {t} AS SELECT * EXCLUDE (filename) FROM read_parquet("
            f"'{root}/{t}/*/*/*.parquet', filename = true, "
            "hive_partitioning = true, hive_types_autocast = false) r "
            "WHERE parse_filename(r.filename, true) = r.trace_id "
            "AND EXISTS (SELECT 1 FROM committed c WHERE c.host = r.host "
            "AND c.date = r.date AND c.trace_id = r.trace_id)"
        )
        counts[t] = con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
    rows = {}
    for q in fleet["sql"]:
        cur = con.execute(q["sql"])
        names = [d[0] for d in cur.description]
        rows[q["name"]] = [dict(zip(names, r)) for r in cur.fetchall()]
    json.dump({"rows": rows, "tables": counts}, sys.stdout, default=str)


main()
