#!/usr/bin/env python3
"""Writes crates/whylate-read/src/read/perfetto/protos.rs: prost message structs for the part of
Perfetto's trace schema that whylate reads.

The schema is Perfetto's own: the FileDescriptorProto that Google's `perfetto` Python
package carries in perfetto/protos/perfetto/trace/perfetto_trace_pb2.py (`pip install
perfetto`). It is pruned to the messages and fields in KEEP below and written as prost
derive structs, field numbers and types taken from the descriptor (nothing typed by hand).
Changes from the schema, all wire-compatible:
  - `string` fields are `bytes`: a kernel comm is any bytes, and one invalid UTF-8 comm
    must not fail a whole packet; the reader interns them lossily.
  - enum fields are `int32` (an enum is an int32 varint on the wire); the values the reader
    needs are constants in the reader.
  - a oneof keeps only the members kept; the others decode as no member (prost skips
    unknown fields), which the reader counts.
  - a repeated uint64 field in INLINE is held in a fixed array (`sysargs::Args`), not a
    Vec: its message gets a `prost::Message` impl written here, from the same descriptor,
    that calls prost's own field functions as the derive would (a sys_enter's six
    arguments in a Vec cost an allocation, a growth and a free per event).

Regenerate (after adding a field to KEEP, or for a newer schema):
    pip install perfetto
    python3 scripts/perfetto-protos.py > crates/whylate-read/src/read/perfetto/protos.rs
    cargo fmt --all
`--fds FILE` also writes the pruned FileDescriptorSet (binary), e.g. for prost-build's
compile_fds.
"""

import sys

from google.protobuf import descriptor_pb2
from perfetto.protos.perfetto.trace import perfetto_trace_pb2

