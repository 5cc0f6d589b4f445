#!/usr/bin/env bash
# Installs the agent CLIs kitsoki drives, the OpenAI Codex CLI
# (@openai/codex) and the GitHub Copilot CLI (@github/copilot), from the
# npm registry into a project-local prefix (.kitsoki/tools/agent-clis,
# gitignored), at pinned versions, and prints where the binaries are.
# A no-op when the pinned versions are there. The tests of the real CLIs
# (internal/agents/codexcli, internal/agents/copilotcli) find them there;
# put the bin directory on PATH to use them from kitsoki run.
# Needs node (>= 20) and npm. Override the versions with
# CODEX_CLI_VERSION / COPILOT_CLI_VERSION, the prefix with
# KITSOKI_AGENT_CLIS_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
CODEX="${CODEX_CLI_VERSION:-0.171.0}"
COPILOT="${COPILOT_CLI_VERSION:-1.0.102}"
prefix="${KITSOKI_AGENT_CLIS_DIR:-.kitsoki/tools/agent-clis}"
bin="$prefix/node_modules/.bin"
if ! command -v npm >/dev/null; then
	echo "setup-agent-clis: npm is not installed: install Node.js 20 or later (it brings npm), then run this again" >&2
	exit 1
fi
have() { # have PACKAGE VERSION: the package is installed at that version
	local pj="$prefix/node_modules/$1/package.json"
	[ -f "$pj" ] && grep -q "\"version\": *\"$2\"" "$pj"
}
if have @openai/codex "$CODEX" && have @github/copilot "$COPILOT" && [ -x "$bin/codex" ] && [ -x "$bin/copilot" ]; then
	echo "setup-agent-clis: codex $CODEX and copilot $COPILOT already installed in $bin"
	exit 0
fi
mkdir -p "$prefix"
echo "setup-agent-clis: installing @openai/codex@$CODEX and @github/copilot@$COPILOT into $prefix" >&2
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
	"@openai/codex@$CODEX" "@github/copilot@$COPILOT" >&2
"$bin/codex" --version >&2
"$bin/copilot" --version 2>&1 | head -1 >&2
echo "$(cd "$bin" && pwd)"
