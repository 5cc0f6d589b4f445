package secret_test

import (
	"bytes"
	"encoding/json"
	"html"
	"html/template"
	"strings"
	"testing"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/base/secret"
)

// tricky is a long secret with every character an encoder rewrites.
const tricky = `sk-"live\<01&23>é-ab` + "'" + `cd/`

// encodings are the ways kitsoki (and a plugin) write a string into an
// artifact: the secret inside a longer text, encoded.
var encodings = map[string]func(t *testing.T, s string) string{
	"json": func(t *testing.T, s string) string { return mustJSON(t, map[string]any{"note": "key " + s}, true) },
	"json without HTML escapes": func(t *testing.T, s string) string {
		return mustJSON(t, map[string]any{"note": "key " + s}, false)
	},
	"json in json": func(t *testing.T, s string) string {
		return mustJSON(t, map[string]any{"line": mustJSON(t, map[string]any{"token": s}, true)}, true)
	},
	"ascii json": func(t *testing.T, s string) string {
		b := mustJSON(t, map[string]any{"token": s}, true)
		return strings.ReplaceAll(b, "é", `\u00e9`)
	},
	"yaml": func(t *testing.T, s string) string {
		b, err := yaml.Marshal(map[string]any{"note": "key " + s, "n": s + "\x01"})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	},
	"yaml of a JSON text": func(t *testing.T, s string) string {
		b, err := yaml.Marshal(map[string]any{"response": mustJSON(t, map[string]any{"text": "key " + s}, true)})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	},
	"html": func(t *testing.T, s string) string { return "<p>" + html.EscapeString("key "+s) + "</p>" },
	"html/template": func(t *testing.T, s string) string {
		var b bytes.Buffer
		tpl := template.Must(template.New("x").Parse(`<p title="{{.}}">{{.}}</p><script>var x = "{{.}}";</script>`))
		if err := tpl.Execute(&b, "key "+s); err != nil {
			t.Fatal(err)
		}
		return b.String()
	},
}

func mustJSON(t *testing.T, v any, escapeHTML bool) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// A long secret holding ", \, <, >, & or non-ASCII characters is masked in
// every encoded form an artifact holds it in (issue 28: such secrets were
// written JSON- or HTML-escaped, unmasked).
func TestEncodedFormsAreMasked(t *testing.T) {
	m := secret.New([]string{tricky})
	for name, enc := range encodings {
		t.Run(name, func(t *testing.T) {
			text := enc(t, tricky)
			if !m.MayOccur([]byte(text)) {
				t.Errorf("MayOccur is false for %s", text)
			}
			masked := m.Text(text)
			for _, f := range secret.Forms(tricky) {
				if strings.Contains(masked, f) {
					t.Errorf("Text left %q in %s", f, masked)
				}
			}
			if !strings.Contains(masked, secret.Mask) {
				t.Errorf("Text masked nothing in %s", masked)
			}
			if got := m.String(text); got != masked {
				t.Errorf("String = %q, Text = %q", got, masked)
			}
		})
	}
}

// JSON masks a document in which the secret occurs only escaped: the
// decoded value holds it, and the fast path no longer skips it.
func TestJSONMasksAnEscapedSecret(t *testing.T) {
	m := secret.New([]string{tricky})
	doc := mustJSON(t, map[string]any{"note": "key " + tricky, "inner": mustJSON(t, map[string]any{"t": tricky}, true)}, true)
	out, err := m.JSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	if v["note"] != "key REDACTED" || v["inner"] != `{"t":"REDACTED"}` {
		t.Errorf("masked = %s", out)
	}
}

func TestForms(t *testing.T) {
	got := secret.Forms(`a"b<c>&d\é`)
	for _, want := range []string{`a"b<c>&d\é`, `a\"b\u003cc\u003e\u0026d\\é`, `a\"b<c>&d\\é`, `a\"b\u003cc\u003e\u0026d\\\u00e9`,
		`a\\\"b\\u003cc\\u003e\\u0026d\\\\é`, `a&#34;b&lt;c&gt;&amp;d\é`, `a\u0022b\u003cc\u003e\u0026d\\é`} {
		if !strings.Contains(strings.Join(got, "\n")+"\n", want+"\n") {
			t.Errorf("Forms lacks %q: %q", want, got)
		}
	}
	if got := secret.Forms("plain-secret-123"); len(got) != 1 {
		t.Errorf("a secret no encoder rewrites has one form, got %q", got)
	}
}

// FuzzMaskEncoded: a long secret, put into a text and encoded as kitsoki
// encodes (JSON, YAML, HTML), leaves no trace of itself once the encoded
// text is masked.
func FuzzMaskEncoded(f *testing.F) {
	f.Add(tricky, "before ", " after")
	f.Add("plain-secret-123", "", "")
	f.Add(`<script>"x"</script>`, `{"a":`, "}")
	f.Fuzz(func(t *testing.T, s, before, after string) {
		if len(s) < secret.MinSubstring || !utf8.ValidString(s) || !utf8.ValidString(before+s+after) {
			t.Skip()
		}
		for _, w := range secret.KeptWords() {
			if strings.Contains(w, s) {
				t.Skip()
			}
		}
		m := secret.New([]string{s})
		text := before + s + after
		for name, enc := range map[string]func(string) (string, error){
			"json": func(x string) (string, error) {
				b, err := json.Marshal(map[string]string{"v": x})
				return string(b), err
			},
			"yaml": func(x string) (string, error) {
				b, err := yaml.Marshal(map[string]string{"v": x})
				return string(b), err
			},
			"html": func(x string) (string, error) { return html.EscapeString(x), nil },
		} {
			out, err := enc(text)
			if err != nil {
				continue
			}
			encodedAlone, _ := enc(s)
			masked := m.Text(out)
			if !strings.Contains(masked, secret.Mask) {
				t.Errorf("%s: nothing masked in %q (the secret encodes as %q)", name, out, encodedAlone)
			}
		}
	})
}
