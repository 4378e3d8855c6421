//! Tracepoint `format` files and binary records: the part trace.dat and perf.data share.
//!
//! A record's fields are decoded structurally from the offsets and sizes the kernel
//! published in each event's `format` file; `print fmt` is never evaluated (it calls
//! kernel helpers like `__print_flags`), only read for the conversion (`%03d`, `%ps`) of
//! each field it prints directly, which libtraceevent's raw printer also uses. [`Formats::render_raw`] prints the fields the way
//! `trace-cmd report -R` (libtraceevent's raw printer) does, so the two can be compared
//! field by field. [`Decoder`] turns a record into the typed [`Kind`](crate::event::Kind) every reader produces.

mod decode;
mod format;
mod formats;
mod plan;
mod pure;
mod render;
mod value;

pub use decode::*;
pub use format::*;
pub use formats::*;
pub use plan::{common, Common};
pub use pure::Pure;
pub use value::*;

#[cfg(test)]
mod tests {
    use super::decode::*;
    use super::format::*;
    use super::formats::*;
    use super::value::*;
    use crate::event::*;

    #[test]
    fn uint_reads_every_size_and_order_at_every_offset() {
        let d: Vec<u8> = (1..=20u8).map(|x| x.wrapping_mul(37)).collect();
        for big in [false, true] {
            let e = Endian { big };
            for size in 0..=9usize {
                for off in 0..=d.len() + 1 {
                    let want = d.get(off..off + size).and_then(|b| {
                        matches!(size, 1 | 2 | 4 | 8).then(|| {
                            let it = b.iter();
                            let fold = |v: u64, x: &u8| v << 8 | *x as u64;
                            if big {
                                it.fold(0, fold)
                            } else {
                                it.rev().fold(0, fold)
                            }
                        })
                    });
                    assert_eq!(
                        e.uint(&d, off, size),
                        want,
                        "big {big} size {size} off {off}"
                    );
                }
            }
        }
    }

    #[test]
    fn kallsyms_parse_on_first_use() {
        let mut f = Formats::default();
        assert!(!f.has_kallsyms());
        f.load_kallsyms(
            b"ffffffff81000000 T _stext\nffffffff81001000 t do_one\tmod\nffffffff81002000 D data\nffffffff81003000 T two\n",
        );
        assert_eq!(f.stext(), Some(0xffffffff81000000));
        assert_eq!(f.symbol(0xffffffff81001010), Some("do_one"));
        // A data symbol does not shadow the function before it.
        assert_eq!(f.symbol(0xffffffff81002010), Some("do_one"));
        assert_eq!(f.symbol(0xffffffff81003004), Some("two"));
        assert_eq!(f.symbol(0x1000), None);
        assert!(f.has_kallsyms());
        // A clone shares the parsed table.
        assert_eq!(f.clone().symbol(0xffffffff81003000), Some("two"));
    }

    const SWITCH: &str = "name: sched_switch
ID: 316
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;

print fmt: \"prev_comm=%s\", REC->prev_comm
";

    #[test]
    fn parses_a_format_and_renders_raw() {
        let f = parse_format(SWITCH, "sched").unwrap();
        assert_eq!(f.id, 316);
        assert_eq!(f.fields.len(), 7);
        assert_eq!(f.common.len(), 4);
        let comm = f.field("prev_comm").unwrap();
        assert!(comm.string);
        assert_eq!(comm.layout, Layout::Array { elem: 1 });
        let mut d = vec![0u8; 64];
        d[0..2].copy_from_slice(&316u16.to_le_bytes());
        d[8..12].copy_from_slice(b"bash");
        d[24..28].copy_from_slice(&42i32.to_le_bytes());
        d[28..32].copy_from_slice(&120i32.to_le_bytes());
        d[32..40].copy_from_slice(&1i64.to_le_bytes());
        d[40..47].copy_from_slice(b"swapper");
        d[60..64].copy_from_slice(&(-1i32).to_le_bytes());
        let mut fm = Formats::new(Endian::default(), 8);
        fm.add(f.clone());
        let mut out = String::new();
        fm.render_raw(&f, &d, &mut out);
        assert_eq!(
            out,
            "prev_comm=bash prev_pid=42 prev_prio=120 prev_state=1 next_comm=swapper next_pid=0 next_prio=-1"
        );
        let mut s = Interner::new();
        let k = Decoder::new().decode(&fm, &f, &d, &mut s);
        match k {
            Kind::SchedSwitch {
                prev_pid,
                prev_state,
                next_prio,
                ..
            } => {
                assert_eq!(prev_pid, 42);
                assert_eq!(next_prio, -1);
                assert!(!prev_state.is_runnable());
            }
            _ => panic!("{k:?}"),
        }
    }

