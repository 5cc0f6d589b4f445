package localllm

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"time"
)

// libstdcxxCandidates are where distributions put the 64-bit libstdc++ when
// ldconfig cannot be asked.
var libstdcxxCandidates = []string{
	"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
	"/lib/x86_64-linux-gnu/libstdc++.so.6",
	"/usr/lib64/libstdc++.so.6",
	"/lib64/libstdc++.so.6",
	"/usr/lib/libstdc++.so.6",
}

// systemLibstdcxxLacks reports whether the system libstdc++ does not provide
// the symbol version need (e.g. "GLIBCXX_3.4.30"), i.e. whether the shim is
// needed. The library is located the way the dynamic loader would find it
// (`ldconfig -p`, then the usual paths), and the decision is a byte search
// of the library for the NUL-terminated version name, which is how the
// version definitions sit in its .dynstr section. No library found at all
// also means the shim is needed.
func systemLibstdcxxLacks(ctx context.Context, need string) (bool, error) {
	paths := ldconfigLibstdcxx(ctx)
	paths = append(paths, libstdcxxCandidates...)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		return !providesVersion(b, need), nil
	}
	return true, nil
}

// providesVersion reports whether lib's bytes carry the version name.
func providesVersion(lib []byte, need string) bool {
	return bytes.Contains(lib, []byte("\x00"+need+"\x00"))
}

// ldconfigLibstdcxx returns the 64-bit libstdc++.so.6 paths the loader
// cache knows, or nothing when ldconfig is unavailable.
func ldconfigLibstdcxx(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var out []byte
	for _, bin := range []string{"/sbin/ldconfig", "/usr/sbin/ldconfig"} {
		b, err := exec.CommandContext(ctx, bin, "-p").Output()
		if err == nil {
			out = b
			break
		}
	}
	var paths []string
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "libstdc++.so.6 ") || !strings.Contains(line, "x86-64") {
			continue
		}
		if i := strings.Index(line, "=> "); i >= 0 {
			paths = append(paths, strings.TrimSpace(line[i+3:]))
		}
	}
	return paths
}
