#!/usr/bin/env bash
# Runs kitsoki's fuzz targets one after another (make fuzz).
#
#   scripts/fuzz.sh [FuzzName ...]      default: every target below
#
# FUZZTIME (default 60s) is each target's budget; FUZZMINIMIZE (default
# 2000x) bounds the minimization of each new input (see docs/testing.md,
# Fuzzing). A target fails the run only when go test fails and a new
# failing input was written to its testdata/fuzz directory, or go test
# fails for any reason but the coordinator's shutdown race at the end of
# -fuzztime (golang/go#75804: "context deadline exceeded" with nothing
# written), which is reported and ignored.
set -u
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-60s}
FUZZMINIMIZE=${FUZZMINIMIZE:-2000x}

# target package
TARGETS="
FuzzLoad ./internal/load/story
FuzzRead ./internal/observe/trace
FuzzStream ./internal/agents/subprocess
FuzzCassette ./internal/agents/cassette
FuzzFlowFixture ./internal/check/testrunner
FuzzHTTP ./internal/agents/toolserver
FuzzServeConn ./plugin
FuzzCheckExpansion ./internal/base/yamlnode
FuzzMaskEncoded ./internal/base/secret
"

want=" $* "
fail=0
while read -r name pkg; do
	[ -n "$name" ] || continue
	if [ $# -gt 0 ] && [[ "$want" != *" $name "* ]]; then
		continue
	fi
	corpus="$pkg/testdata/fuzz/$name"
	before=$(ls "$corpus" 2>/dev/null | sort)
	echo "== $name ($pkg, $FUZZTIME)"
	out=$("$GO" test -run '^$' -fuzz "^$name\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZE" -parallel 1 "$pkg" 2>&1)
	rc=$?
	printf '%s\n' "$out" | tail -n 25
	after=$(ls "$corpus" 2>/dev/null | sort)
	if [ $rc -ne 0 ]; then
		if [ "$before" = "$after" ] && printf '%s\n' "$out" | grep -q '^    context deadline exceeded$' &&
			! printf '%s\n' "$out" | grep -q -e 'Failing input written' -e '^panic:'; then
			echo "-- $name: go test reported the coordinator's shutdown race (golang/go#75804), no failing input; not a finding"
		else
			echo "-- $name: FAILED"
			fail=1
		fi
	fi
done <<< "$TARGETS"
exit $fail
