//! End-to-end on a real slow disk: the TUI in tmux copying onto a 40 MB/s ext4 loop disk
//! (tests/slowdev/slowdev.sh, a copy of the lab's script) with the kernel's dirty limits at
//! their defaults. Cancel with q, q: the process is gone within 1 s of the second key and the
//! temporary is removed (the disk is small, so ext4 would otherwise force a whole-filesystem
//! writeback inside one write). Cancel during the final flush of a complete copy: exit 0, the
//! file complete, "all files complete; flush not awaited". Ctrl-Z then `fg`, `kill -STOP` then
//! `fg`, and `kill -STOP` then `kill -CONT`: the screen redrawn whole, raw mode back (a key
//! acts without Enter), the copy stopped while suspended. Under other writers' load (dd
//! writers filling the page cache for the same disk, its speed then dropped to 2 MB/s),
//! cancelled at the moment the copier is held in balance_dirty_pages: q, q in the TUI (with --record) and SIGTERM in --json mode,
//! each gone within 1 s, exit 130, no temporary, the terminal and the outputs ended cleanly.
//!
//! Needs root, /dev/fuse, loop devices, qemu-storage-daemon and mkfs.ext4 (.ci/run installs
//! the packages); where the machine cannot provide them the test says why and skips.

mod slowdev;
mod tmux;
mod util;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use slowdev::{slow_disk, slow_disk_of};
use tmux::{Tmux, wait_file};

const BIN: &str = env!("CARGO_BIN_EXE_copyscope");

/// One slow-disk test at a time: the kernel's dirty limits are global, so one test's copy
/// would be the other's load.
static SERIAL: Mutex<()> = Mutex::new(());

/// How long a stop (Ctrl-Z, `kill -STOP`) may take to be whole: every thread stops only when
/// it leaves the kernel, and a writer throttled by a slow disk leaves it when the disk allows.
const STOP_WAIT: Duration = Duration::from_secs(90);

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn write_source(path: &Path, mb: usize) {
    let mut data = vec![0u8; 1 << 20];
    let mut x: u64 = 0x2545F4914F6CDD1D;
    let mut f = fs::File::create(path).unwrap();
    for _ in 0..mb {
        for c in data.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            c.copy_from_slice(&x.to_le_bytes());
        }
        std::io::Write::write_all(&mut f, &data).unwrap();
    }
}

fn pid_of_copy(marker: &str) -> Option<i32> {
    fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid = e.file_name().to_string_lossy().parse::<i32>().ok()?;
        // By argv, not /proc/PID/exe: a rebuild replaces the binary under a running test.
        let cmd = fs::read(e.path().join("cmdline")).ok()?;
        let cmd = String::from_utf8_lossy(&cmd);
        (cmd.split('\0').next() == Some(BIN) && cmd.contains(marker)).then_some(pid)
    })
}

/// Waits (up to 60 s) until the file system of `dir` has `bytes` free.
fn wait_for_free(dir: &Path, bytes: u64) {
    let start = Instant::now();
    loop {
        let st = rustix::fs::statvfs(dir).unwrap();
        let free = st.f_bavail * st.f_frsize;
        if free >= bytes {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{free} B free after 60 s, {bytes} B needed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn temps(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains("copyscope-tmp"))
                .collect()
        })
        .unwrap_or_default()
}

/// Starts `copyscope SRC DST` in tmux; the shell writes the exit code to `exit`.
fn start(tag: &str, src: &Path, dst: &Path, exit: &Path) -> Tmux {
    start_with(tag, "", src, dst, exit)
}

/// [`start`] with options before the operands.
fn start_with(tag: &str, options: &str, src: &Path, dst: &Path, exit: &Path) -> Tmux {
    let cmd = format!(
        "env TERM=xterm-256color {BIN} {options} {} {}; echo $? > {}; sleep 120",
        src.display(),
        dst.display(),
        exit.display()
    );
    Tmux::start(tag, 100, 30, &cmd, &[])
}

