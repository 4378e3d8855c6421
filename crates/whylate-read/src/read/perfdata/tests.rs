//! The perf.data reader's tests: the fast path against `linux-perf-data`'s, the window
//! onto a compressed file, the per-CPU rule, and damaged files.

use super::*;
use std::io::Read;

/// examples/frob.perf.data.zst (a `perf record -a` on this project's VM), unpacked.
fn example(dir: &Path) -> (PathBuf, Vec<u8>) {
    let zst = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/frob.perf.data.zst");
    let f = File::open(zst).unwrap();
    let mut d = zstd::stream::read::Decoder::new(f).unwrap();
    let mut bytes = Vec::new();
    d.read_to_end(&mut bytes).unwrap();
    let p = dir.join("frob.perf.data");
    std::fs::write(&p, &bytes).unwrap();
    (p, bytes)
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn all(mut r: PerfData, s: &mut Interner) -> (Vec<Event>, PerfData) {
    let mut v = Vec::new();
    while let Ok(Some(e)) = r.next_decoded(s) {
        v.push(e);
    }
    (v, r)
}

#[test]
fn fast_path_yields_what_linux_perf_data_yields() {
    let tmp = tmp();
    let dir = tmp.path();
    let (p, _) = example(dir);
    let mut s = Interner::new();
    let fast = PerfData::open(&p, File::open(&p).unwrap(), 1 << 16).unwrap();
    assert!(
        fast.is_fast(),
        "a plain perf record -a file takes the fast path"
    );
    let generic = PerfData::open_generic(&p, File::open(&p).unwrap(), 1 << 16).unwrap();
    assert!(!generic.is_fast());
    let (a, fa) = all(fast, &mut s);
    let (b, fb) = all(generic, &mut s);
    assert!(a.len() > 10_000, "{}", a.len());
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x, y, "event {i}");
    }
    assert_eq!(fa.order().reordered, fb.order().reordered);
    assert_eq!(fa.order().unsorted, fb.order().unsorted);
    assert_eq!(fa.diag().unparsed, 0);
}

/// `bytes` (a perf.data at `p`) with its data section's records re-laid: sorted by
/// `key` (of each record's time and CPU; other records are CPU 0's) with a
/// FINISHED_ROUND after every `n` (none when `n` is 0), the feature sections after it
/// moved along.
fn relaid(p: &Path, bytes: &[u8], key: impl Fn(u64, u32) -> (u64, u64), n: usize) -> Vec<u8> {
    let r = PerfData::open(p, File::open(p).unwrap(), 16).unwrap();
    let Mode::Fast(f) = &r.mode else {
        panic!("the fast path")
    };
    let at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap()) as usize;
    let (start, size) = (at(40), at(48));
    let (mut recs, mut pos, mut last) = (Vec::new(), start, 0);
    while pos < start + size {
        let len = u16::from_le_bytes([bytes[pos + 6], bytes[pos + 7]]) as usize;
        let r = &bytes[pos..pos + len];
        let ty = u32::from_le_bytes(r[..4].try_into().unwrap());
        if ty != REC_FINISHED_ROUND {
            last = f.time_of(r, ty == REC_SAMPLE).flatten().unwrap_or(last);
            let cpu = (ty == REC_SAMPLE).then(|| f.cpu_of(r)).flatten();
            recs.push((key(last, cpu.unwrap_or(0)), r));
        }
        pos += len;
    }
    recs.sort_by_key(|x| x.0);
    let mut out = bytes[..start].to_vec();
    for (k, (_, r)) in recs.iter().enumerate() {
        out.extend_from_slice(r);
        if n > 0 && k % n == n - 1 {
            out.extend_from_slice(&[68, 0, 0, 0, 0, 0, 8, 0]);
        }
    }
    // Records may also be dropped: the data section can shrink (wrapping arithmetic).
    let grew = out.len().wrapping_sub(pos);
    out[48..56].copy_from_slice(&(size.wrapping_add(grew) as u64).to_le_bytes());
    // The feature table: an (offset, size) pair per feature bit set.
    let features: u32 = (0..4).map(|i| (at(72 + 8 * i) as u64).count_ones()).sum();
    for f in 0..features as usize {
        let o = pos + 16 * f;
        out.extend_from_slice(&(at(o).wrapping_add(grew) as u64).to_le_bytes());
        out.extend_from_slice(&bytes[o + 8..o + 16]);
    }
    out.extend_from_slice(&bytes[pos + 16 * features as usize..]);
    out
}

