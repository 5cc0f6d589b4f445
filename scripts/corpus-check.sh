#!/usr/bin/env bash
# Runs Kitsoki's compatibility corpus (../shared/kitsoki, beside the
# checkout, where CI and the developers' machines have it) against
# bin/kitsoki and fails when fewer flows pass than the floor, so the corpus
# count cannot regress. Without the corpus (a fresh clone elsewhere) it says
# so and succeeds. The count is printed in its own words, not as the
# corpus script's "N passed, M failed" line.
set -euo pipefail
cd "$(dirname "$0")/.."
floor=${CORPUS_MIN:?CORPUS_MIN is the floor of passing corpus flows}
corpus=../shared/kitsoki/corpus.sh
if [ ! -f "$corpus" ]; then
  echo "kitsoki corpus: skipped ($corpus not found beside the checkout)"
  exit 0
fi
out=$(bash "$corpus" "$PWD/bin/kitsoki" 2>&1) || { printf '%s\n' "$out" >&2; echo "kitsoki corpus: the corpus script failed" >&2; exit 1; }
last=$(printf '%s\n' "$out" | tail -n 1)
if [[ ! $last =~ ^corpus:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
  printf '%s\n' "$out" >&2
  echo "kitsoki corpus: could not read the count from: $last" >&2
  exit 1
fi
pass=${BASH_REMATCH[1]} fail=${BASH_REMATCH[2]}
echo "kitsoki corpus: $pass of $((pass + fail)) flows pass (floor $floor)"
if [ "$pass" -lt "$floor" ]; then
  printf '%s\n' "$out" | grep -v '^corpus:' >&2
  echo "kitsoki corpus: $pass flows pass, below the floor of $floor: a change broke corpus flows that passed (the table above shows which stories)" >&2
  exit 1
fi
