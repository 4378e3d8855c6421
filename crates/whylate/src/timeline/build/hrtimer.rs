//! Hrtimer events (armed, expired, the task the callback woke), timer_list callback runs
//! and self-reported lateness.

use super::*;

impl Builder {
    /// Hrtimer events (armed, expired, the task the callback woke) and self-reported lateness.
    pub(super) fn on_hrtimer(&mut self, at: At, e: &Event, strings: &Interner) {
        let At {
            c,
            cpu,
            ts,
            ctx,
            curr,
            ..
        } = at;
        match &e.kind {
            Kind::HrtimerStart {
                timer,
                function,
                expires_ns,
                softexpires_ns,
            } => {
                let soft = if *softexpires_ns == 0 {
                    *expires_ns
                } else {
                    *softexpires_ns
                };
                self.armed.insert(
                    *timer,
                    Armed {
                        ts,
                        cpu,
                        tid: curr,
                        ctx,
                        function: *function,
                        soft,
                    },
                );
            }
            // The kernel traces hrtimer_cancel also when it dequeues a timer to run it,
            // right before hrtimer_expire_entry; a real cancel is always followed by a
            // new hrtimer_start before any expiry. So a cancel changes nothing here.
            Kind::HrtimerCancel { .. } => {}
            Kind::HrtimerExpireEntry {
                timer,
                function,
                now_ns,
            } => {
                if strings.get(*function).starts_with("tick_") {
                    self.tl.ticks += 1;
                    // Tick to tick on one CPU, for the period (a busy CPU never skips one).
                    let last = &mut self.tick_last[c];
                    if *last != 0 && self.tick_gaps.len() < 4096 {
                        self.tick_gaps.push(ts - *last);
                    }
                    *last = ts;
                }
                let a = self.armed.remove(timer);
                if let Some(now) = now_ns {
                    self.timer_offset = Some(ts as i64 - *now as i64);
                }
                let function = pick(*function, a.map_or(Sym::EMPTY, |a| a.function));
                let edge = self.edge(Edge {
                    kind: EdgeKind::Timer,
                    ts: a.map_or(0, |a| a.ts),
                    at: ts,
                    from_cpu: a.map_or(u32::MAX, |a| a.cpu),
                    from_tid: a.map_or(-1, |a| a.tid),
                    from: a.map_or(Ctx::Unknown, |a| a.ctx),
                    to_tid: -1,
                    to_cpu: cpu,
                    key: function.0,
                    val: a.map_or(u64::MAX, |a| a.soft),
                    val2: now_ns.unwrap_or(u64::MAX),
                    span: NONE,
                    link: NONE,
                });
                self.cpus[c].frames.push(Frame {
                    kind: FrameKind::Timer(edge, function),
                    start: ts,
                });
            }
            Kind::HrtimerExpireExit { .. } => {
                let cs = &mut self.cpus[c];
                match pop_frame(cs, |k| matches!(k, FrameKind::Timer(..))) {
                    Some(Frame {
                        kind: FrameKind::Timer(edge, function),
                        start,
                    }) => {
                        let fl = self.loss_flag(cpu, start, ts);
                        let comm = self.cpus[c].curr_comm;
                        let i = self.tl.spans.push(
                            SpanKind::TimerCb,
                            cpu,
                            curr,
                            comm,
                            start,
                            ts,
                            function.0,
                            edge,
                            fl,
                        );
                        self.tl.edges[edge as usize].span = i;
                    }
                    _ => self.tl.anomalies.unmatched_exits += 1,
                }
            }
            Kind::TimerStart { timer, .. } => match ctx {
                Ctx::Task { tid } if tid > 0 => {
                    self.timer_armed.insert(*timer, tid);
                }
                _ => {
                    self.timer_armed.remove(timer);
                }
            },
            Kind::TimerExpireEntry {
                timer, function, ..
            } => {
                self.timer_open.insert(cpu, (*timer, ts, *function));
            }
            Kind::TimerExpireExit { timer } => {
                if let Some((t, start, function)) = self.timer_open.remove(&cpu) {
                    if t == *timer {
                        let armed_by = self.timer_armed.get(timer).copied().unwrap_or(-1);
                        self.tl.timer_list.push(TimerListRun {
                            cpu,
                            start,
                            end: ts,
                            function,
                            armed_by,
                        });
                    }
                }
            }
            Kind::Other { name, fields } => self.reported(*name, fields, ts, cpu, curr),
            Kind::Print { name, msg } => self.reported(*name, msg, ts, cpu, curr),
            _ => {}
        }
    }

    /// Text such as `hrtimer stat: now: 14372743560 [us] expect_expires: 14372733903 [us]`
    /// (a test module's own lateness report) and `8 overruns` right after it.
    pub(super) fn reported(&mut self, name: Sym, text: &str, ts: u64, cpu: u32, tid: i32) {
        if let Some(late) = parse_reported(text) {
            self.tl.reported.push(ReportedLate {
                ts,
                cpu,
                tid,
                name,
                late_ns: late,
                overruns: None,
            });
            self.last_reported = Some(self.tl.reported.len() - 1);
            self.overrun_name = name;
        } else if let (Some(i), true) = (self.last_reported, name == self.overrun_name) {
            if let Some(n) = parse_overruns(text) {
                self.tl.reported[i].overruns = Some(n);
                self.last_reported = None;
            }
        }
    }
}

/// Number after `key` (`now: 123 [us]`, `now=123`), scaled by its unit to ns.
fn num_after(text: &str, key: &str) -> Option<u64> {
    let at = text.find(key)? + key.len();
    let rest = text[at..].trim_start_matches([':', '=', ' ']);
    let digits = rest.bytes().take_while(|b| b.is_ascii_digit()).count();
    let v: u64 = rest[..digits].parse().ok()?;
    let unit = rest[digits..].trim_start();
    let mul = if unit.starts_with("[us]") || unit.starts_with("us") {
        1_000
    } else if unit.starts_with("[ms]") || unit.starts_with("ms") {
        1_000_000
    } else {
        1
    };
    v.checked_mul(mul)
}

fn parse_reported(text: &str) -> Option<u64> {
    if !text.contains("now") || !text.contains("expire") {
        return None;
    }
    let now = num_after(text, "now")?;
    let exp = ["expect_expires", "expected_expires", "expires", "expected"]
        .iter()
        .find_map(|k| num_after(text, k))?;
    Some(now.saturating_sub(exp))
}

fn parse_overruns(text: &str) -> Option<u64> {
    let t = text.trim();
    let n = t
        .strip_suffix("overruns")
        .or_else(|| t.strip_suffix("overrun"))?;
    n.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reported_lateness() {
        let t = "hrtimer stat: now: 14372743560 [us] expect_expires: 14372733903 [us], delta: 9656, next_expires: 14372744570";
        assert_eq!(parse_reported(t), Some(9_657_000));
        assert_eq!(parse_overruns("8 overruns"), Some(8));
        assert_eq!(parse_reported("comm=x pid=1"), None);
    }
}
