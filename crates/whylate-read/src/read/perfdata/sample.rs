//! Where a record's fields sit: the sample layout an attr's sample_type gives, and how a
//! record finds its attr (by id) and so its layout.

use rustc_hash::FxHashMap;

pub(super) use linux_perf_data::linux_perf_event_reader::constants::{
    PERF_RECORD_COMM as REC_COMM, PERF_RECORD_LOST as REC_LOST, PERF_RECORD_SAMPLE as REC_SAMPLE,
    PERF_SAMPLE_ADDR as S_ADDR, PERF_SAMPLE_CALLCHAIN as S_CALLCHAIN, PERF_SAMPLE_CPU as S_CPU,
    PERF_SAMPLE_ID as S_ID, PERF_SAMPLE_IDENTIFIER as S_IDENTIFIER, PERF_SAMPLE_IP as S_IP,
    PERF_SAMPLE_PERIOD as S_PERIOD, PERF_SAMPLE_RAW as S_RAW, PERF_SAMPLE_READ as S_READ,
    PERF_SAMPLE_STREAM_ID as S_STREAM_ID, PERF_SAMPLE_TID as S_TID, PERF_SAMPLE_TIME as S_TIME,
};
// perf's own (user-type) records; linux-perf-data keeps its constants private.
pub(super) const REC_FINISHED_ROUND: u32 = 68;
pub(super) const REC_COMPRESSED: u32 = 81;
pub(super) const REC_COMPRESSED2: u32 = 83;

/// Where a sample's fields sit, from the attr's sample_type (offsets from the record start,
/// header included), and where the time sits in other records' sample_id trailer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Layout {
    pub(super) id: Option<usize>,
    pub(super) tid: Option<usize>,
    pub(super) time: Option<usize>,
    pub(super) cpu: Option<usize>,
    /// End of the fixed-size fields (CALLCHAIN and RAW follow).
    pub(super) fixed: usize,
    pub(super) callchain: bool,
    pub(super) raw: bool,
    /// Bytes of the sample_id trailer of non-sample records (0 without sample_id_all).
    pub(super) trail: usize,
    /// The time's offset inside that trailer.
    pub(super) trail_time: Option<usize>,
    /// The CPU's offset inside that trailer.
    pub(super) trail_cpu: Option<usize>,
}

impl Layout {
    /// None for layouts the fast path leaves to the generic one (READ values before RAW).
    pub(super) fn new(st: u64, id_all: bool) -> Option<Layout> {
        if st & S_READ != 0 {
            return None;
        }
        let has = |b: u64| st & b != 0;
        let mut l = Layout {
            id: None,
            tid: None,
            time: None,
            cpu: None,
            fixed: 8,
            callchain: has(S_CALLCHAIN),
            raw: has(S_RAW),
            trail: 0,
            trail_time: None,
            trail_cpu: None,
        };
        let field = |on: bool, at: &mut Option<usize>, off: &mut usize| {
            if on {
                at.get_or_insert(*off);
                *off += 8;
            }
        };
        let mut off = 8;
        let mut skip = None;
        field(has(S_IDENTIFIER), &mut l.id, &mut off);
        field(has(S_IP), &mut skip, &mut off);
        field(has(S_TID), &mut l.tid, &mut off);
        field(has(S_TIME), &mut l.time, &mut off);
        field(has(S_ADDR), &mut skip, &mut off);
        field(has(S_ID), &mut l.id, &mut off);
        field(has(S_STREAM_ID), &mut skip, &mut off);
        field(has(S_CPU), &mut l.cpu, &mut off);
        field(has(S_PERIOD), &mut skip, &mut off);
        l.fixed = off;
        if id_all {
            // struct sample_id: tid, time, id, stream_id, cpu, identifier.
            let mut t = 0;
            let mut skip = None;
            field(has(S_TID), &mut skip, &mut t);
            field(has(S_TIME), &mut l.trail_time, &mut t);
            for b in [S_ID, S_STREAM_ID] {
                field(has(b), &mut skip, &mut t);
            }
            field(has(S_CPU), &mut l.trail_cpu, &mut t);
            field(has(S_IDENTIFIER), &mut skip, &mut t);
            l.trail = t;
        }
        Some(l)
    }
}

/// The attr index of record `r` from the id at `at` (always 0 with a single attr).
#[inline]
pub(super) fn attr_by_id(
    ids: &FxHashMap<u64, usize>,
    one_attr: bool,
    r: &[u8],
    at: Option<usize>,
) -> Option<usize> {
    match one_attr {
        true => Some(0),
        false => ids.get(&u64_at(r, at?)?).copied(),
    }
}

#[inline]
pub(super) fn u32_at(d: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        d.get(o..o.checked_add(4)?)?.try_into().ok()?,
    ))
}
#[inline]
pub(super) fn u64_at(d: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        d.get(o..o.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// What finds a record's attr and layout (the attrs' ids, their layouts): the scan's,
/// lent to decoding.
pub(super) struct Keys<'a> {
    pub(super) lays: &'a [Layout],
    pub(super) ids: &'a FxHashMap<u64, usize>,
    pub(super) one_attr: bool,
}

impl<'a> Keys<'a> {
    /// The layout of record `r` (a sample when `sample`): found from the id in its body
    /// or, for other records, IDENTIFIER, the last u64 of the sample_id trailer.
    #[inline]
    pub(super) fn layout(&self, r: &[u8], sample: bool) -> Option<&'a Layout> {
        match self.lays.len() {
            1 => self.lays.first(),
            _ => {
                let at = match sample {
                    true => self.lays[0].id,
                    false => r.len().checked_sub(8),
                };
                self.lays.get(attr_by_id(self.ids, self.one_attr, r, at)?)
            }
        }
    }
}
