#!/usr/bin/env bash
# Runs kitsoki's builtin.local_llm endpoint-mode tests against a real
# llama.cpp llama-server (`make test-llama-real`; opt-in, never part of
# `make test`).
#
# Debian 12 ships no llama.cpp, so the server runs in a Debian sid chroot
# (debootstrap --variant=minbase) with the llama.cpp-tools package. The model
# is a tiny random-weight GGUF written by scripts/tiny-gguf.py (python3-gguf)
# inside the chroot: its answers are nonsense, but grammar-constrained ones
# are schema-valid, which is what the protocol tests need. No model is
# downloaded. Needs root (debootstrap, chroot, mount) and Debian's package
# mirror; the chroot is kept and reused (about a minute to build the first
# time).
#
# Environment:
#   KITSOKI_LLAMA_CHROOT  chroot directory      (default /var/tmp/kitsoki-llama-sid)
#   DEBIAN_MIRROR         mirror for the chroot (default http://deb.debian.org/debian)
#   KITSOKI_LLAMA_PORT    server port           (default 18089)
#   GO                    go command            (default go)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
chroot_dir="${KITSOKI_LLAMA_CHROOT:-/var/tmp/kitsoki-llama-sid}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
port="${KITSOKI_LLAMA_PORT:-18089}"
go_cmd="${GO:-go}"
# sid's Release file can outlive its Valid-Until on a snapshot mirror.
apt_opts=(-o Acquire::Check-Valid-Until=false -q)

if [ "$(id -u)" -ne 0 ]; then
	echo "llama-real: needs root (debootstrap, chroot, mount); try: sudo make test-llama-real" >&2
	exit 2
fi

if [ ! -x "$chroot_dir/usr/bin/llama-server" ]; then
	if ! command -v debootstrap >/dev/null; then
		apt-get "${apt_opts[@]}" update
		DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install -y debootstrap
	fi
	if [ ! -x "$chroot_dir/usr/bin/apt-get" ]; then
		echo "llama-real: building a Debian sid chroot in $chroot_dir" >&2
		debootstrap --variant=minbase sid "$chroot_dir" "$mirror"
	fi
	chroot "$chroot_dir" apt-get "${apt_opts[@]}" update
	chroot "$chroot_dir" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install -y --no-install-recommends \
		llama.cpp-tools python3-gguf python3-numpy
fi

server_pid=""
mounted=""
cleanup() {
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	if [ -n "$mounted" ]; then
		umount "$chroot_dir/proc" 2>/dev/null || true
	fi
}
trap cleanup EXIT

if ! mountpoint -q "$chroot_dir/proc"; then
	mount -t proc proc "$chroot_dir/proc"
	mounted=1
fi

cp "$here/tiny-gguf.py" "$chroot_dir/tmp/tiny-gguf.py"
chroot "$chroot_dir" python3 /tmp/tiny-gguf.py /tmp/kitsoki-tiny.gguf

log="$chroot_dir/tmp/llama-server.log"
chroot "$chroot_dir" llama-server -m /tmp/kitsoki-tiny.gguf --host 127.0.0.1 --port "$port" \
	--parallel 2 --ctx-size 4096 >"$log" 2>&1 &
server_pid=$!

endpoint="http://127.0.0.1:$port"
for _ in $(seq 1 120); do
	if curl -fsS "$endpoint/health" >/dev/null 2>&1; then
		break
	fi
	if ! kill -0 "$server_pid" 2>/dev/null; then
		echo "llama-real: llama-server exited; its log:" >&2
		cat "$log" >&2
		exit 1
	fi
	sleep 0.5
done
curl -fsS "$endpoint/health" >/dev/null || { echo "llama-real: llama-server never became healthy; log: $log" >&2; exit 1; }
version="$(chroot "$chroot_dir" dpkg-query -W -f '${Version}' llama.cpp-tools)"
echo "llama-real: llama-server (llama.cpp-tools $version) healthy on $endpoint" >&2

cd "$repo"
KITSOKI_LLAMA_ENDPOINT="$endpoint" "$go_cmd" test -count=1 -v -run '^TestReal' ./internal/agents/localllm/
