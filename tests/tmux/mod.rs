//! Drives the real binary inside tmux for end-to-end tests: start a session of a given size,
//! read the screen, type keys, and wait for text with timeouts.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A detached tmux session on its own socket (so tests never touch a user's tmux server).
pub struct Tmux {
    pub socket: String,
    pub name: String,
}

impl Tmux {
    /// Starts `cmd` (a shell command line) in a detached session of `w`×`h`.
    pub fn start(tag: &str, w: u16, h: u16, cmd: &str, env: &[(&str, &str)]) -> Tmux {
        let socket = format!("copyscope-test-{tag}-{}", std::process::id());
        let t = Tmux {
            socket,
            name: "s".to_string(),
        };
        let mut c = Command::new("tmux");
        c.args([
            "-L",
            &t.socket,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            &t.name,
        ])
        .args(["-x", &w.to_string(), "-y", &h.to_string()]);
        for (k, v) in env {
            c.args(["-e", &format!("{k}={v}")]);
        }
        c.arg(cmd);
        let st = c.status().expect("tmux runs");
        assert!(st.success(), "tmux new-session failed");
        t
    }

    pub fn capture(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-t", &self.name])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The pane including its scrollback (what stays after the program exits).
    pub fn capture_history(&self) -> String {
        let out = Command::new("tmux")
            .args([
                "-L",
                &self.socket,
                "capture-pane",
                "-p",
                "-S",
                "-500",
                "-t",
                &self.name,
            ])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn send(&self, keys: &str) {
        let st = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", &self.name, keys])
            .status()
            .expect("send-keys");
        assert!(st.success());
    }

    /// tmux's own view of whether the pane is on the alternate screen.
    pub fn alternate_on(&self) -> bool {
        self.pane_flag("#{alternate_on}")
    }

    /// tmux's own view of whether the pane shows its cursor.
    pub fn cursor_shown(&self) -> bool {
        self.pane_flag("#{cursor_flag}")
    }

    /// A pane flag of tmux's format language (`#{…}`), true when it is "1".
    fn pane_flag(&self, format: &str) -> bool {
        let out = Command::new("tmux")
            .args([
                "-L",
                &self.socket,
                "display",
                "-p",
                "-t",
                &self.name,
                format,
            ])
            .output()
            .expect("display");
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    }

    /// Writes `text` to the pane's terminal as output, the way a `wall` message or a
    /// background job draws over a full-screen program.
    pub fn write_over(&self, text: &str) {
        let out = Command::new("tmux")
            .args([
                "-L",
                &self.socket,
                "display",
                "-p",
                "-t",
                &self.name,
                "#{pane_tty}",
            ])
            .output()
            .expect("display");
        let tty = String::from_utf8_lossy(&out.stdout).trim().to_string();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&tty)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
            .expect("write to the pane's tty");
    }

    /// Presses `q` once and waits for the cancel question; returns that screen.
    pub fn ask_to_cancel(&self) -> String {
        self.send("q");
        self.wait_for("the cancel question", Duration::from_secs(5), |s| {
            s.contains("Cancel")
        })
    }

    /// Waits until the screen satisfies `pred`; panics with the screen on timeout.
    /// After a suspend and resume: the full screen is back (title row and footer, none of the
    /// shell's text, nothing written over it meanwhile — see `write_over`) and raw mode too:
    /// `p` pauses without Enter, and `p` again resumes.
    pub fn assert_redrawn_and_raw(&self, what: &str) {
        let s = self.wait_for(
            &format!("the redrawn screen after {what}"),
            Duration::from_secs(10),
            |s| {
                s.lines().next().is_some_and(|l| l.contains("copyscope"))
                    && s.contains("q quit")
                    && !s.contains("garbage")
            },
        );
        assert!(self.alternate_on(), "{what}: alternate screen back\n{s}");
        assert!(
            !s.contains("shell$") && !s.contains("Stopped"),
            "{what}: shell text left on the screen\n{s}"
        );
        self.send("p");
        self.wait_for(
            &format!("'p' acting without Enter after {what}"),
            Duration::from_secs(10),
            |s| s.contains("paused"),
        );
        self.send("p");
        self.wait_for(
            &format!("resumed after {what}"),
            Duration::from_secs(10),
            |s| s.contains("copying"),
        );
    }

    pub fn wait_for(&self, what: &str, timeout: Duration, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.capture();
            if pred(&s) {
                return s;
            }
            if start.elapsed() > timeout {
                panic!("timed out waiting for {what}; screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

/// Waits for a file to exist and be non-empty.
pub fn wait_file(path: &Path, timeout: Duration) -> Option<String> {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if let Ok(s) = std::fs::read_to_string(path)
            && !s.trim().is_empty()
        {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

pub fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .output()
        .is_ok_and(|o| o.status.success())
}
