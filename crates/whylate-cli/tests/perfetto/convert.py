#!/usr/bin/env python3
"""Writes Perfetto traces for whylate's tests with Google's own protobuf classes
(`pip install perfetto`): whylate does not write its own fixtures.

  convert.py convert TEXT OUT [--compact] [--gzip] [--window-ms MS] [--bundle-max N]
                              [--names-from-events] [--release R] [--layout L]
      An ftrace text trace (tracefs `trace`, with or without the TGID column, or
      `trace-cmd report -l -t`) → a trace as traced writes one: a clock snapshot, system
      info, a process tree, ftrace_stats at the start and the end, and per-CPU ftrace
      bundles, one per CPU per drain period (--window-ms, 100 ms like traced's default),
      each CPU on its own packet sequence with its kernel symbols interned there
      (symbolize_ksyms). With --compact, sched_switch and sched_waking go in the packed
      compact_sched form (traced's default since v42). Per-call syscall events and any
      event Perfetto has no message for become `generic` events. What Perfetto does not
      record is dropped: the preempt and migrate-disable depths, a compact event's task.
      --layout orders the bundles: periods (traced's), periods-reversed, cpu-by-cpu,
      one-per-cpu (see `convert`).

  convert.py fixture NAME OUT
      Small traces made by hand: `interned`, `big-packet`, `cut`, `unknown-packets`,
      `gzip` (see FIXTURES).
"""

import gzip
import re
import sys

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

BOOT, MONO = 6, 3
LETTERS = "SDTtXZPI"
# libtraceevent's sched_switch plugin (trace-cmd report) names the bits with an older
# kernel's letters: its Z X x W are today's X Z P I.
PLUGIN_LETTERS = "SDTtZXxW"

# `comm-pid (tgid) [cpu] flags ts: name: body` (tracefs) and
# `comm-pid cpuFLAGS ts: name: body` (trace-cmd report -l).
TRACEFS = re.compile(
    r"^\s*(?P<comm>.+?)-(?P<pid>\d+)\s+(?:\(\s*(?P<tgid>[\d-]+)\)\s+)?\[(?P<cpu>\d+)\]\s+"
    r"(?:(?P<flags>\S{4,5})\s+)?(?P<ts>\d+\.\d+):\s+(?P<rest>.*)$"
)
REPORT = re.compile(
    r"^\s*(?P<comm>.+?)-(?P<pid>\d+)\s+(?P<cpu>\d+)(?P<flags>\S{5})\s+(?P<ts>\d+\.\d+):\s+"
    r"(?P<rest>.*)$"
)


def ns(ts):
    sec, frac = ts.split(".")
    return int(sec) * 1_000_000_000 + int((frac + "000000000")[:9])


def common_flags(f):
    """The kernel's common_flags byte from ftrace's flag letters."""
    if not f:
        return None
    v = 0
    v |= {"d": 0x01, "D": 0x81, "b": 0x80, "X": 0x02}.get(f[0], 0)
    if len(f) > 1:
        v |= {"N": 0x24, "n": 0x04, "p": 0x20, "L": 0x26, "l": 0x02}.get(f[1], 0)
    if len(f) > 2:
        v |= {"Z": 0x48, "z": 0x40, "H": 0x18, "h": 0x08, "s": 0x10}.get(f[2], 0)
    return v


def state(s, letters=LETTERS):
    """prev_state letters → the kernel's number (4.14+: a bit per letter, 0x100 = +)."""
    if s.isdigit():
        return int(s)
    v = 0x100 if s.endswith("+") else 0
    for c in s.rstrip("+"):
        if c in letters:
            v |= 1 << letters.index(c)
    return v


def hexnum(s):
    s = s.strip().rstrip(":")
    return int(s[2:] if s.lower().startswith("0x") else s, 16)


def func(s):
    """A kernel function as printed (`f+0x1/0x2`, `f/0x0`) → its name."""
    return re.split(r"[+/]", s.strip(), maxsplit=1)[0]


