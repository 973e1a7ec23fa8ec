//! `watch --pipeline`: the stages of a shell pipeline and, each tick, what each one did — the
//! bytes it read and wrote (`/proc/PID/io` `rchar`/`wchar`: syscall bytes, which is what a
//! pipe carries) and its state ([`wait`]: its threads' stat, wchan and, as root, stack). The
//! stages are found from the pipes between processes ([`graph`]) at the start and again every
//! [`REDISCOVER_TICKS`], so a stage that starts later joins. Every path is under the
//! [`SysRoot`]; what the states mean for the pipeline is the model's to say.

pub mod graph;
pub mod wait;

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::root::SysRoot;
use super::threads::parse_task_stat;
use graph::{ProcEnds, pipe_end};
pub use wait::StageWait;

/// Ticks between two discoveries of the stages (every process's fds 0 and 1).
pub const REDISCOVER_TICKS: u64 = 10;

/// A stage's command line is kept to this many bytes (it is in every sample).
const MAX_ARGS_BYTES: usize = 256;

/// The pipeline at one tick, upstream first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipelineSample {
    pub stages: Vec<StageSample>,
    /// The pid whose reads are the pipeline's throughput: a pipeline found as one stage (a
    /// `zfs recv` fed by sshd, which holds the pipe's other end above fd 1, where stages are
    /// not looked for) has no pipe between stages to count, and its writes may not be `write`
    /// calls at all. `None`: the first stage's writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lone: Option<u32>,
}

/// One stage at one tick.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageSample {
    /// The stage's first process (its lowest pid when found): what names it across ticks.
    pub pid: u32,
    /// Every process of the stage (a subshell and the command it forked share one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pids: Vec<u32>,
    pub comm: String,
    /// Its command line (`/proc/PID/cmdline`), the arguments as given, shortened.
    #[serde(default)]
    pub args: Vec<String>,
    /// Bytes its processes read since the watch started (`rchar`).
    pub read: u64,
    /// Bytes they wrote (`wchar`).
    pub written: u64,
    /// Its state at this tick; `None` when its threads could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<StageWait>,
    /// The kernel function that shows it (a blocked stage's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_in: Option<String>,
    /// False once every process of the stage has ended.
    pub alive: bool,
    /// The pipe on its standard output at this tick: how full it was (`None` for the last
    /// stage, or when the pipe could not be opened: another user's, without root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_pipe: Option<PipeFill>,
}

/// A pipe's bytes waiting to be read and its capacity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipeFill {
    pub bytes: u64,
    pub capacity: u64,
}

impl PipeFill {
    /// Full to within one page: the writer must wait for the reader.
    pub fn full(&self) -> bool {
        self.capacity > 0 && self.bytes + 4096 >= self.capacity
    }
}

/// How full the pipe on `pid`'s fd 1 is. The pipe is opened again through
/// `/proc/PID/fd/1` (read-only, non-blocking) for `FIONREAD` and `F_GETPIPE_SZ`, and closed
/// at once: while open it is one more reader, which at most delays a writer's EPIPE by the
/// microseconds it is held (closing it wakes a writer waiting on the pipe).
pub fn pipe_fill(root: &SysRoot, pid: u32) -> Option<PipeFill> {
    let path = root.join(format!("proc/{pid}/fd/1"));
    let link = std::fs::read_link(&path).ok()?;
    graph::parse_pipe_link(link.to_str()?)?;
    let fd = rustix::fs::open(
        &path,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .ok()?;
    let bytes = rustix::io::ioctl_fionread(&fd).ok()?;
    let capacity = rustix::pipe::fcntl_getpipe_size(&fd).ok()? as u64;
    Some(PipeFill { bytes, capacity })
}

impl PipelineSample {
    /// The pipeline's throughput so far: what its first stage wrote into it, or what its lone
    /// stage read.
    pub fn bytes(&self) -> u64 {
        match self.lone {
            Some(pid) => (self.stages.iter())
                .find(|s| s.pid == pid)
                .map_or(0, |s| s.read),
            None => self.stages.first().map_or(0, |s| s.written),
        }
    }
}

/// `rchar` and `wchar` of `/proc/PID/io`.
pub fn parse_io_chars(text: &str) -> Option<(u64, u64)> {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().parse::<u64>().ok())?
        })
    };
    Some((field("rchar")?, field("wchar")?))
}