/// Sends q twice and returns how long after the second the process was gone.
fn cancel_and_time(t: &Tmux, pid: i32) -> Duration {
    t.ask_to_cancel();
    // From before the key is handed to tmux: the time the user waits includes its delivery.
    let sent = Instant::now();
    t.send("q");
    gone_after(pid, sent)
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one end-to-end run on the slow device: setup, the cancel, and every check on what it left, in order"
)]
fn cancel_answers_within_a_second_on_a_slow_nearly_full_disk() {
    let _one = serial();
    let work = tempfile::Builder::new()
        .prefix("copyscope-slowdev-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let disk = match slow_disk(&work.path().join("disk"), &["tmux", "python3"]) {
        Ok(d) => d,
        Err(why) => {
            eprintln!("SKIPPED cancel_answers_within_a_second_on_a_slow_nearly_full_disk: {why}");
            return;
        }
    };

    // 1. Mid-copy: 1.2 GB onto a 2 GB disk, cancelled after 8 s of copying.
    let big = work.path().join("big.bin");
    write_source(&big, 1200);
    // Start from a clean page cache: dirty data left by earlier tests (or anything else on
    // the machine) makes the kernel pace every writer harder, and a write already inside
    // balance_dirty_pages is not interruptible (up to 200 ms a call; 1.4-1.8 s measured
    // with a build and a dd writing beside this test). That case is the engine's to fix
    // (docs/benchmarks.md); this test holds the lab disk at its default limits.
    assert!(
        std::process::Command::new("sync")
            .status()
            .unwrap()
            .success()
    );
    let dst = disk.mnt.join("big-copy.bin");
    let exit = work.path().join("exit1");
    let t = start("slowcancel", &big, &dst, &exit);
    t.wait_for("the copying screen", Duration::from_secs(30), |s| {
        s.contains("copying")
    });
    std::thread::sleep(Duration::from_secs(8));
    let pid = pid_of_copy("big-copy.bin").expect("copyscope runs");
    let took = cancel_and_time(&t, pid);
    // The time that counts is the process's (above); the shell then writes the code onto the
    // root filesystem, which a loaded machine's journal held for over 10 s once.
    let code = wait_file(&exit, Duration::from_secs(30)).expect("exit code");
    eprintln!(
        "cancel mid-copy: process gone {:.0} ms after the second q",
        took.as_secs_f64() * 1e3
    );
    assert_eq!(code.trim(), "130");
    // DESIGN §10: within 1 s. What held it (writer-truth sampler): the last close of the
    // removed temporary waiting for its pages under writeback (ext4_evict_inode, 2.1 s), now
    // left to a child; and writes throttled for up to 0.5 s, now sized to the device's rate.
    assert_answered(took, "cancel");
    assert!(
        temps(&disk.mnt).is_empty(),
        "temporaries left: {:?}",
        temps(&disk.mnt)
    );
    assert!(!dst.exists(), "no file under the real name");
    drop(t);

    // 2. During the flush: 300 MB fits the page cache at once, then takes ~8 s to flush.
    let small = work.path().join("small.bin");
    write_source(&small, 300);
    let dst = disk.mnt.join("flush-copy.bin");
    let exit = work.path().join("exit2");
    let t = start("slowflush", &small, &dst, &exit);
    t.wait_for("the flushing phase", Duration::from_secs(60), |s| {
        s.contains("flushing")
    });
    let pid = pid_of_copy("flush-copy.bin").expect("copyscope runs");
    let took = cancel_and_time(&t, pid);
    let code = wait_file(&exit, Duration::from_secs(30)).expect("exit code");
    eprintln!(
        "cancel during flush: process gone {:.0} ms after the second q",
        took.as_secs_f64() * 1e3
    );
    assert_eq!(code.trim(), "0", "a complete copy stays a success");
    assert!(
        took <= Duration::from_secs(1),
        "cancel during the flush took {took:?}"
    );
    let history = t.capture_history();
    assert!(
        history.contains("all files complete; flush not awaited"),
        "{history}"
    );
    assert!(
        !history.contains("cancelled:"),
        "not called a cancel: {history}"
    );
    assert!(
        fs::read(&dst).unwrap() == fs::read(&small).unwrap(),
        "the copy is complete"
    );
    assert!(
        temps(&disk.mnt).is_empty(),
        "temporaries left: {:?}",
        temps(&disk.mnt)
    );
    drop(t);

    // 3. Ctrl-Z then fg, and kill -STOP then fg, in a shell with job control: the screen comes
    // back whole, raw mode too (a key acts without Enter), and the copy does not go on while
    // suspended (as the ? help and the README say).
    // Part 2's complete copy goes, so the 1.2 GB fits again (else copyscope rightly asks
    // about the space before it writes a byte).
    fs::remove_file(disk.mnt.join("flush-copy.bin")).unwrap();
    assert!(Command::new("sync").status().unwrap().success());
    let dst = disk.mnt.join("suspend-copy.bin");
    let t = Tmux::start("slowsusp", 100, 30, "bash --norc --noprofile -i", &[]);
    std::thread::sleep(Duration::from_millis(300));
    t.send("PS1='shell$ '");
    t.send("Enter");
    t.wait_for("the shell prompt", Duration::from_secs(10), |s| {
        s.contains("shell$ ")
    });
    // Paced at 15 MB/s, so the copy lasts 80 s: a stop the kernel holds back (a writer
    // inside balance_dirty_pages while another writer fills the page cache: 22 s once, and
    // the copy went on meanwhile) must not let it end before the checks after `fg`, which
    // need it still copying.
    t.send(&format!(
        "TERM=xterm-256color {BIN} --bwlimit 15M {} {}",
        big.display(),
        dst.display()
    ));
    t.send("Enter");
    t.wait_for("the copying screen", Duration::from_secs(30), |s| {
        s.contains("copying") && s.contains("MB/s")
    });
    std::thread::sleep(Duration::from_secs(3));
    let pid = pid_of_copy("suspend-copy.bin").expect("copyscope runs");
    t.send("C-z");
    let pressed = Instant::now();
    // The terminal is given back at once; the shell says "Stopped" once every thread has
    // stopped, and a write held in balance_dirty_pages stops only when the kernel lets it
    // go (it sleeps there killable, not stoppable): on a slow disk under load, seconds.
    while t.alternate_on() {
        assert!(
            pressed.elapsed() < Duration::from_secs(10),
            "Ctrl-Z leaves the alternate screen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = pressed.elapsed();
    t.wait_for("the shell after Ctrl-Z", STOP_WAIT, |s| {
        s.contains("Stopped") && s.contains("shell$")
    });
    println!(
        "Ctrl-Z: the screen given back after {} ms, the process stopped after {} ms",
        left.as_millis(),
        pressed.elapsed().as_millis()
    );
    assert_suspended(pid);
    t.send("fg");
    t.send("Enter");
    t.assert_redrawn_and_raw("Ctrl-Z and fg");
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::Signal::STOP,
    )
    .unwrap();
    t.wait_for("the shell after kill -STOP", STOP_WAIT, |s| {
        s.contains("Stopped")
    });
    assert_suspended(pid);
    t.send("fg");
    t.send("Enter");
    t.assert_redrawn_and_raw("kill -STOP and fg");
    let took = cancel_and_time(&t, pid);
    eprintln!(
        "cancel after the resumes: process gone {:.0} ms after the second q",
        took.as_secs_f64() * 1e3
    );
    assert_answered(took, "cancel");
    t.wait_for(
        "the prompt after the cancel",
        Duration::from_secs(10),
        |s| s.contains("cancelled") && s.trim_end().ends_with("shell$"),
    );
    let exit = work.path().join("exit3");
    t.send(&format!("echo $? > {}", exit.display()));
    t.send("Enter");
    let code = wait_file(&exit, Duration::from_secs(30)).expect("exit code");
    assert_eq!(code.trim(), "130");
    assert!(temps(&disk.mnt).is_empty(), "{:?}", temps(&disk.mnt));
    assert!(!dst.exists(), "no file under the real name");
    drop(t);

    // 4. kill -STOP then kill -CONT with no shell in between (copyscope is the pane's only
    // program): the same full redraw over what was written meanwhile, keys act at once.
    // Part 3's abandoned file is freed once its last descriptor closes (a `cat` holds it until
    // the kernel has let go of its pages): until then the 1.2 GB would not fit, and copyscope
    // rightly asks about the space before writing (1.24 GB free for 1.26 GB, once).
    wait_for_free(&disk.mnt, fs::metadata(&big).unwrap().len() * 21 / 20);
    let dst = disk.mnt.join("stopcont-copy.bin");
    let exit = work.path().join("exit4");
    // Paced, as in part 3: the copy must outlast a stop the kernel holds back.
    let t = start_with("slowstopcont", "--bwlimit 15M", &big, &dst, &exit);
    t.wait_for("the copying screen", Duration::from_secs(30), |s| {
        s.contains("copying") && s.contains("MB/s")
    });
    let pid = pid_of_copy("stopcont-copy.bin").expect("copyscope runs");
    let p = rustix::process::Pid::from_raw(pid).unwrap();
    rustix::process::kill_process(p, rustix::process::Signal::STOP).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert_suspended(pid);
    t.write_over("\r\ngarbage written while stopped\r\n");
    rustix::process::kill_process(p, rustix::process::Signal::CONT).unwrap();
    // Until the redraw, the screen still shows the old frame with the garbage over it.
    t.assert_redrawn_and_raw("kill -STOP and kill -CONT");
    let took = cancel_and_time(&t, pid);
    println!(
        "cancel after STOP/CONT and a pause: process gone {} ms after the second q",
        took.as_millis()
    );
    assert_answered(took, "cancel");
    let code = wait_file(&exit, Duration::from_secs(30)).expect("exit code");
    assert_eq!(code.trim(), "130");
    assert!(temps(&disk.mnt).is_empty(), "{:?}", temps(&disk.mnt));
}

/// Other writers on the same disk: `n` dd processes writing `mb` MB of zeros between them, as
/// a second copy or a backup beside copyscope would. Stopped and their files removed on drop.
/// What the four other writers would write in all, beside the copy under test: more than
/// the kernel lets be dirty (a fifth of the memory, 3.6 GB on a 24 GiB machine), so they
/// keep the page cache at its limit and the kernel paces every writer, the copy too; they
/// are stopped long before they finish.
const WRITERS_MB: usize = 16_000;

struct Writers {
    children: Vec<Child>,
    files: Vec<PathBuf>,
}

impl Writers {
    fn start(dir: &Path, n: usize, mb: usize) -> Writers {
        let files: Vec<PathBuf> = (0..n).map(|k| dir.join(format!("other-{k}"))).collect();
        let children = files
            .iter()
            .map(|f| {
                Command::new("dd")
                    .arg("if=/dev/zero")
                    .arg(format!("of={}", f.display()))
                    .args(["bs=1M", &format!("count={}", mb / n), "status=none"])
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("dd")
            })
            .collect();
        Writers { children, files }
    }

    /// Waits (up to 60 s) until the kernel holds one of the writers in balance_dirty_pages:
    /// the page cache is then at its limit and the copy started next is paced too. A fixed
    /// wait was not enough on a loaded machine: the copy fitted under the limit, finished
    /// copying in two seconds and was flushing, with no copy thread left to hold.
    fn wait_until_throttled(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let held = self.children.iter().any(|c| {
                fs::read_to_string(format!("/proc/{}/wchan", c.id()))
                    .is_ok_and(|w| w == "balance_dirty_pages")
            });
            if held {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("no writer was held in balance_dirty_pages within 60 s");
    }
}

impl Drop for Writers {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for f in &self.files {
            let _ = fs::remove_file(f);
        }
        // Their dirty pages go with the files; what is under writeback is waited for here, so
        // the next case starts from a synced page cache.
        let _ = Command::new("sync").status();
    }
}

/// The copier thread's kernel wait channel (`/proc/PID/task/TID/wchan`), if it has one.
fn copier_wchan(pid: i32) -> Option<String> {
    fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
        .find_map(|t| {
            let comm = fs::read_to_string(t.path().join("comm")).ok()?;
            if !comm.starts_with("copyscope-copy") {
                return None;
            }
            fs::read_to_string(t.path().join("wchan")).ok()
        })
}

/// Waits until the copier has sat in balance_dirty_pages for 50 ms on end: the moment a
/// cancel used to wait for (the kernel's dirty throttling sleeps until the write is paced,
/// and no signal but SIGKILL ends that sleep). True if it happened within `timeout`.
/// Err: how often each wait channel was seen instead.
fn wait_until_throttled(pid: i32, timeout: Duration) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    let mut since: Option<Instant> = None;
    let mut seen = std::collections::BTreeMap::<String, u32>::new();
    while Instant::now() < deadline {
        let w = copier_wchan(pid).unwrap_or_else(|| "(no copier)".into());
        if w == "balance_dirty_pages" {
            let t = *since.get_or_insert_with(Instant::now);
            if t.elapsed() >= Duration::from_millis(50) {
                return Ok(());
            }
        } else {
            since = None;
        }
        *seen.entry(w).or_default() += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
    Err(format!("{seen:?}"))
}

/// The moment to cancel: the disk's speed drops to 2 MB/s (its share when other writers take
/// the rest; slowdev's throttle, a real device slowing down) and the copier has sat in
/// balance_dirty_pages for 50 ms, so the write it is in cannot end for seconds. Without the
/// drop that write ended by itself within ~200 ms and the build without the abandon (issue 11's
/// gap) passed 6 of 6 runs here; with it, it waited 5.1 s in one write (writer-truth). At 2 MB/s
/// the ext4 journal's commit can hold the copier instead (do_get_write_access, uninterruptible:
/// no exit ends it, so it is not the case tested here); then the disk gets its speed back for a
/// few seconds and the drop is tried again. The disk is back at 40 MB/s when the returned guard
/// is dropped (also on a failed assert, so the writers' cleanup and the unmount do not crawl).
fn held_by_the_kernel(disk: &slowdev::SlowDisk, pid: i32) -> Slowed<'_> {
    let mut seen = Vec::new();
    for _ in 0..4 {
        disk.set_mbps(2);
        let slowed = Slowed(disk);
        match wait_until_throttled(pid, Duration::from_secs(10)) {
            Ok(()) => return slowed,
            Err(s) => seen.push(s),
        }
        drop(slowed);
        std::thread::sleep(Duration::from_secs(3));
    }
    panic!("the copier was never held in balance_dirty_pages for 50 ms: {seen:?}");
}

