#!/usr/bin/env python3
"""Benchmark of a Perfetto bundle too large to hold (issue 70 item 12): N compact
switches in ONE bundle (a converter's one bundle per CPU, or a hostile file) against the
same switches in 1000-event bundles (as traced writes them), plain and gzipped.

For each file: `whylate stats`, best of --repeat wall seconds and its peak RSS; the peer
in the same run is `cat` (plain) or `zcat` (gzip) of the same file to /dev/null, the
floor of any reader. Target: the giant bundle in the memory of the small bundles (well
under 200 MB), its time within a small factor of theirs.

Usage: python3 bench/giant_bundle.py [--switches 30000000] [--repeat 3]
Prints a table; nothing here is a pass/fail test.
"""
import argparse, gzip, os, shutil, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHYLATE = os.path.join(ROOT, "target", "release", "whylate")


def varint(v):
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(n, payload):
    return varint(n << 3 | 2) + varint(len(payload)) + payload


def bundle(first_ts, n):
    """A packet with one bundle of `n` compact switches, 1 µs apart, from `first_ts`."""
    cs = field(5, b"taska") + field(5, b"taskb")
    cs += field(1, varint(first_ts) + b"\xe8\x07" * (n - 1))
    cs += field(2, b"\x01" * n) + field(3, b"\x64\x65" * (n // 2))
    cs += field(4, b"\x78" * n) + field(6, b"\x00\x01" * (n // 2))
    return field(1, field(1, varint(1 << 3) + varint(0) + field(4, cs)))


def write(path, n, per_bundle):
    with open(path, "wb") as f:
        for k in range(0, n, per_bundle):
            f.write(bundle(1_000_000_000 + k * 1000, min(per_bundle, n - k)))


def measure(cmd, repeat):
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
        dt = time.perf_counter() - t0
        if p.returncode != 0:
            sys.exit(f"{cmd}: {p.stderr.decode()[-2000:]}")
        rss = int(p.stderr.decode().strip().splitlines()[-1]) / 1024
        if best is None or dt < best[0]:
            best = (dt, rss)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--switches", type=int, default=30_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="giant-")
    try:
        files = []
        for name, per in (("one bundle", a.switches), ("1000-event bundles", 1000)):
            p = os.path.join(d, name.replace(" ", "_") + ".pftrace")
            write(p, a.switches, per)
            with open(p, "rb") as src, gzip.open(p + ".gz", "wb", 6) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            files += [(name, p, ["cat", p]), (name + ", gzip", p + ".gz", ["zcat", p + ".gz"])]
        print(f"{a.switches} compact switches, best of {a.repeat}\n")
        print("| input | MB | `stats` | RSS | peer | peer s | stats / peer |")
        print("|---|---|---|---|---|---|---|")
        for name, p, peer in files:
            t, rss = measure([WHYLATE, "stats", p], a.repeat)
            pt, _ = measure(peer, a.repeat)
            mb = os.path.getsize(p) / 1e6
            print(f"| {name} | {mb:.1f} | {t:.2f} s | {rss:.0f} MB | `{peer[0]}` | {pt:.2f} s | {t / pt:.1f}x |")
    finally:
        shutil.rmtree(d)


if __name__ == "__main__":
    main()
