//! The reader on traces built here with the same schema (the independent fixtures, made
//! with Google's own classes, are in whylate-cli's tests/perfetto.rs).

use super::protos::{self, ftrace_event::Event as Ev, trace_packet::Data};
use super::*;
use crate::event::TaskState;

fn packet(data: Data) -> protos::TracePacket {
    protos::TracePacket {
        data: Some(data),
        ..Default::default()
    }
}

fn ev(ts: u64, pid: u32, e: Ev) -> protos::FtraceEvent {
    protos::FtraceEvent {
        timestamp: Some(ts),
        pid: Some(pid),
        common_flags: Some(0x1),
        event: Some(e),
    }
}

fn bundle(cpu: u32, events: Vec<protos::FtraceEvent>) -> protos::TracePacket {
    packet(Data::FtraceEvents(protos::FtraceEventBundle {
        cpu: Some(cpu),
        event: events,
        ..Default::default()
    }))
}

fn exit(nr: i64, ret: i64) -> Ev {
    Ev::SysExit(protos::SysExitFtraceEvent {
        id: Some(nr),
        ret: Some(ret),
    })
}

/// A `Trace`: each packet as field 1, length-delimited.
fn trace(packets: &[protos::TracePacket]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in packets {
        out.push(0x0a);
        p.encode_length_delimited(&mut out).unwrap();
    }
    out
}

/// Two CPUs' bundles of `n` system call exits each, Perfetto's way: a CPU's bundle after
/// the other's later one, a task renamed halfway, a bundle flagged as after lost events,
/// an undecodable packet, and the file cut inside its last packet. For the two-thread
/// reading's test (`pipeline/apart.rs`).
pub(crate) fn bundles_two_cpus(n: u64) -> Vec<u8> {
    let mut packets = vec![packet(Data::SystemInfo(protos::SystemInfo {
        num_cpus: Some(2),
        ..Default::default()
    }))];
    for k in 0..n / 4 {
        let at = 1_000_000 + k * 4_000;
        for cpu in [1, 0] {
            let evs = (0..4)
                .map(|j| {
                    ev(
                        at + j * 1_000 + u64::from(cpu) * 300,
                        5 + cpu,
                        exit(1, j as i64),
                    )
                })
                .collect();
            let mut b = bundle(cpu, evs);
            if k == n / 8 && cpu == 1 {
                let Some(Data::FtraceEvents(fb)) = &mut b.data else {
                    unreachable!()
                };
                fb.lost_events = Some(true);
                fb.event.push(ev(
                    at + 3_500,
                    6,
                    Ev::TaskRename(protos::TaskRenameFtraceEvent {
                        pid: Some(6),
                        newcomm: Some(b"renamed".to_vec()),
                        ..Default::default()
                    }),
                ));
            }
            packets.push(b);
        }
    }
    let mut t = trace(&packets);
    // An undecodable packet (a field 1 of a varint's wire type), then one cut short.
    t.extend_from_slice(&[0x0a, 0x02, 0x08, 0xff]);
    let last = trace(&packets[1..2]);
    t.extend_from_slice(&last[..last.len() - 3]);
    t
}

fn read(bytes: Vec<u8>, chunk: usize) -> (Vec<Event>, Interner, Perfetto) {
    let mut r = Perfetto::from_reader(
        Path::new("t.pftrace"),
        Box::new(std::io::Cursor::new(bytes)),
        chunk,
        Default::default(),
        0,
    );
    let mut s = Interner::new();
    let mut out = Vec::new();
    while let Some(e) = r.next_decoded(&mut s).unwrap() {
        out.push(e);
    }
    (out, s, r)
}

/// Two CPUs' bundles interleaved as Perfetto writes them (CPU1's earlier events after
/// CPU0's later ones) come out in time order, whatever the read buffer's size: 1 byte
/// splits every key, length and packet.
#[test]
fn bundles_merge_in_time_order_across_any_buffer_size() {
    let t = trace(&[
        packet(Data::SystemInfo(protos::SystemInfo {
            num_cpus: Some(2),
            ..Default::default()
        })),
        bundle(0, vec![ev(100, 5, exit(0, 1)), ev(300, 5, exit(0, 2))]),
        bundle(1, vec![ev(150, 6, exit(0, 3)), ev(250, 6, exit(0, 4))]),
        bundle(0, vec![ev(400, 5, exit(0, 5))]),
        bundle(1, vec![ev(350, 6, exit(0, 6))]),
    ]);
    for chunk in [1, 3, 7, 64, CHUNK] {
        let (evs, _, r) = read(t.clone(), chunk);
        let ts: Vec<u64> = evs.iter().map(|e| e.ts).collect();
        assert_eq!(ts, [100, 150, 250, 300, 350, 400], "chunk {chunk}");
        assert_eq!(r.order().unsorted, 0);
        assert_eq!(evs[1].tid, 6);
        assert_eq!(evs[1].flags, 0x1 | crate::event::flags::KNOWN);
    }
}