struct Slowed<'a>(&'a slowdev::SlowDisk);

impl Drop for Slowed<'_> {
    fn drop(&mut self) {
        self.0.set_mbps(40);
    }
}

/// How long after `from` the process `pid` was gone (reaped: its /proc entry removed).
fn gone_after(pid: i32, from: Instant) -> Duration {
    let mut late = Vec::new();
    while Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            from.elapsed() < Duration::from_secs(60),
            "copyscope never ended"
        );
        if from.elapsed() >= Duration::from_secs(1) {
            late.extend(held_threads(pid));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let took = from.elapsed();
    LATE.with(|l| *l.borrow_mut() = late);
    took
}

std::thread_local! {
    /// What held the process at each look past 1 s in the last [`gone_after`].
    static LATE: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Kernel functions of the ext4 journal a write can sleep in uninterruptibly: no signal,
/// SIGKILL included, ends that sleep (docs/benchmarks.md, "Cancel under other writers' load").
const JOURNAL_WAITS: [&str; 5] = [
    "jbd2",
    "do_get_write_access",
    "start_this_handle",
    "wait_transaction_locked",
    "ext4_journal",
];

/// The threads of `pid` in uninterruptible sleep, with their kernel stacks (wchan when the
/// stack cannot be read): "" when none is; None once the process is gone, or a zombie with
/// no thread left in the kernel. (A zombie leader whose copy thread is still held is not
/// gone: the shell cannot reap it until that thread ends.)
fn held_threads(pid: i32) -> Option<String> {
    let state = |stat: &str| {
        stat.rsplit(')')
            .next()?
            .split_whitespace()
            .next()
            .map(str::to_string)
    };
    let main = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let zombie = state(&main).as_deref() == Some("Z");
    let mut held = String::new();
    for t in fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
        let stat = fs::read_to_string(t.path().join("stat")).unwrap_or_default();
        if state(&stat).as_deref() != Some("D") {
            continue;
        }
        let stack = fs::read_to_string(t.path().join("stack"))
            .or_else(|_| fs::read_to_string(t.path().join("wchan")))
            .unwrap_or_default();
        held.push_str(&format!(
            "[{}] {}",
            t.file_name().to_string_lossy(),
            stack.trim()
        ));
    }
    (!zombie || !held.is_empty()).then_some(held)
}

