//! `watch --pipeline` on fixture data: the stages found under a fixture tree from their fd
//! links (`pipe:[N]`) and fdinfo flags, read through a tick, and fed as samples to the model,
//! whose window, run figures and verdict name the stage that limits.

use std::os::unix::fs::symlink;
use std::path::Path;

use copyscope::model::pipeline::Limiter;
use copyscope::model::{Limit, Model, ModelConfig};
use copyscope::sample::pipeline::{
    PipeFill, PipelineReader, PipelineSample, StageSample, StageWait,
};
use copyscope::sample::{Sample, SysRoot};

fn put(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A process with fds 0 and 1 (`None`: not a pipe), as the kernel shows them.
fn process(
    root: &Path,
    pid: u32,
    ppid: u32,
    comm: &str,
    fd0: Option<u64>,
    fd1: Option<u64>,
    wchan: &str,
) {
    put(root, &format!("proc/{pid}/comm"), &format!("{comm}\n"));
    put(
        root,
        &format!("proc/{pid}/cmdline"),
        &format!("{comm}\0-x\0"),
    );
    put(
        root,
        &format!("proc/{pid}/stat"),
        &format!("{pid} ({comm}) S {ppid} 1 1"),
    );
    put(
        root,
        &format!("proc/{pid}/io"),
        "rchar: 0\nwchar: 0\nwrite_bytes: 0\n",
    );
    put(
        root,
        &format!("proc/{pid}/task/{pid}/stat"),
        &format!("{pid} ({comm}) S {ppid} 1 1"),
    );
    put(root, &format!("proc/{pid}/task/{pid}/wchan"), wchan);
    let fd_dir = root.join(format!("proc/{pid}/fd"));
    std::fs::create_dir_all(&fd_dir).unwrap();
    for (fd, pipe, flags) in [(0, fd0, "00"), (1, fd1, "01")] {
        let target = pipe.map_or("/dev/pts/0".to_string(), |n| format!("pipe:[{n}]"));
        symlink(target, fd_dir.join(fd.to_string())).unwrap();
        put(
            root,
            &format!("proc/{pid}/fdinfo/{fd}"),
            &format!(
                "pos:\t0\nflags:\t{flags}\nmnt_id:\t15\nino:\t{}\n",
                pipe.unwrap_or(3)
            ),
        );
    }
}

#[test]
fn the_stages_are_found_from_the_shell_and_read_in_order() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    // bash (100) running `cat /dev/zero | gzip | dd of=x`; another pipeline beside it.
    process(r, 100, 1, "bash", None, None, "do_wait");
    process(r, 101, 100, "cat", None, Some(7001), "anon_pipe_write");
    process(
        r,
        102,
        100,
        "gzip",
        Some(7001),
        Some(7002),
        "anon_pipe_write",
    );
    process(r, 103, 100, "dd", Some(7002), None, "balance_dirty_pages");
    process(r, 200, 1, "yes", None, Some(8001), "anon_pipe_write");
    process(r, 201, 1, "head", Some(8001), None, "anon_pipe_read");
    let root = SysRoot::new(r);
    for seeds in [vec![100], vec![102], vec![103]] {
        let mut reader = PipelineReader::new(&root, &seeds, Vec::new());
        let s = reader.read();
        let names: Vec<&str> = s.stages.iter().map(|s| s.comm.as_str()).collect();
        assert_eq!(names, ["cat", "gzip", "dd"], "from {seeds:?}");
        assert_eq!(s.stages[0].args, ["cat", "-x"]);
        let waits: Vec<Option<StageWait>> = s.stages.iter().map(|s| s.wait).collect();
        assert_eq!(
            waits,
            [
                Some(StageWait::Output),
                Some(StageWait::Output),
                Some(StageWait::Disk)
            ],
            "dd waits for the disk: its wait channel says so without a stack"
        );
    }
    let mut reader = PipelineReader::new(&root, &[201], vec![200]);
    assert_eq!(reader.read().stages.len(), 1, "a skipped pid is no stage");
}

