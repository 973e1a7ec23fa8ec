#!/usr/bin/env bash
# gen-long-recording.sh — writes a long recording for the bounded-memory benchmark (issue 14):
# HOURS (default 24) at the source recording's tick (100 ms: 864 000 samples for 24 h), shaped
# like a real run (examples/gen_long_recording.rs replays the per-tick deltas of
# assets/slowdev-40mbps-ext4.jsonl, a 40 MB/s ext4 disk with writeback-throttle drops).
#
# Usage: scripts/gen-long-recording.sh OUT.jsonl [HOURS] [SOURCE.jsonl]
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] || { sed -n '2,7p' "$0"; exit 2; }
cd "$HERE"
cargo build --release --quiet --example gen_long_recording
TARGET=${CARGO_TARGET_DIR:-$HERE/target}
exec "$TARGET/release/examples/gen_long_recording" "$@"
