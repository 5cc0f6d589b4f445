package version

import (
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	withMain := func(v string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/kitsoki/kitsoki", Version: v}}
	}
	tests := []struct {
		name  string
		stamp string
		bi    *debug.BuildInfo
		ok    bool
		want  string
	}{
		{"the ldflags stamp wins", "v1.2.3", withMain("v0.9.0"), true, "v1.2.3"},
		{"module version from go install", "", withMain("v0.9.0"), true, "v0.9.0"},
		{"VCS pseudo-version", "", withMain("v0.0.0-20261201085754-ecfec84abcde+dirty"), true, "v0.0.0-20261201085754-ecfec84abcde+dirty"},
		{"a devel build", "", withMain("(devel)"), true, "dev"},
		{"no version recorded", "", withMain(""), true, "dev"},
		{"no build info", "", nil, false, "dev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := resolve(tt.stamp, tt.bi, tt.ok); got != tt.want {
				t.Errorf("resolve = %q, want %q", got, tt.want)
			}
		})
	}
}
