//! End-to-end `copyscope watch --pipeline` on real pipelines run by `sh`: a fast producer into
//! a slow consumer (the consumer limits, the producer is blocked on its output), a slow
//! producer into a fast consumer (the producer limits, the consumer is blocked on its input),
//! each found from the shell's pid or from one stage's pid, and `tar c DIR | ssh localhost
//! tar x -C DEST` through a throwaway sshd on 127.0.0.1 (skipped when sshd is missing or
//! the test is not root). The watch's `--json` progress lines are read until they say what
//! is awaited, with generous deadlines: nothing is asserted on timing.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

mod sshd;
mod util;

/// How long a condition may take to show under a loaded machine.
const DEADLINE: Duration = Duration::from_secs(90);

/// A consumer that reads 64 KiB, then sleeps 20 ms: about 3 MB/s.
const SLOW_CONSUMER: &str =
    r#"perl -MTime::HiRes=usleep -e 'while (sysread(STDIN, $b, 65536)) { usleep(20000) }'"#;
/// A producer that writes 16 KiB, then sleeps 5 ms: about 3 MB/s, in pieces a quarter of the
/// pipe, so the pipe is full only when its consumer has let four pieces pile up.
const SLOW_PRODUCER: &str = r#"perl -MTime::HiRes=usleep -e '$b = "x" x 16384; while (1) { syswrite(STDOUT, $b) or exit; usleep(5000) }'"#;

/// A shell running `pipeline`, its output and errors to /dev/null; killed with its children
/// when dropped.
struct Pipeline {
    sh: Child,
}

impl Pipeline {
    fn start(pipeline: &str) -> Pipeline {
        let sh = Command::new("sh")
            .args(["-c", pipeline])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sh");
        Pipeline { sh }
    }

    fn pid(&self) -> u32 {
        self.sh.id()
    }

    /// The shell's children once one runs each of `comms` (a child forked but not yet
    /// exec'd still has the shell's name): `(pid, comm)`.
    fn children(&self, comms: &[&str]) -> Vec<(u32, String)> {
        let start = Instant::now();
        loop {
            let kids = children_of(self.pid());
            if comms.iter().all(|c| kids.iter().any(|(_, k)| k == c)) {
                return kids;
            }
            assert!(start.elapsed() < DEADLINE, "the shell started {kids:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The pid of the shell's child running `comm`.
    fn child(&self, comm: &str) -> u32 {
        let kids = self.children(&[comm]);
        kids.iter().find(|(_, c)| c == comm).expect("started").0
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        for (pid, _) in children_of(self.pid()) {
            let _ = Command::new("kill")
                .arg(pid.to_string())
                .stderr(Stdio::null())
                .status();
        }
        let _ = self.sh.kill();
        let _ = self.sh.wait();
    }
}

/// `(pid, comm)` of the processes whose parent is `ppid` (from /proc/PID/stat).
fn children_of(ppid: u32) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let parent = stat[close + 1..].split_whitespace().nth(1);
        if parent.and_then(|p| p.parse::<u32>().ok()) == Some(ppid) {
            out.push((pid, stat[open + 1..close].to_string()));
        }
    }
    out.sort();
    out
}

/// `copyscope watch --pipeline PID --json` running, its JSON lines read on a thread.
struct Watch {
    child: Child,
    lines: mpsc::Receiver<Value>,
    seen: Vec<String>,
}

impl Watch {
    fn start(pids: &[u32]) -> Watch {
        let mut c = Command::new(util::bin());
        c.args(["watch", "--json", "--pipeline"]);
        c.args(pids.iter().map(u32::to_string));
        let mut child = c
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("copyscope");
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&l)
                    && tx.send(v).is_err()
                {
                    return;
                }
            }
        });
        Watch {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The first progress line's `pipeline` object for which `ok` holds; panics with the
    /// lines seen when none does before the deadline.
    fn until(&mut self, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
        let start = Instant::now();
        while start.elapsed() < DEADLINE {
            let Ok(v) = self.lines.recv_timeout(Duration::from_secs(1)) else {
                continue;
            };
            let Some(p) = v.get("pipeline") else {
                continue;
            };
            if self.seen.len() > 5 {
                self.seen.remove(0);
            }
            self.seen.push(p.to_string());
            if ok(p) {
                return p.clone();
            }
        }
        panic!(
            "{what}: not seen in {DEADLINE:?}; last lines: {:#?}",
            self.seen
        );
    }

    /// Ends the watch with SIGTERM; its summary object.
    fn stop(self) -> Value {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        self.summary()
    }

    /// The summary object once the watch has ended (by itself, or told to).
    fn summary(mut self) -> Value {
        let start = Instant::now();
        let mut last = None;
        while start.elapsed() < DEADLINE {
            match self.lines.recv_timeout(Duration::from_secs(1)) {
                Ok(v) => last = Some(v),
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        let status = self.child.wait().expect("wait");
        assert!(status.success(), "copyscope watch ended with {status}");
        last.expect("a summary line")
    }
}

/// The stage of `p` (a `pipeline` object) whose command is `comm`.
fn stage<'a>(p: &'a Value, comm: &str) -> Option<&'a Value> {
    p["stages"].as_array()?.iter().find(|s| s["comm"] == comm)
}

