//! Pure parsers of a tracefs instance's text: `trace_pipe` lines (switch-outs, wakeups,
//! exits, `balance_dirty_pages`, stack traces, lost-event notes) and an event's `format`
//! file. Lines are bytes: a task name is up to 15 raw bytes and need not be UTF-8.
//!
//! A line's header is `COMM-PID [CPU] FLAGS SECS.USECS: EVENT: BODY`, the name right-aligned
//! in 16 columns; every field after a task name is read from fixed positions after it, so a
//! name that imitates a field (`x prev_pid=1`) cannot move them.

/// One entry of `trace_pipe`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceEvent {
    /// `sched_switch` away from a thread (`tid`) that blocked: `state` is the first letter
    /// of `prev_state` (`S`, `D`, `T`, `X` …; `R` for a preemption).
    SwitchOut { tid: u32, ts_ns: u64, state: char },
    /// The kernel stack of `tid` (the task that logged it), innermost first, as function
    /// names (`balance_dirty_pages`).
    Stack {
        tid: u32,
        ts_ns: u64,
        frames: Vec<String>,
    },
    /// `sched_wakeup` of `tid` (logged by whichever task woke it).
    Wakeup { tid: u32, ts_ns: u64 },
    /// `sched_process_exit` of `tid`.
    Exit { tid: u32, ts_ns: u64 },
    /// `writeback:balance_dirty_pages` logged by `tid`, the task being paced.
    Throttle {
        tid: u32,
        ts_ns: u64,
        throttle: Throttle,
    },
    /// `CPU:N [LOST n EVENTS]`: the ring overflowed and entries are missing.
    Lost { events: u64 },
}

/// The figures of one `balance_dirty_pages` event, in the kernel's units: pages for the dirty
/// figures, ms for the times. Absent fields (older kernels name some differently) are 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Throttle {
    /// The sleep this call is about to take, ms (negative: the task is behind, no sleep).
    pub pause_ms: i64,
    /// Time already slept in this call before this pause, ms.
    pub paused_ms: u64,
    /// Global dirty pages, the global limit and setpoint the kernel used.
    pub dirty: u64,
    pub limit: u64,
    pub setpoint: u64,
    /// The device's (`wb_*`, before 4.3 `bdi_*`) dirty pages and setpoint.
    pub wb_dirty: u64,
    pub wb_setpoint: u64,
}

/// Field names of `balance_dirty_pages` on this kernel, from its `format` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThrottleFields {
    pub wb_dirty: String,
    pub wb_setpoint: String,
}

impl Default for ThrottleFields {
    fn default() -> Self {
        ThrottleFields {
            wb_dirty: "wb_dirty".into(),
            wb_setpoint: "wb_setpoint".into(),
        }
    }
}

/// The `field:TYPE NAME;` names of an event's `format` file, in order.
pub fn format_fields(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("field:"))
        .filter_map(|l| l.split(';').next())
        .filter_map(|decl| decl.split_whitespace().last())
        .map(|name| name.split('[').next().unwrap_or(name).to_string())
        .collect()
}

/// What `balance_dirty_pages`' fields are called here; `None` when it has no `pause` (not
/// the event this parser knows).
pub fn throttle_fields(format: &str) -> Option<ThrottleFields> {
    let fields = format_fields(format);
    let has = |n: &str| fields.iter().any(|f| f == n);
    if !has("pause") {
        return None;
    }
    let pick = |new: &str, old: &str| if has(new) || !has(old) { new } else { old }.to_string();
    Some(ThrottleFields {
        wb_dirty: pick("wb_dirty", "bdi_dirty"),
        wb_setpoint: pick("wb_setpoint", "bdi_setpoint"),
    })
}

/// Turns `trace_pipe` text into events, across reads: a line cut by the end of a read is
/// kept until the rest comes; a stack trace's frames are gathered until its last one.
#[derive(Debug, Default)]
pub struct TraceParser {
    partial: Vec<u8>,
    stack: Option<(u32, u64, Vec<String>)>,
    fields: ThrottleFields,
}

impl TraceParser {
    pub fn new(fields: ThrottleFields) -> Self {
        TraceParser {
            fields,
            ..Default::default()
        }
    }