/// `/proc/PID/cmdline` (NUL-separated) as arguments, at most [`MAX_ARGS_BYTES`] of them.
pub fn parse_cmdline(raw: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut used = 0;
    for a in raw.split(|b| *b == 0).filter(|a| !a.is_empty()) {
        if used + a.len() > MAX_ARGS_BYTES {
            break;
        }
        used += a.len();
        out.push(String::from_utf8_lossy(a).into_owned());
    }
    out
}

/// A stage as the reader keeps it between ticks.
#[derive(Debug, Clone)]
struct Stage {
    pid: u32,
    pids: Vec<u32>,
    comm: String,
    args: Vec<String>,
    read: u64,
    written: u64,
    alive: bool,
}

/// Where a stage goes after a discovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// The known stage `old`, now the group `group` (the first found holding one of its
    /// processes), or ended (None).
    Known { old: usize, group: Option<usize> },
    /// A group no known stage is in.
    New(usize),
}

/// The stages' order after a discovery: every known stage keeps its place, ended or not (the
/// last stage still writing after the others have gone stays last); a new group goes before
/// the first known stage found downstream of it, else last. `known`: each stage's
/// processes, upstream first; `groups`: what the discovery found, upstream first.
fn placement(known: &[Vec<u32>], groups: &[graph::Group]) -> Vec<Slot> {
    let mut claimed = vec![false; groups.len()];
    let mut slots: Vec<Slot> = known
        .iter()
        .enumerate()
        .map(|(i, pids)| {
            let group = groups
                .iter()
                .enumerate()
                .position(|(g, grp)| !claimed[g] && grp.pids.iter().any(|p| pids.contains(p)));
            if let Some(g) = group {
                claimed[g] = true;
            }
            Slot::Known { old: i, group }
        })
        .collect();
    for g in (0..groups.len()).filter(|g| !claimed[*g]) {
        let at = slots
            .iter()
            .position(|s| matches!(s, Slot::Known { group: Some(k), .. } if *k > g))
            .unwrap_or(slots.len());
        slots.insert(at, Slot::New(g));
    }
    slots
}

/// Finds a pipeline's stages and reads them each tick.
#[derive(Debug)]
pub struct PipelineReader {
    root: SysRoot,
    seeds: Vec<u32>,
    skip: Vec<u32>,
    stages: Vec<Stage>,
    /// Each process's last `(rchar, wchar)`.
    last_io: HashMap<u32, (u64, u64)>,
    ticks: u64,
    /// Decided at the first discovery and kept (the throughput must not change what it
    /// counts mid-run): the pipeline was one stage, this one.
    lone: Option<Option<u32>>,
}

impl PipelineReader {
    /// The pipeline of `seeds` (any of its stages, or the shell running it), never counting
    /// the processes in `skip` (copyscope itself).
    pub fn new(root: &SysRoot, seeds: &[u32], skip: Vec<u32>) -> Self {
        PipelineReader {
            root: root.clone(),
            seeds: seeds.to_vec(),
            skip,
            stages: Vec::new(),
            last_io: HashMap::new(),
            ticks: 0,
            lone: None,
        }
    }

    /// Finds the stages now; the number found. The first discovery that finds any decides
    /// whether the pipeline is a lone stage (see [`PipelineSample::lone`]).
    pub fn discover(&mut self) -> usize {
        let table = self.table();
        let groups = graph::stages(&table, &self.seeds, &self.skip);
        self.merge(&groups);
        if self.lone.is_none() && !self.stages.is_empty() {
            self.lone = Some(match self.stages.as_slice() {
                [only] => Some(only.pid),
                _ => None,
            });
        }
        groups.len()
    }

