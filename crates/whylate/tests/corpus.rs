#![allow(clippy::print_stderr)]
//! Every public trace in ../shared/corpus parses with no line left not understood, and the
//! oracles their own projects test (../shared/corpus/INDEX.md) hold.

mod common;
use common::{corpus, count, dat_raw_lines, read_all, report_r_lines};
use std::collections::{BTreeMap, BTreeSet};
use whylate::event::{Kind, TaskState};
use whylate::read::Format;

#[test]
fn every_corpus_file_parses_completely() {
    let Some(dir) = corpus() else { return };
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        // INDEX.md is prose.
        if !p.is_file() || name == "INDEX.md" {
            continue;
        }
        let r = read_all(&p);
        assert_eq!(
            r.diag.unparsed, 0,
            "{name}: lines not understood: {:?}",
            r.diag.unparsed_samples
        );
        assert!(!r.events.is_empty(), "{name}: no events");
        // Only the brendangregg file is prose around traces; systrace HTML has boilerplate.
        if r.diag.skipped_lines > 0 {
            assert!(
                name.contains("brendangregg")
                    || name.ends_with(".html")
                    || name.contains("ftrace.rst"),
                "{name}: skipped {} lines",
                r.diag.skipped_lines
            );
        }
        n += 1;
    }
    for entry in std::fs::read_dir(dir.join("derived")).unwrap() {
        let r = read_all(&entry.unwrap().path());
        assert_eq!(r.diag.unparsed, 0, "{:?}", r.diag.unparsed_samples);
        n += 1;
    }
    assert!(n >= 30, "only {n} files");
}

#[test]
fn lisa_trace_txt() {
    let Some(dir) = corpus() else { return };
    let r = read_all(&dir.join("ARM-software__lisa__trace.txt"));
    assert_eq!(r.format, Format::TraceCmdReport);
    assert_eq!(r.diag.header.cpus, Some(6));
    assert_eq!(r.diag.header.version, Some(6));
    assert_eq!(count(&r, "sched_switch"), 1856);
    assert_eq!(count(&r, "sched_wakeup"), 1068);
    assert_eq!(count(&r, "print"), 14);
    assert_eq!(count(&r, "sched_overutilized"), 3);
    let span = r.events.last().unwrap().ts - r.events[0].ts;
    assert_eq!(span, 6_676_497_000, "time_range == 6.676497 s");
    // Task name <-> pid maps as LISA's tests expect them: LISA takes names from the
    // sched_switch and sched_wakeup fields (a forked child's line prefix still shows the
    // parent's name until exec, so the prefix is not used), and a pid is known by its latest
    // name (1703 runs as `sh`, then execs `shutils`).
    let mut last: BTreeMap<i32, String> = BTreeMap::new();
    let mut names_of: BTreeMap<i32, BTreeSet<String>> = BTreeMap::new();
    let mut add = |pid: i32, name: &str| {
        last.insert(pid, name.to_string());
        names_of.entry(pid).or_default().insert(name.to_string());
    };
    for e in &r.events {
        match e.kind {
            Kind::SchedSwitch {
                prev_comm,
                prev_pid,
                next_comm,
                next_pid,
                ..
            } => {
                add(prev_pid, r.strings.get(prev_comm));
                add(next_pid, r.strings.get(next_comm));
            }
            Kind::SchedWakeup { comm, pid, .. } => add(pid, r.strings.get(comm)),
            _ => {}
        }
    }
    let mut pids_of: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
    for (pid, name) in &last {
        pids_of.entry(name.clone()).or_default().insert(*pid);
    }
    let v = |s: &str| pids_of[s].iter().copied().collect::<Vec<_>>();
    assert_eq!(v("sh"), vec![1642, 1702, 1717, 1718]);
    assert_eq!(v("watchdog/0"), vec![12]);
    assert_eq!(v("jbd2/sda2-8"), vec![1383]);
    assert!(names_of[&15].contains("watchdog/1"));
    assert!(names_of[&1639].contains("sshd"));
    assert!(names_of[&1].contains("init"));
    assert!(names_of[&9].contains("rcu_sched"));
    assert!(v("sshd").len() > 1, "sshd is ambiguous in LISA's test");
    // Numeric prev_state of `trace-cmd report -R`.
    assert!(r.events.iter().any(|e| matches!(
        e.kind,
        Kind::SchedSwitch {
            prev_state: TaskState::Numeric(4096),
            ..
        }
    )));
}

