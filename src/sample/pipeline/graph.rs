//! The stages of a shell pipeline, found from the pipes between processes: a process whose
//! standard output (fd 1) is the write end of pipe N feeds the process whose standard input
//! (fd 0) is its read end (`/proc/PID/fd/{0,1}` link `pipe:[N]`, the direction from
//! `fdinfo`'s flags). Only fds 0 and 1 link stages: other descriptors inherited by every
//! process of a session (a job server's pipe, a supervisor's) would join unrelated
//! processes. Pure: the table of processes comes in.

use std::collections::{BTreeMap, BTreeSet};

/// At most this many processes are taken into one pipeline (a guard against a table that
/// links everything).
pub const MAX_PROCESSES: usize = 64;

/// `pipe:[123]` → 123 (the link of a descriptor open on an anonymous pipe).
pub fn parse_pipe_link(link: &str) -> Option<u64> {
    link.strip_prefix("pipe:[")?.strip_suffix(']')?.parse().ok()
}

/// A process's place in the pipes: the pipe its standard input reads (fd 0, read end) and
/// the one its standard output writes (fd 1, write end).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ends {
    pub input: Option<u64>,
    pub output: Option<u64>,
}

impl Ends {
    /// Either end is a pipe.
    pub fn piped(&self) -> bool {
        self.input.is_some() || self.output.is_some()
    }
}

/// One process as the discovery reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcEnds {
    pub pid: u32,
    pub ppid: u32,
    pub ends: Ends,
}

/// The end a descriptor is, from its link and its fdinfo flags: `(pipe, writes)`.
pub fn pipe_end(link: &str, flags: u32) -> Option<(u64, bool)> {
    Some((parse_pipe_link(link)?, flags & 0o3 != 0))
}

/// [`Ends`] from fd 0's and fd 1's `(pipe, writes)`: fd 0 counts when it reads, fd 1 when
/// it writes (`cmd 0>&1` reversed ends link nothing).
pub fn ends_of(fd0: Option<(u64, bool)>, fd1: Option<(u64, bool)>) -> Ends {
    Ends {
        input: fd0.filter(|(_, w)| !w).map(|(p, _)| p),
        output: fd1.filter(|(_, w)| *w).map(|(p, _)| p),
    }
}

/// The processes the seeds stand for: a seed in a pipe is itself; a seed in none (the shell
/// that runs the pipeline) stands for its descendants that are, the nearest ones.
fn seed_set(table: &BTreeMap<u32, &ProcEnds>, seeds: &[u32]) -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    let mut todo: Vec<u32> = seeds.to_vec();
    let mut seen = BTreeSet::new();
    while let Some(pid) = todo.pop() {
        if !seen.insert(pid) || seen.len() > MAX_PROCESSES * 4 {
            continue;
        }
        match table.get(&pid) {
            Some(p) if p.ends.piped() => {
                out.insert(pid);
            }
            _ => todo.extend(table.values().filter(|c| c.ppid == pid).map(|c| c.pid)),
        }
    }
    out
}

/// Every process linked to the seeds through their pipes, grown until nothing joins.
fn linked(table: &BTreeMap<u32, &ProcEnds>, seeds: BTreeSet<u32>) -> BTreeSet<u32> {
    let mut set = seeds;
    loop {
        let pipes_out: BTreeSet<u64> = set.iter().filter_map(|p| table[p].ends.output).collect();
        let pipes_in: BTreeSet<u64> = set.iter().filter_map(|p| table[p].ends.input).collect();
        let joining: Vec<u32> = table
            .values()
            .filter(|p| !set.contains(&p.pid))
            .filter(|p| {
                p.ends.input.is_some_and(|i| pipes_out.contains(&i))
                    || p.ends.output.is_some_and(|o| pipes_in.contains(&o))
            })
            .map(|p| p.pid)
            .collect();
        if joining.is_empty() || set.len() >= MAX_PROCESSES {
            return set;
        }
        set.extend(joining.into_iter().take(MAX_PROCESSES - set.len()));
    }
}

/// A stage: the processes that share the same input and output pipes (a subshell and the
/// command it forked), lowest pid first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub ends: Ends,
    pub pids: Vec<u32>,
}