# message (full name without the package) -> fields kept ("*" = all).
KEEP = {
    "TracePacket": [
        "timestamp", "timestamp_clock_id", "ftrace_events", "process_tree",
        "process_stats", "clock_snapshot", "ftrace_stats", "trace_stats", "system_info",
        "track_event", "track_descriptor", "trusted_packet_sequence_id", "interned_data",
        "sequence_flags", "incremental_state_cleared", "previous_packet_dropped",
        "first_packet_on_sequence",
    ],
    "FtraceEventBundle": [
        "cpu", "event", "lost_events", "compact_sched", "ftrace_clock",
        "ftrace_timestamp", "boot_timestamp", "generic_event_descriptors",
    ],
    "FtraceEventBundle.CompactSched": "*",
    "FtraceEventBundle.GenericEventDescriptor": "*",
    "FtraceEvent": [
        "timestamp", "pid", "common_flags", "print", "sched_switch", "sched_wakeup",
        "sched_waking", "sched_wakeup_new", "sched_migrate_task", "sched_process_fork",
        "sched_process_exec", "sched_process_exit", "task_newtask", "task_rename",
        "irq_handler_entry", "irq_handler_exit", "softirq_raise", "softirq_entry",
        "softirq_exit", "workqueue_queue_work", "workqueue_activate_work",
        "workqueue_execute_start", "workqueue_execute_end", "sys_enter", "sys_exit",
        "hrtimer_start", "hrtimer_expire_entry", "hrtimer_expire_exit", "hrtimer_cancel",
        "timer_start", "timer_expire_entry", "timer_expire_exit", "timer_cancel",
        "console", "funcgraph_entry", "funcgraph_exit", "generic",
    ],
    "PrintFtraceEvent": "*",
    "ConsoleFtraceEvent": "*",
    "SchedSwitchFtraceEvent": "*",
    "SchedWakeupFtraceEvent": "*",
    "SchedWakingFtraceEvent": "*",
    "SchedWakeupNewFtraceEvent": "*",
    "SchedMigrateTaskFtraceEvent": ["comm", "pid", "prio", "orig_cpu", "dest_cpu"],
    "SchedProcessForkFtraceEvent": "*",
    "SchedProcessExecFtraceEvent": "*",
    "SchedProcessExitFtraceEvent": "*",
    "TaskNewtaskFtraceEvent": ["pid", "comm"],
    "TaskRenameFtraceEvent": ["pid", "oldcomm", "newcomm"],
    "IrqHandlerEntryFtraceEvent": "*",
    "IrqHandlerExitFtraceEvent": "*",
    "SoftirqRaiseFtraceEvent": "*",
    "SoftirqEntryFtraceEvent": "*",
    "SoftirqExitFtraceEvent": "*",
    "WorkqueueQueueWorkFtraceEvent": "*",
    "WorkqueueActivateWorkFtraceEvent": "*",
    "WorkqueueExecuteStartFtraceEvent": "*",
    "WorkqueueExecuteEndFtraceEvent": "*",
    "SysEnterFtraceEvent": "*",
    "SysExitFtraceEvent": "*",
    "HrtimerStartFtraceEvent": "*",
    "HrtimerExpireEntryFtraceEvent": "*",
    "HrtimerExpireExitFtraceEvent": "*",
    "HrtimerCancelFtraceEvent": "*",
    "TimerStartFtraceEvent": ["timer", "function", "expires"],
    "TimerExpireEntryFtraceEvent": ["timer", "now", "function"],
    "TimerExpireExitFtraceEvent": "*",
    "TimerCancelFtraceEvent": "*",
    "FuncgraphEntryFtraceEvent": "*",
    "FuncgraphExitFtraceEvent": "*",
    "GenericFtraceEvent": "*",
    "GenericFtraceEvent.Field": "*",
    "ProcessTree": ["processes", "threads"],
    "ProcessTree.Thread": ["tid", "tgid", "name"],
    "ProcessTree.Process": ["pid", "ppid", "cmdline", "cmdline_is_comm"],
    "ProcessStats": ["processes"],
    "ProcessStats.Process": ["pid", "threads"],
    "ProcessStats.Thread": ["tid"],
    "SystemInfo": ["utsname", "num_cpus", "page_size", "tracing_service_version"],
    "Utsname": "*",
    "FtraceStats": [
        "phase", "cpu_stats", "unknown_ftrace_events", "failed_ftrace_events",
        "ftrace_parse_errors",
    ],
    "FtraceCpuStats": "*",
    "TraceStats": ["buffer_stats", "chunks_discarded", "invalid_packets"],
    "TraceStats.BufferStats": [
        "bytes_overwritten", "chunks_overwritten", "chunks_discarded",
        "trace_writer_packet_loss", "patches_failed", "abi_violations",
    ],
    "ClockSnapshot": "*",
    "ClockSnapshot.Clock": "*",
    "InternedData": ["event_categories", "event_names", "kernel_symbols"],
    "InternedString": "*",
    "EventCategory": "*",
    "EventName": "*",
    "TrackEvent": ["type", "track_uuid", "name", "name_iid", "categories",
                   "category_iids"],
    "TrackDescriptor": ["uuid", "name", "thread"],
    "ThreadDescriptor": ["pid", "tid", "thread_name"],
}

# "Message.field" -> held inline (repeated uint64 only): see the docstring.
INLINE = {"SysEnterFtraceEvent.args"}

T = descriptor_pb2.FieldDescriptorProto
SCALAR = {
    T.TYPE_DOUBLE: "double", T.TYPE_FLOAT: "float", T.TYPE_INT64: "int64",
    T.TYPE_UINT64: "uint64", T.TYPE_INT32: "int32", T.TYPE_FIXED64: "fixed64",
    T.TYPE_FIXED32: "fixed32", T.TYPE_BOOL: "bool", T.TYPE_UINT32: "uint32",
    T.TYPE_SFIXED32: "sfixed32", T.TYPE_SFIXED64: "sfixed64", T.TYPE_SINT32: "sint32",
    T.TYPE_SINT64: "sint64", T.TYPE_STRING: "bytes", T.TYPE_BYTES: "bytes",
    T.TYPE_ENUM: "int32",
}
RUST = {
    "double": "f64", "float": "f32", "int64": "i64", "uint64": "u64", "int32": "i32",
    "fixed64": "u64", "fixed32": "u32", "bool": "bool", "uint32": "u32",
    "sfixed32": "i32", "sfixed64": "i64", "sint32": "i32", "sint64": "i64",
    "bytes": "::prost::alloc::vec::Vec<u8>",
}


