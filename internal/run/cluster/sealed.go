package cluster

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// sealer keeps the story's resolved secrets out of a call's input: a
// host.run with.env value such as "${TOKEN}" is resolved when the story
// loads, so the arguments the session renders hold the value itself. The
// workflow seals them before they enter history (each occurrence becomes
// NUL, the secret's index in story.Story.Secrets, SOH; a NUL already in
// the text is doubled) and the activity, which loaded the same story
// (pinned by content hash, so the same Secrets in the same order), opens
// them again. Longer secrets are matched first.
type sealer struct{ secrets []string }

func newSealer(secrets []string) *sealer {
	s := &sealer{}
	for _, v := range secrets {
		if v != "" {
			s.secrets = append(s.secrets, v)
		}
	}
	return s
}

// order is the secrets' indexes, longest first.
func (s *sealer) order() []int {
	idx := make([]int, len(s.secrets))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(len(s.secrets[b]), len(s.secrets[a])) })
	return idx
}

func (s *sealer) sealString(in string) string {
	if len(s.secrets) == 0 || (!strings.ContainsRune(in, 0) && !slices.ContainsFunc(s.secrets, func(v string) bool { return strings.Contains(in, v) })) {
		return in
	}
	order := s.order()
	var b strings.Builder
	for i := 0; i < len(in); {
		if in[i] == 0 {
			b.WriteString("\x00\x00")
			i++
			continue
		}
		matched := false
		for _, k := range order {
			if strings.HasPrefix(in[i:], s.secrets[k]) {
				b.WriteString("\x00" + strconv.Itoa(k) + "\x01")
				i += len(s.secrets[k])
				matched = true
				break
			}
		}
		if !matched {
			b.WriteByte(in[i])
			i++
		}
	}
	return b.String()
}

func (s *sealer) openString(in string) string {
	if !strings.ContainsRune(in, 0) {
		return in
	}
	var b strings.Builder
	for i := 0; i < len(in); i++ {
		if in[i] != 0 {
			b.WriteByte(in[i])
			continue
		}
		if i+1 < len(in) && in[i+1] == 0 {
			b.WriteByte(0)
			i++
			continue
		}
		end := strings.IndexByte(in[i+1:], 1)
		k, err := strconv.Atoi(in[i+1 : i+1+max(end, 0)])
		if end < 0 || err != nil || k < 0 || k >= len(s.secrets) {
			b.WriteByte(0) // not a seal: kept as it was
			continue
		}
		b.WriteString(s.secrets[k])
		i += end + 1
	}
	return b.String()
}

// value applies f to every string of v (map keys included), copying maps
// and slices.
func (s *sealer) value(v any, f func(string) string) any {
	switch x := v.(type) {
	case string:
		return f(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[f(k)] = s.value(e, f)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = s.value(e, f)
		}
		return out
	}
	return v
}

func (s *sealer) seal(m map[string]any) map[string]any {
	if len(s.secrets) == 0 || m == nil {
		return m
	}
	return s.value(m, s.sealString).(map[string]any)
}

func (s *sealer) open(m map[string]any) map[string]any {
	if len(s.secrets) == 0 || m == nil { // nothing was sealed
		return m
	}
	return s.value(m, s.openString).(map[string]any)
}