/// `path` compressed with zstd beside it, read through a window of 64 KiB chunks, with
/// the per-CPU rule or perf's alone: the events, and the most chunks held at once.
fn through_window(path: &Path, s: &mut Interner, per_cpu: bool) -> (Vec<Event>, usize) {
    let bytes = std::fs::read(path).unwrap();
    let z = path.with_extension("zst");
    std::fs::write(&z, zstd::bulk::compress(&bytes, 3).unwrap()).unwrap();
    let u = std::sync::Arc::new(unpack::Unpacked::open(&z).unwrap().unwrap());
    let mut r = PerfData::open_unpacked(&z, u, 16, None).unwrap();
    let Mode::Fast(f) = &mut r.mode else {
        panic!("the fast path")
    };
    let Data::Window(w) = &mut f.data else {
        panic!("a window")
    };
    (w.step, f.release_step) = (1 << 16, 16384);
    if !per_cpu {
        f.cpu_last = None;
    }
    let (got, r) = all(r, s);
    assert_eq!(r.unpack_cost().map(|c| c.1), Some(2));
    let Mode::Fast(f) = &r.mode else {
        unreachable!()
    };
    let Data::Window(w) = &f.data else {
        unreachable!()
    };
    (got, w.most_chunks())
}

/// A recording where perf fell behind ends with rounds that drain whole buffers, one
/// CPU's after the other. Laid out so (the example as one round: CPU 0's records, then
/// CPU 1's), perf's rule would hold all of it; each CPU's buffer being in order, what
/// no CPU can precede goes as the second CPU's records come, so about one CPU's share
/// is held. The events are the generic reader's, in its order.
#[test]
fn a_drained_backlog_goes_out_as_every_cpu_passes_it() {
    let tmp = tmp();
    let (p, bytes) = example(tmp.path());
    let bytes = relaid(&p, &bytes, |t, cpu| (u64::from(cpu), t), 0);
    std::fs::write(&p, &bytes).unwrap();
    let mut s = Interner::new();
    let (want, _) = all(
        PerfData::open_generic(&p, File::open(&p).unwrap(), 1 << 16).unwrap(),
        &mut s,
    );
    let (got, most) = through_window(&p, &mut s, true);
    assert_eq!(got.len(), want.len());
    for (i, (x, y)) in got.iter().zip(&want).enumerate() {
        assert_eq!(x, y, "event {i}");
    }
    // perf's rule alone holds every chunk (20) to the end; this, 14.
    let (_, all_held) = through_window(&p, &mut s, false);
    assert!(all_held >= bytes.len() >> 16, "{all_held}");
    assert!(
        most * 4 <= all_held * 3,
        "{most} of {all_held} chunks held at once"
    );
}

/// `bytes` (a perf.data) with the `k`-th record of its data section moved to the
/// section's end (sizes and offsets unchanged).
fn moved_to_end(bytes: &[u8], k: usize) -> Vec<u8> {
    let at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap()) as usize;
    let (start, end) = (at(40), at(40) + at(48));
    let mut pos = start;
    for _ in 0..k {
        pos += u16::from_le_bytes([bytes[pos + 6], bytes[pos + 7]]) as usize;
    }
    let len = u16::from_le_bytes([bytes[pos + 6], bytes[pos + 7]]) as usize;
    let mut out = bytes[..pos].to_vec();
    out.extend_from_slice(&bytes[pos + len..end]);
    out.extend_from_slice(&bytes[pos..pos + len]);
    out.extend_from_slice(&bytes[end..]);
    out
}