KEYWORDS = {"type", "fn", "mod", "use", "ref", "self", "loop", "match", "move", "impl"}


def ident(name):
    return "r#" + name if name in KEYWORDS else name


def camel(name):
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def snake(name):
    out = ""
    for i, c in enumerate(name):
        if c.isupper() and i:
            out += "_"
        out += c.lower()
    return out


def messages(fdp):
    """Every message by its name without the package, nested ones as Outer.Inner."""
    found = {}

    def walk(m, prefix):
        name = prefix + m.name
        found[name] = m
        for n in m.nested_type:
            walk(n, name + ".")

    for m in fdp.message_type:
        walk(m, "")
    return found


def kept_fields(name, m):
    want = KEEP[name]
    fields = [f for f in m.field if want == "*" or f.name in want]
    if want != "*":
        missing = set(want) - {f.name for f in fields}
        if missing:
            sys.exit(f"{name}: no field {sorted(missing)} in the schema")
    return fields


def rust_path(type_name, here):
    """The Rust path of message `type_name` (`.perfetto.protos.A.B`) from module `here`."""
    parts = type_name.split(".")[3:]
    mods = [snake(p) for p in parts[:-1]]
    depth = len(here)
    return "::".join(["super"] * depth + mods + [parts[-1]])


def field_attr(f, here):
    """(attribute, Rust type) of a non-oneof field."""
    rep = f.label == T.LABEL_REPEATED
    tag = f'tag = "{f.number}"'
    if f.type == T.TYPE_MESSAGE:
        ty = rust_path(f.type_name, here)
        if rep:
            return f"#[prost(message, repeated, {tag})]", f"::prost::alloc::vec::Vec<{ty}>"
        return f"#[prost(message, optional, {tag})]", f"::core::option::Option<{ty}>"
    kind = SCALAR[f.type]
    ty = RUST[kind]
    if rep:
        packed = ', packed = "true"' if f.options.packed else ', packed = "false"'
        if kind == "bytes":
            packed = ""
        return f"#[prost({kind}, repeated{packed}, {tag})]", f"::prost::alloc::vec::Vec<{ty}>"
    return f"#[prost({kind}, optional, {tag})]", f"::core::option::Option<{ty}>"