    /// The lone stage whose reads are the throughput, once decided.
    pub fn lone(&self) -> Option<u32> {
        self.lone.flatten()
    }

    /// fds 0 and 1 of every process under the root.
    fn table(&self) -> Vec<ProcEnds> {
        let Ok(dir) = std::fs::read_dir(self.root.join("proc")) else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter_map(|pid| {
                let end = |fd: u32| {
                    let link =
                        std::fs::read_link(self.root.join(format!("proc/{pid}/fd/{fd}"))).ok()?;
                    let link = link.to_str()?;
                    graph::parse_pipe_link(link)?;
                    let info = self
                        .root
                        .read_to_string(format!("proc/{pid}/fdinfo/{fd}"))
                        .ok()?;
                    let (_, flags) = super::procfiles::parse_fdinfo(&info)?;
                    pipe_end(link, flags)
                };
                let ends = graph::ends_of(end(0), end(1));
                let stat = self.root.read_to_string(format!("proc/{pid}/stat")).ok()?;
                let ppid = super::procfiles::parse_stat(&stat)?.ppid;
                Some(ProcEnds { pid, ppid, ends })
            })
            .collect()
    }

    /// Takes the groups found (see [`placement`]): a known stage keeps its place, its
    /// processes now those found, or ended; a new group joins in its place.
    fn merge(&mut self, groups: &[graph::Group]) {
        let known: Vec<Vec<u32>> = self.stages.iter().map(|s| s.pids.clone()).collect();
        let mut old: Vec<Option<Stage>> = std::mem::take(&mut self.stages)
            .into_iter()
            .map(Some)
            .collect();
        let mut next = Vec::with_capacity(old.len() + groups.len());
        for slot in placement(&known, groups) {
            let (st, group) = match slot {
                Slot::Known { old: i, group } => (old[i].take(), group),
                Slot::New(g) => (Some(self.new_stage(groups[g].pids[0])), Some(g)),
            };
            let Some(mut st) = st else { continue };
            match group {
                Some(g) => {
                    st.pids.clone_from(&groups[g].pids);
                    st.alive = true;
                }
                None => st.alive = false,
            }
            next.push(st);
        }
        self.stages = next;
    }

    fn new_stage(&self, pid: u32) -> Stage {
        let comm = self
            .root
            .read_to_string(format!("proc/{pid}/comm"))
            .map(|c| c.trim_end_matches('\n').to_string())
            .unwrap_or_default();
        let args = std::fs::read(self.root.join(format!("proc/{pid}/cmdline")))
            .map(|raw| parse_cmdline(&raw))
            .unwrap_or_default();
        Stage {
            pid,
            pids: vec![pid],
            comm,
            args,
            read: 0,
            written: 0,
            alive: true,
        }
    }

    /// One tick: the stages (found again every [`REDISCOVER_TICKS`]), each one's bytes so
    /// far and its state now.
    pub fn read(&mut self) -> PipelineSample {
        if self.ticks.is_multiple_of(REDISCOVER_TICKS) {
            self.discover();
        }
        self.ticks += 1;
        let mut out = PipelineSample {
            lone: self.lone(),
            ..Default::default()
        };
        let mut io_now = HashMap::new();
        for i in 0..self.stages.len() {
            let sample = self.read_stage(i, &mut io_now);
            out.stages.push(sample);
        }
        self.last_io = io_now;
        out
    }

