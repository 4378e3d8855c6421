//! Seed excerpts read as their authors read them, and bad input handled without panics.

mod common;
use common::{count, data, read_all};
use whylate::event::{Interner, Kind, SchedStat};
use whylate::read::{self, Compression, EventSource, Format, OpenOptions, ReadError};

#[test]
fn seed000_perf_script_with_probes() {
    let r = read_all(&data("seeds/seed000-perf-script.txt"));
    assert_eq!(r.format, Format::PerfScript);
    assert_eq!(r.diag.unparsed, 0, "{:?}", r.diag.unparsed_samples);
    // The failing cycle: kworker/0:1 waited 2.68 ms for CPU 0 behind perf.
    let wait = r
        .events
        .iter()
        .find_map(|e| match e.kind {
            Kind::SchedStat {
                stat: SchedStat::Wait,
                pid: 142,
                delay_ns,
                ..
            } if delay_ns > 0 => Some((e.ts, r.strings.get(e.comm).to_string(), delay_ns)),
            _ => None,
        })
        .unwrap();
    assert_eq!(wait, (93_115_326_708_000, "perf".into(), 2_683_863));
    let q = r
        .events
        .iter()
        .filter(|e| matches!(e.kind, Kind::WorkQueue { function, .. } if r.strings.get(function) == "flush_to_ldisc"))
        .count();
    assert_eq!(q, 3);
    // perf probe events keep their own names.
    assert_eq!(count(&r, "ftdi_process_read_urb"), 1);
    assert!(r.events.iter().any(|e| matches!(e.kind, Kind::SyscallEnter { name, ref args } if r.strings.get(name) == "write" && args.iter().any(|(k, v)| r.strings.get(*k) == "count" && *v == 7))));
}

#[test]
fn seed001_trace_cmd_function_graph() {
    let r = read_all(&data("seeds/seed001-trace-cmd-funcgraph.txt"));
    assert_eq!(r.diag.unparsed, 0, "{:?}", r.diag.unparsed_samples);
    // `funcgraph_entry: + 12.787 us | io_serial_in();` — the slow port read.
    let slow = r.events.iter().find_map(|e| match e.kind {
        Kind::FuncExit {
            func,
            duration_ns: Some(d),
            ..
        } if r.strings.get(func) == "io_serial_in" && d > 10_000 => Some(d),
        _ => None,
    });
    assert_eq!(slow, Some(12_787));
}

#[test]
fn seed001_bare_function_graph_is_sniffed_and_timed_by_its_durations() {
    // Only `duration |  call`: no time, CPU or task column, and `...` where lines were cut.
    let r = read_all(&data("seeds/seed001-funcgraph-bare.txt"));
    assert_eq!(r.format, Format::FunctionGraph);
    assert_eq!(r.diag.unparsed, 0, "{:?}", r.diag.unparsed_samples);
    assert_eq!(r.diag.elided_lines, 3);
    assert!(r.diag.no_timestamps);
    // The rebuilt clock: a leaf advances it by its duration, a `}` puts it at its entry
    // plus its duration. The 411 us exit is last, at its entry + 411.342 us.
    let exits: Vec<(u64, u64)> = (r.events.iter())
        .filter_map(|e| match e.kind {
            Kind::FuncExit {
                duration_ns: Some(d),
                ..
            } => Some((e.ts, d)),
            _ => None,
        })
        .collect();
    assert!(exits.windows(2).all(|w| w[0].0 <= w[1].0), "{exits:?}");
    let last = exits.last().unwrap();
    assert_eq!(last.1, 411_342);
    assert_eq!(last.0, 384 + 1_836 + 1_667 + 4_675 + 411_342);
}

#[test]
fn seed002_latency_lines_without_header() {
    let r = read_all(&data("seeds/seed002-latency.txt"));
    assert_eq!(r.format, Format::LatencyTracer);
    assert_eq!(r.diag.unparsed, 0, "{:?}", r.diag.unparsed_samples);
    assert!(r.diag.relative_time);
    let raise = r
        .events
        .iter()
        .find(|e| matches!(e.kind, Kind::SoftirqRaise { vec: 6 }))
        .unwrap();
    assert_eq!(raise.ts, 3_000);
}

