package secret

import (
	"bytes"
	"encoding/json"
	"html"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Forms returns the texts a long secret v takes in what kitsoki writes and
// reads back: v itself; its JSON string escaping as encoding/json writes
// it (HTML-safe, with \u003c for <, > and &) and without the HTML escapes;
// with every non-ASCII character as \uXXXX (a plugin's JSON encoder may
// write that); each of those escaped once more (a JSON text held in a JSON
// string, such as a plugin's JSON line inside an error detail); the YAML
// double- and single-quoted forms of all these (a cassette holds JSON
// texts as YAML strings); its HTML escaping; and its JavaScript
// string escaping (an HTML view's script). Masking looks for each, so a
// secret holding ", \, <, >, & or non-ASCII characters is masked in the
// encoded text too. Repeats and v's own form are listed once, v first.
func Forms(v string) []string {
	forms := []string{v}
	add := func(f string) {
		if f != "" && !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	for _, j := range []string{jsonEscape(v, true), jsonEscape(v, false), jsonASCII(v)} {
		add(j)
		add(jsonEscape(j, true))
		add(jsonEscape(j, false))
	}
	// YAML quoting of each (a cassette holds JSON texts as YAML strings).
	for _, f := range slices.Clone(forms) {
		add(yamlDoubleQuoted(f))
		add(strings.ReplaceAll(f, "'", "''"))
	}
	add(html.EscapeString(v))
	add(strings.ReplaceAll(html.EscapeString(v), "&#34;", "&quot;"))
	add(template.JSEscapeString(v))
	add(jsEscapeLower(v))
	return forms
}

// jsonEscape is the inside of the JSON string encoding/json writes for s.
func jsonEscape(s string, escapeHTML bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(s); err != nil {
		return ""
	}
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}

// jsonASCII is jsonEscape (HTML-safe) with every non-ASCII character as a
// \uXXXX escape (surrogate pairs beyond the BMP), as ensure_ascii encoders
// write it.
func jsonASCII(s string) string {
	esc := jsonEscape(s, true)
	var b strings.Builder
	for _, r := range esc {
		switch {
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xFFFF:
			r -= 0x10000
			b.WriteString(`\u` + hex4(0xD800+(r>>10)) + `\u` + hex4(0xDC00+(r&0x3FF)))
		default:
			b.WriteString(`\u` + hex4(r))
		}
	}
	return b.String()
}

func hex4(r rune) string {
	s := strconv.FormatInt(int64(r), 16)
	return strings.Repeat("0", 4-len(s)) + s
}

// yamlDoubleQuoted is the inside of the double-quoted YAML scalar the YAML
// encoder writes for s.
func yamlDoubleQuoted(s string) string {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Style: yaml.DoubleQuotedStyle}
	b, err := yaml.Marshal(n)
	if err != nil {
		return ""
	}
	out := strings.TrimSuffix(string(b), "\n")
	if len(out) < 2 || out[0] != '"' || out[len(out)-1] != '"' || strings.Contains(out, "\n") {
		return ""
	}
	return out[1 : len(out)-1]
}

// jsEscapeLower is html/template's JavaScript string escaping: \uXXXX in
// lower case for the characters it escapes.
func jsEscapeLower(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"', '\'', '<', '>', '&', '=', '+', '/', '`':
			b.WriteString(`\u` + hex4(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
