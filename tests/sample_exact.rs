//! The exact source on real trace text from this machine's kernel (a copy paced by
//! `balance_dirty_pages` on the slowdev lab disk, tests/fixtures/exact/README.md), and, as
//! root, its tracefs instance's life: made, removed on drop, a killed run's removed at start.

use copyscope::sample::WaitClass;
use copyscope::sample::exact::intervals::Accounts;
use copyscope::sample::exact::parse::{TraceEvent, TraceParser, format_fields, throttle_fields};

const TRACE: &str = include_str!("fixtures/exact/slowdev-40mbps-trace_pipe.txt");
const BDP_FORMAT: &str = include_str!("fixtures/exact/balance_dirty_pages.format");
const SWITCH_FORMAT: &str = include_str!("fixtures/exact/sched_switch.format");
const ENGINE: u32 = 24264;
const WORKER: u32 = 24265;

fn events() -> Vec<TraceEvent> {
    let fields = throttle_fields(BDP_FORMAT).expect("balance_dirty_pages has a pause");
    let mut p = TraceParser::new(fields);
    let mut out = Vec::new();
    // Fed in pieces the size of the reader's reads, cut anywhere.
    for chunk in TRACE.as_bytes().chunks(4093) {
        p.feed(chunk, &mut out);
    }
    p.flush(&mut out);
    out
}

#[test]
fn every_entry_of_the_recorded_trace_is_read() {
    let ev = events();
    let count = |f: &dyn Fn(&TraceEvent) -> bool| ev.iter().filter(|e| f(e)).count();
    let header_lines = TRACE.lines().filter(|l| !l.starts_with(" => ")).count();
    assert_eq!(ev.len(), header_lines, "one event per entry");
    let switches = count(&|e| matches!(e, TraceEvent::SwitchOut { .. }));
    let stacks = count(&|e| matches!(e, TraceEvent::Stack { .. }));
    assert_eq!(switches, TRACE.matches(": sched_switch: ").count());
    // The trigger logs the stack of every switch the filter lets through.
    assert_eq!(stacks, switches);
    assert!(ev.iter().all(|e| match e {
        TraceEvent::SwitchOut { tid, state, .. } =>
            (*tid == ENGINE || *tid == WORKER) && matches!(state, 'S' | 'D'),
        TraceEvent::Wakeup { tid, .. } => *tid == ENGINE || *tid == WORKER,
        TraceEvent::Throttle { tid, .. } => *tid == WORKER,
        _ => true,
    }));
    // The kernel's own figures: a 40 MB/s disk's limits and the pauses it set.
    let throttles: Vec<_> = ev
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Throttle { throttle, .. } => Some(*throttle),
            _ => None,
        })
        .collect();
    assert_eq!(
        throttles.len(),
        TRACE.matches("balance_dirty_pages: ").count()
    );
    assert!(throttles.iter().all(|t| t.limit > 0 && t.setpoint > 0));
    assert!(throttles.iter().any(|t| t.pause_ms > 0 && t.wb_dirty > 0));
}

#[test]
fn the_recorded_stacks_name_the_throttle_and_the_idle_engine() {
    let ev = events();
    let mut a = Accounts::default();
    let first = ev
        .iter()
        .find_map(|e| match e {
            TraceEvent::SwitchOut { ts_ns, .. } | TraceEvent::Wakeup { ts_ns, .. } => Some(*ts_ns),
            _ => None,
        })
        .unwrap();
    let last = ev
        .iter()
        .rev()
        .find_map(|e| match e {
            TraceEvent::SwitchOut { ts_ns, .. } | TraceEvent::Wakeup { ts_ns, .. } => Some(*ts_ns),
            _ => None,
        })
        .unwrap();
    a.add(ENGINE, first, false);
    a.add(WORKER, first, true);
    for e in &ev {
        a.apply(e);
    }
    a.close_tick(last);
    let t = &a.totals;
    let off = |c: WaitClass| t.off_cpu_ns.get(&c).copied().unwrap_or(0) as f64;
    assert_eq!(t.lost_events, 0);
    // Two threads, each traced for (nearly) the whole capture.
    let span = (last - first) as f64;
    assert!(t.traced_ns as f64 > 1.9 * span, "{} of {span}", t.traced_ns);
    // The engine slept on a futex; the worker was held by dirty throttling, and once for
    // 1.86 s by the ext4 journal (updating the file's mtime, `do_get_write_access` waiting
    // for a buffer under writeback); nothing else held it for long.
    let sleeping = off(WaitClass::Sleeping);
    assert!(
        sleeping > 0.9 * span && sleeping <= span,
        "{sleeping} of {span}"
    );
    let throttled = off(WaitClass::DirtyThrottle);
    let active = t.traced_ns as f64 - sleeping;
    assert!(throttled / active > 0.3, "{throttled} of {active}");
    let journal = off(WaitClass::Journal);
    assert!((1.85e9..1.87e9).contains(&journal), "{journal}");
    let other: f64 = WaitClass::ALL
        .iter()
        .filter(|c| {
            !matches!(
                c,
                WaitClass::DirtyThrottle | WaitClass::Sleeping | WaitClass::Journal
            )
        })
        .map(|c| off(*c))
        .sum();
    assert!(other / active < 0.01, "{other} of {active}");
    // Two kernel sources of the same time agree: balance_dirty_pages announced each pause
    // and the blocked intervals under it are those pauses, each overrunning by less than
    // two jiffies (this kernel has HZ=250: the sleep is a jiffy timer, 3.4 ms late on average).
    let paused_ns = t.throttle_pause_ms as f64 * 1e6;
    let overrun = throttled - paused_ns;
    assert!(t.throttle_pauses > 100);
    assert!(
        overrun > 0.0 && overrun < t.throttle_pauses as f64 * 8e6,
        "announced {paused_ns} vs blocked {throttled}"
    );
}

#[test]
fn the_format_files_of_this_kernel() {
    let bdp = throttle_fields(BDP_FORMAT).unwrap();
    assert_eq!(
        (bdp.wb_dirty.as_str(), bdp.wb_setpoint.as_str()),
        ("wb_dirty", "wb_setpoint")
    );
    let f = format_fields(SWITCH_FORMAT);
    assert!(f.iter().any(|n| n == "prev_state") && f.iter().any(|n| n == "next_pid"));
    assert_eq!(throttle_fields(SWITCH_FORMAT), None);
}

/// Root with tracefs: the instance exists while the source lives and is gone after it; one
/// left by a killed run (its pid dead) is removed when the next one starts.
#[test]
fn the_instance_is_removed_on_drop_and_a_killed_runs_at_start() {
    use copyscope::sample::SysRoot;
    use copyscope::sample::exact::ExactSource;
    use copyscope::sample::exact::tracefs::TRACEFS;
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: not root");
        return;
    }
    let instances = std::path::Path::new(TRACEFS).join("instances");
    // A dead pid: a child that has exited and been reaped.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale = instances.join(format!("copyscope-{dead}-0"));
    let src = match ExactSource::start(&SysRoot::default(), 0) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("skipped: {}", e.0);
            return;
        }
    };
    let dir = src.instance_dir();
    assert!(dir.is_dir());
    std::fs::create_dir(&stale).unwrap();
    drop(src);
    assert!(!dir.exists(), "{} left behind", dir.display());
    let again = ExactSource::start(&SysRoot::default(), 0).unwrap();
    assert!(!stale.exists(), "stale {} not removed", stale.display());
    drop(again);
}