#[test]
fn trappy_systrace_oracles() {
    let Some(dir) = corpus() else { return };
    let r = read_all(&dir.join("ARM-software__trappy__trace_surfaceflinger.html"));
    assert_eq!(r.format, Format::Systrace);
    assert_eq!(r.events.len(), 2506, "trappy: lines == 2506");
    let sw: Vec<usize> = r
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e.kind, Kind::SchedSwitch { .. }))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(sw.len(), 715);
    assert_eq!((sw[0], sw[1], *sw.last().unwrap()), (0, 6, 2505));
    let marks: Vec<_> = r
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            Kind::Print { name, msg } if r.strings.get(*name) == "tracing_mark_write" => {
                Some((e.tid, r.strings.get(e.comm).to_string(), msg.to_string()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(marks.len(), 160);
    assert_eq!(
        marks[2],
        (
            7591,
            "RenderThread".into(),
            "B|7459|notifyFramePending".into()
        )
    );
    let m = &marks[marks.len() - 2];
    assert_eq!((m.0, m.1.as_str()), (612, "HwBinder:594_1"));
    assert_eq!(m.2, "C|594|HW_VSYNC_0|0");
    let first_e = marks.iter().find(|m| m.2.starts_with('E')).unwrap();
    assert_eq!((first_e.0, first_e.1.as_str()), (7591, "RenderThread"));

    let r = read_all(&dir.join("ARM-software__trappy__trace_systrace.html"));
    assert_eq!(count(&r, "sched_switch"), 4);
    assert_eq!(count(&r, "sched_wakeup"), 4);
    let sync = r
        .events
        .iter()
        .filter(|e| matches!(&e.kind, Kind::Print { msg, .. } if msg.starts_with("trace_event_clock_sync")))
        .count();
    assert_eq!(sync, 1);
    // trappy counts the CPUs of its sched events; one marker line sits on a 4th CPU.
    let cpus: BTreeSet<u32> = r
        .events
        .iter()
        .filter(|e| matches!(e.kind, Kind::SchedSwitch { .. } | Kind::SchedWakeup { .. }))
        .map(|e| e.cpu)
        .collect();
    assert_eq!(cpus.len(), 3, "_cpus == 3");

    let r = read_all(&dir.join("ARM-software__trappy__trace_idle_unsorted.txt"));
    assert_eq!(count(&r, "cpu_idle"), 8);
    assert!(r.order.reordered > 0, "this file is out of order");
    assert_eq!(r.order.unsorted, 0);
    assert!(r.events.windows(2).all(|w| w[0].ts <= w[1].ts));
}

#[test]
fn perfetto_oracles() {
    let Some(dir) = corpus() else { return };
    let r = read_all(&dir.join("google__perfetto__sched_blocked_systrace.systrace"));
    let d: Vec<(u64, i32)> = r
        .events
        .iter()
        .filter_map(|e| match e.kind {
            Kind::SchedSwitch {
                prev_pid,
                prev_state,
                ..
            } if prev_state.to_string() == "D" => Some((e.ts, prev_pid)),
            _ => None,
        })
        .collect();
    assert!(d.contains(&(20_258_854_000, 269)), "{d:?}");
    assert!(d.contains(&(21_123_838_000, 2172)), "{d:?}");
    let reasons: Vec<String> = r
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            Kind::Other { name, fields } if r.strings.get(*name) == "sched_blocked_reason" => {
                whylate::event::fields(fields)
                    .find(|(k, _)| *k == "iowait")
                    .map(|(_, v)| v.to_string())
            }
            _ => None,
        })
        .collect();
    assert_eq!(reasons, vec!["0", "1"]);

    // `<...>` must not overwrite the name learnt from sched_switch.
    let path = dir.join("google__perfetto__unknown_thread_name.systrace");
    let s = whylate::stats::stats(
        whylate::read::Opened::files(&[path], &Default::default()).unwrap(),
        &Default::default(),
        10,
    )
    .unwrap();
    let t = s.top_tasks.iter().find(|t| t.tid == 19999).unwrap();
    assert_eq!(t.comm, "real_name");
}

