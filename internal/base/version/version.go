// Package version is the one source of kitsoki's version string: `kitsoki
// version`, `kitsoki --version`, the serverInfo of kitsoki's MCP server and
// the clientInfo kitsoki sends to MCP plugins all read String.
package version

import "runtime/debug"

// stamped is set at build time:
//
//	go build -ldflags "-X github.com/kitsoki/kitsoki/internal/base/version.stamped=v1.2.3" ./cmd/kitsoki
//
// It is written only by the linker.
var stamped string

// String is the version: the -ldflags stamp when there is one, else the
// main module's version from the build info (go install …@v1.2.3, or the
// VCS pseudo-version go build records in a git checkout), else "dev".
func String() string {
	bi, ok := debug.ReadBuildInfo()
	return resolve(stamped, bi, ok)
}

func resolve(stamp string, bi *debug.BuildInfo, ok bool) string {
	if stamp != "" {
		return stamp
	}
	if ok && bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