/// compact_sched: delta timestamps, the comm table, the previous task taken from the
/// CPU's last event, the waker from the task on the CPU, and prev_state's bits.
#[test]
fn compact_sched_unpacks_with_the_task_on_the_cpu() {
    let mut names = protos::ProcessTree::default();
    names.threads.push(protos::process_tree::Thread {
        tid: Some(5),
        tgid: Some(5),
        name: Some(b"sender".to_vec()),
    });
    let compact = protos::ftrace_event_bundle::CompactSched {
        intern_table: vec![b"receiver".to_vec()],
        switch_timestamp: vec![200, 50],
        switch_prev_state: vec![1, 0x100],
        switch_next_pid: vec![7, 5],
        switch_next_prio: vec![100, 120],
        switch_next_comm_index: vec![0, 1],
        waking_timestamp: vec![150],
        waking_pid: vec![7],
        waking_target_cpu: vec![0],
        waking_prio: vec![100],
        waking_comm_index: vec![0],
        waking_common_flags: vec![0x9],
    };
    let b = protos::FtraceEventBundle {
        cpu: Some(0),
        event: vec![ev(100, 5, exit(0, 1))],
        compact_sched: Some(compact),
        ..Default::default()
    };
    let (evs, s, r) = read(
        trace(&[
            packet(Data::ProcessTree(names)),
            packet(Data::FtraceEvents(b)),
        ]),
        CHUNK,
    );
    assert_eq!(evs.len(), 4);
    assert_eq!(
        (evs[1].ts, evs[1].tid),
        (150, 5),
        "the waker is the task on the CPU"
    );
    assert!(matches!(evs[1].kind, Kind::SchedWaking { pid: 7, .. }));
    let Kind::SchedSwitch {
        prev_pid,
        prev_comm,
        prev_state,
        next_pid,
        ..
    } = evs[2].kind
    else {
        panic!("{:?}", evs[2]);
    };
    assert_eq!((evs[2].ts, prev_pid, next_pid), (200, 5, 7));
    assert_eq!(s.get(prev_comm), "sender");
    assert_eq!(prev_state, TaskState::parse(b"S").unwrap());
    let Kind::SchedSwitch {
        prev_pid,
        prev_prio,
        prev_state,
        next_comm,
        ..
    } = evs[3].kind
    else {
        panic!("{:?}", evs[3]);
    };
    // Index 1 is past the comm table: the name comes from the process tree.
    assert_eq!((evs[3].ts, prev_pid, prev_prio), (250, 7, 100));
    assert!(prev_state.is_runnable() && prev_state.to_string() == "R+");
    assert_eq!(
        s.get(next_comm),
        "sender",
        "a name missing from the table is the known one"
    );
    assert_eq!(s.get(evs[3].comm), "receiver");
    assert_eq!(evs[3].tgid, -1);
    assert_eq!(evs[0].tgid, 5);
    assert_eq!(r.st.counts.compact_unknown_prev, 0);
}

#[test]
fn prev_state_reads_as_the_kernel_prints_it() {
    assert_eq!(bundle::task_state(0x80, false).to_string(), "I");
    assert_eq!(bundle::task_state(0x2, false).to_string(), "D");
    assert_eq!(bundle::task_state(0x100, false).to_string(), "R+");
    assert_eq!(bundle::task_state(0x80, true), TaskState::Numeric(0x80));
    assert!(before_4_14("3.18.31-perf") && !before_4_14("6.1.0") && !before_4_14("?"));
}

/// A trace cut inside its last packet gives the packets before and says where it ends;
/// the kernel's lost-events flag becomes a marker on the bundle's CPU.
#[test]
fn a_cut_trace_reads_to_the_cut_and_lost_events_are_marked() {
    let mut lost = bundle(1, vec![ev(500, 6, exit(0, 9))]);
    if let Some(Data::FtraceEvents(b)) = &mut lost.data {
        b.lost_events = Some(true);
    }
    let mut t = trace(&[bundle(0, vec![ev(100, 5, exit(0, 1))]), lost]);
    let whole = t.len();
    t.extend(trace(&[bundle(0, vec![ev(900, 5, exit(0, 2))])]));
    t.truncate(t.len() - 3);
    let (evs, _, r) = read(t, 5);
    let kinds: Vec<(u64, u32, bool)> = (evs.iter())
        .map(|e| (e.ts, e.cpu, matches!(e.kind, Kind::Lost { count: None })))
        .collect();
    assert_eq!(kinds, [(100, 0, false), (500, 1, true), (500, 1, false)]);
    let why = r.diag().truncated.clone().unwrap();
    assert!(why.contains(&format!("byte {}", whole + 2)), "{why}");
    assert_eq!(r.diag().cut_cpus, [0, 1]);
}

/// Text that starts with a blank line (0x0a too) is not taken for a trace.
#[test]
fn sniff_is_strict() {
    assert!(sniff(&trace(&[bundle(0, vec![ev(1, 1, exit(0, 0))])])));
    assert!(!sniff(
        b"\n# tracer: nop\n#\n  <idle>-0 [000] d.h1. 1.0: foo: x=1\n"
    ));
    assert!(!sniff(b"\n\n"));
    assert!(!sniff(b"\x0a\x05hello"));
    // A blank line, then a line longer than the file: a packet that starts with field 6
    // (a message) as a number is not one.
    assert!(!sniff(b"\n 0\n"));
}