#[test]
fn catapult_tgid_columns() {
    let Some(dir) = corpus() else { return };
    let plain = read_all(&dir.join("catapult-project__catapult__atrace_data"));
    let missing = read_all(&dir.join("catapult-project__catapult__atrace_missing_tgids"));
    let fixed = read_all(&dir.join("catapult-project__catapult__atrace_fixed_tgids.EXPECTED"));
    assert_eq!(count(&plain, "sched_switch"), 72);
    assert_eq!(count(&plain, "sched_wakeup"), 44);
    assert_eq!(plain.events.len(), missing.events.len());
    assert_eq!(plain.events.len(), fixed.events.len());
    for ((a, b), c) in plain.events.iter().zip(&missing.events).zip(&fixed.events) {
        assert_eq!((a.ts, a.cpu, a.tid), (b.ts, b.cpu, b.tid));
        assert_eq!((a.ts, a.cpu, a.tid), (c.ts, c.cpu, c.tid));
        assert_eq!(b.tgid, -1, "(-----) means no tgid");
    }
    // `ksoftirqd/0-3 ( 3)`: the filled-in column without padding.
    let filled = fixed.events.iter().filter(|e| e.tgid >= 0).count();
    assert_eq!(filled, 116 - 89, "lines whose TGID the fixer knew");
    assert!(fixed
        .events
        .iter()
        .any(|e| fixed.strings.get(e.comm) == "ksoftirqd/0" && e.tgid == 3));
}

#[test]
fn latency_dump_headers() {
    let Some(dir) = corpus() else { return };
    let want = [
        ("irqsoff-1", 259, Some(2)),
        ("irqsoff-2", 16, None),
        ("irqsoff-3", 71, Some(3)),
        ("irqsoff-4", 3751, Some(0)),
        ("preemptoff-1", 46, None),
        ("preemptoff-2", 83, None),
        ("preemptirqsoff-1", 100, None),
        ("preemptirqsoff-2", 161, None),
        ("wakeup-1", 15, None),
        ("wakeup_rt-1", 5, Some(3)),
        ("wakeup_rt-2", 29, None),
        ("wakeup_rt-3", 6, Some(2)),
    ];
    for (f, us, cpu) in want {
        let p = dir.join(format!("pengdonglin137__tmp__ftrace.rst__{f}.txt"));
        let r = read_all(&p);
        let h = r
            .diag
            .header
            .latency
            .as_ref()
            .unwrap_or_else(|| panic!("{f}"));
        assert_eq!(h.latency_us, us, "{f}");
        if let Some(c) = cpu {
            assert_eq!(h.cpu, Some(c), "{f}");
        }
        assert_eq!(r.diag.unparsed, 0, "{f}");
    }
    let r = read_all(&dir.join("pengdonglin137__tmp__ftrace.rst__irqsoff-3.txt"));
    let h = r.diag.header.latency.unwrap();
    assert_eq!((h.entries, h.entries_total), (168, 168));
    let r = read_all(&dir.join("pengdonglin137__tmp__ftrace.rst__irqsoff-1.txt"));
    let h = r.diag.header.latency.unwrap();
    assert_eq!(h.started_at.as_deref(), Some("__lock_task_sighand"));
    assert_eq!(h.ended_at.as_deref(), Some("_raw_spin_unlock_irqrestore"));
    // The irqs-on entry sits at the stated latency.
    assert!(r
        .events
        .iter()
        .any(|e| e.ts == 259_000 && matches!(e.kind, Kind::Function { .. })));
}

#[test]
fn function_graph_entries_match_the_kernels_count() {
    let Some(dir) = corpus() else { return };
    // `# latency: 0 us, #3973/3973`: the kernel counts one entry per call entry and one per
    // return; a leaf line `f();` merges both, so it yields two events.
    let r = read_all(&dir.join("PacktPublishing__Linux-Kernel-Debugging__ping_ftrace_report.txt"));
    assert_eq!(r.events.len(), 3973);
    assert_eq!(r.diag.header.latency.as_ref().unwrap().entries, 3973);
    let exits_with_dur = r
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                Kind::FuncExit {
                    duration_ns: Some(_),
                    ..
                }
            )
        })
        .count();
    assert!(exits_with_dur > 1000);
    let r = read_all(&dir.join("brendangregg__perf-tools__funcgraph_example.txt"));
    assert!(r.diag.skipped_lines > 50, "prose is skipped and counted");
    assert_eq!(r.diag.unparsed, 0);
}

