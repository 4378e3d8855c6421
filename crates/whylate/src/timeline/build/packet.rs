//! Packets across CPUs: an skb handed to the stack (`net:netif_rx`, `net:net_dev_queue`)
//! and taken by it (`net:netif_receive_skb`, in NET_RX on the receiving CPU), matched by
//! skb address into [`EdgeKind::Packet`] edges.

use super::*;

/// Enqueued skbs still waiting for their receive, at most (a trace that records the
/// enqueue but not the receive must not grow this without bound).
const MAX_IN_FLIGHT: usize = 1 << 16;

impl Builder {
    /// A network event, if `name` is one; true when it was.
    pub(super) fn on_packet(&mut self, at: At, name: &str, text: &str) -> bool {
        let enqueue = matches!(name, "netif_rx" | "net_dev_queue");
        if !enqueue && name != "netif_receive_skb" {
            return false;
        }
        let Some(skb) = (crate::event::fields(text))
            .find(|(k, _)| *k == "skbaddr")
            .and_then(|(_, v)| u64::from_str_radix(v.trim_start_matches("0x"), 16).ok())
        else {
            return true;
        };
        let At {
            cpu, ts, ctx, curr, ..
        } = at;
        if enqueue {
            if self.in_flight.len() >= MAX_IN_FLIGHT {
                self.in_flight.clear();
            }
            // The first hand-off of an skb is where it entered the stack.
            self.in_flight.entry(skb).or_insert((ts, cpu, ctx, curr));
        } else if let Some((t0, from_cpu, from, from_tid)) = self.in_flight.remove(&skb) {
            self.edge(Edge {
                kind: EdgeKind::Packet,
                ts: t0,
                at: ts,
                from_cpu,
                from_tid,
                from,
                to_tid: curr,
                to_cpu: cpu,
                key: 0,
                val: skb,
                val2: 0,
                span: NONE,
                link: NONE,
            });
        }
        true
    }
}