/// DESIGN §10: gone within 1 s of the cancel. Past that only while the kernel held a thread
/// in an ext4 journal wait, which nothing can interrupt: then the evidence is printed and the
/// run passes if the process was gone within 5 s; any other reason fails.
fn assert_answered(took: Duration, what: &str) {
    if took < Duration::from_secs(1) {
        return;
    }
    let late = LATE.with(|l| l.borrow().clone());
    let in_journal = |s: &String| JOURNAL_WAITS.iter().any(|f| s.contains(f));
    assert!(
        took < Duration::from_secs(5) && !late.is_empty() && late.iter().all(in_journal),
        "{what} took {took:?}; past 1 s the process was held by: {late:#?}"
    );
    eprintln!(
        "{what} took {took:?}, past 1 s only in an uninterruptible ext4 journal wait: {}",
        late.last().map(String::as_str).unwrap_or_default()
    );
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one end-to-end run on the slow device: setup, the cancel, and every check on what it left, in order"
)]
fn cancel_answers_within_a_second_while_other_writers_load_the_disk() {
    let _one = serial();
    let work = tempfile::Builder::new()
        .prefix("copyscope-slowload-")
        .tempdir_in("/var/tmp")
        .unwrap();
    // 24 GB (sparse: only what reaches the disk takes space): the copy fits beside the
    // writers (on the 2 GB disk copyscope rightly asks about the space before writing a byte),
    // and the dirty data stays under half of the free space, where ext4 would hold every
    // writer in a whole-disk writeback (`ext4_nonda_switch`) instead of pacing it.
    let disk = match slow_disk_of(
        "24G",
        &work.path().join("disk"),
        &["tmux", "python3", "dd", "stty"],
    ) {
        Ok(d) => d,
        Err(why) => {
            eprintln!(
                "SKIPPED cancel_answers_within_a_second_while_other_writers_load_the_disk: {why}"
            );
            return;
        }
    };
    let big = work.path().join("big.bin");
    write_source(&big, 1200);
    assert!(Command::new("sync").status().unwrap().success());

    // 1. The TUI, recording: four writers fill the page cache for the disk first, so the
    // kernel paces the copy far below the disk's speed; q, q once the copier is held.
    let load = Writers::start(&disk.mnt, 4, WRITERS_MB);
    load.wait_until_throttled();
    let dst = disk.mnt.join("loaded-copy.bin");
    let exit = work.path().join("exit-tui");
    let stty = work.path().join("stty-after");
    let rec = work.path().join("run.jsonl");
    let cmd = format!(
        "env TERM=xterm-256color {BIN} --record {} {} {}; echo $? > {}; stty -a > {}; sleep 120",
        rec.display(),
        big.display(),
        dst.display(),
        exit.display(),
        stty.display()
    );
    let t = Tmux::start("slowload", 100, 30, &cmd, &[]);
    t.wait_for("the copying screen", Duration::from_secs(30), |s| {
        s.contains("copying") && s.contains("MB/s")
    });
    std::thread::sleep(Duration::from_secs(8));
    let pid = pid_of_copy("loaded-copy.bin").expect("copyscope runs");
    t.ask_to_cancel();
    let slowed = held_by_the_kernel(&disk, pid);
    let sent = Instant::now();
    t.send("q");
    let took = gone_after(pid, sent);
    drop(slowed);
    eprintln!(
        "cancel under load (TUI): process gone {:.0} ms after the second q",
        took.as_secs_f64() * 1e3
    );
    let code = wait_file(&exit, Duration::from_secs(30)).expect("exit code");
    assert_eq!(code.trim(), "130");
    assert_answered(took, "cancel");
    let left = util::temp_leftovers(&disk.mnt);
    assert!(left.is_empty(), "temporaries left: {left:?}");
    assert!(!dst.exists(), "no file under the real name");
    // The terminal as the shell gets it back: main screen, cursor shown, cooked mode.
    let modes = wait_file(&stty, Duration::from_secs(30)).expect("stty -a");
    assert!(!t.alternate_on(), "the alternate screen was left");
    assert!(t.cursor_shown(), "the cursor is shown");
    for m in [" icanon", " echo "] {
        assert!(modes.contains(m), "raw mode left on ({m} missing): {modes}");
    }
    let history = t.capture_history();
    assert!(history.contains("cancelled"), "{history}");
    assert_recording_ends(&rec, 130);
    drop(t);
    drop(load);

    // 2. --json, SIGTERM: the same, and the stream ends with its summary object.
    let load = Writers::start(&disk.mnt, 4, WRITERS_MB);
    load.wait_until_throttled();
    let dst = disk.mnt.join("json-copy.bin");
    let out = fs::File::create(work.path().join("json.out")).unwrap();
    let mut child = Command::new(BIN)
        .arg("--json")
        .arg(&big)
        .arg(&dst)
        .stdout(out)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(10));
    let pid = child.id() as i32;
    let slowed = held_by_the_kernel(&disk, pid);
    let sent = Instant::now();
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let status = child.wait().unwrap();
    let took = sent.elapsed();
    drop(slowed);
    eprintln!(
        "cancel under load (--json, SIGTERM): process gone {:.0} ms after the signal",
        took.as_secs_f64() * 1e3
    );
    assert_eq!(status.code(), Some(130));
    assert!(took < Duration::from_secs(1), "SIGTERM took {took:?}");
    let left = util::temp_leftovers(&disk.mnt);
    assert!(left.is_empty(), "temporaries left: {left:?}");
    assert!(!dst.exists(), "no file under the real name");
    let text = fs::read_to_string(work.path().join("json.out")).unwrap();
    let last: serde_json::Value =
        serde_json::from_str(text.lines().last().expect("JSON lines")).expect("a whole line");
    assert_eq!(last["exit_code"], 130, "{last}");
    drop(load);
}