    fn read_stage(&mut self, i: usize, io_now: &mut HashMap<u32, (u64, u64)>) -> StageSample {
        let pids = self.stages[i].pids.clone();
        let mut threads = Vec::new();
        let mut living = Vec::new();
        for pid in &pids {
            let Some(io) = self
                .root
                .read_to_string(format!("proc/{pid}/io"))
                .ok()
                .and_then(|t| parse_io_chars(&t))
            else {
                continue;
            };
            living.push(*pid);
            io_now.insert(*pid, io);
            threads.extend(self.thread_waits(*pid));
        }
        let last = i + 1 == self.stages.len();
        let st = &mut self.stages[i];
        // A process reaped by another of the stage adds its counters to its parent's: in a
        // tick where one ended, the stage's bytes are not added (a tick's bytes of its own).
        let one_ended = living.len() < st.pids.len() && !living.is_empty();
        if !one_ended {
            for pid in &living {
                if let (Some(now), Some(before)) = (io_now.get(pid), self.last_io.get(pid)) {
                    st.read = st.read.saturating_add(now.0.saturating_sub(before.0));
                    st.written = st.written.saturating_add(now.1.saturating_sub(before.1));
                }
            }
        }
        st.pids = if living.is_empty() {
            st.pids.clone()
        } else {
            living
        };
        if threads.is_empty() {
            st.alive = false;
        }
        let state = wait::stage_wait(&threads);
        let output_pipe = (st.alive && !last)
            .then(|| st.pids.iter().find_map(|&pid| pipe_fill(&self.root, pid)))
            .flatten();
        StageSample {
            pid: st.pid,
            pids: if st.pids.len() > 1 {
                st.pids.clone()
            } else {
                Vec::new()
            },
            comm: st.comm.clone(),
            args: st.args.clone(),
            read: st.read,
            written: st.written,
            wait: state.as_ref().map(|s| s.0),
            held_in: state.and_then(|s| s.1),
            alive: st.alive,
            output_pipe,
        }
    }

    /// Each thread of `pid`: its state from stat, wchan and stack (the stack only for a
    /// thread not running; unreadable without root).
    fn thread_waits(&self, pid: u32) -> Vec<(StageWait, Option<String>)> {
        let Ok(dir) = std::fs::read_dir(self.root.join(format!("proc/{pid}/task"))) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let tids: BTreeMap<u32, ()> = dir
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .map(|t| (t, ()))
            .collect();
        for tid in tids.keys() {
            let base = format!("proc/{pid}/task/{tid}");
            let read = |f: &str| self.root.read_to_string(format!("{base}/{f}")).ok();
            let Some((_, state)) = read("stat").as_deref().and_then(parse_task_stat) else {
                continue;
            };
            // A zombie thread has no wait to read.
            if state == 'Z' || state == 'X' {
                continue;
            }
            let (wchan, stack) = if state == 'R' {
                (String::new(), String::new())
            } else {
                let wchan = read("wchan").unwrap_or_default();
                let stack = match wchan.contains("futex") {
                    true => String::new(),
                    false => read("stack").unwrap_or_default(),
                };
                (wchan, stack)
            };
            out.push(wait::thread_wait(state, &wchan, &stack));
        }
        out
    }