#[test]
fn derived_reports_of_the_dat_agree() {
    let Some(dir) = corpus() else { return };
    let d = dir.join("derived");
    let a = read_all(&d.join("ARM-software__lisa__sched_load_trace.dat.trace-cmd-report.txt"));
    let b = read_all(&d.join("ARM-software__lisa__sched_load_trace.dat.trace-cmd-report-R.txt"));
    for (name, n) in [
        ("sched_load_cfs_rq", 2437),
        ("cpu_idle", 474),
        ("sched_switch", 399),
        ("sched_load_se", 364),
        ("sched_migrate_task", 28),
        ("cpu_frequency", 16),
        ("print", 6),
    ] {
        assert_eq!(count(&a, name), n, "{name}");
        assert_eq!(count(&b, name), n, "{name} (-R)");
    }
    assert_eq!(a.events.len(), b.events.len());
    for (x, y) in a.events.iter().zip(&b.events) {
        assert_eq!((x.ts, x.cpu, x.tid), (y.ts, y.cpu, y.tid));
        if let (
            Kind::SchedSwitch {
                prev_pid: p1,
                next_pid: n1,
                ..
            },
            Kind::SchedSwitch {
                prev_pid: p2,
                next_pid: n2,
                ..
            },
        ) = (&x.kind, &y.kind)
        {
            assert_eq!((p1, n1), (p2, n2));
        }
    }
}

#[test]
fn the_dat_reads_exactly_as_trace_cmd_reports_it() {
    let Some(dir) = corpus() else { return };
    let dat = dir.join("ARM-software__lisa__sched_load_trace.dat");
    let report = std::fs::read_to_string(
        dir.join("derived/ARM-software__lisa__sched_load_trace.dat.trace-cmd-report-R.txt"),
    )
    .unwrap();
    let want = report_r_lines(&report);
    let got = dat_raw_lines(&dat);
    assert_eq!(want.len(), 3724);
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "record {i}");
    }
    // The typed path agrees with the text reader of trace-cmd's normal report.
    let a = read_all(&dat);
    assert_eq!(a.format, Format::TraceDat);
    let b = read_all(
        &dir.join("derived/ARM-software__lisa__sched_load_trace.dat.trace-cmd-report.txt"),
    );
    assert_eq!(a.events.len(), b.events.len());
    assert_eq!(a.diag.unparsed, 0);
    for (x, y) in a.events.iter().zip(&b.events) {
        assert_eq!(
            ((x.ts + 500) / 1000 * 1000, x.cpu, x.tid),
            (y.ts, y.cpu, y.tid)
        );
        assert_eq!(x.name().render(&a.strings), y.name().render(&b.strings));
        if let (
            Kind::SchedSwitch {
                prev_pid: p1,
                next_pid: n1,
                prev_state: s1,
                next_comm: c1,
                ..
            },
            Kind::SchedSwitch {
                prev_pid: p2,
                next_pid: n2,
                prev_state: s2,
                next_comm: c2,
                ..
            },
        ) = (&x.kind, &y.kind)
        {
            assert_eq!((p1, n1), (p2, n2));
            assert_eq!(s1.is_runnable(), s2.is_runnable(), "{s1} vs {s2}");
            assert_eq!(a.strings.get(*c1), b.strings.get(*c2));
        }
    }
}

