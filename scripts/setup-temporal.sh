#!/usr/bin/env bash
# Installs the Temporal CLI (its dev server is the real Temporal server the
# integration tests and `make temporal-dev` run) at a pinned version, once
# per machine, and prints the binary's path. The version is the newest the
# Go module proxy builds offline: v1.9.x carries a replace directive that
# `go install` refuses.
set -euo pipefail
VERSION="${TEMPORAL_CLI_VERSION:-v1.5.1}"
GO="${GO:-go}"
dir="$("$GO" env GOPATH)/kitsoki-tools/temporal-$VERSION"
bin="$dir/temporal"
if [ ! -x "$bin" ]; then
	echo "installing the Temporal CLI $VERSION into $dir (a cold build takes several minutes)" >&2
	mkdir -p "$dir"
	GOBIN="$dir" GOFLAGS=-buildvcs=false "$GO" install "github.com/temporalio/cli/cmd/temporal@$VERSION" >&2
fi
echo "$bin"
