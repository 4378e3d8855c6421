//! A trace.dat v6 as `record` writes it, read back into what it was written from: its
//! [`Meta`] and each CPU's pages. Tests replay recorded pages through `watch`'s tick
//! with it; writing the result again must give the same bytes.

use super::{MemPages, Meta};
use std::sync::Arc;

/// A byte cursor over the file, with what it expected in its errors.
struct Cur<'a> {
    d: &'a [u8],
    at: usize,
}

impl<'a> Cur<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.d.len());
        let end = end.ok_or_else(|| format!("byte {}: {what}: the file ends", self.at))?;
        let s = &self.d[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u16(&mut self, what: &str) -> Result<u16, String> {
        Ok(u16::from_le_bytes(
            self.take(2, what)?.try_into().expect("2"),
        ))
    }
    fn u32(&mut self, what: &str) -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4, what)?.try_into().expect("4"),
        ))
    }
    fn u64(&mut self, what: &str) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8, what)?.try_into().expect("8"),
        ))
    }
    fn tag(&mut self, tag: &[u8]) -> Result<(), String> {
        let at = self.at;
        match self.take(tag.len(), "a section name")? == tag {
            true => Ok(()),
            false => Err(format!(
                "byte {at}: expected {:?}",
                String::from_utf8_lossy(tag)
            )),
        }
    }
    fn cstr(&mut self, what: &str) -> Result<String, String> {
        let n = (self.d[self.at..].iter().position(|&b| b == 0))
            .ok_or_else(|| format!("byte {}: {what}: no terminating NUL", self.at))?;
        let s = String::from_utf8_lossy(self.take(n, what)?).into_owned();
        self.at += 1;
        Ok(s)
    }
    /// `n` blobs, each after its u64 length.
    fn blobs(&mut self, n: u32, what: &str) -> Result<Vec<Vec<u8>>, String> {
        (0..n)
            .map(|_| {
                let len = self.u64(what)? as usize;
                Ok(self.take(len, what)?.to_vec())
            })
            .collect()
    }
}

/// The [`Meta`] and per-CPU pages of `d`, a little-endian trace.dat v6 written by
/// `record` (the options it writes; others are an error).
pub(crate) fn read_back(d: &[u8]) -> Result<(Meta, Vec<MemPages>), String> {
    let mut c = Cur { d, at: 0 };
    c.tag(whylate::read::tracedat::MAGIC)?;
    c.tag(b"6\0\0\x08")?;
    let page = c.u32("page size")? as usize;
    c.tag(b"header_page\0")?;
    let n = c.u64("header_page size")? as usize;
    let header_page = String::from_utf8_lossy(c.take(n, "header_page")?).into_owned();
    c.tag(b"header_event\0")?;
    let n = c.u64("header_event size")? as usize;
    let header_event = String::from_utf8_lossy(c.take(n, "header_event")?).into_owned();
    let n = c.u32("ftrace format count")?;
    let mut formats = vec![("ftrace".to_string(), c.blobs(n, "an ftrace format")?)];
    for _ in 0..c.u32("system count")? {
        let sys = c.cstr("a system name")?;
        let n = c.u32("format count")?;
        formats.push((sys, c.blobs(n, "an event format")?));
    }
    let n = c.u32("kallsyms size")? as usize;
    let kallsyms = c.take(n, "kallsyms")?.to_vec();
    let n = c.u32("printk size")? as usize;
    let printk = c.take(n, "printk formats")?.to_vec();
    let n = c.u64("cmdlines size")? as usize;
    let cmdlines = c.take(n, "cmdlines")?.to_vec();
    let ncpu = c.u32("CPU count")?;
    c.tag(b"options  \0")?;
    let (mut clock, mut uname, mut cpustats, mut snapshot) = (None, None, Vec::new(), None);
    loop {
        let id = c.u16("option id")?;
        if id == 0 {
            break;
        }
        let n = c.u32("option size")? as usize;
        let data = c.take(n, "an option")?;
        let text = || String::from_utf8_lossy(data.strip_suffix(&[0]).unwrap_or(data)).into();
        match id {
            4 => clock = Some(text()),
            5 => uname = Some(text()),
            2 => cpustats.push(text()),
            whylate::snapshot::OPTION_ID => snapshot = Some(data.to_vec()),
            _ => return Err(format!("option {id}: not one record writes")),
        }
    }
    c.tag(b"flyrecord\0")?;
    let mut cpus = Vec::new();
    for cpu in 0..ncpu {
        let (off, size) = (c.u64("CPU data offset")?, c.u64("CPU data size")?);
        let range = (off.checked_add(size))
            .and_then(|end| Some(usize::try_from(off).ok()?..usize::try_from(end).ok()?));
        let data = (range.and_then(|r| d.get(r)))
            .ok_or_else(|| format!("CPU {cpu}: data at {off} of {size} bytes past the end"))?;
        let pages = data.chunks(page.max(1)).map(Arc::from).collect();
        cpus.push(MemPages { cpu, pages });
    }
    let meta = Meta {
        page,
        header_page,
        header_event,
        formats,
        kallsyms,
        printk,
        cmdlines,
        clock: clock.unwrap_or_default(),
        uname: uname.unwrap_or_default(),
        cpustats,
        snapshot: snapshot.unwrap_or_default(),
    };
    Ok((meta, cpus))
}

/// A bundled recording (`examples/NAME`, zstd), decompressed.
pub(crate) fn example(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    let f = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    zstd::decode_all(f).expect("a zstd file")
}

#[cfg(test)]
mod tests {
    use super::example;

    #[test]
    fn a_recording_read_back_and_written_again_is_the_same_file() {
        for name in ["frob.dat.zst", "timer.dat.zst", "softirq.dat.zst"] {
            let d = example(name);
            let (meta, mut cpus) = super::read_back(&d).unwrap();
            let dir = tempfile::tempdir().unwrap();
            let out = dir.path().join("again.dat");
            super::super::write_dat(&out, &meta, &mut cpus).unwrap();
            let again = std::fs::read(&out).unwrap();
            assert_eq!(again.len(), d.len(), "{name}");
            assert!(again == d, "{name}: the bytes differ");
        }
    }
}