#[test]
fn v7_files_read_like_the_v6_they_were_converted_from() {
    let Some(dir) = corpus() else { return };
    let have = std::process::Command::new("trace-cmd")
        .arg("--version")
        .output()
        .is_ok();
    if !have {
        common::skip_or_fail("trace-cmd not installed; cannot make v7 files");
        return;
    }
    // trace-cmd mounts tracefs to look around: leave the mount as it was found.
    struct Unmount(bool);
    impl Drop for Unmount {
        fn drop(&mut self) {
            if !self.0 && tracefs_mounted() {
                let _ = std::process::Command::new("umount")
                    .arg("/sys/kernel/tracing")
                    .status();
            }
        }
    }
    fn tracefs_mounted() -> bool {
        std::fs::read_to_string("/proc/mounts")
            .unwrap_or_default()
            .lines()
            .any(|l| l.split_whitespace().nth(2) == Some("tracefs"))
    }
    let _restore = Unmount(tracefs_mounted());
    let v6 = dir.join("ARM-software__lisa__sched_load_trace.dat");
    let want = dat_raw_lines(&v6);
    let tmp_dir = tempfile::tempdir().unwrap();
    let tmp = tmp_dir.path();
    for comp in ["zstd", "none"] {
        let out = tmp.join(format!("{comp}.dat"));
        let st = std::process::Command::new("trace-cmd")
            .args([
                "convert",
                "--file-version",
                "7",
                "--compression",
                comp,
                "-i",
            ])
            .arg(&v6)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            st.status.success(),
            "{}",
            String::from_utf8_lossy(&st.stderr)
        );
        assert_eq!(dat_raw_lines(&out), want, "v7 {comp}");
        let r = read_all(&out);
        assert_eq!(r.events.len(), 3724);
        assert_eq!(r.diag.header.version, Some(7));
    }
    // zlib: trace-cmd's uncompressed v7 recompressed by the system zlib in its layout.
    let zlib = tmp.join("zlib.dat");
    let (bytes, chunk) = v7_plain_to_zlib(&std::fs::read(tmp.join("none.dat")).unwrap());
    std::fs::write(&zlib, &bytes).unwrap();
    assert_eq!(dat_raw_lines(&zlib), want, "v7 zlib");
    let r = read_all(&zlib);
    assert_eq!(r.events.len(), 3724);
    let src = whylate::read::open(&zlib, &Default::default()).unwrap();
    let info = src
        .reader::<whylate::read::tracedat::TraceDat>()
        .unwrap()
        .info();
    assert_eq!(info.compression.as_deref(), Some("zlib"));
    // A damaged zlib chunk is an error that names the offset, not a panic or silence.
    let mut bad = bytes.clone();
    for b in &mut bad[chunk + 100..chunk + 164] {
        *b ^= 0x5a;
    }
    let broken = tmp.join("zlib-broken.dat");
    std::fs::write(&broken, &bad).unwrap();
    let err = match whylate::read::open(&broken, &Default::default()) {
        Err(e) => e.to_string(),
        Ok(mut s) => {
            let mut strings = whylate::event::Interner::new();
            loop {
                match whylate::read::EventSource::next_event(&mut s, &mut strings) {
                    Ok(Some(_)) => continue,
                    Ok(None) => panic!("a damaged chunk read without an error"),
                    Err(e) => break e.to_string(),
                }
            }
        }
    };
    assert!(err.contains("byte") || err.contains("offset"), "{err}");
}

/// Compresses each blob with the system zlib (Python's `zlib.compress`, what trace-cmd's
/// `compress2` call produces), so the reader's zlib path meets bytes neither flate2 nor
/// whylate wrote.
fn system_zlib(blobs: &[Vec<u8>]) -> Vec<Vec<u8>> {
    use std::io::Write;
    let script = "import sys, zlib, struct\n\
        i = sys.stdin.buffer.read(); o = sys.stdout.buffer; p = 0\n\
        while p < len(i):\n\
        \x20   n = struct.unpack_from('<I', i, p)[0]; c = zlib.compress(i[p + 4:p + 4 + n]); p += 4 + n\n\
        \x20   o.write(struct.pack('<I', len(c)) + c)\n";
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 (for the system zlib)");
    let mut input = vec![];
    for b in blobs {
        input.extend_from_slice(&(b.len() as u32).to_le_bytes());
        input.extend_from_slice(b);
    }
    let mut stdin = child.stdin.take().unwrap();
    let feed = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    feed.join().unwrap().unwrap();
    assert!(out.status.success());
    let mut res = vec![];
    let mut p = 0;
    while p < out.stdout.len() {
        let n = u32::from_le_bytes(out.stdout[p..p + 4].try_into().unwrap()) as usize;
        res.push(out.stdout[p + 4..p + 4 + n].to_vec());
        p += 4 + n;
    }
    assert_eq!(res.len(), blobs.len());
    res
}

/// An options section: its description string id and its (option id, data) entries.
type OptionsSection = (u32, Vec<(u16, Vec<u8>)>);