/// A generic per-call syscall becomes the typed syscall, other generic events go
/// through the text body parser (tasklets) or stay `Other` with their fields.
#[test]
fn generic_events_by_their_fields() {
    use protos::generic_ftrace_event::{field::Value, Field};
    let f = |n: &str, v: Value| Field {
        name: Some(n.as_bytes().to_vec()),
        value: Some(v),
    };
    let g = |name: &str, field: Vec<Field>| {
        Ev::Generic(protos::GenericFtraceEvent {
            event_name: Some(name.as_bytes().to_vec()),
            field,
        })
    };
    let evs = vec![
        ev(
            1,
            5,
            g(
                "sys_enter_write",
                vec![
                    f("__syscall_nr", Value::IntValue(1)),
                    f("fd", Value::UintValue(4)),
                    f("count", Value::UintValue(7)),
                ],
            ),
        ),
        ev(
            2,
            5,
            g(
                "sys_exit_read",
                vec![
                    f("__syscall_nr", Value::IntValue(0)),
                    f("ret", Value::IntValue(-11)),
                ],
            ),
        ),
        ev(
            3,
            5,
            g(
                "tasklet_entry",
                vec![
                    f("tasklet", Value::UintValue(0xffff_8880_0000_1000)),
                    f("func", Value::UintValue(0xffff_ffff_8100_0000)),
                ],
            ),
        ),
        ev(
            4,
            5,
            g(
                "cpu_frequency_x",
                vec![
                    f("state", Value::UintValue(1200)),
                    f("name", Value::StrValue(b"big\n".to_vec())),
                ],
            ),
        ),
    ];
    let (evs, s, _) = read(trace(&[bundle(0, evs)]), CHUNK);
    let Kind::SyscallEnter { name, args } = &evs[0].kind else {
        panic!("{:?}", evs[0]);
    };
    assert_eq!(s.get(*name), "write");
    let args: Vec<(&str, u64)> = args.iter().map(|(k, v)| (s.get(*k), *v)).collect();
    assert_eq!(args, [("fd", 4), ("count", 7)]);
    assert!(matches!(evs[1].kind, Kind::SyscallExit { ret: -11, .. }));
    let Kind::TaskletEntry { func } = evs[2].kind else {
        panic!("{:?}", evs[2]);
    };
    assert_eq!(s.get(func), "0xffffffff81000000");
    let Kind::Other { name, fields } = &evs[3].kind else {
        panic!("{:?}", evs[3]);
    };
    assert_eq!(
        (s.get(*name), &**fields),
        ("cpu_frequency_x", "state=1200 name=big")
    );
}

/// A packet decoded into an earlier bundle's emptied event vector is the packet decoded
/// afresh, whatever it holds: a bundle, another kind, no contents at all, an empty
/// bundle, contents the schema here lacks.
#[test]
fn a_packet_decoded_into_a_reused_vector_is_the_packet() {
    let stale = || {
        let mut v = vec![ev(1, 2, exit(0, 0)); 50];
        v.clear();
        Some(v)
    };
    let interned_only = protos::TracePacket {
        interned_data: Some(protos::InternedData::default()),
        ..Default::default()
    };
    let unknown = {
        // Field 99 (not in the schema), length-delimited, 2 bytes.
        vec![0x9a, 0x06, 0x02, 0x08, 0x01]
    };
    let mut bytes: Vec<Vec<u8>> = [
        bundle(1, vec![ev(100, 5, exit(0, 1)), ev(300, 5, exit(0, 2))]),
        packet(Data::SystemInfo(protos::SystemInfo {
            num_cpus: Some(2),
            ..Default::default()
        })),
        interned_only,
        packet(Data::FtraceEvents(protos::FtraceEventBundle::default())),
        protos::TracePacket::default(),
    ]
    .iter()
    .map(|p| p.encode_to_vec())
    .collect();
    bytes.push(unknown);
    // Field 99, then an empty bundle: the bundle is the packet's (the last of the oneof).
    let late_bundle = vec![0x9a, 0x06, 0x02, 0x08, 0x01, 0x0a, 0x00];
    match decode(0, &late_bundle, stale()) {
        Item::Packet(p, None) => assert!(matches!(p.data, Some(Data::FtraceEvents(_)))),
        _ => panic!("a bundle, nothing skipped"),
    }
    bytes.push(late_bundle);
    for b in &bytes {
        let (fresh, reused) = (decode(0, b, None), decode(0, b, stale()));
        match (fresh, reused) {
            (Item::Packet(a, sa), Item::Packet(b, sb)) => {
                assert_eq!((a, sa), (b, sb));
            }
            _ => panic!("a packet decodes either way"),
        }
    }
}

#[test]
fn a_cpu_the_trace_does_not_count_comes_late_and_no_window_is_to_blame() {
    // system_info says one CPU; CPU 1's bundle comes after CPU 0's over the same times.
    let mut packets = vec![packet(Data::SystemInfo(protos::SystemInfo {
        num_cpus: Some(1),
        ..Default::default()
    }))];
    for cpu in [0, 1] {
        let evs = (0..50)
            .map(|k| ev(1_000 + k * 10, 100 + cpu, exit(0, 1)))
            .collect();
        packets.push(bundle(cpu, evs));
    }
    let (events, _, r) = read(trace(&packets), 1 << 16);
    assert_eq!(events.len(), 100);
    let o = r.order();
    assert!(o.unsorted > 0, "{o:?}");
    assert_eq!(o.full, 0);
}