def emit_inline(out, name, fields, here):
    """A message with a field in INLINE: the struct and its prost::Message impl."""
    short = name.split(".")[-1]
    enc = "::prost::encoding"
    pad = "    " * len(here)
    args = "::".join(["super"] * (len(here) + 1) + ["sysargs", "Args"])
    out.append(f"{pad}/// Perfetto's `{name}` (pruned); repeated uint64 fields held inline")
    out.append(f"{pad}/// ([`{args}`]), decoded by prost's field functions.")
    out.append(f"{pad}#[derive(Clone, PartialEq, Debug, Default)]")
    out.append(f"{pad}pub struct {short} {{")
    encode, merge, length = [], [], []
    for f in fields:
        fid, kind = ident(f.name), SCALAR[f.type]
        out.append(f"{pad}    /// Field {f.number}.")
        if f"{name}.{f.name}" in INLINE:
            # Written unpacked, as the derive writes `packed = "false"`.
            assert f.label == T.LABEL_REPEATED and kind == "uint64", f.name
            assert not f.options.packed, f"{name}.{f.name}: packed INLINE fields not written"
            out.append(f"{pad}    pub {fid}: {args},")
            encode.append(f"{enc}::uint64::encode_repeated({f.number}, self.{fid}.as_slice(), buf);")
            merge.append(f"{f.number} => self.{fid}.merge(wire_type, buf, ctx),")
            length.append(f"{enc}::uint64::encoded_len_repeated({f.number}, self.{fid}.as_slice())")
            continue
        assert f.label != T.LABEL_REPEATED and f.type != T.TYPE_MESSAGE, f.name
        out.append(f"{pad}    pub {fid}: ::core::option::Option<{RUST[kind]}>,")
        encode.append(f"if let Some(v) = &self.{fid} {{ {enc}::{kind}::encode({f.number}, v, buf); }}")
        merge.append(f"{f.number} => {enc}::{kind}::merge(wire_type, "
                     f"self.{fid}.get_or_insert_with(Default::default), buf, ctx),")
        length.append(f"self.{fid}.as_ref().map_or(0, |v| {enc}::{kind}::encoded_len({f.number}, v))")
    out.append(f"{pad}}}")
    out.append(f"{pad}impl ::prost::Message for {short} {{")
    out.append(f"{pad}    fn encode_raw(&self, buf: &mut impl ::prost::bytes::BufMut) {{")
    out.extend(f"{pad}        {x}" for x in encode)
    out.append(f"{pad}    }}")
    out.append(f"{pad}    fn merge_field(&mut self, tag: u32, wire_type: {enc}::WireType, "
               f"buf: &mut impl ::prost::bytes::Buf, ctx: {enc}::DecodeContext) "
               f"-> Result<(), ::prost::DecodeError> {{")
    out.append(f"{pad}        match tag {{")
    out.extend(f"{pad}            {x}" for x in merge)
    out.append(f"{pad}            _ => {enc}::skip_field(wire_type, tag, buf, ctx),")
    out.append(f"{pad}        }}")
    out.append(f"{pad}    }}")
    out.append(f"{pad}    fn encoded_len(&self) -> usize {{")
    out.append(f"{pad}        " + (" + ".join(length) or "0"))
    out.append(f"{pad}    }}")
    out.append(f"{pad}    fn clear(&mut self) {{")
    out.append(f"{pad}        *self = Self::default();")
    out.append(f"{pad}    }}")
    out.append(f"{pad}}}")


def emit(out, name, m, all_msgs, here):
    short = name.split(".")[-1]
    fields = kept_fields(name, m)
    if any(f"{name}.{f.name}" in INLINE for f in fields):
        # Plain scalar fields only: no oneof, no nested message.
        assert not m.oneof_decl and not any(n.startswith(name + ".") for n in KEEP), name
        return emit_inline(out, name, fields, here)
    oneofs = {}
    plain = []
    for f in fields:
        if f.HasField("oneof_index") and not f.proto3_optional:
            oneofs.setdefault(m.oneof_decl[f.oneof_index].name, []).append(f)
        else:
            plain.append(f)
    pad = "    " * len(here)
    out.append(f"{pad}/// Perfetto's `{name}` (pruned).")
    out.append(f"{pad}#[derive(Clone, PartialEq, ::prost::Message)]")
    out.append(f"{pad}pub struct {short} {{")
    for f in plain:
        attr, ty = field_attr(f, here)
        out.append(f"{pad}    /// Field {f.number}.")
        out.append(f"{pad}    {attr}")
        out.append(f"{pad}    pub {ident(f.name)}: {ty},")
    mod = snake(short)
    for oname, ofields in oneofs.items():
        tags = ", ".join(str(f.number) for f in ofields)
        out.append(f"{pad}    /// The `{oname}` oneof (members kept: {len(ofields)}).")
        out.append(f'{pad}    #[prost(oneof = "{mod}::{camel(oname)}", tags = "{tags}")]')
        out.append(f"{pad}    pub {oname}: ::core::option::Option<{mod}::{camel(oname)}>,")
    out.append(f"{pad}}}")
    nested = [
        n for n in KEEP if n.startswith(name + ".") and n.count(".") == name.count(".") + 1
    ]
    if not oneofs and not nested:
        return
    out.append(f"{pad}/// Nested in `{name}`.")
    out.append(f"{pad}pub mod {mod} {{")
    for oname, ofields in oneofs.items():
        out.append(f"{pad}    /// The `{oname}` oneof.")
        out.append(f"{pad}    #[derive(Clone, PartialEq, ::prost::Oneof)]")
        out.append(f"{pad}    pub enum {camel(oname)} {{")
        for f in ofields:
            if f.type == T.TYPE_MESSAGE:
                ty = rust_path(f.type_name, here + [mod])
                attr = f'#[prost(message, tag = "{f.number}")]'
            else:
                kind = SCALAR[f.type]
                ty = RUST[kind]
                attr = f'#[prost({kind}, tag = "{f.number}")]'
            out.append(f"{pad}        /// Field {f.number}.")
            out.append(f"{pad}        {attr}")
            out.append(f"{pad}        {camel(f.name)}({ty}),")
        out.append(f"{pad}    }}")
    for n in nested:
        emit(out, n, all_msgs[n], all_msgs, here + [mod])
    out.append(f"{pad}}}")


