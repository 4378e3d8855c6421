#!/usr/bin/env python3
"""A pty request/reply workload (the mechanism of seed 000, in miniature).

A "device" process holds the pty master and answers each 7-byte request with 1 byte
after --reply-us microseconds. The client (process name `frobnicator`) writes the
request to the slave side and busy-polls a non-blocking read() until the reply arrives
or --timeout-ms passes. The reply reaches the reader through the tty flip-buffer work
item (flush_to_ldisc) on a kworker, so with a CPU hog beside it replies arrive late.

Used by whylate's live tests and to record the bundled examples. Prints one line per
cycle to --log: `cycle start_ns(CLOCK_MONOTONIC) latency_ns missed(0/1)`.
"""
import argparse, ctypes, os, pty, select, signal, sys, time, tty

def set_name(name):
    try:
        libc = ctypes.CDLL(None)
        libc.prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME
    except OSError:
        pass

def device(master, reply_us):
    set_name("frobdev")
    while True:
        try:
            req = os.read(master, 7)
        except OSError:
            return
        if not req:
            return
        if reply_us:
            time.sleep(reply_us / 1e6)
        os.write(master, b"!")

def hog(seconds):
    set_name("hog")
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += 1
    os._exit(0)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=1.0)
    ap.add_argument("--reply-us", type=int, default=1000)
    ap.add_argument("--timeout-ms", type=float, default=3.5)
    ap.add_argument("--hog", action="store_true", help="run a CPU hog per CPU")
    ap.add_argument("--log", default=None)
    a = ap.parse_args()
    master, slave = pty.openpty()
    tty.setraw(slave)
    tty.setraw(master)
    pid = os.fork()
    if pid == 0:
        os.close(slave)
        device(master, a.reply_us)
        os._exit(0)
    hogs = []
    if a.hog:
        for _ in range(os.cpu_count() or 1):
            h = os.fork()
            if h == 0:
                hog(a.duration + 0.5)
            hogs.append(h)
    set_name("frobnicator")
    os.set_blocking(slave, False)
    log = open(a.log, "w") if a.log else None
    end = time.monotonic() + a.duration
    cycle = 0
    misses = 0
    while time.monotonic() < end:
        start = time.monotonic_ns()
        os.write(slave, b"REQUEST")
        deadline = start + int(a.timeout_ms * 1e6)
        got = False
        while time.monotonic_ns() < deadline:
            try:
                if os.read(slave, 64):
                    got = True
                    break
            except BlockingIOError:
                pass
        lat = time.monotonic_ns() - start
        if not got:
            misses += 1
            # Drain a late reply so the next cycle starts clean.
            r, _, _ = select.select([slave], [], [], 0.05)
            if r:
                try:
                    os.read(slave, 64)
                except BlockingIOError:
                    pass
        if log:
            log.write(f"{cycle} {start} {lat} {0 if got else 1}\n")
        cycle += 1
        time.sleep(0.002)
    os.close(slave)
    for h in hogs:
        os.kill(h, signal.SIGKILL)
        os.waitpid(h, 0)
    os.kill(pid, signal.SIGTERM)
    os.waitpid(pid, 0)
    print(f"cycles={cycle} misses={misses}", file=sys.stderr)

if __name__ == "__main__":
    main()
