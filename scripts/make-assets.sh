#!/usr/bin/env bash
# Regenerates the example recording and the README pictures in assets/ from the real ZFS
# lab capture, with copyscope's own exporter.
#
# usage: scripts/make-assets.sh [CAPTURE_DIR]
#   CAPTURE_DIR defaults to the lab's 40 MB/s capture under ../shared (or $COPYSCOPE_LAB).
set -euo pipefail
cd "$(dirname "$0")/.."

capture="${1:-}"
if [[ -z "$capture" ]]; then
  for lab in "${COPYSCOPE_LAB:-}" ../shared/lab/zfs-vm/captures ../../shared/lab/zfs-vm/captures; do
    if [[ -n "$lab" && -f "$lab/timeseries-40mbps-zero/timeseries.csv" ]]; then
      capture="$lab/timeseries-40mbps-zero"
      break
    fi
  done
fi
if [[ -n "$capture" && -f "$capture/timeseries.csv" ]]; then
  python3 scripts/zfs-capture-to-recording.py "$capture" tests/fixtures/recordings/zfs-40mbps-zero.jsonl
else
  echo "lab capture not found: keeping the committed recording" >&2
fi
mkdir -p assets
# The recording itself lives with the test fixtures; assets/ links to it.
ln -sfn ../tests/fixtures/recordings/zfs-40mbps-zero.jsonl assets/zfs-40mbps-zero.jsonl
cargo test --quiet --test export_assets -- --ignored --nocapture
ls -l assets/example-zfs-40mbps.*
