#!/usr/bin/env bash
# Installs headless Chromium from Debian's package for the browser tests
# (internal/browsertest): a no-op when /usr/bin/chromium is there. Needs
# root (CI and the developers' machines run as root) and Debian's package
# lists; nothing else is downloaded.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  echo "setup-browser: $(/usr/bin/chromium --version 2>/dev/null || echo chromium) already installed"
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "setup-browser: /usr/bin/chromium is missing and apt-get is not here: install Chromium by hand for the browser tests" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
echo "setup-browser: installed $(/usr/bin/chromium --version 2>/dev/null || echo chromium)"