fn share(s: &Value, state: &str) -> f64 {
    s["state_pct"][state].as_f64().unwrap_or(0.0)
}

fn comms(p: &Value) -> Vec<String> {
    (p["stages"].as_array().into_iter().flatten())
        .map(|s| s["comm"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn a_slow_consumer_limits_and_its_producer_is_blocked_on_output() {
    let pl = Pipeline::start(&format!("cat /dev/zero | {SLOW_CONSUMER}"));
    pl.children(&["cat", "perl"]);
    // The shell's pid stands for the pipeline it runs.
    let mut w = Watch::start(&[pl.pid()]);
    let p = w.until("perl named, cat blocked on output", |p| {
        p["limiting"]["comm"] == "perl"
            && stage(p, "cat").is_some_and(|c| share(c, "output") >= 50.0)
            && stage(p, "perl").is_some_and(|c| c["read_bps"].as_f64() > Some(0.0))
    });
    assert_eq!(comms(&p), ["cat", "perl"], "upstream first");
    assert_eq!(p["limiting"]["stage"], 2);
    let perl = stage(&p, "perl").unwrap();
    assert!(perl["read_bps"].as_f64().unwrap() > 0.0, "{perl}");
    let summary = w.stop();
    assert_eq!(summary["pipeline"]["limiting"]["comm"], "perl", "{summary}");
    // The pipe between them, read from outside, was full while cat waited on it.
    let cat = stage(&summary["pipeline"], "cat").unwrap();
    assert!(cat["pipe_full_pct"].as_f64().unwrap() >= 50.0, "{cat}");
    assert!(stage(&summary["pipeline"], "perl").unwrap()["pipe_full_pct"].is_null());
    let verdict = summary["verdict"].to_string();
    assert!(
        verdict.contains("Limited by stage 2 of 2, 'perl'"),
        "{verdict}"
    );
    assert!(verdict.contains("'cat'"), "{verdict}");
    assert!(verdict.contains("(its pipe full "), "{verdict}");
}

#[test]
fn the_watch_ends_with_the_pipeline_and_its_summary_names_the_consumer() {
    // About 3 MB/s: some ten seconds.
    let pl = Pipeline::start(&format!("head -c 30M /dev/zero | {SLOW_CONSUMER}"));
    pl.children(&["head", "perl"]);
    let head = pl.child("head");
    let summary = Watch::start(&[head]).summary();
    let p = &summary["pipeline"];
    assert_eq!(comms(p), ["head", "perl"], "{summary}");
    assert!(
        (p["stages"].as_array().unwrap().iter()).all(|s| s["alive"] == false),
        "{summary}"
    );
    assert_eq!(p["limiting"]["comm"], "perl", "{summary}");
    let head = stage(p, "head").unwrap();
    assert!(share(head, "output") >= 50.0, "{summary}");
}

#[test]
fn a_slow_producer_limits_and_its_consumer_is_blocked_on_input() {
    let pl = Pipeline::start(&format!("{SLOW_PRODUCER} | cat"));
    pl.children(&["perl", "cat"]);
    let cat = pl.child("cat");
    // One stage's pid: the other is found from the pipe between them.
    let mut w = Watch::start(&[cat]);
    let p = w.until("perl named, cat blocked on input", |p| {
        p["limiting"]["comm"] == "perl"
            && stage(p, "cat").is_some_and(|c| share(c, "input") >= 50.0)
    });
    assert_eq!(comms(&p), ["perl", "cat"]);
    assert_eq!(p["limiting"]["stage"], 1);
    let summary = w.stop();
    assert_eq!(summary["pipeline"]["limiting"]["comm"], "perl", "{summary}");
    // cat takes each piece at once: the pipe was full for less of the time than the slow
    // consumer's (at least half); a loaded machine may leave cat unscheduled for a moment.
    let perl = stage(&summary["pipeline"], "perl").unwrap();
    assert!(perl["pipe_full_pct"].as_f64().unwrap() < 50.0, "{perl}");
}

#[test]
fn a_pid_in_no_pipeline_is_refused() {
    let mut c = Command::new(util::bin());
    let mut sleeper = Command::new("sleep")
        .arg("60")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    c.args(["watch", "--plain", "--pipeline", &sleeper.id().to_string()]);
    let o = util::run_timeout(c, DEADLINE);
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no pipeline found"), "{err}");
    let mut c = Command::new(util::bin());
    c.args(["watch", "--plain", "--pipeline", "4000000000"]);
    let o = util::run_timeout(c, DEADLINE);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--pipeline 4000000000: no such process"),
        "{err}"
    );
}

#[test]
fn tar_into_ssh_to_localhost_is_two_stages_and_the_verdict_says_which_limits() {
    let Some(sshd) = sshd::binary() else {
        eprintln!("skipped: sshd is not installed");
        return;
    };
    if !util::is_root() {
        eprintln!("skipped: sshd on a port of its own needs root here");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let keys = t.path().join("keys");
    fs::create_dir(&keys).unwrap();
    let d = sshd::start(sshd, &keys);
    let (src, dst): (PathBuf, PathBuf) = (t.path().join("src"), t.path().join("dst"));
    fs::create_dir(&src).unwrap();
    fs::create_dir(&dst).unwrap();
    // 4 GiB of holes: tar reads zeros at memory speed, so ssh (or the remote tar) limits.
    let big = fs::File::create(src.join("big")).unwrap();
    big.set_len(4 << 30).unwrap();
    let ssh = format!(
        "ssh -p {} -i {} -o BatchMode=yes -o StrictHostKeyChecking=no \
         -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR root@127.0.0.1",
        d.port,
        keys.join("client_key").display()
    );
    let pl = Pipeline::start(&format!(
        "tar c -C {} . | {ssh} tar x -C {}",
        src.display(),
        dst.display()
    ));
    pl.children(&["tar", "ssh"]);
    let tar = pl.child("tar");
    let mut w = Watch::start(&[tar]);
    let p = w.until("tar and ssh measured, moving data", |p| {
        comms(p) == ["tar", "ssh"]
            && (p["stages"].as_array().unwrap().iter()).all(|s| {
                s["measured_s"].as_f64().unwrap_or(0.0) >= 2.0
                    && s["read_bps"].as_f64().unwrap_or(0.0) > 0.0
            })
    });
    eprintln!("tar | ssh: limiting {}", p["limiting"]);
    for s in p["stages"].as_array().unwrap() {
        eprintln!(
            "  {} read {} B/s, wrote {} B/s, {}",
            s["comm"], s["read_bps"], s["written_bps"], s["state_pct"]
        );
    }
    // Whatever it names, the rule holds: a named ssh has tar blocked on its output; a named
    // tar has ssh waiting for input; else it says why it names none.
    match p["limiting"]["comm"].as_str() {
        Some("ssh") => assert!(share(stage(&p, "tar").unwrap(), "output") >= 50.0, "{p}"),
        Some("tar") => {
            let ssh = stage(&p, "ssh").unwrap();
            assert!(share(ssh, "input") + share(ssh, "poll") >= 50.0, "{p}");
        }
        Some(other) => panic!("named {other}: {p}"),
        None => assert!(p["limiting"]["unknown"].is_string(), "{p}"),
    }
    let summary = w.stop();
    assert!(summary["verdict"].is_object() || summary["verdict"].is_string());
    drop(pl);
}