    /// The processes of every stage alive now.
    pub fn pids(&self) -> Vec<u32> {
        (self.stages.iter().filter(|s| s.alive))
            .flat_map(|s| s.pids.iter().copied())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::graph::Ends;
    use super::*;

    fn group(pids: &[u32]) -> graph::Group {
        graph::Group {
            ends: Ends::default(),
            pids: pids.to_vec(),
        }
    }

    #[test]
    fn a_stage_keeps_its_place_when_the_ones_before_it_end() {
        // `zfs send | gzip | gunzip | zfs recv`: the receiver still writes after the rest ended.
        let known = vec![vec![393], vec![394], vec![395], vec![396]];
        let slots = placement(&known, &[group(&[396])]);
        assert_eq!(
            slots,
            vec![
                Slot::Known {
                    old: 0,
                    group: None
                },
                Slot::Known {
                    old: 1,
                    group: None
                },
                Slot::Known {
                    old: 2,
                    group: None
                },
                Slot::Known {
                    old: 3,
                    group: Some(0)
                },
            ]
        );
    }

    #[test]
    fn a_new_stage_joins_where_the_pipes_put_it() {
        let known = vec![vec![1], vec![3]];
        let slots = placement(
            &known,
            &[group(&[1]), group(&[2]), group(&[3]), group(&[4])],
        );
        assert_eq!(
            slots,
            vec![
                Slot::Known {
                    old: 0,
                    group: Some(0)
                },
                Slot::New(1),
                Slot::Known {
                    old: 1,
                    group: Some(2)
                },
                Slot::New(3),
            ]
        );
        // Two known stages that became one: the first holds it, the other has ended.
        let slots = placement(&[vec![5], vec![6]], &[group(&[5, 6])]);
        assert_eq!(
            slots,
            vec![
                Slot::Known {
                    old: 0,
                    group: Some(0)
                },
                Slot::Known {
                    old: 1,
                    group: None
                },
            ]
        );
    }

    fn put(root: &std::path::Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn io_chars_and_cmdline() {
        let io = "rchar: 4096\nwchar: 209715200\nsyscr: 5\nsyscw: 3200\nread_bytes: 0\n\
                  write_bytes: 0\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_io_chars(io), Some((4096, 209_715_200)));
        assert_eq!(parse_io_chars("wchar: 1\n"), None);
        assert_eq!(
            parse_cmdline(b"head\0-c\x00200M\0/dev/zero\0"),
            vec!["head", "-c", "200M", "/dev/zero"]
        );
        let long = [b"x".repeat(200), b"y".repeat(100)].join(&0u8);
        assert_eq!(parse_cmdline(&long).len(), 1, "shortened");
    }

    /// A fixture tree without real fd links: the stages are given; the reader counts each
    /// one's bytes from its first reading on and takes its state from its threads.
    #[test]
    fn bytes_count_from_the_first_tick_and_states_come_from_the_threads() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        put(r, "proc/11/comm", "cat\n");
        put(r, "proc/11/io", "rchar: 10\nwchar: 1000\n");
        put(r, "proc/11/task/11/stat", "11 (cat) S 1 2 3");
        put(r, "proc/11/task/11/wchan", "anon_pipe_write");
        put(r, "proc/12/comm", "perl\n");
        put(r, "proc/12/io", "rchar: 900\nwchar: 0\n");
        put(r, "proc/12/task/12/stat", "12 (perl) S 1 2 3");
        put(r, "proc/12/task/12/wchan", "hrtimer_nanosleep");
        let mut reader = PipelineReader::new(&SysRoot::new(r), &[11], Vec::new());
        reader.merge(&[
            graph::Group {
                ends: Ends::default(),
                pids: vec![11],
            },
            graph::Group {
                ends: Ends::default(),
                pids: vec![12],
            },
        ]);
        reader.ticks = 1;
        let s = reader.read();
        assert_eq!(s.stages.len(), 2);
        assert_eq!((s.stages[0].written, s.stages[1].read), (0, 0));
        assert_eq!(s.stages[0].wait, Some(StageWait::Output));
        assert_eq!(s.stages[1].wait, Some(StageWait::Other));
        assert_eq!(s.stages[1].held_in.as_deref(), Some("hrtimer_nanosleep"));
        put(r, "proc/11/io", "rchar: 10\nwchar: 66536\n");
        put(r, "proc/12/io", "rchar: 66436\nwchar: 0\n");
        let s = reader.read();
        assert_eq!((s.stages[0].written, s.stages[1].read), (65_536, 65_536));
        assert_eq!(s.bytes(), 65_536);
        std::fs::remove_dir_all(r.join("proc/12")).unwrap();
        let s = reader.read();
        assert!(!s.stages[1].alive);
        assert_eq!(s.stages[1].read, 65_536, "an ended stage keeps its bytes");
    }
}
