#!/usr/bin/env bash
# ctest mcap_independent_reader: platoon's MCAP files read by @mcap/core (npm, test-only).
#   check.sh MCAP_SELFTEST SOURCE_DIR WORK_DIR
# Exit 0: counts match. Exit 77 (ctest: skipped): node/npm missing or the npm registry unreachable.
set -euo pipefail
selftest=$1 src=$2 work=$3

# node/npm and the locked @mcap/core, installed into the build tree (exit 77 when they cannot be had).
"$src/install.sh" "$src" "$work"

# Every chunk compression platoon writes: none, zstd and lz4 (decompressed by fzstd and lz4js).
for compression in none zstd lz4; do
  flags=()
  [ "$compression" = none ] || flags=(--compression "$compression")
  echo "== chunks: $compression"
  # A closed file: both @mcap/core readers must count exactly what the writer reports.
  "$selftest" "$work/sample.mcap" "${flags[@]}" > "$work/writer.json"
  node "$work/count.mjs" "$work/sample.mcap" > "$work/reader.json"
  echo "writer:     $(cat "$work/writer.json")"
  echo "@mcap/core: $(cat "$work/reader.json")"
  if ! cmp -s "$work/writer.json" "$work/reader.json"; then
    echo "FAIL: @mcap/core's counts differ from the writer's" >&2
    exit 1
  fi

  # A file never closed (as after kill -9): the streaming reader must recover every message older
  # than 100 ms before the last one written.
  "$selftest" "$work/unclosed.mcap" --unclosed "${flags[@]}" > "$work/unclosed-writer.json"
  node "$work/count.mjs" "$work/unclosed.mcap" --partial > "$work/unclosed-reader.json"
  must=$(sed -E 's/.*"must_recover":([0-9]+).*/\1/' "$work/unclosed-writer.json")
  written=$(sed -E 's/.*"written":([0-9]+).*/\1/' "$work/unclosed-writer.json")
  got=$(sed -E 's/.*"messages":([0-9]+).*/\1/' "$work/unclosed-reader.json")
  echo "unclosed:   written $written, older than 100 ms $must, @mcap/core streaming read $got"
  if [ "$got" -lt "$must" ] || [ "$got" -gt "$written" ]; then
    echo "FAIL: unclosed file: @mcap/core read $got messages, needs $must..$written" >&2
    exit 1
  fi
done
rm -f "$work/sample.mcap" "$work/unclosed.mcap"
echo "PASS"
