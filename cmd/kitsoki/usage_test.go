package main

import (
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/base/version"
)

// A mistyped command line exits 2 with a suggestion and runs nothing: a CI
// step with a typo must fail, not print help and pass.
func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		stderr string // the whole message
	}{
		{"mistyped subcommand of a group", []string{"test", "flow", "app.yaml"},
			"kitsoki: unknown command \"flow\" for \"kitsoki test\"\n\nDid you mean this?\n\tflows\n\nRun 'kitsoki test --help' for usage.\n"},
		{"a path where the subcommand goes", []string{"test", "app.yaml"},
			"kitsoki: unknown command \"app.yaml\" for \"kitsoki test\"\n\nAvailable commands: flows, intents\n\nRun 'kitsoki test --help' for usage.\n"},
		{"no such subcommand: the close one is suggested", []string{"trace", "to-casette", "t.jsonl"},
			"kitsoki: unknown command \"to-casette\" for \"kitsoki trace\"\n\nDid you mean this?\n\tto-cassette\n\nRun 'kitsoki trace --help' for usage.\n"},
		{"transposed letters", []string{"eval", "lsit"},
			"kitsoki: unknown command \"lsit\" for \"kitsoki eval\"\n\nDid you mean this?\n\tlist\n\nRun 'kitsoki eval --help' for usage.\n"},
		{"a missing letter", []string{"mcp", "srve"},
			"kitsoki: unknown command \"srve\" for \"kitsoki mcp\"\n\nDid you mean this?\n\tserve\n\nRun 'kitsoki mcp --help' for usage.\n"},
		{"top-level typo", []string{"valdate", "app.yaml"},
			"kitsoki: unknown command \"valdate\" for \"kitsoki\"\n\nDid you mean this?\n\tvalidate\n\nRun 'kitsoki --help' for usage.\n"},
		{"nothing close: the commands are listed", []string{"eval", "frobnicate"},
			"kitsoki: unknown command \"frobnicate\" for \"kitsoki eval\"\n\nAvailable commands: list, run, show\n\nRun 'kitsoki eval --help' for usage.\n"},
		{"a group without its subcommand", []string{"test"},
			"kitsoki: \"kitsoki test\" needs a command: flows, intents\nRun 'kitsoki test --help' for usage.\n"},
		{"help on a mistyped topic", []string{"help", "test", "flow"},
			"kitsoki: unknown command \"flow\" for \"kitsoki test\"\n\nDid you mean this?\n\tflows\n\nRun 'kitsoki test --help' for usage.\n"},
		{"mistyped flag", []string{"run", "--intnets", "greet", hello},
			"kitsoki run: unknown flag: --intnets\ndid you mean --intents?\nRun 'kitsoki run --help' for usage.\n"},
		{"a long flag with one dash", []string{"run", "-intents", "greet", hello},
			"kitsoki run: unknown shorthand flag: 'i' in -intents\ndid you mean --intents?\nRun 'kitsoki run --help' for usage.\n"},
		{"a flag prefix", []string{"test", "flows", "--fail", hello},
			"kitsoki test flows: unknown flag: --fail\ndid you mean --fail-fast?\nRun 'kitsoki test flows --help' for usage.\n"},
		{"an inherited flag", []string{"validate", "--log-levl", "debug", hello},
			"kitsoki validate: unknown flag: --log-levl\ndid you mean --log-level?\nRun 'kitsoki validate --help' for usage.\n"},
		{"unknown flag, nothing close", []string{"validate", "--zzzzzz", hello},
			"kitsoki validate: unknown flag: --zzzzzz\nRun 'kitsoki validate --help' for usage.\n"},
		{"flag value of the wrong type", []string{"run", "--agent-timeout", "soon", hello},
			"kitsoki run: invalid argument \"soon\" for \"--agent-timeout\" flag: time: invalid duration \"soon\"\nRun 'kitsoki run --help' for usage.\n"},
		{"MCP body limit that is not positive", []string{"mcp", "serve", "--max-body-bytes", "0"},
			"kitsoki mcp serve: --max-body-bytes 0: must be a positive number of bytes (default 4194304)\nRun 'kitsoki mcp serve --help' for usage.\n"},
		{"MCP session cap that is not positive", []string{"mcp", "serve", "--max-sessions", "0"},
			"kitsoki mcp serve: --max-sessions 0, --session-idle 30m0s: both must be positive (defaults 100 and 30m0s)\nRun 'kitsoki mcp serve --help' for usage.\n"},
		{"missing argument", []string{"run"},
			"kitsoki run: accepts 1 arg(s), received 0\nRun 'kitsoki run --help' for usage.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCLI(t, "", tt.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if errs != tt.stderr {
				t.Errorf("stderr:\n%s\nwant:\n%s", errs, tt.stderr)
			}
			if out != "" {
				t.Errorf("a usage error printed on stdout:\n%s", out)
			}
		})
	}
}

func TestHelpStillExitsZero(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"test", "--help"}, {"help", "eval"}, {"help"}} {
		code, out, errs := runCLI(t, "", args...)
		if code != exitOK || !strings.Contains(out, "Usage:") {
			t.Errorf("kitsoki %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errs)
		}
	}
}

func TestVersionFlagMatchesVersionCommand(t *testing.T) {
	want := "kitsoki " + version.String() + "\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errs := runCLI(t, "", args...)
		if code != exitOK || out != want {
			t.Errorf("kitsoki %s: exit %d, stdout %q (want %q), stderr %q", args[0], code, out, want, errs)
		}
	}
}
