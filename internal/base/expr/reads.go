package expr

// WorldReads lists the world keys a text template reads by name
// (world.key, world["key"]) inside its {{ }} and {% %} tags, in source
// order, with their positions in the source. Comments and verbatim blocks
// are skipped; a key read through another name ({% with w=world %}) is not
// seen.
func (t *Text) WorldReads() []WorldRead {
	t.readsOnce.Do(func() { t.reads = textReads(t.src, "world") })
	return t.reads
}

// textReads scans the tags of a text template for root.key reads.
func textReads(src, root string) []WorldRead {
	var out []WorldRead
	for pos := 0; pos < len(src); {
		i := indexByteFrom(src, pos, '{')
		if i < 0 || i+1 >= len(src) {
			break
		}
		kind := src[i+1]
		if kind != '{' && kind != '%' && kind != '#' {
			pos = i + 1
			continue
		}
		end := tagEnd(src, i+2, closerOf(kind))
		if end < 0 {
			break
		}
		if kind == '%' && isVerbatim(src[i+2:end-2]) {
			if loc := verbatimEnd.FindStringIndex(src[end:]); loc != nil {
				pos = end + loc[1]
				continue
			}
		}
		if kind != '#' {
			out = append(out, tagReads(src, i+2, end-2, root)...)
		}
		pos = end
	}
	return out
}

func indexByteFrom(s string, from int, c byte) int {
	for i := from; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// tagReads finds root.key and root["key"] in src[from:to], outside
// quoted strings, where root is a whole name (not part of a longer one or
// a member of something else).
func tagReads(src string, from, to int, root string) []WorldRead {
	var out []WorldRead
	for i := from; i < to; i++ {
		c := src[i]
		if c == '"' || c == '\'' {
			if j := skipQuoted(src[:to], i); j > 0 {
				i = j - 1
			}
			continue
		}
		if !isIdentStart(c) {
			continue
		}
		j := i
		for j < to && isIdentChar(src[j]) {
			j++
		}
		word := src[i:j]
		prev := byte(' ')
		if i > from {
			prev = src[i-1]
		}
		if word == root && prev != '.' {
			if key, at, ok := memberAfter(src, j, to); ok {
				line, col := lineCol(src, at)
				out = append(out, WorldRead{Key: key, Line: line, Col: col})
			}
		}
		i = j - 1
	}
	return out
}

// memberAfter reads .key or ["key"] starting at src[i].
func memberAfter(src string, i, to int) (key string, at int, ok bool) {
	if i < to && src[i] == '.' {
		j := i + 1
		for j < to && isIdentChar(src[j]) {
			j++
		}
		if j > i+1 && isIdentStart(src[i+1]) {
			return src[i+1 : j], i + 1, true
		}
		return "", 0, false
	}
	if i+1 < to && src[i] == '[' && (src[i+1] == '"' || src[i+1] == '\'') {
		if j := skipQuoted(src[:to], i+1); j > 0 && j < to && src[j] == ']' {
			return src[i+2 : j-1], i + 2, true
		}
	}
	return "", 0, false
}

// WorldReads lists the world keys the template's expressions read by
// name, in source order.
func (v *Value) WorldReads() []WorldRead {
	return v.reads(func(u *unit) []WorldRead { return u.reads })
}

// ResultReads lists the keys of result a template's expressions read by
// name (result.key, result?.key, result["key"]): the fields of a call's
// answer a bind: template uses.
func (v *Value) ResultReads() []WorldRead {
	return v.reads(func(u *unit) []WorldRead { return u.resultReads })
}

func (v *Value) reads(of func(*unit) []WorldRead) []WorldRead {
	var out []WorldRead
	var walk func([]vnode)
	walk = func(nodes []vnode) {
		for i := range nodes {
			n := &nodes[i]
			if n.u != nil {
				out = append(out, of(n.u)...)
			}
			for _, b := range n.branches {
				if b.cond != nil {
					out = append(out, of(b.cond)...)
				}
				walk(b.body)
			}
			walk(n.body)
			walk(n.alt)
		}
	}
	if v.single != nil {
		out = append(out, of(v.single)...)
	}
	walk(v.nodes)
	return out
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentChar(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