#[test]
fn seed003_long_hpvsa_handler() {
    let r = read_all(&data("seeds/seed003-ftrace.txt"));
    assert_eq!(r.diag.unparsed, 0);
    let entry = r
        .events
        .iter()
        .find(|e| matches!(e.kind, Kind::IrqEntry { irq: 96, .. }))
        .unwrap();
    let exit = r
        .events
        .iter()
        .find(|e| matches!(e.kind, Kind::IrqExit { irq: 96, .. }))
        .unwrap();
    assert_eq!(exit.ts - entry.ts, 56_285_000, "56.3 ms handler");
}

#[test]
fn seed004_irqs_off_in_console_unlock() {
    let r = read_all(&data("seeds/seed004-ftrace.txt"));
    assert_eq!(r.diag.unparsed, 0);
    let off = &r.events[0];
    let on = &r.events[1];
    assert!(
        matches!(off.kind, Kind::IrqDisable { caller, .. } if r.strings.get(caller) == "console_unlock")
    );
    assert!(matches!(on.kind, Kind::IrqEnable { .. }));
    assert_eq!(on.ts - off.ts, 10_966_000, "about 10 ms with irqs off");
    assert_eq!(
        count(&r, "hrtimer_cb"),
        2,
        "unknown events are kept by name"
    );
}

#[test]
fn compressed_inputs_read_like_plain() {
    let zst = read_all(&data("bad/part.ftrace.zst"));
    let xz = read_all(&data("bad/part.ftrace.xz"));
    assert_eq!(zst.events.len(), xz.events.len());
    assert!(zst.events.len() > 2900);
    assert_eq!(zst.diag.unparsed, 0);
    let s = read::open(&data("bad/part.ftrace.xz"), &OpenOptions::default()).unwrap();
    assert_eq!(s.compression(), Compression::Xz);
    for (a, b) in zst.events.iter().zip(&xz.events) {
        assert_eq!(a, b);
    }
}

#[test]
fn truncated_gzip_keeps_what_was_read_and_says_so() {
    let r = read_all(&data("bad/truncated.ftrace.gz"));
    assert!(r.events.len() > 1000);
    let t = r.diag.truncated.as_deref().unwrap();
    assert!(t.starts_with("the gzip stream is cut after"), "{t}");
}