/// Packets handed over undecoded (the feeding thread not behind) and decoded ones, in
/// batches all of one kind, of the other, and mixed, give what one thread reads: the same
/// events, strings, notes and counts, also for the undecodable packet, the lost-events
/// bundle and the cut at the end (each lands on both sides across the patterns).
#[test]
fn packets_decoded_on_either_thread_give_the_same_events() {
    let bytes = bundles_two_cpus(4_000);
    let (want, want_s, one) = read(bytes.clone(), 1 << 12);
    let strings = |s: &Interner| s.strings_from(0).map(String::from).collect::<Vec<_>>();
    let raw_when: [fn(usize) -> bool; 4] = [|_| true, |_| false, |k| k % 3 != 0, |k| k % 3 == 0];
    for (p, raw_when) in raw_when.into_iter().enumerate() {
        let mut r = Perfetto::from_reader(
            Path::new("t.pftrace"),
            Box::new(std::io::Cursor::new(bytes.clone())),
            1 << 12,
            Default::default(),
            0,
        );
        let mut d = r.decode_apart();
        let (mut s, mut got) = (Interner::new(), Vec::new());
        let (mut batch, mut raws) = (apart::Records::default(), 0);
        for k in 0.. {
            let more = r.next_items(&mut batch, 50, raw_when(k)).unwrap();
            raws += batch.raw_count();
            d.decode(&mut s, &mut batch, |e, _| got.push(e.clone()));
            if !more {
                break;
            }
        }
        r.rejoin(d);
        assert_eq!(
            raws > 0,
            p != 1,
            "pattern {p}: {raws} packets went over undecoded"
        );
        assert_eq!(got.len(), want.len(), "pattern {p}");
        assert!(got == want, "pattern {p}: the events differ");
        assert_eq!(strings(&s), strings(&want_s), "pattern {p}");
        assert_eq!(format!("{:?}", r.diag()), format!("{:?}", one.diag()));
        assert_eq!(r.notes(), one.notes(), "pattern {p}");
        assert_eq!(format!("{:?}", r.info()), format!("{:?}", one.info()));
        assert_eq!(format!("{:?}", r.order()), format!("{:?}", one.order()));
        assert!(r.diag().truncated.is_some() && r.diag().unparsed > 0);
        let notes = r.notes().join("\n");
        assert!(notes.contains("1 packets that do not decode ("), "{notes}");
    }
}

/// A packet larger than a batch is decoded on the reading thread even when packets go
/// over undecoded: the batches' byte buffers stay small.
#[test]
fn a_packet_larger_than_a_batch_is_not_handed_over_raw() {
    let big = (0..40_000).map(|k| ev(1_000 + k, 5, exit(1, 0))).collect();
    let t = trace(&[bundle(0, big), bundle(0, vec![ev(99_999, 5, exit(1, 0))])]);
    assert!(t.len() > 1 << 18, "{} bytes", t.len());
    let mut r = Perfetto::from_reader(
        Path::new("t.pftrace"),
        Box::new(std::io::Cursor::new(t)),
        1 << 12,
        Default::default(),
        0,
    );
    let mut d = r.decode_apart();
    let (mut s, mut n, mut batch) = (Interner::new(), 0, apart::Records::default());
    let (mut raws, mut most) = (0, 0);
    loop {
        let more = r.next_items(&mut batch, 50, true).unwrap();
        (raws, most) = (raws + batch.raw_count(), most.max(batch.raw_bytes()));
        d.decode(&mut s, &mut batch, |_, _| n += 1);
        if !more {
            break;
        }
    }
    // Only the small bundle went over undecoded.
    assert_eq!((raws, n), (1, 40_001));
    assert!(most < 100, "{most} bytes in one batch");
}

/// A first packet longer than the bytes sniffed (or cut inside them), or empty packets
/// first, still start a Perfetto trace.
#[test]
fn sniff_takes_a_long_first_packet_and_empty_ones() {
    let big: Vec<_> = (0..20_000).map(|k| ev(k, 1, exit(0, 0))).collect();
    let t = trace(&[bundle(0, big)]);
    assert!(sniff(&t[..4096]), "a first packet past the head");
    let mut padded = vec![0x0a, 0x00, 0x0a, 0x00];
    padded.extend(trace(&[bundle(0, vec![ev(1, 1, exit(0, 0))])]));
    assert!(sniff(&padded), "empty packets first");
    // A length that does not fit the packet, or a field no packet has, is not a trace.
    assert!(!sniff(b"\x0a\xff\x01\x0a\xff\x0fxxxx"));
    assert!(!sniff(b"\x0a\xff\x01\xf8\x3f\x01xx"));
}

