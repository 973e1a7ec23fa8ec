#!/usr/bin/env bash
# Regenerates the pictures in assets/ with copyscope's own exporter:
#   1. assets/zfs-40mbps-{copy,verdict}.{png,svg,txt,md} from their .jsonl, real recordings of
#      copyscope copying 1.5 GiB onto ZFS in the lab VM (made by scripts/zfs-lab-copy.sh; the
#      verdict one with the copier's threads sampled), and assets/slowdev-40mbps-ext4.* (made by
#      scripts/slowdev-run.sh) — `copyscope export`, as a user would;
#   2. the example recording converted from the lab's dd capture and its pictures
#      assets/example-zfs-40mbps.* (through the ignored export_assets test).
#
# usage: scripts/make-assets.sh [CAPTURE_DIR]
#   CAPTURE_DIR defaults to the lab's 40 MB/s capture under ../shared (or $COPYSCOPE_LAB).
set -euo pipefail
cd "$(dirname "$0")/.."

mkdir -p assets
cargo build --quiet --release --bin copyscope
bin=${CARGO_TARGET_DIR:-target}/release/copyscope
for rec in assets/zfs-40mbps-copy assets/zfs-40mbps-verdict assets/slowdev-40mbps-ext4; do
  "$bin" export "$rec.jsonl" \
    --png "$rec.png" --svg "$rec.svg" --text "$rec.txt" --markdown "$rec.md"
done

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
# The recording itself lives with the test fixtures; assets/ links to it.
ln -sfn ../tests/fixtures/recordings/zfs-40mbps-zero.jsonl assets/zfs-40mbps-zero.jsonl
cargo test --quiet --test export_assets -- --ignored --nocapture
ls -l assets/example-zfs-40mbps.* assets/zfs-40mbps-*.* assets/slowdev-40mbps-ext4.*
