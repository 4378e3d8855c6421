//! `perf.data` read natively: the container (attrs, ids, records, FINISHED_ROUND ordering,
//! `-z` compressed records) through `linux-perf-data`; tracepoint payloads (the RAW sample
//! field, an ftrace record) through the same format code as trace.dat, with the formats
//! from the file's TRACING_DATA section.

use super::tep::{self, Decoder, Formats};
use super::{Diag, ReadError};
use crate::event::{Event, Interner, Kind, Sym};
use linux_perf_data::linux_perf_event_reader::EventRecord;
use linux_perf_data::{Feature, PerfFileReader, PerfFileRecord};
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

/// True when `head` starts like a perf.data (either byte order).
pub fn sniff(head: &[u8]) -> bool {
    head.starts_with(b"PERFILE2") || head.starts_with(b"2ELIFREP")
}

/// What the header says.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct PerfInfo {
    /// Event names recorded (`sched:sched_switch`, `cycles`).
    pub events: Vec<String>,
    /// `perf record` command line.
    pub cmdline: Option<String>,
    /// Kernel release of the recording machine.
    pub os_release: Option<String>,
    /// Pipe-mode file (`perf record -o -`).
    pub pipe: bool,
}

type Reader = PerfFileReader<BufReader<File>>;

/// Reads a perf.data file.
pub struct PerfData {
    path: PathBuf,
    rd: Reader,
    fmts: Formats,
    decoder: Decoder,
    /// Per attr index: the attr's name as a symbol (for non-tracepoint samples).
    attr_names: Vec<Option<String>>,
    attr_syms: Vec<Sym>,
    comms: super::comms::Comms,
    diag: Diag,
    info: PerfInfo,
    bytes: u64,
    order: super::OrderCheck,
}

impl PerfData {
    /// Opens `path`.
    pub fn open(path: &Path, file: File) -> Result<PerfData, ReadError> {
        let err = |why: String| ReadError::Corrupt {
            path: path.to_path_buf(),
            offset: 0,
            why,
        };
        let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
        let mut head = [0u8; 16];
        {
            use std::os::unix::fs::FileExt;
            file.read_exact_at(&mut head, 0)
                .map_err(|e| ReadError::Io {
                    path: path.to_path_buf(),
                    source: e,
                })?;
        }
        // A pipe-mode file's header is only magic + size (16).
        let pipe = u64::from_le_bytes(head[8..16].try_into().expect("8 bytes")) == 16
            || u64::from_be_bytes(head[8..16].try_into().expect("8 bytes")) == 16;
        if pipe {
            return Err(err(
                "a pipe-mode perf.data (perf record -o -): convert it with `perf inject -i FILE -o FILE2` and read FILE2".into(),
            ));
        }
        let rd = PerfFileReader::parse_file(BufReader::with_capacity(1 << 20, file))
            .map_err(|e| err(format!("not a readable perf.data: {e}")))?;
        let pf = &rd.perf_file;
        let attrs = pf.event_attributes();
        let mut info = PerfInfo {
            events: attrs
                .iter()
                .map(|a| a.name().unwrap_or("?").to_string())
                .collect(),
            cmdline: pf.cmdline().ok().flatten().map(|v| v.join(" ")),
            os_release: pf.os_release().ok().flatten().map(str::to_string),
            pipe,
        };
        info.events.dedup();
        let attr_names = attrs.iter().map(|a| a.name().map(str::to_string)).collect();
        let (mut fmts, cmdlines) = match pf.feature_section_data(Feature::TRACING_DATA) {
            Some(td) => super::tracedat::parse_tracing_data(td).map_err(|(off, why)| {
                ReadError::Corrupt {
                    path: path.to_path_buf(),
                    offset: off,
                    why: format!("TRACING_DATA section: {why}"),
                }
            })?,
            None => (Formats::default(), Vec::new()),
        };
        // perf stores no kernel symbols; like perf script, use this machine's when the file
        // was recorded on this kernel (function pointers in workqueue and timer events).
        let here = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        if fmts.kallsyms.is_empty() && info.os_release.as_deref() == Some(here.trim()) {
            if let Ok(k) = std::fs::read("/proc/kallsyms") {
                fmts.load_kallsyms(&k);
            }
        }
        Ok(PerfData {
            path: path.to_path_buf(),
            rd,
            fmts,
            decoder: Decoder::new(),
            attr_names,
            attr_syms: Vec::new(),
            comms: super::comms::Comms::new(cmdlines, Vec::new()),
            diag: Diag::default(),
            info,
            bytes,
            order: super::OrderCheck::default(),
        })
    }