    #[test]
    fn data_loc_and_rel_loc() {
        let dl =
            parse_field("\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;").unwrap();
        assert_eq!(dl.layout, Layout::DataLoc { elem: 1 });
        assert!(dl.string);
        let mut d = vec![0u8; 32];
        // 5 bytes ("eth0\0") at offset 20.
        d[12..16].copy_from_slice(&((5u32 << 16) | 20).to_le_bytes());
        d[20..25].copy_from_slice(b"eth0\0");
        assert_eq!(dl.str(&d, Endian::default()), b"eth0");
        let rl =
            parse_field("\tfield:__rel_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;").unwrap();
        // Relative to the end of the field (16): offset 4 → 20.
        d[12..16].copy_from_slice(&((5u32 << 16) | 4).to_le_bytes());
        assert_eq!(rl.str(&d, Endian::default()), b"eth0");
        let arr =
            parse_field("\tfield:unsigned long args[6];\toffset:16;\tsize:48;\tsigned:0;").unwrap();
        assert_eq!(arr.layout, Layout::Array { elem: 8 });
        assert!(!arr.string);
        assert!(parse_field("\tfield:garbage").is_none());
    }

    #[test]
    fn print_fmt_conversions_pair_with_fields_like_libtraceevent() {
        // Fields hrtimer, now, function; print fmt order hrtimer, function, now. `now`
        // takes the last conversion, after which `function` takes none (hex, not %ps).
        let text = "name: hrtimer_expire_entry\nID: 9\nformat:\n\tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:s64 now;\toffset:16;\tsize:8;\tsigned:1;\n\tfield:void * function;\toffset:24;\tsize:8;\tsigned:0;\n\nprint fmt: \"hrtimer=%p function=%ps now=%llu\", REC->hrtimer, REC->function, (unsigned long long) REC->now\n";
        let f = parse_format(text, "timer").unwrap();
        assert_eq!(
            f.field("hrtimer").unwrap().spec.as_ref().unwrap().conv,
            b'p'
        );
        assert_eq!(f.field("now").unwrap().spec.as_ref().unwrap().conv, b'u');
        assert!(f.field("function").unwrap().spec.is_none());
        let w = "name: sched_wakeup\nID: 3\nformat:\n\tfield:int target_cpu;\toffset:8;\tsize:4;\tsigned:1;\n\nprint fmt: \"target_cpu=%03d x=0x%lx\", REC->target_cpu, REC->x\n";
        let f = parse_format(w, "sched").unwrap();
        let mut d = vec![0u8; 12];
        d[8..12].copy_from_slice(&7i32.to_le_bytes());
        let mut out = String::new();
        f.fields[0].render(&d, Endian::default(), &|_| None, &mut out);
        assert_eq!(out, "007");
        let c = conversions(b"a=0x%lx b=%-5s c=%*d %%");
        assert!(c[0].as_ref().unwrap().after_0x);
        assert_eq!(c[0].as_ref().unwrap().bits, 64);
        assert!(c[1].as_ref().unwrap().left);
        assert!(c[2].is_none(), "`*` takes an argument");
        assert_eq!(c.len(), 4);
        assert_eq!(
            split_args("REC->a, __print_flags(REC->f, \"|\", { 1, \"A\" }), (long)REC->b - REC->c"),
            vec![
                "REC->a",
                "__print_flags(REC->f, \"|\", { 1, \"A\" })",
                "(long)REC->b - REC->c"
            ]
        );
        assert_eq!(direct_field("(void *)REC->ip"), Some("ip"));
        assert_eq!(direct_field("(long)REC->b - REC->c"), None);
    }

    #[test]
    fn big_endian_numbers() {
        let e = Endian { big: true };
        assert_eq!(e.u32(&[0, 0, 1, 2], 0), Some(258));
        assert_eq!(e.uint(&[1, 2], 0, 2), Some(258));
        assert_eq!(e.u64(&[0; 4], 0), None);
    }
}
