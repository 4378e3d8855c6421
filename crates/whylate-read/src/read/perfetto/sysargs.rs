//! A raw `sys_enter`'s arguments, held inline in the decoded event: six `u64`s in an
//! array, not a `Vec` (which cost an allocation, a growth and a free for each of a
//! trace's syscall entries, a fifth of the reading thread). The generated
//! `SysEnterFtraceEvent` decodes into it with prost's own field functions.

use prost::bytes::Buf;
use prost::encoding::{merge_loop, uint64, DecodeContext, WireType};
use prost::DecodeError;

/// How many arguments a raw syscall entry carries (`args[6]` in its format).
pub const MAX: usize = 6;

/// The arguments read, in order; values past [`MAX`] are dropped (the kernel writes six,
/// and the event keeps six).
#[derive(Clone, PartialEq, Debug, Default)]
pub struct Args {
    v: [u64; MAX],
    len: u8,
}

impl Args {
    /// The arguments read.
    pub fn as_slice(&self) -> &[u64] {
        &self.v[..self.len as usize]
    }

    /// Appends one, unless six are held.
    pub fn push(&mut self, x: u64) {
        if let Some(slot) = self.v.get_mut(self.len as usize) {
            *slot = x;
            self.len += 1;
        }
    }

    /// Merges field values as prost's `uint64::merge_repeated` does: one varint, or a
    /// packed run of them.
    pub fn merge(
        &mut self,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        if wire_type == WireType::LengthDelimited {
            return merge_loop(self, buf, ctx, |a, buf, ctx| {
                a.merge_one(WireType::Varint, buf, ctx)
            });
        }
        self.merge_one(wire_type, buf, ctx)
    }

    fn merge_one(
        &mut self,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        let mut x = 0;
        uint64::merge(wire_type, &mut x, buf, ctx)?;
        self.push(x);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::protos::SysEnterFtraceEvent;
    use prost::Message;

    /// The derive's shape of the same message, for comparison.
    #[derive(Clone, PartialEq, prost::Message)]
    struct Derived {
        #[prost(int64, optional, tag = "1")]
        id: Option<i64>,
        #[prost(uint64, repeated, packed = "false", tag = "2")]
        args: Vec<u64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    struct Packed {
        #[prost(int64, optional, tag = "1")]
        id: Option<i64>,
        #[prost(uint64, repeated, packed = "true", tag = "2")]
        args: Vec<u64>,
        #[prost(string, optional, tag = "9")]
        unknown: Option<String>,
    }

    #[test]
    fn decodes_what_the_derive_decodes_unpacked_packed_and_over_six() {
        let six = vec![3, 0, u64::MAX, 1 << 40, 7, 9];
        let bytes = Derived {
            id: Some(1),
            args: six.clone(),
        }
        .encode_to_vec();
        let got = SysEnterFtraceEvent::decode(&bytes[..]).unwrap();
        assert_eq!((got.id, got.args.as_slice()), (Some(1), &six[..]));
        // It writes what the derive writes.
        assert_eq!(got.encode_to_vec(), bytes);
        assert_eq!(got.encoded_len(), bytes.len());
        // Packed, with an unknown field, and eight values: six kept.
        let eight = vec![1, 2, 3, 4, 5, 6, 7, 8];
        let p = Packed {
            id: Some(-1),
            args: eight,
            unknown: Some("x".into()),
        };
        let got = SysEnterFtraceEvent::decode(&p.encode_to_vec()[..]).unwrap();
        assert_eq!(
            (got.id, got.args.as_slice()),
            (Some(-1), &[1, 2, 3, 4, 5, 6][..])
        );
        // A cut inside the packed run is an error, as with the derive.
        let b = p.encode_to_vec();
        let cut = &b[..b.len() - 5];
        assert!(SysEnterFtraceEvent::decode(cut).is_err());
        assert!(Derived::decode(cut).is_err());
    }
}