/// What the reader leaves out is said: events without a time, typed events of kinds it
/// does not read, bundles without a usable CPU, userspace track events, kernel symbols
/// as ids with no name interned.
#[test]
fn what_is_left_out_is_counted_in_the_notes() {
    let mut no_time = ev(5, 1, exit(0, 0));
    no_time.timestamp = None;
    let unread = protos::FtraceEvent {
        event: None,
        ..ev(6, 1, exit(0, 0))
    };
    let timer = Ev::HrtimerExpireEntry(protos::HrtimerExpireEntryFtraceEvent {
        hrtimer: Some(0xffff_8000_1234_0000),
        now: Some(7),
        function: Some(3),
    });
    let mut nameless = bundle(0, vec![ev(8, 1, exit(0, 0))]);
    let Some(Data::FtraceEvents(b)) = &mut nameless.data else {
        unreachable!()
    };
    b.cpu = None;
    let track = packet(Data::TrackEvent(protos::TrackEvent::default()));
    let t = trace(&[
        bundle(
            0,
            vec![ev(4, 1, exit(0, 0)), no_time, unread, ev(7, 1, timer)],
        ),
        nameless,
        track,
    ]);
    let (events, _, r) = read(t, 1 << 16);
    assert_eq!(events.len(), 2);
    let notes = r.notes().join("\n");
    for want in [
        "1 ftrace events had no timestamp",
        "1 ftrace events of kinds whylate does not read",
        "1 ftrace bundles named no CPU, or a CPU number over 4096: their 1 events",
        "track_event 1",
        "1 kernel symbols were interned ids with no name",
    ] {
        assert!(notes.contains(want), "{want:?} not in:\n{notes}");
    }
}