/// A record that comes after records later than it went out (a CPU's buffer out of
/// order) turns the per-CPU rule off, and is said: counted as out of order.
#[test]
fn a_record_after_its_place_turns_the_per_cpu_rule_off() {
    let tmp = tmp();
    let (p, bytes) = example(tmp.path());
    let sorted = relaid(&p, &bytes, |t, _| (t, 0), 0);
    std::fs::write(&p, moved_to_end(&sorted, 1000)).unwrap();
    let mut s = Interner::new();
    let generic = PerfData::open_generic(&p, File::open(&p).unwrap(), 16).unwrap();
    let (want, _) = all(generic, &mut s);
    let (got, r) = all(
        PerfData::open(&p, File::open(&p).unwrap(), 16).unwrap(),
        &mut s,
    );
    assert_eq!(got.len(), want.len());
    let Mode::Fast(f) = &r.mode else {
        panic!("the fast path")
    };
    assert!(f.cpu_last.is_none(), "the per-CPU rule is still on");
    assert_eq!(r.order().unsorted, 1);
    // Without the move, the rule stays on and nothing is out of order.
    std::fs::write(&p, &sorted).unwrap();
    let (_, r) = all(
        PerfData::open(&p, File::open(&p).unwrap(), 16).unwrap(),
        &mut s,
    );
    let Mode::Fast(f) = &r.mode else {
        panic!("the fast path")
    };
    assert!(f.cpu_last.is_some());
    assert_eq!(r.order().unsorted, 0);
}

/// A zstd perf.data read in place: the data section through a window read in 64 KiB
/// chunks, dropped as rounds go out, yields what the mapped file yields, with two
/// cursors (the feature table at the end, then the file from its start).
#[test]
fn a_zstd_perf_data_read_through_a_window_yields_what_the_map_yields() {
    let tmp = tmp();
    let (p, bytes) = example(tmp.path());
    let bytes = relaid(&p, &bytes, |t, _| (t, 0), 2000);
    std::fs::write(&p, &bytes).unwrap();
    let mut s = Interner::new();
    // A small reorder window, so rounds let records go and bytes are given back.
    let (want, _) = all(
        PerfData::open(&p, File::open(&p).unwrap(), 16).unwrap(),
        &mut s,
    );
    // perf's rule alone holds a round until the next one ends, and what went out is
    // given back before the round after is read: at most two rounds of 2000 records
    // (about 200 KiB each) in 64 KiB chunks, 8 with partial ones (11 when the bytes
    // went only after each round was sorted, while the round before was still held).
    let (got, most) = through_window(&p, &mut s, false);
    assert!(most <= 9, "{most} chunks held at once");
    assert_eq!(got.len(), want.len());
    for (i, (x, y)) in got.iter().zip(&want).enumerate() {
        assert_eq!(x, y, "event {i}");
    }
    // With the per-CPU rule, records go before their round ends too.
    let (got, fewer) = through_window(&p, &mut s, true);
    assert_eq!(got, want);
    assert!(fewer < most, "{fewer} chunks held at once");
}

