#!/usr/bin/env bash
# Installs tmux from Debian's package for the terminal UI tests, which run
# kitsoki in a tmux pane at fixed sizes (cmd/kitsoki TestTUIInTmux*): a
# no-op when tmux is on PATH. Needs root (CI and the developers' machines
# run as root) and Debian's package lists; nothing else is downloaded.
set -euo pipefail
if command -v tmux >/dev/null; then
  echo "setup-tmux: $(tmux -V) already installed"
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "setup-tmux: tmux is missing and apt-get is not here: install tmux by hand for the terminal UI tests" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends tmux >/dev/null
echo "setup-tmux: installed $(tmux -V)"
