#!/usr/bin/env bash
# bench-compare.sh OLD_TREE [ROUNDS]
#
# Runs the bench-targets benchmarks of an older checkout (OLD_TREE, e.g. a
# `git worktree add /tmp/old <commit>`) and of this tree side by side in one
# run: both sets of test binaries are built first, then each round runs the
# old binary and the new binary of every package back to back, so machine
# load falls on both alike. benchstat then prints old vs new per benchmark,
# and bench-paired.py the median of the per-round new/old ratios.
set -euo pipefail
old=$(cd "$1" && pwd)
rounds=${2:-6}
new=$(cd "$(dirname "$0")/.." && pwd)
out=${BENCH_OUT:-$(mktemp -d)}
mkdir -p "$out/bin"

# package (new path) | package (old path) | -bench pattern
targets=(
  "internal/run/orchestrator|internal/orchestrator|BenchmarkDecideInProcess\$|BenchmarkDecideFloor|BenchmarkDecidePhysicalFloor|BenchmarkDecideLocalLLM|BenchmarkLocalLLMExchange"
  "internal/observe/trace|internal/trace|BenchmarkEncodeDecide\$"
  "internal/load/story|internal/story|BenchmarkLoadLarge"
  "internal/agents/localllm|internal/agent/localllm|BenchmarkLocalLLMAsk"
  "internal/agents/subprocess|internal/agent/subprocess|BenchmarkSubprocessAsk|BenchmarkSubprocessFloor"
  "internal/agents/mcphttp|internal/agent/mcphttp|."
  "internal/agents/toolserver|internal/toolserver|BenchmarkProfileAssembly"
  "internal/run/plugintools|internal/plugintools|BenchmarkPluginToolCall"
  "cmd/kitsoki|cmd/kitsoki|BenchmarkTestFlows1000Turns"
)

# BENCH_ONLY=REGEX keeps only the packages whose (new) path matches.
if [ -n "${BENCH_ONLY:-}" ]; then
  kept=()
  for t in "${targets[@]}"; do [[ ${t%%|*} =~ $BENCH_ONLY ]] && kept+=("$t"); done
  targets=("${kept[@]}")
fi

build() { # tree pkg name
  (cd "$1" && go test -c -o "$out/bin/$3.test" "./$2")
}
# oldpkg: the package's path in the old tree (the listed old path, or the
# new one where the old tree has it there already).
oldpkg() { # new-path old-path
  if [ -d "$old/$2" ]; then echo "$2"; else echo "$1"; fi
}
for t in "${targets[@]}"; do
  IFS='|' read -r np op _ <<<"$t"
  op=$(oldpkg "$np" "$op")
  n=${np//\//_}
  build "$old" "$op" "old_$n"
  build "$new" "$np" "new_$n"
done

: >"$out/old.txt"; : >"$out/new.txt"
for r in $(seq "$rounds"); do
  for t in "${targets[@]}"; do
    IFS='|' read -r np op pat <<<"$t"
    op=$(oldpkg "$np" "$op")
    n=${np//\//_}
    for side in old new; do
      tree=$old; pkg=$op
      [ "$side" = new ] && tree=$new && pkg=$np
      # Run inside the package directory so testdata/ resolves as under go test.
      (cd "$tree/$pkg" && "$out/bin/${side}_$n.test" -test.run '^$' -test.bench "$pat" -test.benchmem -test.count 1) \
        | sed "s#^pkg: .*#pkg: kitsoki/$np#" >>"$out/$side.txt"
    done
  done
  echo "round $r/$rounds done" >&2
done
go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da "$out/old.txt" "$out/new.txt"
echo
echo "paired per round (new/old, same machine load):"
python3 "$new/scripts/bench-paired.py" "$out/old.txt" "$out/new.txt"
echo "raw results: $out" >&2