/// The trace-cmd here is built without zlib, so no tool at hand writes a zlib trace.dat.
/// This turns trace-cmd's own uncompressed v7 (`--compression none`, little-endian) into
/// the layout its compressing writer produces, as its zstd output shows: metadata sections
/// compressed (u32 compressed size, u32 size, data), options sections plain, each CPU's
/// data page-aligned as a u32 chunk count and chunks of ten pages, the CPU size counting
/// the chunks without the count, the flyrecord section spanning to the last CPU's end.
/// Also returns where the first CPU chunk's compressed data starts.
fn v7_plain_to_zlib(src: &[u8]) -> (Vec<u8>, usize) {
    let u16_at = |p: usize| u16::from_le_bytes(src[p..p + 2].try_into().unwrap());
    let u32_at = |p: usize| u32::from_le_bytes(src[p..p + 4].try_into().unwrap());
    let u64_at = |p: usize| u64::from_le_bytes(src[p..p + 8].try_into().unwrap()) as usize;
    let cstr_end = |p: usize| p + src[p..].iter().position(|&c| c == 0).unwrap() + 1;
    // Header: magic, "7\0", endian, long size, page size, compression name and version.
    let p = cstr_end(10);
    assert_eq!(src[p], 0, "little-endian input expected");
    let page = u32_at(p + 2) as usize;
    let comp = cstr_end(p + 6);
    assert_eq!(&src[p + 6..comp], b"none\0");
    let first = u64_at(cstr_end(comp));
    // Options sections in chain order, each as (string id, entries).
    let mut chain: Vec<OptionsSection> = vec![];
    let mut off = first;
    while off != 0 {
        assert_eq!(
            (u16_at(off), u16_at(off + 2)),
            (0, 0),
            "plain options section"
        );
        let (strid, end) = (u32_at(off + 4), off + 16 + u64_at(off + 8));
        let mut q = off + 16;
        let mut entries = vec![];
        off = 0;
        while q < end {
            let (id, n) = (u16_at(q), u32_at(q + 2) as usize);
            entries.push((id, src[q + 6..q + 6 + n].to_vec()));
            if id == 0 {
                off = u64_at(q + 6);
                break;
            }
            q += 6 + n;
        }
        chain.push((strid, entries));
    }
    // Every payload to compress: sections 16-21, then each CPU's ten-page chunks.
    let mut blobs = vec![];
    let mut cpu_chunks: Vec<(u32, usize)> = vec![]; // (cpu, chunk count)
    for (_, entries) in &chain {
        for (id, data) in entries {
            match id {
                16..=21 => {
                    let so = u64::from_le_bytes(data[..8].try_into().unwrap()) as usize;
                    assert_eq!((u16_at(so), u16_at(so + 2)), (*id, 0));
                    blobs.push(src[so + 16..so + 16 + u64_at(so + 8)].to_vec());
                }
                3 => {
                    let mut r = 8;
                    r = r + data[r..].iter().position(|&c| c == 0).unwrap() + 1;
                    r = r + data[r..].iter().position(|&c| c == 0).unwrap() + 1;
                    let n = u32::from_le_bytes(data[r + 4..r + 8].try_into().unwrap());
                    r += 8;
                    for _ in 0..n {
                        let cpu = u32::from_le_bytes(data[r..r + 4].try_into().unwrap());
                        let o = u64::from_le_bytes(data[r + 4..r + 12].try_into().unwrap());
                        let sz = u64::from_le_bytes(data[r + 12..r + 20].try_into().unwrap());
                        let cpu_data = &src[o as usize..(o + sz) as usize];
                        let chunks: Vec<Vec<u8>> =
                            cpu_data.chunks(10 * page).map(<[u8]>::to_vec).collect();
                        cpu_chunks.push((cpu, chunks.len()));
                        blobs.extend(chunks);
                        r += 20;
                    }
                }
                0 | 1 | 2 | 4..=15 => {}
                other => panic!("option {other} may hold offsets; not handled"),
            }
        }
    }
    let raw_sizes: Vec<usize> = blobs.iter().map(Vec::len).collect();
    let mut packed = system_zlib(&blobs).into_iter().zip(raw_sizes);
    // Write: header, sections, flyrecord, options sections last to first.
    let mut out = src[..p + 6].to_vec();
    out.extend_from_slice(b"zlib\0");
    out.extend_from_slice(b"1.2.13\0");
    let first_at = out.len();
    out.extend_from_slice(&[0; 8]);
    let mut first_chunk = 0;
    let mut patched: Vec<OptionsSection> = vec![];
    for (strid, entries) in &chain {
        let mut new_entries = vec![];
        for (id, data) in entries {
            let mut data = data.clone();
            match id {
                16..=21 => {
                    let so = u64::from_le_bytes(data[..8].try_into().unwrap()) as usize;
                    let (c, n) = packed.next().unwrap();
                    data[..8].copy_from_slice(&(out.len() as u64).to_le_bytes());
                    out.extend_from_slice(&id.to_le_bytes());
                    out.extend_from_slice(&1u16.to_le_bytes());
                    out.extend_from_slice(&u32_at(so + 4).to_le_bytes());
                    out.extend_from_slice(&(8 + c.len() as u64).to_le_bytes());
                    out.extend_from_slice(&(c.len() as u32).to_le_bytes());
                    out.extend_from_slice(&(n as u32).to_le_bytes());
                    out.extend_from_slice(&c);
                }
                3 => {
                    let fly = u64::from_le_bytes(data[..8].try_into().unwrap()) as usize;
                    let fly_at = out.len();
                    data[..8].copy_from_slice(&(fly_at as u64).to_le_bytes());
                    out.extend_from_slice(&3u16.to_le_bytes());
                    out.extend_from_slice(&1u16.to_le_bytes());
                    out.extend_from_slice(&u32_at(fly + 4).to_le_bytes());
                    out.extend_from_slice(&[0; 8]);
                    let mut r = 8;
                    r = r + data[r..].iter().position(|&c| c == 0).unwrap() + 1;
                    r = r + data[r..].iter().position(|&c| c == 0).unwrap() + 1;
                    r += 8;
                    first_chunk = out.len().div_ceil(page) * page + 12;
                    for &(cpu, nchunks) in &cpu_chunks {
                        assert_eq!(u32::from_le_bytes(data[r..r + 4].try_into().unwrap()), cpu);
                        out.resize(out.len().div_ceil(page) * page, 0);
                        let at = out.len();
                        out.extend_from_slice(&(nchunks as u32).to_le_bytes());
                        for _ in 0..nchunks {
                            let (c, n) = packed.next().unwrap();
                            out.extend_from_slice(&(c.len() as u32).to_le_bytes());
                            out.extend_from_slice(&(n as u32).to_le_bytes());
                            out.extend_from_slice(&c);
                        }
                        let size = (out.len() - at - 4) as u64;
                        data[r + 4..r + 12].copy_from_slice(&(at as u64).to_le_bytes());
                        data[r + 12..r + 20].copy_from_slice(&size.to_le_bytes());
                        r += 20;
                    }
                    let span = (out.len() - fly_at - 16) as u64;
                    out[fly_at + 8..fly_at + 16].copy_from_slice(&span.to_le_bytes());
                }
                _ => {}
            }
            new_entries.push((*id, data));
        }
        patched.push((*strid, new_entries));
    }
    assert!(packed.next().is_none());
    let mut next = 0u64;
    for (strid, entries) in patched.into_iter().rev() {
        let mut body = vec![];
        for (id, mut data) in entries {
            if id == 0 {
                data[..8].copy_from_slice(&next.to_le_bytes());
            }
            body.extend_from_slice(&id.to_le_bytes());
            body.extend_from_slice(&(data.len() as u32).to_le_bytes());
            body.extend_from_slice(&data);
        }
        next = out.len() as u64;
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&strid.to_le_bytes());
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&body);
    }
    out[first_at..first_at + 8].copy_from_slice(&next.to_le_bytes());
    (out, first_chunk)
}

