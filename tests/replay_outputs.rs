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