/// A recording that ended cleanly: every line whole JSON, the last its summary with `code`.
fn assert_recording_ends(rec: &Path, code: i64) {
    let text = fs::read_to_string(rec).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let last = lines.last().expect("a recording");
    assert_eq!(last["type"], "summary", "{last}");
    assert_eq!(last["exit_code"], code, "{last}");
}

/// Every thread of `pid` is stopped, and it writes nothing over a second (its wchar stays):
/// a suspended copy does not go on.
fn assert_suspended(pid: i32) {
    let states = || -> Vec<char> {
        fs::read_dir(format!("/proc/{pid}/task"))
            .unwrap()
            .flatten()
            .filter_map(|t| fs::read_to_string(t.path().join("stat")).ok())
            .filter_map(|s| {
                s.rsplit(')')
                    .next()?
                    .split_whitespace()
                    .next()?
                    .chars()
                    .next()
            })
            .collect()
    };
    // What the process wrote (write and copy_file_range count in wchar): a new file may have
    // no name until it is complete, so its size cannot be read from the directory.
    let size = || -> u64 {
        fs::read_to_string(format!("/proc/{pid}/io"))
            .ok()
            .and_then(|io| {
                io.lines()
                    .find_map(|l| l.strip_prefix("wchar:"))
                    .and_then(|v| v.trim().parse().ok())
            })
            .expect("/proc/PID/io is readable (root)")
    };
    // Every thread stops when it leaves the kernel: a write held in balance_dirty_pages only
    // when the kernel lets it go.
    let deadline = Instant::now() + STOP_WAIT;
    while !states().iter().all(|c| *c == 'T') {
        assert!(
            Instant::now() < deadline,
            "threads not stopped: {:?}",
            states()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let before = size();
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(size(), before, "the copy went on while suspended");
    assert!(states().iter().all(|c| *c == 'T'), "{:?}", states());
}