    /// Parses the complete lines of `bytes` (after what an earlier call left) into `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<TraceEvent>) {
        let mut rest = bytes;
        while let Some(nl) = rest.iter().position(|b| *b == b'\n') {
            let (line, tail) = rest.split_at(nl);
            rest = &tail[1..];
            if self.partial.is_empty() {
                self.line(line, out);
            } else {
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(line);
                self.line(&whole, out);
            }
        }
        self.partial.extend_from_slice(rest);
    }

    /// Ends a stack trace still being gathered (the reader found no more text for now:
    /// `trace_pipe` hands out whole entries, so its frames are all there).
    pub fn flush(&mut self, out: &mut Vec<TraceEvent>) {
        if let Some((tid, ts_ns, frames)) = self.stack.take() {
            out.push(TraceEvent::Stack { tid, ts_ns, frames });
        }
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<TraceEvent>) {
        if let Some(frame) = line.strip_prefix(b" => ") {
            if let Some((_, _, frames)) = self.stack.as_mut() {
                frames.push(frame_name(frame));
            }
            return;
        }
        self.flush(out);
        if let Some(n) = lost_events(line) {
            out.push(TraceEvent::Lost { events: n });
            return;
        }
        let Some((tid, ts_ns, event, body)) = header(line) else {
            return;
        };
        let ev = match event {
            b"<stack trace>" => {
                self.stack = Some((tid, ts_ns, Vec::new()));
                None
            }
            b"sched_switch" => {
                switch_state(body).map(|state| TraceEvent::SwitchOut { tid, ts_ns, state })
            }
            b"sched_wakeup" => named_pid(body).map(|tid| TraceEvent::Wakeup { tid, ts_ns }),
            b"sched_process_exit" => named_pid(body).map(|tid| TraceEvent::Exit { tid, ts_ns }),
            b"balance_dirty_pages" => Some(TraceEvent::Throttle {
                tid,
                ts_ns,
                throttle: throttle(body, &self.fields),
            }),
            _ => None,
        };
        out.extend(ev);
    }
}

/// `balance_dirty_pages+0x2c4/0xb80 [mod]` → `balance_dirty_pages`.
fn frame_name(frame: &[u8]) -> String {
    let end = frame
        .iter()
        .position(|b| matches!(b, b'+' | b' '))
        .unwrap_or(frame.len());
    String::from_utf8_lossy(&frame[..end]).into_owned()
}

/// `CPU:1 [LOST 123 EVENTS]` → 123.
fn lost_events(line: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(line).ok()?;
    let rest = s.trim().strip_prefix("CPU:")?;
    let (_, rest) = rest.split_once("[LOST ")?;
    rest.strip_suffix(" EVENTS]")?.trim().parse().ok()
}

/// Columns of the right-aligned task name before `-PID`.
const COMM_COLUMNS: usize = 16;

/// `(pid, timestamp ns, event name, body)` of an event line. The pid is the task that was
/// running when the entry was logged.
fn header(line: &[u8]) -> Option<(u32, u64, &[u8], &[u8])> {
    // The name fills the first 16 columns; " [CPU]" comes after "-PID".
    let from = COMM_COLUMNS.min(line.len());
    let open = from + find(&line[from..], b" [")?;
    let pid_part = std::str::from_utf8(&line[from..open]).ok()?;
    let pid_text = pid_part.trim().rsplit('-').next()?;
    let pid: u32 = pid_text.parse().ok()?;
    let close = open + find(&line[open..], b"] ")?;
    let after = &line[close + 2..];
    // Optional flags ("d..2."), then "SECS.USECS:".
    let mut pos = 0;
    let ts_ns = loop {
        let tok_start = pos + after[pos..].iter().position(|b| *b != b' ')?;
        let tok_len = after[tok_start..]
            .iter()
            .position(|b| *b == b' ')
            .unwrap_or(after.len() - tok_start);
        let tok = &after[tok_start..tok_start + tok_len];
        pos = tok_start + tok_len;
        if let Some(ts) = tok.strip_suffix(b":").and_then(timestamp_ns) {
            break ts;
        }
        if pos >= after.len() || tok_start > 16 {
            return None;
        }
    };
    let rest = after.get(pos..)?.strip_prefix(b" ")?;
    let (event, body) = match find(rest, b": ") {
        Some(i) => (&rest[..i], &rest[i + 2..]),
        None => (rest, &rest[rest.len()..]),
    };
    Some((pid, ts_ns, event, body))
}

