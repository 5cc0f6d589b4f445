package main

import (
	"io"
	"sort"
	"strings"
)

// redacting wraps w so that every secret value in what is written becomes
// REDACTED, as the trace writer does. The CLI writes whole lines (and
// slog whole records) in single Write calls, so a secret never straddles
// two writes.
func redacting(w io.Writer, secrets []string) io.Writer {
	var pairs []string
	uniq := map[string]bool{}
	for _, s := range secrets {
		if s != "" && !uniq[s] {
			uniq[s] = true
			pairs = append(pairs, s)
		}
	}
	if len(pairs) == 0 {
		return w
	}
	// Longest first, so a secret that contains another is replaced whole.
	sort.Slice(pairs, func(i, j int) bool { return len(pairs[i]) > len(pairs[j]) })
	args := make([]string, 0, 2*len(pairs))
	for _, s := range pairs {
		args = append(args, s, "REDACTED")
	}
	return &redactWriter{w: w, r: strings.NewReplacer(args...)}
}

type redactWriter struct {
	w io.Writer
	r *strings.Replacer
}

// Write redacts p and reports len(p) written when the redacted text was.
func (rw *redactWriter) Write(p []byte) (int, error) {
	if _, err := rw.r.WriteString(rw.w, string(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