/// `zfs recv` under sshd reads a pipe whose other end sshd holds at a descriptor above 1: the
/// pipeline is that one stage, and its throughput is what it read (its writes are ioctls:
/// `wchar` stays 0), from the first tick to the last.
#[test]
fn a_lone_stage_s_throughput_is_what_it_read() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    // Its input a pipe whose writer holds it at a descriptor above 1 (sshd): no stage.
    process(r, 300, 1, "zfs", Some(9001), None, "anon_pipe_read");
    let root = SysRoot::new(r);
    let mut reader = PipelineReader::new(&root, &[300], Vec::new());
    let first = reader.read();
    assert_eq!(first.lone, Some(300));
    assert_eq!(
        reader.lone(),
        Some(300),
        "what the watch names its intake by"
    );
    assert_eq!(first.stages[0].wait, Some(StageWait::Input));
    put(
        r,
        "proc/300/io",
        "rchar: 5000000\nwchar: 0\nwrite_bytes: 0\n",
    );
    let next = reader.read();
    assert_eq!(
        next.bytes(),
        5_000_000,
        "its reads, not its 0 bytes written"
    );
    let pair = PipelineSample {
        lone: None,
        stages: vec![
            stage(1, "a", 0, 7, StageWait::Busy),
            stage(2, "b", 9, 0, StageWait::Busy),
        ],
    };
    assert_eq!(
        pair.bytes(),
        7,
        "a pipeline of several: its first stage's writes"
    );
    // Weighed as both its ends: waiting on its input 94 % of the time, it waits for what
    // feeds it from outside.
    let mut m = Model::new(ModelConfig::default(), Default::default());
    for i in 0..=50u64 {
        let wait = if i % 16 == 0 {
            StageWait::Busy
        } else {
            StageWait::Input
        };
        m.apply(&Sample {
            t_ns: i * 100_000_000,
            pipeline: Some(PipelineSample {
                lone: Some(300),
                stages: vec![stage(300, "zfs", i * 1_000_000, 0, wait)],
            }),
            ..Default::default()
        });
    }
    let v = m.verdict();
    assert!(
        v.text
            .starts_with("Limited by stage 1 of 1, 'zfs' (pid 300), at ")
            && v.text
                .contains("blocked on its input, outside the pipeline 9"),
        "{}",
        v.text
    );
}

fn stage(pid: u32, comm: &str, read: u64, written: u64, wait: StageWait) -> StageSample {
    StageSample {
        pid,
        comm: comm.into(),
        args: vec![comm.into()],
        read,
        written,
        wait: Some(wait),
        alive: true,
        ..Default::default()
    }
}

/// Ten seconds at 10 Hz of `zfs send | mbuffer | zfs recv`-like stages at 50 MB/s: the middle
/// stage busy, the first blocked on output, the last on input (every tenth tick busy).
fn samples() -> Vec<Sample> {
    (0..=100u64)
        .map(|i| {
            let bytes = i * 5_000_000;
            let side = |w| if i % 10 == 0 { StageWait::Busy } else { w };
            Sample {
                t_ns: i * 100_000_000,
                engine: copyscope::copy::ProgressSnapshot {
                    bytes_copied: bytes,
                    ..Default::default()
                },
                pipeline: Some(PipelineSample {
                    lone: None,
                    stages: vec![
                        StageSample {
                            output_pipe: Some(PipeFill {
                                bytes: if i % 10 == 0 { 0 } else { 65536 },
                                capacity: 65536,
                            }),
                            ..stage(11, "send", 0, bytes, side(StageWait::Output))
                        },
                        stage(12, "squash", bytes, bytes / 3, StageWait::Busy),
                        stage(13, "recv", bytes / 3, 0, side(StageWait::Input)),
                    ],
                }),
                ..Default::default()
            }
        })
        .collect()
}

#[test]
fn the_model_names_the_busy_middle_stage_live_and_in_the_verdict() {
    let mut m = Model::new(ModelConfig::default(), Default::default());
    for s in samples() {
        m.apply(&s);
    }
    let live = m.pipeline().expect("a pipeline");
    assert!(
        live.span_ns <= 5_100_000_000,
        "the newest seconds: {}",
        live.span_ns
    );
    assert_eq!(
        live.limiter,
        Limiter::Stage {
            index: 1,
            by: StageWait::Busy
        }
    );
    let send = &live.stages[0];
    assert!(
        (send.written_bps - 50e6).abs() < 1e6,
        "{}",
        send.written_bps
    );
    assert!(send.shares.get(StageWait::Output) >= 0.85);
    let run = m.pipeline_run().unwrap();
    assert!(run.span_ns >= 9_900_000_000);
    let v = m.verdict();
    assert_eq!(v.limit, Limit::Stage);
    assert!(
        v.text
            .starts_with("Limited by stage 2 of 3, 'squash' (pid 12), at "),
        "{}",
        v.text
    );
    assert!(
        v.text
            .contains("before it 'send' (pid 11) blocked on output 90 % (its pipe full 90 %)"),
        "{}",
        v.text
    );
    assert!(
        v.text
            .contains("after it 'recv' (pid 13) blocked on input 9"),
        "{}",
        v.text
    );
}

