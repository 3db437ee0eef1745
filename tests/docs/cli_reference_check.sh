#!/usr/bin/env bash
# ctest cli_reference: docs/CLI.md must equal what scripts/cli-reference.sh writes from the built programs'
# --help texts; on a difference, prints it and the command that rewrites the page.
set -euo pipefail
src=$1 bin=$2
generated=$(mktemp)
trap 'rm -f "$generated"' EXIT
(cd "$src" && bash scripts/cli-reference.sh "$bin") > "$generated"
if ! diff -u "$src/docs/CLI.md" "$generated"; then
  echo "docs/CLI.md is out of date with the programs' --help: regenerate it with" >&2
  echo "  scripts/cli-reference.sh $bin > docs/CLI.md" >&2
  exit 1
fi
echo "docs/CLI.md matches the --help of platoon, platoon-viewer, platoon-server and platoon-node ($(grep -c '^#' "$generated") sections)"