/// Flipped bytes in the data section: counted or cut short, never a panic, and the fast
/// path stops where the generic one does not understand either.
#[test]
fn corrupted_records_never_panic() {
    let tmp = tmp();
    let dir = tmp.path();
    let (_, bytes) = example(dir);
    let start = u64::from_le_bytes(bytes[40..48].try_into().unwrap()) as usize;
    let size = u64::from_le_bytes(bytes[48..56].try_into().unwrap()) as usize;
    let p = dir.join("case");
    let mut s = Interner::new();
    for (k, at) in (start..start + size).step_by(size / 80).enumerate() {
        let mut b = bytes.clone();
        // Alternate a size field smash and a payload flip.
        b[at] ^= if k % 2 == 0 { 0xff } else { 0x5a };
        std::fs::write(&p, &b).unwrap();
        for generic in [false, true] {
            let f = File::open(&p).unwrap();
            let r = match generic {
                false => PerfData::open(&p, f, 1 << 16),
                true => PerfData::open_generic(&p, f, 1 << 16),
            };
            if let Ok(r) = r {
                let (v, _) = all(r, &mut s);
                assert!(v.len() < 20_000);
            }
        }
    }
    // Cut anywhere: a clear error or a short read, never a panic.
    for cut in (0..bytes.len()).step_by(bytes.len() / 41) {
        std::fs::write(&p, &bytes[..cut]).unwrap();
        match PerfData::open(&p, File::open(&p).unwrap(), 1 << 16) {
            Ok(r) => drop(all(r, &mut s)),
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
    // A data section that claims more than the file holds.
    let mut b = bytes.clone();
    b[48..56].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
    std::fs::write(&p, &b).unwrap();
    let e = PerfData::open(&p, File::open(&p).unwrap(), 1 << 16)
        .err()
        .unwrap();
    assert!(e.to_string().contains("cut short"), "{e}");
}

#[test]
fn count_from_back_is_partition_point() {
    let mut seed = 0x9e37_79b9_u64;
    for len in 0..300usize {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut v: Vec<u64> = (0..len as u64).map(|i| i / 3).collect();
        v.sort();
        let q: std::collections::VecDeque<u64> = v.into();
        for cut in [0, 1, (seed % 200), len as u64 / 3, u64::MAX] {
            assert_eq!(
                count_from_back(&q, |&x| x < cut),
                q.partition_point(|&x| x < cut),
                "len {len} cut {cut}"
            );
        }
    }
}

/// `bytes` (a perf.data) with `rec` inserted as the first record of its data section,
/// the data size and the feature sections after it moved along.
fn with_first_record(bytes: &[u8], rec: &[u8]) -> Vec<u8> {
    let at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap()) as usize;
    let (start, size) = (at(40), at(48));
    let end = start + size;
    let mut out = bytes[..start].to_vec();
    out.extend_from_slice(rec);
    out.extend_from_slice(&bytes[start..end]);
    out[48..56].copy_from_slice(&((size + rec.len()) as u64).to_le_bytes());
    let features: u32 = (0..4).map(|i| (at(72 + 8 * i) as u64).count_ones()).sum();
    for f in 0..features as usize {
        let o = end + 16 * f;
        out.extend_from_slice(&((at(o) + rec.len()) as u64).to_le_bytes());
        out.extend_from_slice(&bytes[o + 8..o + 16]);
    }
    out.extend_from_slice(&bytes[end + 16 * features as usize..]);
    out
}

/// A PERF_RECORD_LOST names, in its sample_id trailer, when and on which CPU's buffer
/// perf lost events: both paths read the CPU there (the analysis is then blind on that
/// CPU before that time, not on every CPU over the whole trace).
#[test]
fn a_lost_record_says_which_cpu_lost_events_on_both_paths() {
    let tmp = tmp();
    let (p, bytes) = example(tmp.path());
    let r = PerfData::open(&p, File::open(&p).unwrap(), 16).unwrap();
    let Mode::Fast(f) = &r.mode else {
        panic!("the fast path")
    };
    let l = &f.lays[0];
    let (trail, t_at, c_at) = (l.trail, l.trail_time.unwrap(), l.trail_cpu.unwrap());
    // The time of the first sample: the record goes first, in time order.
    let mut pos = u64::from_le_bytes(bytes[40..48].try_into().unwrap()) as usize;
    let ts = loop {
        let len = u16::from_le_bytes([bytes[pos + 6], bytes[pos + 7]]) as usize;
        let r = &bytes[pos..pos + len];
        if u32::from_le_bytes(r[..4].try_into().unwrap()) == REC_SAMPLE {
            break f.time_of(r, true).flatten().unwrap();
        }
        pos += len;
    };
    // header (type 2, misc 0, size), id, lost count, then the trailer.
    let size = 8 + 16 + trail;
    let mut rec = vec![2, 0, 0, 0, 0, 0];
    rec.extend_from_slice(&(size as u16).to_le_bytes());
    rec.extend_from_slice(&0u64.to_le_bytes());
    rec.extend_from_slice(&77u64.to_le_bytes());
    let mut tr = vec![0u8; trail];
    tr[t_at..t_at + 8].copy_from_slice(&ts.to_le_bytes());
    tr[c_at..c_at + 4].copy_from_slice(&1u32.to_le_bytes());
    rec.extend_from_slice(&tr);
    let lost = tmp.path().join("lost.perf.data");
    std::fs::write(&lost, with_first_record(&bytes, &rec)).unwrap();
    let mut s = Interner::new();
    let fast = PerfData::open(&lost, File::open(&lost).unwrap(), 1 << 16).unwrap();
    let generic = PerfData::open_generic(&lost, File::open(&lost).unwrap(), 1 << 16).unwrap();
    for (way, r) in [("fast", fast), ("generic", generic)] {
        let (events, _) = all(r, &mut s);
        let got: Vec<(u64, u32)> = (events.iter())
            .filter(|e| matches!(e.kind, crate::event::Kind::Lost { count: Some(77) }))
            .map(|e| (e.ts, e.cpu))
            .collect();
        assert_eq!(got, [(ts, 1)], "{way}");
    }
}
