//! `replay --json` prints JSON (not the plain text), and `--screenshot DIR` without the TUI
//! writes its pictures (or fails loudly) instead of silently nothing.

use std::process::Command;

const REC: &str = "tests/fixtures/recordings/zfs-40mbps-zero.jsonl";

fn copyscope() -> Command {
    let mut c = Command::new(
        std::env::var("COPYSCOPE_TEST_BIN")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_copyscope").into()),
    );
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

#[test]
fn replay_json_is_json_lines_ending_in_the_models_summary() {
    let out = copyscope()
        .args(["replay", "--json", REC])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(lines.len() > 2, "{text}");
    assert!(
        lines
            .iter()
            .any(|v| v["type"] == "diagnosis" && v["kind"] == "drop"),
        "{text}"
    );
    let last = lines.last().expect("summary");
    assert_eq!(last["type"], "summary");
    assert!(last["peak_bps"].as_f64().expect("peak") > 0.0);
    assert!(last["drops"].as_u64().expect("drops") > 0);
}

#[test]
fn replay_plain_with_screenshot_writes_the_pictures() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = copyscope()
        .args(["replay", "--plain", "--screenshot"])
        .arg(dir.path())
        .arg(REC)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for ext in ["md", "png", "svg", "txt"] {
        assert!(
            names.iter().any(|n| n.ends_with(ext)),
            "no .{ext} in {names:?}"
        );
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("screenshot:"), "says where: {err}");
}

#[test]
fn replay_screenshot_into_an_impossible_place_fails_loudly() {
    let out = copyscope()
        .args(["replay", "--plain", "--screenshot", "/proc/version/x", REC])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("screenshot failed"));
}

/// `copyscope report`: one Markdown file for a forum post, its figures the model's.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one report, its sections checked in the order they are printed"
)]
fn report_is_the_models_story_with_the_evidence_around_the_worst_drop() {
    use copyscope::model::{Cause, EventKind, ModelConfig};
    use copyscope::report::recording::Replayed;
    // A real lab copy onto the 40 MB/s ZFS pool, with the destination disks' counters.
    const REC: &str = "assets/zfs-40mbps-copy.jsonl";
    let out = copyscope().args(["report", REC]).output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = String::from_utf8(out.stdout).expect("utf-8");
    for section in [
        "### copyscope:",
        "**Verdict:**",
        "**Drops**",
        "#### Chart",
        "#### System",
        "#### Tunables",
        "#### Around the worst drop",
        "/proc/spl/kstat/zfs/dmu_tx",
        "Destination disks",
    ] {
        assert!(md.contains(section), "no {section:?} in\n{md}");
    }
    let run = Replayed::load(std::path::Path::new(REC), ModelConfig::default()).unwrap();
    assert!(
        md.contains(&run.model.verdict().text),
        "the model's verdict:\n{md}"
    );
    let drops: Vec<_> = run
        .model
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Drop(d) => Some((e, d)),
            _ => None,
        })
        .collect();
    assert!(md.contains(&format!("**Drops** ({})", drops.len())), "{md}");
    // The worst drop is the model's drop that lost most (the longest among equals), told
    // in the model's words, with the txg it names in the txgs table.
    let len = |e: &copyscope::model::Event, d: &copyscope::model::DropInfo| d.end_ns - e.t_ns;
    let (we, wd) = drops
        .iter()
        .copied()
        .max_by(|a, b| {
            a.1.bytes_lost
                .total_cmp(&b.1.bytes_lost)
                .then(len(a.0, a.1).cmp(&len(b.0, b.1)))
        })
        .expect("a drop");
    let worst = md.split("#### Around the worst drop").nth(1).unwrap();
    assert!(worst.contains(&we.describe()), "{worst}");
    if let Some(Cause::TxgSync { txg, .. }) = wd.causes.first() {
        let row = worst
            .lines()
            .find(|l| l.split_whitespace().next() == Some(&txg.to_string()))
            .unwrap_or_else(|| panic!("txg {txg} not in the txgs table:\n{worst}"));
        assert!(row.contains(" C "), "{row}");
    }
    for (name, value) in &run.header.environment.tunables {
        assert!(md.contains(&format!("| `{name}` | `{value}` |")), "{name}");
    }
    // The verdict is the one `replay --json` ends with, and the ETA's check the model's.
    let json = copyscope()
        .args(["replay", "--json", REC])
        .output()
        .expect("runs");
    let last: serde_json::Value = serde_json::from_str(
        String::from_utf8(json.stdout)
            .unwrap()
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    let verdict = last["verdict"]["text"].as_str().expect("verdict text");
    assert!(md.contains(verdict), "replay --json's verdict {verdict:?}");
    let check = run.model.eta_check().expect("the ETA's check");
    assert_eq!(last["eta_check"]["text"], check.describe());
    assert!(
        md.contains(&format!("| ETA | {} |", check.describe())),
        "{md}"
    );
    // A recording from before the module's version was kept says so.
    assert!(md.contains("| OpenZFS | not recorded"), "{md}");
}

/// `copyscope report` of a copy onto ext4: no ZFS rows; what the recording holds instead (the
/// page cache and the disk over the worst drop's window).
#[test]
fn a_page_cache_report_says_what_the_recording_holds() {
    const REC: &str = "tests/fixtures/corpus/ext4-other-writer.jsonl";
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("post.md");
    let out = copyscope()
        .args(["report", REC, "-o"])
        .arg(&file)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(&file).expect("-o FILE written");
    assert!(!md.contains("OpenZFS") && !md.contains("txgs"), "{md}");
    for section in [
        "#### Around the worst drop",
        "Destination disks (loop0) over the window",
        "Page cache over the window",
        "| `vm.dirty_bytes` |",
    ] {
        assert!(md.contains(section), "no {section:?} in\n{md}");
    }
}