/// The pipeline's stages, upstream first: the processes linked to `seeds` (less `skip`),
/// grouped by their ends and ordered by how many pipes lie upstream of each (ties by pid).
pub fn stages(table: &[ProcEnds], seeds: &[u32], skip: &[u32]) -> Vec<Group> {
    let by_pid: BTreeMap<u32, &ProcEnds> = table
        .iter()
        .filter(|p| !skip.contains(&p.pid))
        .map(|p| (p.pid, p))
        .collect();
    let set = linked(&by_pid, seed_set(&by_pid, seeds));
    let mut groups: BTreeMap<Ends, Vec<u32>> = BTreeMap::new();
    for pid in &set {
        groups.entry(by_pid[pid].ends).or_default().push(*pid);
    }
    let depth = |ends: &Ends| -> usize {
        // Walk upstream through the pipes; bounded by the number of groups (a cycle stops).
        let mut d = 0;
        let mut input = ends.input;
        while let Some(i) = input {
            match groups.keys().find(|e| e.output == Some(i)) {
                Some(up) if d < groups.len() => {
                    d += 1;
                    input = up.input;
                }
                _ => break,
            }
        }
        d
    };
    let mut out: Vec<Group> = groups
        .iter()
        .map(|(ends, pids)| Group {
            ends: *ends,
            pids: pids.clone(),
        })
        .collect();
    out.sort_by_key(|g| (depth(&g.ends), g.pids[0]));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: u32, ppid: u32, input: Option<u64>, output: Option<u64>) -> ProcEnds {
        ProcEnds {
            pid,
            ppid,
            ends: Ends { input, output },
        }
    }

    #[test]
    fn links_and_ends() {
        assert_eq!(parse_pipe_link("pipe:[24979]"), Some(24_979));
        assert_eq!(parse_pipe_link("socket:[24979]"), None);
        assert_eq!(parse_pipe_link("/dev/null"), None);
        // fdinfo flags as read on this machine: 00 (read end), 01 and 0100001 (write end).
        assert_eq!(pipe_end("pipe:[7]", 0o100_001), Some((7, true)));
        assert_eq!(pipe_end("pipe:[7]", 0), Some((7, false)));
        let e = ends_of(Some((7, false)), Some((8, true)));
        assert_eq!((e.input, e.output), (Some(7), Some(8)));
        // Reversed ends link nothing.
        assert!(!ends_of(Some((7, true)), Some((8, false))).piped());
    }

    /// `sh -c 'tar c d | gzip | ssh host …'`, its shell (pid 10) in no pipe, and an unrelated
    /// pipeline beside it.
    fn table() -> Vec<ProcEnds> {
        vec![
            p(1, 0, None, None),
            p(10, 1, None, None),
            p(11, 10, None, Some(100)),
            p(12, 10, Some(100), Some(101)),
            p(13, 10, Some(101), None),
            p(20, 1, None, Some(200)),
            p(21, 1, Some(200), None),
        ]
    }

    #[test]
    fn any_stage_or_the_shell_finds_the_whole_pipeline_in_order() {
        let order = |seeds: &[u32]| -> Vec<Vec<u32>> {
            stages(&table(), seeds, &[])
                .into_iter()
                .map(|g| g.pids)
                .collect()
        };
        let want = vec![vec![11], vec![12], vec![13]];
        assert_eq!(order(&[12]), want);
        assert_eq!(order(&[13]), want);
        assert_eq!(order(&[10]), want, "the shell stands for its children");
        assert_eq!(order(&[11, 13]), want);
        assert_eq!(order(&[21]), vec![vec![20], vec![21]]);
        assert!(order(&[1]).len() >= 2, "init's children: both pipelines");
        assert!(order(&[99]).is_empty());
    }

    #[test]
    fn a_subshell_and_its_child_are_one_stage_and_skipped_pids_none() {
        let mut t = table();
        // `… | (while read l; do …; done) | …`: the subshell forks a command with its ends.
        t.push(p(14, 12, Some(100), Some(101)));
        let g = stages(&t, &[11], &[]);
        assert_eq!(g.len(), 3);
        assert_eq!(g[1].pids, vec![12, 14]);
        let g = stages(&t, &[11], &[13]);
        assert_eq!(g.len(), 2);
    }

    #[test]
    fn a_cycle_of_pipes_ends() {
        let t = vec![p(1, 0, Some(2), Some(1)), p(2, 0, Some(1), Some(2))];
        assert_eq!(stages(&t, &[1], &[]).len(), 2);
    }
}