/// `2020.008090` → ns.
fn timestamp_ns(tok: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(tok).ok()?;
    let (secs, frac) = s.split_once('.')?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = secs.parse().ok()?;
    let frac_ns: u64 = frac.parse::<u64>().ok()? * 10u64.pow(9 - frac.len() as u32);
    secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The last occurrence of `key` that starts no later than `max_start` (a task name of up to
/// 15 bytes sits before the real one and may contain a fake).
fn key_within(body: &[u8], key: &[u8], max_start: usize) -> Option<usize> {
    let limit = (max_start + key.len()).min(body.len());
    let window = &body[..limit];
    window
        .windows(key.len())
        .rposition(|w| w == key)
        .map(|i| i + key.len())
}

/// The longest name a task can have (TASK_COMM_LEN − 1).
const COMM_MAX: usize = 15;

/// `prev_comm=NAME prev_pid=N prev_prio=N prev_state=D ==> …` → `D` (`R` for `R+`).
fn switch_state(body: &[u8]) -> Option<char> {
    let name = body.strip_prefix(b"prev_comm=")?;
    let at = key_within(name, b" prev_pid=", COMM_MAX)?;
    let rest = std::str::from_utf8(&name[at..]).ok()?;
    let mut it = rest.split(' ');
    it.next()?.parse::<u32>().ok()?;
    it.next()?.strip_prefix("prev_prio=")?;
    let state = it.next()?.strip_prefix("prev_state=")?;
    state.chars().next()
}

/// `comm=NAME pid=N prio=N …` → N.
fn named_pid(body: &[u8]) -> Option<u32> {
    let name = body.strip_prefix(b"comm=")?;
    let at = key_within(name, b" pid=", COMM_MAX)?;
    let rest = std::str::from_utf8(&name[at..]).ok()?;
    rest.split(' ').next()?.parse().ok()
}

/// `bdi 7:0: limit=… pause=16 …`: the `key=value` pairs after the device name.
fn throttle(body: &[u8], fields: &ThrottleFields) -> Throttle {
    let text = String::from_utf8_lossy(body);
    let mut t = Throttle::default();
    for (k, v) in text.split_whitespace().filter_map(|p| p.split_once('=')) {
        let u = || v.parse::<u64>().unwrap_or(0);
        match k {
            "pause" => t.pause_ms = v.parse().unwrap_or(0),
            "paused" => t.paused_ms = u(),
            "dirty" => t.dirty = u(),
            "limit" => t.limit = u(),
            "setpoint" => t.setpoint = u(),
            _ if k == fields.wb_dirty => t.wb_dirty = u(),
            _ if k == fields.wb_setpoint => t.wb_setpoint = u(),
            _ => {}
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Vec<TraceEvent> {
        let mut p = TraceParser::default();
        let mut out = Vec::new();
        p.feed(text.as_bytes(), &mut out);
        p.flush(&mut out);
        out
    }

    #[test]
    fn a_name_that_imitates_fields_moves_nothing() {
        // Task names of 15 bytes that look like the fields after them.
        let line = format!(
            "{:>16}-4242    [001] d..2.  100.000250: sched_switch: prev_comm={} \
             prev_pid=4242 prev_prio=120 prev_state=S ==> next_comm=a [000] 9.0: \
             next_pid=7 next_prio=120\n",
            "x prev_pid=1 [0", "x prev_pid=1 [0"
        );
        assert_eq!(
            parse(&line),
            vec![TraceEvent::SwitchOut {
                tid: 4242,
                ts_ns: 100_000_250_000,
                state: 'S'
            }]
        );
        let wake = format!(
            "{:>16}-77      [000] d.s4.    1.500000: sched_wakeup: comm={} pid=4242 \
             prio=120 target_cpu=000\n",
            "[0] 9.000000: x", "y pid=3 prio=1"
        );
        assert_eq!(
            parse(&wake),
            vec![TraceEvent::Wakeup {
                tid: 4242,
                ts_ns: 1_500_000_000
            }]
        );
    }

    #[test]
    fn a_line_cut_between_reads_is_joined() {
        let text = "              dd-17058   [000] d..2.  2020.025391: sched_switch: prev_comm=dd \
                    prev_pid=17058 prev_prio=120 prev_state=D ==> next_comm=kworker/u8:4 \
                    next_pid=15617 next_prio=120\n";
        let mut p = TraceParser::default();
        let mut out = Vec::new();
        let (a, b) = text.as_bytes().split_at(40);
        p.feed(a, &mut out);
        assert!(out.is_empty());
        p.feed(b, &mut out);
        assert_eq!(
            out,
            vec![TraceEvent::SwitchOut {
                tid: 17058,
                ts_ns: 2_020_025_391_000,
                state: 'D'
            }]
        );
    }

    #[test]
    fn lost_events_and_garbage() {
        assert_eq!(
            parse("CPU:1 [LOST 321 EVENTS]\nnot a line\n\n"),
            vec![TraceEvent::Lost { events: 321 }]
        );
    }

    #[test]
    fn old_kernels_call_the_device_figures_bdi() {
        let old = "name: balance_dirty_pages\nformat:\n\
            \tfield:char bdi[32];\toffset:8;\tsize:32;\tsigned:0;\n\
            \tfield:unsigned long bdi_setpoint;\toffset:64;\tsize:8;\tsigned:0;\n\
            \tfield:unsigned long bdi_dirty;\toffset:72;\tsize:8;\tsigned:0;\n\
            \tfield:long pause;\toffset:112;\tsize:8;\tsigned:1;\n";
        let f = throttle_fields(old).unwrap();
        assert_eq!(f.wb_dirty, "bdi_dirty");
        assert_eq!(format_fields(old)[0], "bdi");
        assert_eq!(throttle_fields("name: x\n\tfield:int a;\n"), None);
    }
}