#[test]
fn a_cut_or_damaged_dat_gives_errors_and_notes_not_panics() {
    let Some(dir) = corpus() else { return };
    let full = std::fs::read(dir.join("ARM-software__lisa__sched_load_trace.dat")).unwrap();
    let tmp_dir = tempfile::tempdir().unwrap();
    let tmp = tmp_dir.path().join("cut.dat");
    // Cut inside the header: an error naming the byte offset and what was expected.
    for n in [13usize, 300, 100_000] {
        std::fs::write(&tmp, &full[..n]).unwrap();
        let e = whylate::read::open(&tmp, &Default::default())
            .err()
            .unwrap_or_else(|| panic!("cut at {n} opened"))
            .to_string();
        assert!(e.contains("byte ") && e.contains("expected"), "{e}");
    }
    // Cut inside the CPU data: what is there is read, and the cut is said.
    std::fs::write(&tmp, &full[..3_300_000]).unwrap();
    let r = read_all(&tmp);
    assert!(r.events.len() > 1000 && r.events.len() < 3724);
    assert!(r.diag.truncated.as_deref().unwrap().contains("cut short"));
    // Damaged pages: no panic, and the damage is counted.
    let mut bad = full.clone();
    for i in (3_235_840..bad.len()).step_by(97) {
        bad[i] = bad[i].wrapping_mul(31).wrapping_add(7);
    }
    std::fs::write(&tmp, &bad).unwrap();
    let r = read_all(&tmp);
    assert!(r.diag.unparsed > 0);
}