    /// What the header says.
    pub fn info(&self) -> &PerfInfo {
        &self.info
    }
    /// The event formats from TRACING_DATA.
    pub fn formats(&self) -> &Formats {
        &self.fmts
    }
    /// File size.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// The input's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// What the reader noticed.
    pub fn diag(&self) -> &Diag {
        &self.diag
    }

    /// Events that came earlier than one before them (a skewed clock between CPUs).
    pub fn order(&self) -> super::OrderStats {
        self.order.stats
    }

    fn seed(&mut self, s: &mut Interner) {
        self.attr_syms = self
            .attr_names
            .iter()
            .map(|n| s.intern(n.as_deref().unwrap_or("sample")))
            .collect();
    }

    /// Next event in time order.
    pub fn next_decoded(&mut self, s: &mut Interner) -> Result<Option<Event>, ReadError> {
        self.comms.seed(s);
        if self.attr_syms.len() != self.attr_names.len() {
            self.seed(s);
        }
        loop {
            // The error is built only when there is one: cloning the path per call showed
            // up as an allocation per event.
            let Some(rec) = self
                .rd
                .record_iter
                .next_record(&mut self.rd.perf_file)
                .map_err(|e| ReadError::Corrupt {
                    path: self.path.clone(),
                    offset: 0,
                    why: format!("perf.data record: {e}"),
                })?
            else {
                return Ok(None);
            };
            let PerfFileRecord::EventRecord { attr_index, record } = rec else {
                continue;
            };
            let parsed = match record.parse() {
                Ok(p) => p,
                Err(_) => {
                    self.diag.unparsed += 1;
                    continue;
                }
            };
            match parsed {
                EventRecord::Comm(c) => {
                    let name = s.intern_bytes(&c.name.as_slice());
                    self.comms.set(c.tid, name);
                }
                EventRecord::Lost(l) => {
                    let ts = record.timestamp().unwrap_or(0);
                    return Ok(Some(Event::lost(ts, Event::NO_CPU, Some(l.count))));
                }
                EventRecord::Sample(smp) => {
                    let ts = smp.timestamp.unwrap_or(0);
                    let cpu = smp.cpu.unwrap_or(Event::NO_CPU);
                    let tid = smp.tid.unwrap_or(-1);
                    let tgid = smp.pid.unwrap_or(-1);
                    let (kind, flags) = match &smp.raw {
                        Some(raw) if !self.fmts.is_empty() => {
                            let data = raw.as_slice();
                            let e = self.fmts.endian;
                            let Some(c) = tep::common(&data, e) else {
                                self.diag.unparsed += 1;
                                continue;
                            };
                            let Some(fmt) = self.fmts.get(c.id) else {
                                self.diag.bad(
                                    0,
                                    format!("sample at {ts} ns has event id {}", c.id).as_bytes(),
                                    "an event id with no format in TRACING_DATA",
                                );
                                continue;
                            };
                            (self.decoder.decode(&self.fmts, fmt, &data, s), c.flags)
                        }
                        _ => (
                            Kind::Other {
                                name: self
                                    .attr_syms
                                    .get(attr_index)
                                    .copied()
                                    .unwrap_or(Sym::EMPTY),
                                fields: "".into(),
                            },
                            0,
                        ),
                    };
                    self.comms.learn(&kind);
                    let comm = self.comms.get(tid);
                    self.order.see(ts);
                    return Ok(Some(Event {
                        ts,
                        cpu,
                        tid,
                        tgid,
                        comm,
                        flags,
                        kind,
                    }));
                }
                _ => {}
            }
        }
    }
}