#[test]
fn an_ended_stage_keeps_its_row_and_leaves_the_judgment() {
    let mut m = Model::new(ModelConfig::default(), Default::default());
    let mut all = samples();
    for s in &mut all[40..] {
        let p = s.pipeline.as_mut().unwrap();
        p.stages[0].alive = false;
        p.stages[0].wait = None;
    }
    for s in &all {
        m.apply(s);
    }
    let live = m.pipeline().unwrap();
    assert_eq!(live.stages.len(), 3);
    assert!(!live.stages[0].alive);
    assert_eq!(
        live.stages[0].shares.measured_ns, 0,
        "not measured once ended"
    );
    // squash busy, recv waiting for it: squash still limits what is left.
    assert_eq!(
        live.limiter,
        Limiter::Stage {
            index: 1,
            by: StageWait::Busy
        }
    );
}

/// The pipe on a process's standard output, read from outside: full behind a writer
/// nobody reads, empty behind one that writes nothing.
#[test]
fn a_pipe_s_fill_is_read_from_outside() {
    use copyscope::sample::pipeline::pipe_fill;
    use std::process::{Command, Stdio};
    let root = SysRoot::default();
    let mut stuck = Command::new("head")
        .args(["-c", "1000000", "/dev/zero"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut idle = Command::new("sleep")
        .arg("30")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let full = loop {
        let f = pipe_fill(&root, stuck.id()).expect("the pipe opens");
        if f.full() || std::time::Instant::now() > deadline {
            break f;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(full.full() && full.capacity >= 4096, "{full:?}");
    assert_eq!(full.bytes, full.capacity, "{full:?}");
    let empty = pipe_fill(&root, idle.id()).unwrap();
    assert_eq!(empty.bytes, 0);
    assert!(!empty.full());
    // The writer still sees its reader go: reading the fill kept no reader alive.
    drop(stuck.stdout.take());
    let status = stuck.wait().unwrap();
    assert!(
        !status.success(),
        "head ended by the broken pipe: {status:?}"
    );
    idle.kill().unwrap();
    idle.wait().unwrap();
    assert!(pipe_fill(&root, std::process::id()).is_none_or(|f| f.capacity > 0));
}

/// The screen of a pipeline watch at `width` × `height`, `compact` or not.
fn pipeline_screen(all: &[Sample], width: u16, height: u16, compact: bool) -> String {
    use copyscope::frontend::state::App;
    use copyscope::present::units::Units;
    use copyscope::ui::theme::Theme;
    use copyscope::ui::view::{Header, RunState, UiOptions};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    let mut model = Model::new(ModelConfig::default(), Default::default());
    for s in all {
        model.apply(s);
    }
    let opts = UiOptions {
        theme: Theme::new(true, false),
        units: Units::Decimal,
        compact,
        then: None,
    };
    let header = Header {
        source: "pipeline of pid 11".into(),
        dest: ".".into(),
        fs: String::new(),
    };
    let mut app = App::new(model, header, opts);
    app.state = RunState::Watching;
    app.watch = true;
    app.now_ns = 10_000_000_000;
    let mut term = Terminal::new(TestBackend::new(width, height)).unwrap();
    term.draw(|f| copyscope::ui::render(f, &app.view()))
        .unwrap();
    term.backend().to_string()
}

/// Below 18 rows, or with --compact, the chart goes but the stages stay, before the events.
#[test]
fn a_compact_screen_keeps_the_stages() {
    for (w, h, compact) in [(80, 15, false), (80, 24, true), (60, 10, false)] {
        let text = pipeline_screen(&samples(), w, h, compact);
        assert!(
            text.contains("limited by 'squash' (pid 12), busy 100 %"),
            "{w}x{h}: {text}"
        );
        assert!(text.contains("*2/3 squash"), "{w}x{h}: {text}");
        if h >= 15 {
            assert!(text.contains("blocked on output 90 %"), "{w}x{h}: {text}");
        }
        // No room for the pipe column: the state stays whole.
        assert!(!text.contains("pipe full"), "{w}x{h}: {text}");
        if h >= 15 {
            assert!(text.contains(" 3/3 recv"), "{w}x{h}: {text}");
        }
    }
}

#[test]
fn the_tui_shows_a_pipeline_panel_with_the_limiting_stage_marked() {
    let mut all = samples();
    // A name that would drive the terminal is quoted.
    for s in &mut all {
        let p = s.pipeline.as_mut().unwrap();
        p.stages[2].comm = "re\u{1b}[2Jcv".into();
        p.stages[2].args = vec!["recv".into(), "-F".into(), "pool/a b".into()];
    }
    let text = pipeline_screen(&all, 132, 32, false);
    assert!(text.contains("pipeline"), "{text}");
    assert!(
        text.contains("limited by 'squash' (pid 12), busy 100 %"),
        "{text}"
    );
    assert!(text.contains("*2/3 squash"), "{text}");
    assert!(text.contains(" 1/3 send"), "{text}");
    assert!(
        text.contains("blocked on output 90 %  pipe full 90 %"),
        "{text}"
    );
    assert!(text.contains("recv -F 'pool/a b'"), "{text}");
    assert!(!text.contains('\u{1b}'), "{text}");
}

/// A model configured as `copyscope watch` configures it (the idle tail is not the writer's).
fn watch_model() -> Model {
    let cfg = ModelConfig {
        stopped_tail_is_end: true,
        ..Default::default()
    };
    Model::new(cfg, Default::default())
}

/// `zfs send | zfs recv` onto a throttled pool as the ZFS lab showed it: the sender pushes
/// 143 MB through the pipe in 2 s, busy, and ends; the receiver writes to disk for 12 s more.
/// The receiver, left working, limits the run (the model said "unknown" while it weighed
/// each stage only over the time it lived).
#[test]
fn a_receiver_left_writing_after_the_sender_ended_limits_the_run() {
    let mut m = Model::new(ModelConfig::default(), Default::default());
    for i in 0..=140u64 {
        let sent = (i.min(20)) * 7_150_000;
        let mut send = stage(11, "send", 0, sent, StageWait::Busy);
        if i >= 20 {
            send.alive = false;
            send.wait = None;
        }
        let recv_wait = if i < 20 && i % 2 == 0 {
            StageWait::Input
        } else {
            StageWait::Disk
        };
        let s = Sample {
            t_ns: i * 100_000_000,
            engine: copyscope::copy::ProgressSnapshot {
                bytes_copied: i * 1_020_000,
                ..Default::default()
            },
            pipeline: Some(PipelineSample {
                lone: None,
                stages: vec![send, stage(13, "recv", sent, i * 1_020_000, recv_wait)],
            }),
            ..Default::default()
        };
        m.apply(&s);
    }
    let run = m.pipeline_run().unwrap();
    assert_eq!(
        run.limiter,
        Limiter::Stage {
            index: 1,
            by: StageWait::Disk
        }
    );
    let live = m.pipeline().unwrap();
    assert_eq!(live.limiter, run.limiter, "the newest seconds say the same");
    let v = m.verdict();
    assert_eq!(v.limit, Limit::Stage);
    assert!(
        v.text
            .starts_with("Limited by stage 2 of 2, 'recv' (pid 13), at ")
            && v.text.contains("writing to disk 9")
            && v.text
                .contains("before it 'send' (pid 11) ended after 1.9 s (busy 100 % until then)"),
        "{}",
        v.text
    );
}

/// The same pipeline watched as `watch --pipeline` does (the intake is the sender's writes):
/// 143 MB went through in 13.9 s (the receiver's last tick of work), not in the 2 s the sender took to hand them on. The average,
/// the verdict and the summary all say 10.3 MB/s (they said the sender's 71.5 MB/s).
#[test]
fn a_pipeline_s_average_runs_until_its_last_working_stage_is_done() {
    let mut m = watch_model();
    for i in 0..=160u64 {
        let sent = (i.min(20)) * 7_150_000;
        let mut send = stage(11, "send", 0, sent, StageWait::Busy);
        if i >= 20 {
            send.alive = false;
            send.wait = None;
        }
        // The receiver writes to disk until 14 s, then waits on its input (the shell still
        // holds the pipe): that tail is not the pipeline's.
        let recv_wait = if i < 140 {
            StageWait::Disk
        } else {
            StageWait::Input
        };
        m.apply(&Sample {
            t_ns: i * 100_000_000,
            engine: copyscope::copy::ProgressSnapshot {
                bytes_copied: sent,
                ..Default::default()
            },
            pipeline: Some(PipelineSample {
                lone: None,
                stages: vec![send, stage(13, "recv", sent, sent, recv_wait)],
            }),
            ..Default::default()
        });
    }
    let st = m.stats();
    assert!(
        (st.avg_bps - 143e6 / 13.9).abs() < 0.1e6,
        "average {} over {} s",
        st.avg_bps,
        st.copy_secs
    );
    let v = m.verdict();
    assert!(v.text.contains("at 10.3 MB/s"), "{}", v.text);
}

/// A drop of a pipeline's intake names the stage that held it over the drop's ticks: the
/// sender blocked on its full pipe while the receiver wrote to disk (it read "no signal
/// explains it": a pipeline watch follows no writer's threads of its own).
#[test]
fn a_pipeline_s_drop_names_the_stage_that_held_it() {
    let mut m = watch_model();
    let mut sent = 0u64;
    for i in 0..=200u64 {
        let stalled = (100..120).contains(&i);
        if !stalled && i > 0 {
            sent += 3_000_000;
        }
        let (send_wait, recv_wait) = if stalled {
            (StageWait::Output, StageWait::Disk)
        } else {
            (StageWait::Busy, StageWait::Input)
        };
        m.apply(&Sample {
            t_ns: i * 100_000_000,
            engine: copyscope::copy::ProgressSnapshot {
                bytes_copied: sent,
                ..Default::default()
            },
            pipeline: Some(PipelineSample {
                lone: None,
                stages: vec![
                    stage(11, "tar", 0, sent, send_wait),
                    stage(13, "recv", sent, sent, recv_wait),
                ],
            }),
            ..Default::default()
        });
    }
    let drops: Vec<String> = (m.events().iter())
        .filter(|e| matches!(e.kind, copyscope::model::EventKind::Drop(_)))
        .map(|e| e.describe())
        .collect();
    assert_eq!(drops.len(), 1, "{drops:?}");
    assert!(
        drops[0].contains(
            "stage 2 of 2, 'recv' (pid 13), held the pipeline: writing to disk 100 % of the time"
        ),
        "{}",
        drops[0]
    );
}

/// The pictures and the Markdown of a pipeline watch say what the figures are of and list
/// the stages, the limiting one marked.
#[test]
fn the_exports_of_a_pipeline_watch_list_its_stages() {
    use copyscope::report::export::{ChartData, render_markdown, render_svg};
    let mut model = Model::new(ModelConfig::default(), Default::default());
    for s in samples() {
        model.apply(&s);
    }
    let data = ChartData {
        watch: Some("pipeline's first stage wchar".into()),
        pipeline: model.pipeline_run(),
        verdict: Some(model.verdict()),
        ..Default::default()
    };
    let md = render_markdown(&data);
    assert!(md.contains("| through the pipeline |"), "{md}");
    assert!(!md.contains("copy (to"), "{md}");
    assert!(
        md.contains("| 2 (limits) | 12 | `squash` | 50.0 | 16.7 | busy 100 % |"),
        "{md}"
    );
    assert!(
        md.contains(
            "| 1 | 11 | `send` | 0 | 50.0 | blocked on output 90 %, busy 10 %; its pipe full 90 % |"
        ),
        "{md}"
    );
    let svg = render_svg(&data, 1600, 900);
    assert!(svg.contains(">average (pipeline)<"), "{svg}");
    assert!(svg.contains(">Stages<"), "{svg}");
    assert!(svg.contains(">*2 squash  busy 100 %<"), "{svg}");
    assert!(svg.contains("> 3 recv  blocked on input 90 %<"), "{svg}");
}

/// Stages that end together at the pipeline's end are not said to have ended; one that ended
/// early is.
#[test]
fn only_a_stage_that_ended_early_is_said_to_have_ended() {
    let verdict_with_send_ended_from = |tick: usize| {
        let mut m = Model::new(ModelConfig::default(), Default::default());
        let mut all = samples();
        for s in &mut all[tick..] {
            let p = s.pipeline.as_mut().unwrap();
            p.stages[0].alive = false;
            p.stages[0].wait = None;
        }
        for s in &all {
            m.apply(s);
        }
        m.verdict().text
    };
    let late = verdict_with_send_ended_from(98);
    assert!(
        late.contains("before it 'send' (pid 11) blocked on output 9"),
        "{late}"
    );
    assert!(!late.contains("ended"), "{late}");
    let early = verdict_with_send_ended_from(60);
    assert!(
        early.contains("before it 'send' (pid 11) ended after 5.9 s"),
        "{early}"
    );
}
