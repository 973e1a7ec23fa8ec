//! A private tracefs instance (`instances/copyscope-PID-N`): made, configured to log only
//! the writer's threads, read without blocking, and removed when dropped. Instances that a
//! killed copyscope left behind (their pid is gone) are removed before a new one is made;
//! the top-level buffer and other tools' instances are never touched.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use super::parse::{ThrottleFields, throttle_fields};

/// Where tracefs lives (and is mounted when it is not).
pub const TRACEFS: &str = "/sys/kernel/tracing";
/// Prefix of this program's instance names; the pid follows.
pub const INSTANCE_PREFIX: &str = "copyscope-";

/// Most bytes read from the pipe in one tick: a bound on the sampler's time, not a limit the
/// writer's events reach (a few hundred bytes per blocking).
const MAX_READ_PER_TICK: usize = 8 << 20;

/// Least per-CPU ring size, KiB: a tick's events are a few KiB; a late tick has room to
/// spare. A new instance's ring is the kernel's default size (1410 KiB on 6.x), allocated by
/// its `mkdir`; it is resized only when smaller than this, since a resize allocates the ring
/// again and waits for RCU grace periods (8–15 ms measured).
const BUFFER_KB: u32 = 1024;

/// Instances made by this process so far (tests run several samplers at once).
static MADE: AtomicU32 = AtomicU32::new(0);

/// Why the exact source could not start (reported as the note of the fallback).
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("tracefs is not available at {TRACEFS} ({0})")]
    NoTracefs(String),
    #[error("cannot make a tracefs instance ({0})")]
    Instance(std::io::Error),
    #[error("cannot set up the trace ({what}: {err})")]
    Setup { what: String, err: std::io::Error },
}

/// Makes sure tracefs is mounted at [`TRACEFS`] (mounts it once when it is not: root only).
pub fn ensure_mounted(tracefs: &Path) -> Result<(), TraceError> {
    if tracefs.join("instances").is_dir() {
        return Ok(());
    }
    let status = std::process::Command::new("mount")
        .args(["-t", "tracefs", "nodev"])
        .arg(tracefs)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    match status {
        Ok(s) if s.success() && tracefs.join("instances").is_dir() => Ok(()),
        Ok(s) => Err(TraceError::NoTracefs(format!("mount: {s}"))),
        Err(e) => Err(TraceError::NoTracefs(e.to_string())),
    }
}

/// The pid an instance name belongs to, if it is one of ours (`copyscope-4242-0`).
pub fn instance_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(INSTANCE_PREFIX)?;
    rest.split('-').next()?.parse().ok()
}

/// Removes this program's instances whose process is gone; `alive` says whether a pid is
/// (the live check reads /proc). Returns the names removed.
pub fn remove_stale(tracefs: &Path, alive: impl Fn(u32) -> bool) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(tracefs.join("instances")) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(pid) = instance_pid(&name)
            && !alive(pid)
            && std::fs::remove_dir(e.path()).is_ok()
        {
            removed.push(name);
        }
    }
    removed
}

/// A process still runs under `pid` and is a copyscope (a reused pid is someone else's; a
/// killed one not yet reaped is a zombie, and dead).
pub fn copyscope_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .as_deref()
        .and_then(crate::sample::threads::parse_task_stat)
        .is_some_and(|(comm, state)| comm.starts_with("copyscope") && !matches!(state, 'Z' | 'X'))
}

/// Our instance: removed on drop.
#[derive(Debug)]
pub struct Instance {
    dir: PathBuf,
    pipe: Option<File>,
    pub fields: ThrottleFields,
    /// The threads the filters currently name.
    named: Vec<u32>,
    /// Its removal was handed to a child process ([`Instance::remove_detached`]).
    detached: bool,
    /// `balance_dirty_pages` is enabled ([`Instance::trace_throttle`]).
    throttle_traced: bool,
}

