#!/usr/bin/env bash
# The differential test's golden file, connectors/transforms/testdata/expected.json,
# is what Apache Kafka Connect's own transforms make of testdata/cases.json.
#
#   bash test/transforms/golden.sh          regenerate it with run.sh
#   bash test/transforms/golden.sh --check  regenerate it into a temporary file
#                                           and fail if the committed one differs
#                                           (CI: the file really comes from Kafka)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cases="$root/connectors/transforms/testdata/cases.json"
golden="$root/connectors/transforms/testdata/expected.json"

case "${1:-}" in
"")
  bash "$here/run.sh" "$cases" "$golden"
  ;;
--check)
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  bash "$here/run.sh" "$cases" "$tmp/expected.json"
  if ! cmp -s "$golden" "$tmp/expected.json"; then
    echo "golden.sh: connectors/transforms/testdata/expected.json is not what Apache Kafka's transforms make of cases.json;" >&2
    echo "golden.sh: regenerate it with 'just transforms-golden' (bash test/transforms/golden.sh) and commit it. The difference:" >&2
    diff -u "$golden" "$tmp/expected.json" | head -n 80 >&2 || true
    exit 1
  fi
  echo "golden.sh: expected.json matches Apache Kafka's transforms ($(grep -c '^    "name"' "$golden") cases)"
  ;;
*)
  echo "usage: golden.sh [--check]" >&2
  exit 2
  ;;
esac
