//! The library entry point the TUI uses: spawn_engine with pause, cancel and a
//! ConflictAsk, progress counters and the event stream.

use crate::util;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use copyscope::copy::{
    ConflictAnswer, ConflictAsk, ConflictQuestion, Control, CopyJob, CopyOptions, CopyRequest,
    EngineEvent, EventSender, OverwritePolicy, Pair, Progress, Stamped, spawn_engine,
};
use copyscope::exit::ExitStatus;
use util::*;

fn job(src: &Path, dst: &Path, opts: CopyOptions) -> CopyJob {
    CopyJob::plan(&CopyRequest {
        pairs: vec![Pair {
            source: src.to_path_buf(),
            dest: dst.to_path_buf(),
        }],
        options: opts,
    })
    .unwrap()
}

fn drain(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Stamped>) -> Vec<EngineEvent> {
    let mut v = Vec::new();
    while let Ok(e) = rx.try_recv() {
        v.push(e.event);
    }
    v
}

#[test]
fn pause_stops_io_and_resume_finishes() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    write(&src.join("f"), &data(3 << 20, 1));
    let opts = CopyOptions {
        throttle_bps: Some(4 << 20),
        ..CopyOptions::default()
    };
    let progress = Arc::new(Progress::default());
    let control = Arc::new(Control::default());
    let (tx, mut rx) = EventSender::channel(std::time::Instant::now());
    let h = spawn_engine(
        job(&src, &t.path().join("dst"), opts),
        progress.clone(),
        control.clone(),
        tx,
        None,
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while progress.snapshot().bytes_copied == 0 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(5));
    }
    control.paused.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(150));
    let a = progress.snapshot().bytes_copied;
    std::thread::sleep(Duration::from_millis(400));
    let b = progress.snapshot().bytes_copied;
    assert_eq!(a, b, "bytes moved while paused");
    let cur = progress.current().expect("current file while paused");
    assert_eq!(cur.size, 3 << 20);
    assert!(cur.done > 0 && cur.done < cur.size);
    control.paused.store(false, Ordering::SeqCst);
    let out = h.join().unwrap();
    assert_eq!(out.status, ExitStatus::Success);
    let ev = drain(&mut rx);
    assert!(
        ev.contains(&EngineEvent::Paused) && ev.contains(&EngineEvent::Resumed),
        "{ev:?}"
    );
    assert!(ev.contains(&EngineEvent::FlushStarted) && ev.contains(&EngineEvent::FlushDone));
    let s = progress.snapshot();
    assert_eq!(s.bytes_copied, 3 << 20);
    assert!(s.scan_done && s.files_done == 1);
    assert!(
        s.read_ns > 0 && s.write_ns > 0,
        "read/write time tracked: {s:?}"
    );
    assert!(out.durable_bps.unwrap() <= out.to_cache_bps);
}

struct Answers {
    answers: Mutex<Vec<ConflictAnswer>>,
    asked: AtomicUsize,
    questions: Mutex<Vec<ConflictQuestion>>,
}

impl ConflictAsk for Answers {
    fn ask(&self, q: &ConflictQuestion) -> ConflictAnswer {
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.questions.lock().unwrap().push(q.clone());
        self.answers
            .lock()
            .unwrap()
            .pop()
            .unwrap_or(ConflictAnswer::Cancel)
    }
}

fn conflict_tree(t: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let src = t.join("src");
    let dst = t.join("dst");
    for n in ["a", "b", "c", "d"] {
        write(&src.join(n), b"new");
        write(&dst.join(n), b"old");
    }
    (src, dst)
}

fn run_ask(
    src: &Path,
    dst: &Path,
    answers: Vec<ConflictAnswer>,
) -> (copyscope::copy::CopyOutcome, usize) {
    let ask = Arc::new(Answers {
        answers: Mutex::new(answers),
        asked: AtomicUsize::new(0),
        questions: Mutex::new(Vec::new()),
    });
    let opts = CopyOptions {
        overwrite: OverwritePolicy::Ask,
        jobs: 1,
        ..CopyOptions::default()
    };
    let (tx, _rx) = EventSender::channel(std::time::Instant::now());
    // -T semantics: DEST is the existing directory itself (merge).
    let job = CopyJob::plan(&CopyRequest {
        pairs: vec![Pair {
            source: src.to_path_buf(),
            dest: dst.to_path_buf(),
        }],
        options: opts,
    })
    .unwrap();
    let out = spawn_engine(
        job,
        Arc::new(Progress::default()),
        Arc::new(Control::default()),
        tx,
        Some(ask.clone() as Arc<dyn ConflictAsk>),
    )
    .join()
    .unwrap();
    LAST_QUESTIONS.with(|q| *q.borrow_mut() = ask.questions.lock().unwrap().clone());
    (out, ask.asked.load(Ordering::SeqCst))
}