#[test]
fn truncated_zstd_keeps_what_was_read_and_says_where() {
    let whole = read_all(&data("bad/part.ftrace.zst"));
    let bytes = std::fs::read(data("bad/part.ftrace.zst")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cut.ftrace.zst");
    std::fs::write(&p, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let r = read_all(&p);
    // Every whole block before the cut comes out (zstd decodes a block of up to 128 KiB
    // at once; the block the cut falls in is lost), not nothing.
    assert!(
        r.events.len() > 1000 && r.events.len() < whole.events.len(),
        "{} of {}",
        r.events.len(),
        whole.events.len()
    );
    let t = r.diag.truncated.as_deref().unwrap();
    assert!(t.starts_with("the zstd stream is cut after"), "{t}");
    assert!(t.contains("decompressed bytes"), "{t}");
}

#[test]
fn empty_input_says_empty() {
    let e = read::open(&data("bad/empty.txt"), &OpenOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(e.ends_with("empty.txt: empty file"), "{e}");
}

#[test]
fn a_preamble_of_blank_and_comment_lines_is_passed_over_when_sniffing() {
    // 300 k blank lines and 20 k comments: far past the first 256 KiB read ahead.
    let mut text = "\n".repeat(300_000);
    text += &"# a note\n".repeat(20_000);
    text +=
        "  bash-42 [001] d..2. 10.000001: sched_waking: comm=cat pid=7 prio=120 target_cpu=001\n";
    text +=
        "  bash-42 [001] d..2. 10.000002: sched_waking: comm=cat pid=8 prio=120 target_cpu=001\n";
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("late.txt");
    std::fs::write(&p, &text).unwrap();
    let r = read_all(&p);
    assert_eq!(r.format, Format::Ftrace);
    assert_eq!(r.events.len(), 2);
    // Line numbers count the preamble.
    assert_eq!(r.diag.lines, 320_002);
    // Blank lines alone are still no trace.
    std::fs::write(&p, "\n".repeat(300_000)).unwrap();
    let e = read::open(&p, &OpenOptions::default()).err().unwrap();
    assert!(matches!(e, ReadError::UnknownFormat { .. }), "{e}");
}

#[test]
fn unknown_format_names_what_was_tried() {
    for f in ["bad/binary.bin", "bad/prose.txt"] {
        match read::open(&data(f), &OpenOptions::default()) {
            Err(ReadError::UnknownFormat { tried, start, .. }) => {
                assert!(tried.contains("ftrace") && tried.contains("perf-script"));
                if f.ends_with("prose.txt") {
                    assert_eq!(start, "the line \"hello world\"");
                }
                if f.ends_with("binary.bin") {
                    assert!(start.ends_with("(not text)") && start.len() < 80, "{start}");
                }
            }
            Err(e) => panic!("{f}: {e}"),
            Ok(_) => panic!("{f}: accepted"),
        }
    }
}

#[test]
fn malformed_lines_are_counted_with_line_numbers_or_fatal_when_strict() {
    let r = read_all(&data("bad/malformed-middle.txt"));
    assert_eq!(r.events.len(), 2);
    assert_eq!(r.diag.unparsed, 3);
    let lines: Vec<u64> = r.diag.unparsed_samples.iter().map(|b| b.line).collect();
    assert_eq!(lines, vec![4, 5, 7]);
    let opts = OpenOptions {
        strict: true,
        ..Default::default()
    };
    let mut s = read::open(&data("bad/malformed-middle.txt"), &opts).unwrap();
    let mut strings = Interner::new();
    let err = loop {
        match s.next_event(&mut strings) {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("strict accepted a bad line"),
            Err(e) => break e,
        }
    };
    let msg = err.to_string();
    assert!(msg.contains("malformed-middle.txt:4:"), "{msg}");
}

/// Every prefix and a few corruptions of real inputs: no panic, ever.
#[test]
fn cut_and_corrupted_inputs_never_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let sources = [
        "seeds/seed000-perf-script.txt",
        "seeds/seed001-trace-cmd-funcgraph.txt",
        "seeds/seed001-funcgraph-bare.txt",
        "seeds/seed001-dmesg.txt",
        "seeds/seed003b-napi.txt",
        "seeds/seed002-latency.txt",
        "seeds/seed004-ftrace.txt",
    ];
    for src in sources {
        let bytes = std::fs::read(data(src)).unwrap();
        let mut cases: Vec<Vec<u8>> = (0..bytes.len())
            .step_by(37)
            .map(|n| bytes[..n].to_vec())
            .collect();
        for i in (0..bytes.len()).step_by(53) {
            let mut b = bytes.clone();
            b[i] ^= 0x5a;
            cases.push(b);
            let mut b = bytes.clone();
            b.insert(i, b'\n');
            cases.push(b);
        }
        for (k, case) in cases.iter().enumerate() {
            let p = dir.join(format!("case-{k}"));
            std::fs::write(&p, case).unwrap();
            for fmt in [
                None,
                Some(Format::Ftrace),
                Some(Format::PerfScript),
                Some(Format::FunctionGraph),
                Some(Format::Sysdig),
                Some(Format::Systrace),
                Some(Format::LatencyTracer),
            ] {
                let opts = OpenOptions {
                    format: fmt,
                    ..Default::default()
                };
                if let Ok(mut s) = read::open(&p, &opts) {
                    let mut strings = Interner::new();
                    while let Ok(Some(_)) = s.next_event(&mut strings) {}
                }
            }
        }
    }
}

/// The events of `path` as comparable lines, and how the input was read.
fn event_lines(path: &std::path::Path) -> (Vec<String>, Option<(u64, u64)>) {
    let mut src = read::open(path, &OpenOptions::default()).unwrap();
    let cost = src.unpack_cost();
    let mut s = Interner::new();
    let mut v = Vec::new();
    while let Some(e) = src.next_event(&mut s).unwrap() {
        v.push(format!(
            "{} {} {} {}",
            e.ts,
            e.cpu,
            e.tid,
            e.name().render(&s)
        ));
    }
    (v, cost)
}

#[test]
fn a_zstd_trace_dat_is_read_in_place_through_one_cursor_per_cpu() {
    let zst = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/frob.dat.zst");
    let raw = zstd::decode_all(std::fs::File::open(&zst).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("frob.dat");
    std::fs::write(&plain, &raw).unwrap();
    let (want, none) = event_lines(&plain);
    assert_eq!(none, None);
    assert!(want.len() > 10_000, "{}", want.len());
    // The zstd CLI's file declares its size: read in place, the same events. Cursors: the
    // header's, then one per CPU region (this trace has 2 CPUs), plus one more when the
    // metadata is read again from its start.
    let (got, cost) = event_lines(&zst);
    assert_eq!(got, want);
    let (skipped, started) = cost.expect("read through cursors");
    assert!((2..=4).contains(&started), "{started} cursors");
    assert!(skipped < 2 * raw.len() as u64, "{skipped} bytes skipped");
    // Compressed as a stream (no declared size): decompressed through once to learn the
    // size, then read in place, the same events.
    let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    e.include_contentsize(false).unwrap();
    std::io::Write::write_all(&mut e, &raw).unwrap();
    let streamed = dir.path().join("streamed.dat.zst");
    std::fs::write(&streamed, e.finish().unwrap()).unwrap();
    let (again, cost) = event_lines(&streamed);
    assert_eq!(again, want);
    let (skipped, started) = cost.expect("read in place");
    assert!(
        skipped >= raw.len() as u64,
        "{skipped}: the pass that found the size"
    );
    // (The measuring cursor's last 2 MiB can serve the last CPU's region.)
    assert!((2..=5).contains(&started), "{started} cursors");
}

#[test]
fn a_zstd_perf_data_is_read_in_place_with_the_plain_files_events() {
    let zst =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/frob.perf.data.zst");
    let raw = zstd::decode_all(std::fs::File::open(&zst).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("frob.perf.data");
    std::fs::write(&plain, &raw).unwrap();
    let (want, _) = event_lines(&plain);
    // Two cursors: one to the feature sections after the data, one through the file.
    let (got, cost) = event_lines(&zst);
    assert_eq!(got, want);
    assert_eq!(cost.map(|c| c.1), Some(2));
}

/// `parts` gzipped one member each, concatenated (as `cat a.gz b.gz` makes them).
fn gzip_members(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in parts {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut e, p).unwrap();
        out.extend(e.finish().unwrap());
    }
    out
}

/// `data` compressed by liblzma as one xz stream per part (`cat a.xz b.xz` makes such
/// files), with xz's stream padding between them.
fn xz_streams(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in parts {
        let mut e = liblzma::write::XzEncoder::new(Vec::new(), 0);
        std::io::Write::write_all(&mut e, p).unwrap();
        out.extend(e.finish().unwrap());
        out.extend([0u8; 4]);
    }
    out
}

#[test]
fn xz_and_gzip_binaries_are_read_in_place_with_the_same_events() {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let dir = tempfile::tempdir().unwrap();
    for name in ["frob.dat", "frob.perf.data"] {
        let zst = examples.join(format!("{name}.zst"));
        let raw = zstd::decode_all(std::fs::File::open(&zst).unwrap()).unwrap();
        let plain = dir.path().join(name);
        std::fs::write(&plain, &raw).unwrap();
        let (want, _) = event_lines(&plain);
        // Two xz streams, cut in the middle of the file: the index of each gives its size.
        let xz = dir.path().join(format!("{name}.xz"));
        let half = raw.len() / 2;
        std::fs::write(&xz, xz_streams(&[&raw[..half], &raw[half..]])).unwrap();
        let (got, cost) = event_lines(&xz);
        assert_eq!(got, want, "{name}.xz");
        assert!(cost.is_some(), "{name}.xz is read in place");
        // gzip declares no trustworthy size. A trace.dat whose regions end where its
        // trailer says is read in place at once; a perf.data after one pass through,
        // which it needs anyway (its feature sections come after the data, and here the
        // pass's last 2 MiB hold the whole small file). Same events.
        let gz = gzip_members(&[&raw]);
        let gzp = dir.path().join(format!("{name}.gz"));
        std::fs::write(&gzp, &gz).unwrap();
        let (got, cost) = event_lines(&gzp);
        assert_eq!(got, want, "{name}.gz");
        let (skipped, started) = cost.expect("read in place");
        let dat = name == "frob.dat";
        assert_eq!(
            skipped >= raw.len() as u64,
            !dat,
            "{name}.gz: {skipped} skipped"
        );
        if !dat {
            assert!(started <= 2, "{name}.gz: {started} cursors");
        }
        // Two members: the trailer gives only the last one's size, so the size is learnt
        // by a pass through.
        let two = dir.path().join(format!("{name}.2.gz"));
        std::fs::write(&two, gzip_members(&[&raw[..half], &raw[half..]])).unwrap();
        let (got, cost) = event_lines(&two);
        assert_eq!(got, want, "{name}.2.gz");
        let (skipped, _) = cost.expect("read in place");
        assert!(
            skipped >= raw.len() as u64,
            "{name}.2.gz: {skipped} skipped"
        );
        // A cut gzip: spooled, and read as far as it goes.
        std::fs::write(&gzp, &gz[..gz.len() / 2]).unwrap();
        if let Ok(src) = read::open(&gzp, &OpenOptions::default()) {
            assert_eq!(src.unpack_cost(), None, "{name}.gz cut");
        }
        // A cut xz declares no size either: spooled, and read as far as it goes.
        let bytes = std::fs::read(&xz).unwrap();
        std::fs::write(&xz, &bytes[..bytes.len() - 20]).unwrap();
        if let Ok(src) = read::open(&xz, &OpenOptions::default()) {
            assert_eq!(src.unpack_cost(), None, "{name}.xz cut");
        }
    }
}

/// examples/frob.dat.zst (a trace.dat v6, 4096-byte pages, two CPUs), decompressed and
/// changed by `damage`, in a temporary file.
fn damaged_frob(damage: impl FnOnce(&mut Vec<u8>)) -> tempfile::TempPath {
    let z = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/frob.dat.zst"
    ))
    .unwrap();
    let mut d = zstd::decode_all(&z[..]).unwrap();
    damage(&mut d);
    let mut f = tempfile::Builder::new().suffix(".dat").tempfile().unwrap();
    std::io::Write::write_all(&mut f, &d).unwrap();
    f.into_temp_path()
}

fn open_err(p: &std::path::Path) -> String {
    match read::open(p, &OpenOptions::default()) {
        Ok(_) => panic!("{} opened", p.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_trace_dat_whose_page_size_disagrees_with_its_header_page_is_refused() {
    // Byte 14 holds the page size: 65536 would read one page in sixteen, silently.
    let p = damaged_frob(|d| d[14..18].copy_from_slice(&65536u32.to_le_bytes()));
    let e = open_err(&p);
    assert!(e.ends_with("byte 14: the header's page size is 65536 bytes, but its header_page describes pages of 4096 bytes (16 of header, 4080 of data): the file is damaged"), "{e}");
}

#[test]
fn a_trace_dat_whose_cpu_regions_overlap_is_refused() {
    // CPU0's region grown into CPU1's: CPU1's pages would be read again as CPU0's.
    let p = damaged_frob(|d| {
        let at = d.windows(10).position(|w| w == b"flyrecord\0").unwrap() + 10;
        let size = u64::from_le_bytes(d[at + 8..at + 16].try_into().unwrap());
        d[at + 8..at + 16].copy_from_slice(&(size + 8192).to_le_bytes());
    });
    let e = open_err(&p);
    assert!(
        e.contains("CPU 0's data (bytes ") && e.contains("overlaps CPU 1's"),
        "{e}"
    );
    // A region that is no whole number of pages is refused too.
    let p = damaged_frob(|d| {
        let at = d.windows(10).position(|w| w == b"flyrecord\0").unwrap() + 10;
        let size = u64::from_le_bytes(d[at + 8..at + 16].try_into().unwrap());
        d[at + 8..at + 16].copy_from_slice(&(size - 100).to_le_bytes());
    });
    let e = open_err(&p);
    assert!(e.contains("not a whole number of 4096-byte pages"), "{e}");
}

#[test]
fn kallsyms_of_another_boot_or_build_are_refused_for_a_perf_data() {
    let ex = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/");
    let trace = std::path::PathBuf::from(format!("{ex}frob.perf.data.zst"));
    let given =
        read::ksyms::load_file(std::path::Path::new(&format!("{ex}frob.perf.kallsyms.zst")))
            .unwrap();
    let with = |text: std::sync::Arc<[u8]>| OpenOptions {
        kallsyms: Some(read::ksyms::Given::new("k.txt", text)),
        ..Default::default()
    };
    // The recording machine's own symbols are taken.
    assert!(read::open(&trace, &with(given.clone())).is_ok());
    // The same symbols with `_text` elsewhere (another boot, or build) are refused,
    // naming both addresses, rather than naming the wrong functions.
    let moved = String::from_utf8_lossy(&given).replacen(
        "ffffffff81000000 T _text",
        "ffffffff8a000000 T _text",
        1,
    );
    let e = match read::open(&trace, &with(moved.as_bytes().into())) {
        Ok(_) => panic!("symbols of another boot were taken"),
        Err(e) => e,
    };
    assert!(matches!(e, ReadError::Refused { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("loaded at 0xffffffff81000000, but k.txt has _text at 0xffffffff8a000000"),
        "{e}"
    );
}

/// A trace.dat and a perf.data held in memory (as `watch` hands over its windows, in
/// pieces) read like the same files on disk: the same explanation, event for event.
#[test]
fn a_binary_trace_in_memory_reads_like_its_file() {
    use std::sync::Arc;
    use whylate::explain::{run, Mode};
    use whylate::read::memory::Pieces;
    use whylate::read::Opened;
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    for (name, mode) in [
        ("timer.dat.zst", Mode::Timer(Default::default())),
        (
            "frob.perf.data.zst",
            Mode::Auto {
                top: 5,
                deadline_ns: None,
            },
        ),
    ] {
        let zst = examples.join(name);
        let bytes = zstd::decode_all(std::fs::File::open(&zst).unwrap()).unwrap();
        let plain = tempfile::Builder::new()
            .suffix(name.trim_end_matches(".zst"))
            .tempfile()
            .unwrap();
        std::fs::write(plain.path(), &bytes).unwrap();
        let open = OpenOptions::default();
        let file = Opened::files(&[plain.path().to_path_buf()], &open).unwrap();
        let want = run(file, &open, &mode).unwrap();
        // Cut at odd places, so that records and pages straddle pieces.
        let mut pieces = Pieces::new();
        for chunk in bytes.chunks(4093) {
            pieces.push(Arc::from(chunk));
        }
        let got = run(
            Opened::pieces(plain.path(), pieces, &open).unwrap(),
            &open,
            &mode,
        )
        .unwrap();
        assert!(
            want.report.events > 10_000,
            "{name}: {}",
            want.report.events
        );
        assert_eq!(
            serde_json::to_value(&got.report).unwrap(),
            serde_json::to_value(&want.report).unwrap(),
            "{name}"
        );
    }
    let bad = Pieces::new();
    let e = Opened::pieces("window", bad, &OpenOptions::default());
    assert!(matches!(e, Err(ReadError::Empty { .. })), "{:?}", e.err());
}

/// Every bundled example, in every format and compression it ships in, read from its
/// bytes in memory explains as the file does (the library's callers that hold bytes,
/// tests and fuzz targets among them, get the same answers without writing a file).
#[test]
fn every_example_read_from_memory_explains_as_its_file() {
    use whylate::explain::{run, Mode};
    use whylate::read::Opened;
    let open = OpenOptions::default();
    let mode = Mode::Auto {
        top: 5,
        deadline_ns: None,
    };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut traces = Vec::new();
    for dir in ["../../examples", "tests/data/seeds", "tests/data/bad"] {
        let rd = std::fs::read_dir(root.join(dir)).unwrap();
        traces.extend(
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file() && whylate::read::trace_format(p).is_some()),
        );
    }
    traces.sort();
    assert!(traces.len() >= 20, "{traces:?}");
    for p in traces {
        let want = run(
            Opened::files(std::slice::from_ref(&p), &open).unwrap(),
            &open,
            &mode,
        );
        let bytes = std::fs::read(&p).unwrap();
        let got = run(Opened::bytes(&p, bytes, &open).unwrap(), &open, &mode);
        let json = |r: Result<whylate::explain::Explained, ReadError>| match r {
            Ok(x) => serde_json::to_value(&x.report).unwrap(),
            Err(e) => serde_json::Value::String(e.to_string()),
        };
        assert_eq!(json(got), json(want), "{}", p.display());
    }
}

/// A binary trace is opened once: replacing the file under its name after it was opened
/// (a recorder rotating its output) changes nothing in what is read, plain or read in
/// place compressed.
#[test]
fn a_trace_replaced_after_it_was_opened_is_still_the_one_read() {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let dir = tempfile::tempdir().unwrap();
    for (name, plain) in [("t.dat", true), ("t.dat.zst", false)] {
        let path = dir.path().join(name);
        let other = dir.path().join(format!("other-{name}"));
        for (src, dst) in [("timer.dat.zst", &path), ("frob.dat.zst", &other)] {
            let z = std::fs::read(examples.join(src)).unwrap();
            let bytes = if plain {
                zstd::decode_all(&z[..]).unwrap()
            } else {
                z
            };
            std::fs::write(dst, bytes).unwrap();
        }
        let events = |src: &mut read::Input| {
            let mut strings = Interner::new();
            let mut n = 0u64;
            while src.next_event(&mut strings).unwrap().is_some() {
                n += 1;
            }
            n
        };
        let open = || read::open(&path, &OpenOptions::default()).unwrap();
        let want = events(&mut open());
        let mut src = open();
        std::fs::rename(&other, &path).unwrap();
        assert_eq!(events(&mut src), want, "{name}");
        assert_ne!(events(&mut open()), want, "{name}: the replacement differs");
    }
}

/// A trace.dat whose data is damaged (4 KB of one CPU's pages scrambled, as a bad disk
/// block or a torn copy leaves it): the damaged records' times would otherwise run
/// ahead of the CPU's next pages, put their events out of order, and make most
/// request/reply cycles of the rest of the trace vanish or come "too late". Each
/// damaged page is skipped from the bad record on, said with its byte offset, and
/// treated as a window of lost events.
#[test]
fn damaged_pages_of_a_trace_dat_are_skipped_and_said_not_read_as_late_events() {
    use whylate::explain::{run, Mode, Options, Same};
    use whylate::selector::Selector;
    let mut at = 0;
    let p = damaged_frob(|d| {
        at = d.len() * 85 / 100 / 4096 * 4096 + 64;
        for b in &mut d[at..at + 4096] {
            *b ^= 0x5a;
        }
    });
    let r = read_all(&p);
    assert!(r.diag.damaged_total >= 1, "{:?}", r.diag.damaged);
    let first = &r.diag.damaged[0];
    assert!(
        !first.in_chunk && (at as u64..at as u64 + 4096).contains(&first.offset),
        "{first:?} not in the damaged bytes from {at}"
    );
    assert_eq!(
        r.order.unsorted, 0,
        "events put out of order: {:?}",
        r.order
    );
    let opts = Options {
        from: Selector::parse("sys_enter_write[comm=frobnicator,count=7]").unwrap(),
        to: vec![Selector::parse("sys_exit_read[comm=frobnicator,ret>0]").unwrap()],
        deadline_ns: Some(3_500_000),
        same: Same::Thread,
        pairing: Default::default(),
        arch: None,
        top: 3,
        learned: Default::default(),
    };
    let open = OpenOptions::default();
    let out = run(
        whylate::read::Opened::files(&[p.to_path_buf()], &open).unwrap(),
        &open,
        &Mode::Cycles(opts),
    )
    .unwrap();
    let cycles = out.report.cycles.count;
    // The clean trace has 500: a damaged page of one CPU costs the cycles around it
    // (about 40 ms of CPU0), not the rest of the trace.
    assert!((480..=500).contains(&cycles), "{cycles} cycles");
    let notes = out.report.notes.join("\n");
    assert!(
        notes.contains(&format!("the first at byte {}", first.offset)),
        "{notes}"
    );
}