def kv(body):
    """`key=value key=value` with values that may hold spaces."""
    out = {}
    parts = re.split(r"\s(?=[A-Za-z_][\w ]*?=)", " " + body.strip())
    for p in parts:
        if "=" in p:
            k, v = p.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def task(s):
    """`comm:pid [prio]` (trace-cmd's sched plugin) → (comm, pid, prio)."""
    m = re.match(r"^(.*):(-?\d+) \[(-?\d+)\]", s.strip())
    return m.group(1), int(m.group(2)), int(m.group(3))


class Event:
    def __init__(self, ts, cpu, pid, tgid, comm, flags, name, body):
        self.ts, self.cpu, self.pid, self.tgid = ts, cpu, pid, tgid
        self.comm, self.flags, self.name, self.body = comm, flags, name, body
        # The kernel lost events on this CPU just before this one.
        self.lost = False


def parse(path):
    """The text's events and its CPU count."""
    opener = gzip.open if path.endswith(".gz") else open
    events, cpus, lost = [], None, set()
    with opener(path, "rt", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.search(r"#P:(\d+)", line) or re.match(r"cpus=(\d+)", line)
            if m and cpus is None:
                cpus = int(m.group(1))
            m = re.search(r"CPU:(\d+) \[LOST (\d+) EVENTS\]", line)
            if m:
                lost.add(int(m.group(1)))
                continue
            if line.startswith("#"):
                continue
            m = TRACEFS.match(line) or REPORT.match(line)
            if not m:
                continue
            rest = m.group("rest")
            sc = re.match(r"^sys_(\w+)(\(.*\))$", rest) or re.match(r"^sys_(\w+) -> (\S+)$", rest)
            if sc:
                name = ("sys_enter_" if sc.group(2).startswith("(") else "sys_exit_") + sc.group(1)
                body = sc.group(2)
            else:
                nm = re.match(r"^(\w+):\s*(.*)$", rest)
                if not nm:
                    continue
                name, body = nm.group(1), nm.group(2)
            tgid = m.groupdict().get("tgid")
            tgid = int(tgid) if tgid and tgid.strip("-") else None
            e = Event(ns(m.group("ts")), int(m.group("cpu")), int(m.group("pid")), tgid,
                      m.group("comm").strip(), common_flags(m.group("flags")), name, body)
            e.lost = e.cpu in lost
            lost.discard(e.cpu)
            events.append(e)
    if cpus is None:
        cpus = max((e.cpu for e in events), default=0) + 1
    return events, cpus


class Seq:
    """One packet sequence (a CPU's ftrace writer): its id and interned symbols."""

    def __init__(self, sid):
        self.sid, self.syms, self.first = sid, {}, True

    def sym(self, name, interned):
        if name not in self.syms:
            self.syms[name] = len(self.syms) + 1
            s = interned.kernel_symbols.add()
            s.iid, s.str = self.syms[name], name.encode()
        return self.syms[name]


def fill(fe, e, seq, interned):
    """Sets the typed member of FtraceEvent `fe` from text event `e`; False if none."""
    n, b = e.name, e.body
    if n == "sched_switch":
        m = re.match(r"prev_comm=(.*) prev_pid=(-?\d+) prev_prio=(-?\d+) prev_state=(\S+) "
                     r"==> next_comm=(.*) next_pid=(-?\d+) next_prio=(-?\d+)", b)
        if m:
            pc, pp, ppr, st, nc, np_, npr = m.groups()
            st = state(st)
        else:
            m = re.match(r"(.*) (\S+) ==> (.*)$", b)
            (pc, pp, ppr), st, (nc, np_, npr) = task(m.group(1)), m.group(2), task(m.group(3))
            st = state(st, PLUGIN_LETTERS)
        x = fe.sched_switch
        x.prev_comm, x.prev_pid, x.prev_prio, x.prev_state = pc, int(pp), int(ppr), st
        x.next_comm, x.next_pid, x.next_prio = nc, int(np_), int(npr)
    elif n in ("sched_waking", "sched_wakeup", "sched_wakeup_new"):
        x = getattr(fe, n)
        if "comm=" in b:
            f = kv(b)
            x.comm, x.pid, x.prio = f["comm"], int(f["pid"]), int(f["prio"])
            x.target_cpu = int(f["target_cpu"])
        else:
            x.comm, x.pid, x.prio = task(b)
            x.target_cpu = int(re.search(r"CPU:(\d+)", b).group(1))
    elif n == "sched_migrate_task":
        f = kv(b)
        x = fe.sched_migrate_task
        x.comm, x.pid, x.prio = f["comm"], int(f["pid"]), int(f["prio"])
        x.orig_cpu, x.dest_cpu = int(f["orig_cpu"]), int(f["dest_cpu"])
    elif n == "sched_process_fork":
        f = kv(b)
        x = fe.sched_process_fork
        x.parent_comm, x.parent_pid = f["comm"], int(f["pid"])
        x.child_comm, x.child_pid = f["child_comm"], int(f["child_pid"])
    elif n == "sched_process_exec":
        f = kv(b)
        x = fe.sched_process_exec
        x.filename, x.pid, x.old_pid = f["filename"], int(f["pid"]), int(f["old_pid"])
    elif n == "sched_process_exit":
        f = kv(b)
        x = fe.sched_process_exit
        x.comm, x.pid, x.prio = f["comm"], int(f["pid"]), int(f["prio"])
    elif n == "irq_handler_entry":
        f = kv(b)
        fe.irq_handler_entry.irq, fe.irq_handler_entry.name = int(f["irq"]), f.get("name", "")
    elif n == "irq_handler_exit":
        f = kv(b)
        fe.irq_handler_exit.irq = int(f["irq"])
        fe.irq_handler_exit.ret = 1 if f.get("ret", "handled") == "handled" else 0
    elif n in ("softirq_raise", "softirq_entry", "softirq_exit"):
        getattr(fe, n).vec = int(re.search(r"vec=(\d+)", b).group(1))
    elif n.startswith("workqueue_"):
        x = getattr(fe, n)
        x.work = hexnum(re.search(r"work struct[= ]?(\S+)", b).group(1))
        fm = re.search(r"function[= ](\S+)", b)
        if fm:
            x.function = seq.sym(func(fm.group(1)), interned)
        if n == "workqueue_queue_work":
            f = kv(b)
            x.workqueue = f.get("workqueue", "")
            x.req_cpu, x.cpu = int(f.get("req_cpu", -1)), int(f.get("cpu", -1))
    elif n.startswith("hrtimer_"):
        f = kv(b)
        x = getattr(fe, n)
        x.hrtimer = hexnum(f["hrtimer"])
        if "function" in f:
            x.function = seq.sym(func(f["function"]), interned)
        if n == "hrtimer_start":
            x.expires, x.softexpires = int(f["expires"]), int(f.get("softexpires", 0))
        if n == "hrtimer_expire_entry" and "now" in f:
            x.now = int(f["now"])
    elif n in ("timer_start", "timer_expire_entry", "timer_expire_exit", "timer_cancel"):
        f = kv(b)
        x = getattr(fe, n)
        x.timer = hexnum(f["timer"])
        if "function" in f:
            x.function = seq.sym(func(f["function"]), interned)
        if n == "timer_start":
            x.expires = int(f["expires"].split()[0])
        if n == "timer_expire_entry":
            x.now = int(f["now"])
    elif n in ("sys_enter", "sys_exit"):
        m = re.match(r"NR (-?\d+) (?:\((.*)\)|= (-?\d+))", b)
        if n == "sys_enter":
            fe.sys_enter.id = int(m.group(1))
            fe.sys_enter.args.extend(hexnum(a) for a in m.group(2).split(","))
        else:
            fe.sys_exit.id, fe.sys_exit.ret = int(m.group(1)), int(m.group(3))
    elif n == "print":
        fe.print.buf = re.sub(r"^(0x[0-9a-f]+s?|\S+\+0x\S+): ", "", b) + "\n"
    else:
        return generic(fe, e)
    return True


def generic(fe, e):
    """An event Perfetto has no message for, by its fields."""
    g = fe.generic
    g.event_name = e.name
    if e.name.startswith("sys_enter_"):
        args = e.body.strip().lstrip("(").rstrip(")")
        for part in filter(None, (p.strip() for p in args.split(","))):
            k, v = part.split(":", 1)
            fl = g.field.add()
            fl.name, fl.uint_value = k.strip(), hexnum(v)
        return True
    if e.name.startswith("sys_exit_"):
        v = e.body.strip().removeprefix("->").strip()
        r = hexnum(v) if v.lower().startswith("0x") or "->" in e.body else int(v)
        fl = g.field.add()
        fl.name, fl.int_value = "ret", r - (1 << 64) if r >= 1 << 63 else r
        return True
    for k, v in kv(e.body).items():
        fl = g.field.add()
        fl.name = k
        if re.fullmatch(r"-?\d+", v):
            fl.int_value = int(v)
        else:
            fl.str_value = v
    return True


def names(events, from_events):
    """Every task's first name, as a /proc scrape at the start would give it."""
    seen = {}

    def see(pid, comm):
        if pid > 0 and comm and not comm.startswith("<"):
            seen.setdefault(pid, comm)

    for e in events:
        b = e.body
        if e.name == "sched_switch":
            m = re.match(r"prev_comm=(.*) prev_pid=(-?\d+) .*next_comm=(.*) next_pid=(-?\d+)", b)
            if m:
                see(int(m.group(2)), m.group(1))
                see(int(m.group(4)), m.group(3))
            else:
                m = re.match(r"(.*) (\S+) ==> (.*)$", b)
                for t in (m.group(1), m.group(3)):
                    c, p, _ = task(t)
                    see(p, c)
        elif e.name.startswith("sched_wak"):
            if "comm=" in b:
                f = kv(b)
                see(int(f["pid"]), f["comm"])
            else:
                c, p, _ = task(b)
                see(p, c)
        if not from_events:
            see(e.pid, e.comm)
    return seen


def header_packets(trace, events, cpus, release, from_events):
    p = trace.packet.add()
    p.trusted_packet_sequence_id = 1
    p.timestamp = events[0].ts if events else 0
    for cid in (BOOT, MONO):
        c = p.clock_snapshot.clocks.add()
        c.clock_id, c.timestamp = cid, p.timestamp
    p.clock_snapshot.primary_trace_clock = BOOT
    p = trace.packet.add()
    p.trusted_packet_sequence_id = 1
    p.system_info.num_cpus = cpus
    p.system_info.utsname.sysname = "Linux"
    p.system_info.utsname.release = release
    p.system_info.utsname.machine = "x86_64"
    p = trace.packet.add()
    p.trusted_packet_sequence_id = 1
    tgids = {e.pid: e.tgid for e in events if e.tgid is not None}
    for pid, comm in sorted(names(events, from_events).items()):
        t = p.process_tree.threads.add()
        t.tid, t.name = pid, comm
        if pid in tgids:
            t.tgid = tgids[pid]
    stats(trace, 1, cpus)


def stats(trace, phase, cpus):
    p = trace.packet.add()
    p.trusted_packet_sequence_id = 1
    p.ftrace_stats.phase = phase
    for c in range(cpus):
        s = p.ftrace_stats.cpu_stats.add()
        s.cpu, s.overrun, s.dropped_events = c, 0, 0


def bundle(trace, seq, cpu, evs, compact, lost):
    p = trace.packet.add()
    p.trusted_packet_sequence_id = seq.sid
    if seq.first:
        p.sequence_flags = 1  # SEQ_INCREMENTAL_STATE_CLEARED
        p.first_packet_on_sequence = True
        p.previous_packet_dropped = 1
        seq.first = False
    b = p.ftrace_events
    b.cpu = cpu
    if lost:
        b.lost_events = True
    cs = b.compact_sched
    table = {}
    last_sw = last_wk = None
    for e in evs:
        if compact and e.name in ("sched_switch", "sched_waking"):
            fe = pb.FtraceEvent()
            fill(fe, e, seq, p.interned_data)
            if e.name == "sched_switch":
                x = fe.sched_switch
                cs.switch_timestamp.append(e.ts - (last_sw or 0))
                last_sw = e.ts
                cs.switch_prev_state.append(x.prev_state)
                cs.switch_next_pid.append(x.next_pid)
                cs.switch_next_prio.append(x.next_prio)
                cs.switch_next_comm_index.append(table.setdefault(x.next_comm, len(table)))
            else:
                x = fe.sched_waking
                cs.waking_timestamp.append(e.ts - (last_wk or 0))
                last_wk = e.ts
                cs.waking_pid.append(x.pid)
                cs.waking_target_cpu.append(x.target_cpu)
                cs.waking_prio.append(x.prio)
                cs.waking_comm_index.append(table.setdefault(x.comm, len(table)))
                cs.waking_common_flags.append(e.flags or 0)
            continue
        fe = b.event.add()
        fe.timestamp, fe.pid = e.ts, e.pid
        if e.flags is not None:
            fe.common_flags = e.flags
        fill(fe, e, seq, p.interned_data)
    cs.intern_table.extend(sorted(table, key=table.get))
    if not compact:
        b.ClearField("compact_sched")
    if not p.interned_data.ListFields():
        p.ClearField("interned_data")


def convert(src, out, compact=False, gz=False, window_ms=100, bundle_max=300,
            from_events=False, release="6.18.0", layout="periods"):
    """`layout` orders the bundles in the file: `periods` as traced drains them (each
    drain period, CPU by CPU), `periods-reversed` (each period's CPUs from the last),
    `cpu-by-cpu` (all of one CPU's bundles, then the next CPU's), `one-per-cpu` (each
    CPU's events in one bundle). Trace processor reads every one of them the same."""
    events, cpus = parse(src)
    trace = pb.Trace()
    header_packets(trace, events, cpus, release, from_events)
    seqs = {}
    if layout == "one-per-cpu":
        window_ms, bundle_max = 1 << 40, 1 << 62
    window = window_ms * 1_000_000
    # Per drain period, each CPU's events of that period (in the text's order).
    periods = {}
    for e in events:
        periods.setdefault((e.ts - events[0].ts) // window, {}).setdefault(e.cpu, []).append(e)
    # (period, cpu) in the order their bundles go in the file.
    keys = [(k, cpu) for k in sorted(periods) for cpu in sorted(periods[k])]
    if layout == "periods-reversed":
        keys = [(k, cpu) for k in sorted(periods) for cpu in sorted(periods[k], reverse=True)]
    elif layout == "cpu-by-cpu":
        keys.sort(key=lambda kc: (kc[1], kc[0]))
    elif layout not in ("periods", "one-per-cpu"):
        sys.exit(f"unknown layout {layout}")
    for k, cpu in keys:
        seq = seqs.setdefault(cpu, Seq(100 + cpu))
        # A bundle ends at bundle_max events and before an event the kernel lost
        # events before (the next bundle says so).
        part = []
        for e in periods[k][cpu]:
            if part and (len(part) >= bundle_max or e.lost):
                bundle(trace, seq, cpu, part, compact, part[0].lost)
                part = []
            part.append(e)
        if part:
            bundle(trace, seq, cpu, part, compact, part[0].lost)
    stats(trace, 2, cpus)
    data = trace.SerializeToString()
    if gz:
        data = gzip.compress(data)
    with open(out, "wb") as f:
        f.write(data)


def packet_bytes(p):
    """One packet as a `Trace` holds it (field 1): a Trace of one packet."""
    t = pb.Trace()
    t.packet.add().CopyFrom(p)
    return t.SerializeToString()


def fixture(name, out):
    """Small traces made by hand, each for one reading case."""
    t = pb.Trace()
    p = t.packet.add()
    p.trusted_packet_sequence_id = 7
    p.sequence_flags = 1
    p.system_info.num_cpus = 2
    p.system_info.utsname.release = "6.1.0"
    p.system_info.utsname.machine = "aarch64"
    p = t.packet.add()
    p.trusted_packet_sequence_id = 7
    th = p.process_tree.threads.add()
    th.tid, th.tgid, th.name = 42, 40, "worker"
    # Kernel symbols interned on sequence 7, used by its bundles.
    p = t.packet.add()
    p.trusted_packet_sequence_id = 7
    for iid, s in ((1, "tick_sched_timer"), (2, "vmstat_update")):
        k = p.interned_data.kernel_symbols.add()
        k.iid, k.str = iid, s.encode()
    b = p.ftrace_events
    b.cpu = 1
    ev = b.event.add()
    ev.timestamp, ev.pid, ev.common_flags = 1000, 42, 0x09
    ev.hrtimer_expire_entry.hrtimer, ev.hrtimer_expire_entry.function = 0xffff1000, 1
    ev.hrtimer_expire_entry.now = 990
    ev = b.event.add()
    ev.timestamp, ev.pid = 2000, 42
    ev.workqueue_execute_start.work, ev.workqueue_execute_start.function = 0xffff2000, 2
    ev = b.event.add()
    ev.timestamp, ev.pid = 3000, 42
    ev.workqueue_execute_end.work, ev.workqueue_execute_end.function = 0xffff2000, 3
    if name == "big-packet":
        # One bundle of 20,000 prints (over 1 MiB): larger than the read buffer.
        p = t.packet.add()
        p.trusted_packet_sequence_id = 7
        b = p.ftrace_events
        b.cpu = 0
        for i in range(20000):
            ev = b.event.add()
            ev.timestamp, ev.pid = 10_000 + i, 42
            ev.print.buf = "marker %05d %s\n" % (i, "x" * 40)
    if name == "unknown-packets":
        for i in range(3):
            p = t.packet.add()
            p.trusted_packet_sequence_id = 9
            p.android_log.stats.num_total = i
        p = t.packet.add()
        p.battery.charge_counter_uah = 5
    data = t.SerializeToString()
    if name == "unknown-packets":
        # A stray varint field of `Trace` between packets (field 2): skipped.
        data = data + b"\x10\x01"
    if name == "cut":
        # A last packet (a bundle at 4000) cut 10 bytes before its end.
        p = pb.TracePacket()
        p.trusted_packet_sequence_id = 7
        b = p.ftrace_events
        b.cpu = 0
        for i in range(5):
            ev = b.event.add()
            ev.timestamp, ev.pid = 4000 + i, 42
            ev.print.buf = "late\n"
        data += packet_bytes(p)[:-10]
    if name == "gzip":
        data = gzip.compress(data)
    with open(out, "wb") as f:
        f.write(data)


FIXTURES = ["interned", "big-packet", "cut", "unknown-packets", "gzip"]


def main(argv):
    if len(argv) >= 3 and argv[0] == "convert":
        opts = argv[3:]
        kw = dict(compact="--compact" in opts, gz="--gzip" in opts,
                  from_events="--names-from-events" in opts)
        for flag, key, conv in (("--window-ms", "window_ms", int),
                                ("--bundle-max", "bundle_max", int),
                                ("--release", "release", str),
                                ("--layout", "layout", str)):
            if flag in opts:
                kw[key] = conv(opts[opts.index(flag) + 1])
        convert(argv[1], argv[2], **kw)
    elif len(argv) == 3 and argv[0] == "fixture" and argv[1] in FIXTURES:
        fixture(argv[1], argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