thread_local! {
    /// The questions the last `run_ask` on this thread was asked.
    static LAST_QUESTIONS: std::cell::RefCell<Vec<ConflictQuestion>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Sets a file's modification time (seconds since the epoch).
fn set_mtime(p: &Path, secs: u64) {
    let f = std::fs::File::options().write(true).open(p).unwrap();
    f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
        .unwrap();
}

#[test]
fn ask_shows_both_sides_and_rename_keeps_the_existing_file() {
    let t = tempfile::tempdir().unwrap();
    let (src, dst) = conflict_tree(t.path());
    write(&src.join("a"), b"newer and longer");
    set_mtime(&src.join("a"), 2_000_000_000);
    set_mtime(&dst.join("a"), 1_000_000_000);
    // A name taken by something else already: Rename must pass it by, not replace it.
    write(&dst.join("a (1)"), b"someone else's");
    // a → Rename, b → Rename, then SkipAll.
    let (out, asked) = run_ask(
        &src,
        &dst,
        vec![
            ConflictAnswer::SkipAll,
            ConflictAnswer::Rename,
            ConflictAnswer::Rename,
        ],
    );
    assert_eq!(out.status, ExitStatus::Success);
    assert_eq!(asked, 3);
    let q = LAST_QUESTIONS.with(|q| q.borrow()[0].clone());
    assert_eq!(q.destination, dst.join("a"));
    assert_eq!(q.source, src.join("a"));
    assert_eq!((q.new.size, q.new.mtime.0), (16, 2_000_000_000));
    assert_eq!((q.existing.size, q.existing.mtime.0), (3, 1_000_000_000));
    let read = |n: &str| std::fs::read(dst.join(n)).unwrap();
    assert_eq!(read("a"), b"old");
    assert_eq!(read("a (1)"), b"someone else's");
    assert_eq!(read("a (2)"), b"newer and longer");
    assert_eq!(read("b"), b"old");
    assert_eq!(read("b (1)"), b"new");
    assert!(!dst.join("c (1)").exists());
    assert!(temp_leftovers(&dst).is_empty());
}

#[test]
fn overwrite_all_older_replaces_only_older_destinations() {
    let t = tempfile::tempdir().unwrap();
    let (src, dst) = conflict_tree(t.path());
    // a, c: the destination is older; b, d: newer. One question, then the rule applies.
    for (n, s, d) in [("a", 20, 10), ("b", 10, 20), ("c", 20, 10), ("d", 10, 20)] {
        set_mtime(&src.join(n), 1_000_000_000 + s);
        set_mtime(&dst.join(n), 1_000_000_000 + d);
    }
    let (out, asked) = run_ask(&src, &dst, vec![ConflictAnswer::OverwriteAllOlder]);
    assert_eq!(asked, 1);
    assert_eq!(out.status, ExitStatus::Success);
    let got: Vec<Vec<u8>> = ["a", "b", "c", "d"]
        .iter()
        .map(|n| std::fs::read(dst.join(n)).unwrap())
        .collect();
    assert_eq!(got, [b"new", b"old", b"new", b"old"].map(|b| b.to_vec()));
}

#[test]
fn ask_overwrite_skip_and_all() {
    let t = tempfile::tempdir().unwrap();
    let (src, dst) = conflict_tree(t.path());
    // Answers are popped from the end: a → Overwrite, b → Skip, c → SkipAll (d not asked).
    let (out, asked) = run_ask(
        &src,
        &dst,
        vec![
            ConflictAnswer::SkipAll,
            ConflictAnswer::Skip,
            ConflictAnswer::Overwrite,
        ],
    );
    assert_eq!(out.status, ExitStatus::Success);
    assert_eq!(asked, 3);
    let got: Vec<Vec<u8>> = ["a", "b", "c", "d"]
        .iter()
        .map(|n| std::fs::read(dst.join(n)).unwrap())
        .collect();
    assert_eq!(
        got,
        vec![
            b"new".to_vec(),
            b"old".to_vec(),
            b"old".to_vec(),
            b"old".to_vec()
        ]
    );
    assert_eq!(out.skipped.len(), 3);

    let t = tempfile::tempdir().unwrap();
    let (src, dst) = conflict_tree(t.path());
    let (out, asked) = run_ask(&src, &dst, vec![ConflictAnswer::OverwriteAll]);
    assert_eq!(asked, 1);
    assert_eq!(out.status, ExitStatus::Success);
    for n in ["a", "b", "c", "d"] {
        assert_eq!(std::fs::read(dst.join(n)).unwrap(), b"new");
    }
}

#[test]
fn ask_cancel_cancels_the_copy() {
    let t = tempfile::tempdir().unwrap();
    let (src, dst) = conflict_tree(t.path());
    let (out, asked) = run_ask(&src, &dst, vec![ConflictAnswer::Cancel]);
    assert_eq!(asked, 1);
    assert_eq!(out.status, ExitStatus::Cancelled);
    assert_eq!(out.flush_secs, None);
    for n in ["a", "b", "c", "d"] {
        assert_eq!(std::fs::read(dst.join(n)).unwrap(), b"old");
    }
    assert!(temp_leftovers(&dst).is_empty());
}