/// Without system_info, the CPUs that ftrace_stats counts at the start are waited for: a
/// CPU's first bundle after the other's later ones comes in time order.
#[test]
fn ftrace_stats_count_the_cpus_when_system_info_is_missing() {
    let stats = packet(Data::FtraceStats(protos::FtraceStats {
        phase: Some(1),
        cpu_stats: (0..2)
            .map(|c| protos::FtraceCpuStats {
                cpu: Some(c),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }));
    let evs = |cpu: u32| {
        (0..50)
            .map(|k| ev(1_000 + k * 10, 100 + cpu, exit(0, 1)))
            .collect()
    };
    let (events, _, r) = read(
        trace(&[stats, bundle(0, evs(0)), bundle(1, evs(1))]),
        1 << 16,
    );
    assert_eq!(events.len(), 100);
    assert!(events.windows(2).all(|w| w[0].ts <= w[1].ts));
    assert_eq!(r.order().unsorted, 0);
}

/// One damaged timestamp an hour ahead, inside a CPU's bundle, does not make the other
/// CPU's events late: a CPU counts as read up to its bundle's last event.
#[test]
fn a_timestamp_far_ahead_inside_a_bundle_holds_no_cpu_back() {
    let sysinfo = packet(Data::SystemInfo(protos::SystemInfo {
        num_cpus: Some(2),
        ..Default::default()
    }));
    let evs = |cpu: u32| -> Vec<_> {
        (0..50)
            .map(|k| ev(1_000 + k * 10, 100 + cpu, exit(0, 1)))
            .collect()
    };
    let mut damaged = evs(0);
    damaged[20].timestamp = Some(3_600_000_000_000);
    let later = (0..50)
        .map(|k| ev(5_000 + k * 10, 100, exit(0, 1)))
        .collect();
    let t = trace(&[
        sysinfo,
        bundle(0, damaged),
        bundle(1, evs(1)),
        bundle(0, later),
    ]);
    let (events, _, r) = read(t, 1 << 16);
    assert_eq!(events.len(), 150);
    assert_eq!(r.order().unsorted, 0, "{:?}", r.order());
}

/// One CPU's events for the layout matrix: switches among three tasks, a waking of the
/// next before each switch, a system call exit of the task on the CPU between them.
/// CPU0's times are even and CPU1's odd, so the time order across CPUs is one order.
fn layout_events(cpu: u32) -> Vec<(u64, i32, Ev)> {
    let mut out = Vec::new();
    let (mut t, mut curr) = (1_000_000_000 + u64::from(cpu), 0);
    // The task on the CPU before the first switch, for the compact lists' first waker.
    out.push((t, 0, exit(0, 0)));
    for k in 0..600u64 {
        let next = 100 + cpu as i32 * 10 + (k % 3) as i32;
        // 6 s in all: longer than a CPU not read yet holds the others back.
        t += 2 * (2_000_000 + (k * 104_729) % 6_000_000);
        let wake = Ev::SchedWaking(protos::SchedWakingFtraceEvent {
            comm: Some(format!("t{next}").into_bytes()),
            pid: Some(next),
            prio: Some(120),
            success: Some(1),
            target_cpu: Some(cpu as i32),
        });
        out.push((t, curr, wake));
        out.push((t + 2_000, curr, exit(k as i64 % 5, 0)));
        let sw = Ev::SchedSwitch(protos::SchedSwitchFtraceEvent {
            prev_comm: Some(format!("t{curr}").into_bytes()),
            prev_pid: Some(curr),
            prev_prio: Some(120),
            prev_state: Some(1),
            next_comm: Some(format!("t{next}").into_bytes()),
            next_pid: Some(next),
            next_prio: Some(120),
        });
        out.push((t + 4_000, curr, sw));
        curr = next;
    }
    out
}

/// `evs` (one CPU's, in time order) as one bundle: typed, or with switches and wakings
/// in compact_sched's lists.
fn layout_bundle(cpu: u32, evs: &[(u64, i32, Ev)], compact: bool) -> protos::TracePacket {
    let mut typed = Vec::new();
    let mut c = protos::ftrace_event_bundle::CompactSched::default();
    let (mut sw_last, mut wk_last) = (0, 0);
    let intern = |c: &mut protos::ftrace_event_bundle::CompactSched, name: &[u8]| match c
        .intern_table
        .iter()
        .position(|n| n == name)
    {
        Some(i) => i as u32,
        None => {
            c.intern_table.push(name.to_vec());
            c.intern_table.len() as u32 - 1
        }
    };
    for (ts, pid, e) in evs {
        match e {
            Ev::SchedSwitch(s) if compact => {
                c.switch_timestamp.push(ts - sw_last);
                sw_last = *ts;
                c.switch_prev_state.push(s.prev_state.unwrap());
                c.switch_next_pid.push(s.next_pid.unwrap());
                c.switch_next_prio.push(s.next_prio.unwrap());
                let i = intern(&mut c, s.next_comm.as_deref().unwrap());
                c.switch_next_comm_index.push(i);
            }
            Ev::SchedWaking(w) if compact => {
                c.waking_timestamp.push(ts - wk_last);
                wk_last = *ts;
                c.waking_pid.push(w.pid.unwrap());
                c.waking_target_cpu.push(w.target_cpu.unwrap());
                c.waking_prio.push(w.prio.unwrap());
                let i = intern(&mut c, w.comm.as_deref().unwrap());
                c.waking_comm_index.push(i);
                c.waking_common_flags.push(1);
            }
            e => typed.push(ev(*ts, *pid as u32, e.clone())),
        }
    }
    let mut b = bundle(cpu, typed);
    if compact {
        let Some(Data::FtraceEvents(fb)) = &mut b.data else {
            unreachable!()
        };
        fb.compact_sched = Some(c);
    }
    b
}

/// How the bundles of a layout test are laid out in the file.
#[derive(Clone, Copy, Debug)]
enum Layout {
    /// One bundle per CPU holding all its events.
    OnePerCpu,
    /// 100 ms bundles, all of CPU0's, then all of CPU1's.
    CpuByCpu,
    /// 100 ms bundles, each period's CPU1 bundle before CPU0's (traced's drain order
    /// varies), without system_info: nothing says CPU1 exists before its first bundle.
    Interleaved,
}

/// The layout matrix of one trace: typed or compact sched events × bundles one per CPU,
/// CPU by CPU, or in interleaved periods × plain or gzip × each bundle held whole or read
/// as a large one, window by window. Every file gives the same events, in time order, with
/// the tasks the compact lists leave out filled in.
#[test]
fn every_layout_of_bundles_gives_every_event_in_time_order() {
    use std::io::Write as _;
    let cpus = [layout_events(0), layout_events(1)];
    let mut want: Vec<(u64, u32, i32, String)> = Vec::new();
    for (cpu, evs) in cpus.iter().enumerate() {
        for (ts, pid, e) in evs {
            let what = match e {
                Ev::SchedSwitch(s) => {
                    format!("switch {}->{}", s.prev_pid.unwrap(), s.next_pid.unwrap())
                }
                Ev::SchedWaking(w) => format!("waking {}", w.pid.unwrap()),
                _ => "exit".into(),
            };
            want.push((*ts, cpu as u32, *pid, what));
        }
    }
    want.sort();
    let dir = tempfile::tempdir().unwrap();
    for compact in [false, true] {
        for layout in [Layout::OnePerCpu, Layout::CpuByCpu, Layout::Interleaved] {
            let period = |cpu: usize| -> Vec<protos::TracePacket> {
                let evs = &cpus[cpu];
                match layout {
                    Layout::OnePerCpu => vec![layout_bundle(cpu as u32, evs, compact)],
                    _ => evs
                        .chunk_by(|a, b| a.0 / 100_000_000 == b.0 / 100_000_000)
                        .map(|p| layout_bundle(cpu as u32, p, compact))
                        .collect(),
                }
            };
            let (b0, b1) = (period(0), period(1));
            let mut packets = Vec::new();
            if !matches!(layout, Layout::Interleaved) {
                packets.push(packet(Data::SystemInfo(protos::SystemInfo {
                    num_cpus: Some(2),
                    ..Default::default()
                })));
            }
            match layout {
                Layout::Interleaved => {
                    let mut b0 = b0.into_iter();
                    for b in b1 {
                        packets.push(b);
                        packets.extend(b0.next());
                    }
                    packets.extend(b0);
                }
                _ => {
                    packets.extend(b0);
                    packets.extend(b1);
                }
            }
            let bytes = trace(&packets);
            for (gz, large) in [(false, false), (true, false), (false, true), (true, true)] {
                let case = format!("compact {compact}, {layout:?}, gzip {gz}, large {large}");
                // Every bundle read as a large one, 7 values of each list per window.
                super::large::TEST_LIMITS.set(large.then_some((1, 7)));
                let path = dir
                    .path()
                    .join(format!("t-{compact}-{layout:?}-{gz}-{large}.pftrace"));
                let data = if gz {
                    let mut e = flate2::write::GzEncoder::new(Vec::new(), Default::default());
                    e.write_all(&bytes).unwrap();
                    e.finish().unwrap()
                } else {
                    bytes.clone()
                };
                std::fs::write(&path, data).unwrap();
                let mut input = crate::read::open(&path, &Default::default()).unwrap();
                let mut s = Interner::new();
                let mut got = Vec::new();
                while let Some(e) = input.next_ref(&mut s).unwrap() {
                    let what = match e.kind {
                        Kind::SchedSwitch {
                            prev_pid, next_pid, ..
                        } => {
                            format!("switch {prev_pid}->{next_pid}")
                        }
                        Kind::SchedWaking { pid, .. } => format!("waking {pid}"),
                        _ => "exit".into(),
                    };
                    got.push((e.ts, e.cpu, e.tid, what));
                }
                let first_bad = got.iter().zip(&want).position(|(g, w)| g != w);
                assert_eq!(
                    got.len(),
                    want.len(),
                    "{case}: first difference at {first_bad:?}"
                );
                assert_eq!(first_bad, None, "{case}");
                let p = input.reader::<Perfetto>().unwrap();
                assert_eq!(p.order().unsorted, 0, "{case}");
                // Read window by window: 7 values of each of 3 lists at most in each.
                let windows = p.info().packets as usize;
                assert!(!large || windows >= want.len() / 21, "{case}: {windows}");
                super::large::TEST_LIMITS.set(None);
                let moved = index::Index::scan(&bytes[..]).unwrap().moved();
                assert_eq!(moved, !matches!(layout, Layout::OnePerCpu), "{case}");
                // The file order read as a stream, through the reorder window, is what
                // the index is for: CPU by CPU it leaves most of a CPU out.
                if matches!(layout, Layout::CpuByCpu) && !gz {
                    let (streamed, _, r) = read(bytes.clone(), CHUNK);
                    assert!(streamed.len() == want.len() && r.order().unsorted > 0);
                }
            }
        }
    }
}

/// A bundle moved before the packet that interned its kernel symbols (one sequence for
/// every CPU, CPU1's earlier bundle after CPU0's later one, which interns the name)
/// still names its function; a clear of the interning at the file's first packet
/// clears nothing the index collected.
#[test]
fn a_bundle_moved_before_its_symbols_still_names_them() {
    use protos::trace_packet::OptionalTrustedPacketSequenceId as Seq;
    let timer = |ts, f| {
        ev(
            ts,
            0,
            Ev::HrtimerExpireEntry(protos::HrtimerExpireEntryFtraceEvent {
                hrtimer: Some(1),
                now: Some(ts as i64),
                function: Some(f),
            }),
        )
    };
    let mut late = bundle(0, vec![timer(5_000_000_000, 7)]);
    late.interned_data = Some(protos::InternedData {
        kernel_symbols: vec![protos::InternedString {
            iid: Some(7),
            str: Some(b"tick_nohz_handler".to_vec()),
        }],
        ..Default::default()
    });
    late.incremental_state_cleared = Some(true);
    let mut early = bundle(1, vec![timer(1_000_000_000, 7)]);
    for p in [&mut late, &mut early] {
        p.optional_trusted_packet_sequence_id = Some(Seq::TrustedPacketSequenceId(3));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.pftrace");
    std::fs::write(&path, trace(&[late, early])).unwrap();
    let mut input = crate::read::open(&path, &Default::default()).unwrap();
    let mut s = Interner::new();
    let mut got = Vec::new();
    while let Some(e) = input.next_ref(&mut s).unwrap() {
        if let Kind::HrtimerExpireEntry { function, .. } = e.kind {
            got.push((e.ts, e.cpu, s.get(function).to_string()));
        }
    }
    assert_eq!(
        got,
        [
            (1_000_000_000, 1, "tick_nohz_handler".to_string()),
            (5_000_000_000, 0, "tick_nohz_handler".to_string()),
        ]
    );
}

/// Damage said, not silently placed: a typed event at u64::MAX (it would stretch the span
/// to 18 billion seconds) is left out and counted; a compact switch naming a comm past its
/// bundle's table is counted in the notes.
#[test]
fn far_times_and_bad_comm_indexes_are_said() {
    let compact = protos::ftrace_event_bundle::CompactSched {
        intern_table: vec![b"a".to_vec()],
        switch_timestamp: vec![200],
        switch_prev_state: vec![1],
        switch_next_pid: vec![7],
        switch_next_prio: vec![120],
        switch_next_comm_index: vec![5],
        ..Default::default()
    };
    let b = protos::FtraceEventBundle {
        cpu: Some(0),
        event: vec![ev(100, 5, exit(0, 1)), ev(u64::MAX, 5, exit(0, 2))],
        compact_sched: Some(compact),
        ..Default::default()
    };
    let (evs, _, r) = read(trace(&[packet(Data::FtraceEvents(b))]), CHUNK);
    let ts: Vec<u64> = evs.iter().map(|e| e.ts).collect();
    assert_eq!(ts, [100, 200]);
    let notes = r.notes().join("\n");
    assert!(
        notes.contains("1 ftrace events had a timestamp past 2^62 ns"),
        "{notes}"
    );
    assert!(
        notes.contains("1 compact_sched events named a task by an index past"),
        "{notes}"
    );
}

/// `bytes` as a file read through `crate::read::open`, each bundle whole or (`large`) as
/// a large one in windows of 3 values of each list: the events (time, CPU, task, kind)
/// and the notes.
fn read_file(bytes: &[u8], large: bool) -> (Vec<String>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.pftrace");
    std::fs::write(&path, bytes).unwrap();
    super::large::TEST_LIMITS.set(large.then_some((1, 3)));
    let mut input = crate::read::open(&path, &Default::default()).unwrap();
    super::large::TEST_LIMITS.set(None);
    let mut s = Interner::new();
    let mut got = Vec::new();
    while let Some(e) = input.next_ref(&mut s).unwrap() {
        got.push(format!("{} {} {} {:?}", e.ts, e.cpu, e.tid, e.kind));
    }
    let notes = input.reader::<Perfetto>().unwrap().notes().join("\n");
    (got, notes.replace(&path.display().to_string(), "t"))
}

/// A large bundle gives what the whole one gives where lists are short (times past the
/// others' ends, flags for only the first wakings) and times tie across a window's edge
/// (ten switches and a typed event of the task switched in at one time); where a packed
/// list ends inside a value, the events before the damage are read and the damage said.
#[test]
fn a_large_bundle_reads_as_the_whole_one_and_says_where_it_is_damaged() {
    let n = 30;
    let mut c = protos::ftrace_event_bundle::CompactSched {
        intern_table: vec![b"a".to_vec(), b"b".to_vec()],
        ..Default::default()
    };
    for k in 0..n {
        // The first ten at one time, then 1 µs apart.
        c.switch_timestamp.push(if k == 0 {
            5_000
        } else {
            u64::from(k >= 10) * 1_000
        });
        c.switch_prev_state.push(1);
        c.switch_next_pid.push(100 + k as i32 % 2);
        c.switch_next_prio.push(120);
        c.switch_next_comm_index.push(k % 2);
        c.waking_timestamp.push(if k == 0 { 4_500 } else { 1_000 });
        c.waking_pid.push(100 + k as i32 % 2);
        c.waking_target_cpu.push(0);
        c.waking_prio.push(120);
        c.waking_comm_index.push(k % 2);
    }
    // Five switch times past the other lists, flags for the first 12 wakings only.
    c.switch_next_pid.truncate(n as usize - 5);
    c.waking_common_flags = vec![1; 12];
    let typed = vec![ev(5_000, 101, exit(0, 1)), ev(9_000, 100, exit(0, 2))];
    let b = protos::FtraceEventBundle {
        cpu: Some(0),
        event: typed,
        compact_sched: Some(c),
        ..Default::default()
    };
    let sysinfo = packet(Data::SystemInfo(protos::SystemInfo {
        num_cpus: Some(1),
        ..Default::default()
    }));
    let bytes = trace(&[sysinfo, packet(Data::FtraceEvents(b))]);
    let (whole, whole_notes) = read_file(&bytes, false);
    let (large, large_notes) = read_file(&bytes, true);
    assert_eq!(whole.len(), 2 + 25 + 30);
    assert_eq!(large, whole);
    assert_eq!(large_notes, whole_notes);
    assert!(whole_notes.contains("5 compact_sched"), "{whole_notes}");

    // The waking pids' packed list (field 8) cut inside its last value: its last byte
    // says more follows. Whole, the packet does not decode; large, 29 wakings are read.
    let at = (bytes.windows(2))
        .position(|w| w == [0x42, 30])
        .expect("waking_pid's key and length");
    let mut cut = bytes.clone();
    cut[at + 2 + 29] |= 0x80;
    let (whole, notes) = read_file(&cut, false);
    assert!(
        whole.is_empty() && notes.contains("do not decode"),
        "{notes} {whole:?}"
    );
    let (large, notes) = read_file(&cut, true);
    let wakings = large.iter().filter(|e| e.contains("SchedWaking")).count();
    assert_eq!(wakings, 29, "{large:#?}");
    assert!(
        notes.contains("1 large bundles hold damage")
            && notes.contains("1 of its lists ends at a malformed value, 0 typed events"),
        "{notes}"
    );
}

/// A file cut inside a large bundle reads as a file cut inside any packet: the packets
/// before it whole, the cut said, whether the bundle would be held whole or read as a
/// large one.
#[test]
fn a_file_cut_inside_a_large_bundle_reads_as_any_cut_packet() {
    let sysinfo = packet(Data::SystemInfo(protos::SystemInfo {
        num_cpus: Some(1),
        ..Default::default()
    }));
    let first = bundle(
        0,
        (0..5)
            .map(|k| ev(1_000 + k, 7, exit(0, k as i64)))
            .collect(),
    );
    let second = bundle(
        0,
        (0..50)
            .map(|k| ev(9_000 + k, 7, exit(0, k as i64)))
            .collect(),
    );
    let mut bytes = trace(&[sysinfo, first, second]);
    bytes.truncate(bytes.len() - 40);
    let (whole, whole_notes) = read_file(&bytes, false);
    let (large, large_notes) = read_file(&bytes, true);
    assert_eq!(whole.len(), 5, "{whole:#?}");
    assert_eq!(large, whole);
    assert_eq!(large_notes, whole_notes);
}