impl Instance {
    /// Makes and configures an instance with tracing off and no pid named yet.
    pub fn create(tracefs: &Path) -> Result<Instance, TraceError> {
        let n = MADE.fetch_add(1, Ordering::Relaxed);
        let dir = tracefs
            .join("instances")
            .join(format!("{INSTANCE_PREFIX}{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).map_err(TraceError::Instance)?;
        let mut inst = Instance {
            dir,
            pipe: None,
            fields: ThrottleFields::default(),
            named: Vec::new(),
            detached: false,
            throttle_traced: false,
        };
        inst.configure()?;
        Ok(inst)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn write(&self, rel: &str, text: &str) -> Result<(), TraceError> {
        let setup = |err| TraceError::Setup {
            what: rel.to_string(),
            err,
        };
        let mut f = OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(self.dir.join(rel))
            .map_err(setup)?;
        f.write_all(text.as_bytes()).map_err(setup)
    }

    fn configure(&mut self) -> Result<(), TraceError> {
        self.write("tracing_on", "0")?;
        // CLOCK_MONOTONIC, the clock the sampler stamps samples with.
        self.write("trace_clock", "mono")?;
        if !self.buffer_holds(BUFFER_KB) {
            self.write("buffer_size_kb", &BUFFER_KB.to_string())?;
        }
        if let Ok(fmt) =
            std::fs::read_to_string(self.dir.join("events/writeback/balance_dirty_pages/format"))
            && let Some(f) = throttle_fields(&fmt)
        {
            self.fields = f;
        }
        Ok(())
    }

    /// Whether the ring holds at least `kb` KiB per CPU (`buffer_size_kb` reads `1410`, or
    /// `7 (expanded: 1408)` for a ring not allocated yet).
    fn buffer_holds(&self, kb: u32) -> bool {
        std::fs::read_to_string(self.dir.join("buffer_size_kb"))
            .ok()
            .and_then(|t| t.split_whitespace().next()?.parse::<u32>().ok())
            .is_some_and(|have| have >= kb)
    }

    /// Names `tids` in the filters, enables the events and tracing (first call), and opens
    /// the pipe. Events that cannot be enabled (an old kernel without `balance_dirty_pages`)
    /// are left off, except the two the intervals need.
    ///
    /// The filters alone select the writer's events: no `set_event_pid`. A pid list hooks
    /// four more probes into the scheduler's tracepoints, and registering them, like
    /// removing them again in the instance's `rmdir`, patches kernel text on every CPU
    /// (2.3 ms of CPU measured for the write alone on this 2-core VM, the largest part of
    /// the setup); it would only spare the filters the switches of other tasks, and a thread
    /// a writer starts is named at the next tick either way.
    pub fn follow(&mut self, tids: &[u32]) -> Result<(), TraceError> {
        let mut tids = tids.to_vec();
        tids.sort_unstable();
        tids.dedup();
        if tids == self.named || tids.is_empty() {
            return Ok(());
        }
        let any = |field: &str| {
            tids.iter()
                .map(|t| format!("{field} == {t}"))
                .collect::<Vec<_>>()
                .join(" || ")
        };
        // A switch away from one of them while it blocks (not a preemption: that wait is
        // the run queue's), with the kernel stack it blocked in; and its last switch, as it
        // exits (`X`/`Z`, 16/32; `x`, 64, before 4.14), without a stack: that ends its time
        // without a `sched_process_exit`, one tracepoint fewer to enable and disable.
        let pids = any("prev_pid");
        let blocking = format!("({pids}) && prev_state & 3");
        self.write(
            "events/sched/sched_switch/filter",
            &format!("({pids}) && prev_state & 115"),
        )?;
        let first = self.named.is_empty();
        if !first {
            let _ = self.write("events/sched/sched_switch/trigger", "!stacktrace");
        }
        self.write(
            "events/sched/sched_switch/trigger",
            &format!("stacktrace if {blocking}"),
        )?;
        self.write("events/sched/sched_wakeup/filter", &any("pid"))?;
        let own = any("common_pid");
        let _ = self.write("events/writeback/balance_dirty_pages/filter", &own);
        if first {
            self.write("events/sched/sched_switch/enable", "1")?;
            self.write("events/sched/sched_wakeup/enable", "1")?;
            let pipe = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(self.dir.join("trace_pipe"))
                .map_err(|err| TraceError::Setup {
                    what: "trace_pipe".into(),
                    err,
                })?;
            self.pipe = Some(pipe);
            self.write("tracing_on", "1")?;
        }
        self.named = tids;
        Ok(())
    }

    /// Enables `writeback:balance_dirty_pages` (its filter names the followed threads): the
    /// throttle's own figures, once a traced stack showed a writer throttled. Left off until
    /// then, because each enable patches kernel text on every CPU, and so does its disable in
    /// the instance's `rmdir`: a copy onto ZFS or tmpfs, or one never held by the page cache,
    /// pays for neither. An old kernel without the event stays without it.
    pub fn trace_throttle(&mut self) {
        if !self.throttle_traced {
            self.throttle_traced = true;
            let _ = self.write("events/writeback/balance_dirty_pages/enable", "1");
        }
    }

    /// The threads named so far (empty before the first [`Instance::follow`]).
    pub fn named(&self) -> &[u32] {
        &self.named
    }

    /// Everything the pipe holds now, appended to `buf` (cleared first); reading stops when
    /// the pipe is empty. `Err` when the pipe fails (the instance is gone).
    pub fn read_available(&mut self, buf: &mut Vec<u8>) -> std::io::Result<()> {
        buf.clear();
        let Some(pipe) = self.pipe.as_mut() else {
            return Ok(());
        };
        let mut chunk = [0u8; 64 << 10];
        while buf.len() < MAX_READ_PER_TICK {
            match pipe.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

impl Instance {
    /// Stops the trace and closes the pipe here, and leaves the removal of the instance to a
    /// child process that outlives this one: the kernel's `rmdir` of an instance waits for
    /// RCU grace periods (32–37 ms measured under `strace -T`), which at the end of a run
    /// would be the last thing the user waits for. The child is `rmdir` by absolute path
    /// (never one found through `PATH`) with the instance's own path, which no other user can
    /// name; when it cannot be started the instance is removed here. Should the child fail,
    /// the next run removes the instance as a killed run's.
    pub fn remove_detached(mut self) {
        self.stop();
        let rmdir = ["/bin/rmdir", "/usr/bin/rmdir"]
            .into_iter()
            .find(|p| Path::new(p).exists());
        let spawned = rmdir.is_some_and(|cmd| {
            std::process::Command::new(cmd)
                .arg(&self.dir)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .is_ok()
        });
        self.detached = spawned;
    }

    fn stop(&mut self) {
        let _ = self.write("tracing_on", "0");
        // The pipe must be closed first: an open pipe keeps the instance busy.
        self.pipe = None;
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if self.detached {
            return;
        }
        self.stop();
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_programs_instances_with_a_dead_pid_are_removed() {
        let t = tempfile::tempdir().unwrap();
        let inst = t.path().join("instances");
        for n in ["copyscope-11-0", "copyscope-12-3", "perf-11", "copyscope-x"] {
            std::fs::create_dir_all(inst.join(n)).unwrap();
        }
        let removed = remove_stale(t.path(), |pid| pid == 12);
        assert_eq!(removed, vec!["copyscope-11-0".to_string()]);
        let mut left: Vec<_> = std::fs::read_dir(&inst)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["copyscope-12-3", "copyscope-x", "perf-11"]);
        assert_eq!(instance_pid("copyscope-4242-7"), Some(4242));
        assert_eq!(instance_pid("copyscopes-1"), None);
    }
}
