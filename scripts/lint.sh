#!/usr/bin/env bash
# The code-quality checks of make vet that run an outside tool: staticcheck
# and gocyclo, each pinned by the Makefile and fetched through `go run`.
#
#   scripts/lint.sh staticcheck   every staticcheck finding fails
#   scripts/lint.sh gocyclo       a non-test function of cyclomatic
#                                 complexity over 30 fails
#
# scripts/lint-known.txt lists offenders already known in parts of the tree
# that are being rewritten; those are reported as known and do not fail.
# An entry that no longer matches a finding fails too, so the list only
# shrinks: delete the line once its finding is fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
known_file=scripts/lint-known.txt
check=${1:?usage: scripts/lint.sh staticcheck|gocyclo}
# The tools print their findings on stdout; go run's own lines (a module
# being downloaded, the tool's exit status) go to stderr, shown on failure.
errf=$(mktemp)
trap 'rm -f "$errf"' EXIT

# Each finding becomes a key "CHECK FILE WHAT" (WHAT is the staticcheck
# code or the function name), the form of the lines in lint-known.txt.
case $check in
staticcheck)
  tool=${STATICCHECK:?STATICCHECK is the pinned staticcheck module@version}
  raw=$($GO run "$tool" ./... 2>"$errf") && status=0 || status=$?
  # A line looks like: path/file.go:12:3: message (CODE)
  findings=$(printf '%s\n' "$raw" | grep -E '^[^ ]+\.go:[0-9]+:[0-9]+: ' || true)
  if [ "$status" -ne 0 ] && [ -z "$findings" ]; then
    printf '%s\n' "$raw" >&2
    cat "$errf" >&2
    echo "staticcheck: failed without findings (see above)" >&2
    exit 1
  fi
  # Anything else it prints (a type error, a package that does not load)
  # has no code to key it by: it fails the check as it is.
  odd=$(printf '%s\n' "$raw" | grep -vE '^[^ ]+\.go:[0-9]+:[0-9]+: .*\([A-Z]+[0-9]+\)$|^$' || true)
  if [ -n "$odd" ]; then
    printf '%s\n' "$odd" >&2
    echo "staticcheck: output that is not a finding (see above)" >&2
    exit 1
  fi
  keys=$(printf '%s\n' "$findings" | sed -nE 's/^([^:]+\.go):[0-9]+:[0-9]+: .*\(([A-Z]+[0-9]+)\)$/staticcheck \1 \2/p')
  ;;
gocyclo)
  tool=${GOCYCLO:?GOCYCLO is the pinned gocyclo module@version}
  # gocyclo exits 1 when it reports anything; its lines are the findings.
  findings=$($GO run "$tool" -over 30 -ignore '_test.go|testsupport|testdata' . 2>"$errf") && status=0 || status=$?
  if { [ "$status" -ne 0 ] && [ -z "$findings" ]; } ||
    printf '%s\n' "$findings" | grep -qvE '^[0-9]+ [^ ]+ [^ ]+ [^ ]+:[0-9]+:[0-9]+$|^$'; then
    printf '%s\n' "$findings" >&2
    cat "$errf" >&2
    echo "gocyclo: failed, or printed what is not a finding (see above)" >&2
    exit 1
  fi
  # A line looks like: 74 pkg (*T).Name path/file.go:12:1
  keys=$(printf '%s\n' "$findings" | sed -nE 's/^[0-9]+ [^ ]+ ([^ ]+) ([^:]+):[0-9]+:[0-9]+$/gocyclo \2 \1/p')
  ;;
*)
  echo "scripts/lint.sh: unknown check $check (staticcheck or gocyclo)" >&2
  exit 2
  ;;
esac

keys=$(printf '%s\n' "$keys" | grep . | sort -u || true)
known=$(grep -E "^$check " "$known_file" | sed 's/[[:space:]]*#.*$//' | sort -u || true)
new=$(comm -23 <(printf '%s\n' "$keys" | grep . | sort -u) <(printf '%s\n' "$known" | grep . || true))
stale=$(comm -13 <(printf '%s\n' "$keys" | grep . | sort -u) <(printf '%s\n' "$known" | grep . || true))
n_known=$(comm -12 <(printf '%s\n' "$keys" | grep . | sort -u) <(printf '%s\n' "$known" | grep . || true) | grep -c . || true)

status=0
if [ -n "$new" ]; then
  echo "$check: new findings (fix them; see docs/development.md):" >&2
  while read -r _ file what; do
    printf '%s\n' "$findings" | grep -F -- "$file" | grep -F -- "$what" >&2 || true
  done <<<"$new"
  status=1
fi
if [ -n "$stale" ]; then
  echo "$check: these entries of $known_file no longer match a finding; delete them:" >&2
  printf '%s\n' "$stale" | sed 's/^/  /' >&2
  status=1
fi
echo "$check: $(printf '%s\n' "$keys" | grep -c . || true) findings (file and code or function), $n_known of them known in $known_file"
exit $status