def prune(fdp):
    """The descriptor with only the kept messages and fields (for --fds)."""
    pruned = descriptor_pb2.FileDescriptorProto()
    pruned.CopyFrom(fdp)
    del pruned.message_type[:]
    del pruned.enum_type[:]
    del pruned.dependency[:]

    def copy(m, prefix):
        name = prefix + m.name
        if name not in KEEP:
            return None
        c = descriptor_pb2.DescriptorProto()
        c.name = m.name
        for f in kept_fields(name, m):
            g = c.field.add()
            g.CopyFrom(f)
            if f.type == T.TYPE_ENUM:
                g.type = T.TYPE_INT32
                g.ClearField("type_name")
        used = {g.oneof_index for g in c.field if g.HasField("oneof_index")}
        remap = {}
        for i, o in enumerate(m.oneof_decl):
            if i in used:
                remap[i] = len(c.oneof_decl)
                c.oneof_decl.add().CopyFrom(o)
        for g in c.field:
            if g.HasField("oneof_index"):
                g.oneof_index = remap[g.oneof_index]
        for n in m.nested_type:
            cn = copy(n, name + ".")
            if cn is not None:
                c.nested_type.add().CopyFrom(cn)
        return c

    for m in fdp.message_type:
        c = copy(m, "")
        if c is not None:
            pruned.message_type.add().CopyFrom(c)
    return pruned


def main():
    fdp = descriptor_pb2.FileDescriptorProto()
    fdp.ParseFromString(perfetto_trace_pb2.DESCRIPTOR.serialized_pb)
    all_msgs = messages(fdp)
    unknown = set(KEEP) - set(all_msgs)
    if unknown:
        sys.exit(f"not in the schema: {sorted(unknown)}")
    args = sys.argv[1:]
    if args[:1] == ["--fds"]:
        fds = descriptor_pb2.FileDescriptorSet()
        fds.file.add().CopyFrom(prune(fdp))
        with open(args[1], "wb") as f:
            f.write(fds.SerializeToString())
    version = getattr(__import__("perfetto"), "__version__", None)
    if version is None:
        from importlib.metadata import version as v
        version = v("perfetto")
    out = [
        "//! Perfetto's trace schema, pruned to what whylate reads: prost messages.",
        "//!",
        f"//! GENERATED by scripts/perfetto-protos.py from the descriptor in Google's `perfetto`",
        f"//! Python package {version} (perfetto/protos/perfetto/trace/perfetto_trace_pb2.py).",
        "//! Do not edit: add fields to the script's KEEP and regenerate (the script says how).",
        "//! Strings are `bytes` and enums `int32` (wire-compatible); unkept oneof members",
        "//! decode as none.",
        "#![allow(missing_docs, clippy::all)]",
        "",
    ]
    # Every TracePacket field by number, to name the packets the reader skips.
    tp = all_msgs["TracePacket"]
    out.append("/// Every field of `TracePacket` (kept or not), by number: names skipped packets.")
    out.append("pub const PACKET_FIELDS: &[(u32, &str)] = &[")
    for f in sorted(tp.field, key=lambda f: f.number):
        out.append(f'    ({f.number}, "{f.name}"),')
    out.append("];")
    out.append("")
    top = [n for n in KEEP if "." not in n]
    for n in top:
        emit(out, n, all_msgs[n], all_msgs, [])
        out.append("")
    print("\n".join(out).rstrip() + "\n", end="")


if __name__ == "__main__":
    main()
