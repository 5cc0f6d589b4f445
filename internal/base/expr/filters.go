package expr

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode"

	"github.com/flosch/pongo2/v6"
	"golang.org/x/text/width"
)

// textFilters are the filters Kitsoki adds to pongo2 (story-format.md §11).
// wordwrap replaces pongo2's own, which counts words, not columns.
var textFilters = map[string]pongo2.FilterFunction{
	"col":       filterCol,
	"rcol":      filterRcol,
	"reverse":   filterReverse,
	"wordwrap":  filterWordwrap,
	"reference": filterReference,
	showFunc:    filterShow,
	iterFilter:  filterIter,
}

// iterFilter is put after the iterable of every {% for %} (CompileText).
const iterFilter = "__kitsoki_iter__"

// filterIter makes a string iterate nothing: a for loop reads records, and
// Kitsoki's views loop over world.x|default:"" where x may be any text
// (pongo2 alone would iterate the characters, and fail on their fields).
func filterIter(in, _ *pongo2.Value) (*pongo2.Value, *pongo2.Error) {
	if in.IsString() {
		return pongo2.AsValue([]any{}), nil
	}
	return in, nil
}

// registerFilters installs textFilters into pongo2's global registry. It runs
// once (see textSet), before any text template is parsed.
func registerFilters() error {
	for name, fn := range textFilters {
		var err error
		if pongo2.FilterExists(name) {
			err = pongo2.ReplaceFilter(name, fn)
		} else {
			err = pongo2.RegisterFilter(name, fn)
		}
		if err != nil {
			return fmt.Errorf("registering filter %q: %w", name, err)
		}
	}
	return nil
}

// filterShow is show as a filter.
func filterShow(in, _ *pongo2.Value) (*pongo2.Value, *pongo2.Error) {
	return pongo2.AsValue(toText(in.Interface())), nil
}

// show formats the value of every {{ … }} in a text template; CompileText
// wraps each output expression in a call to it.
func show(v *pongo2.Value) string { return toText(v.Interface()) }

func widthParam(name string, param *pongo2.Value) (int, *pongo2.Error) {
	if param == nil || param.IsNil() || param.Integer() <= 0 {
		return 0, &pongo2.Error{Sender: "filter:" + name,
			OrigError: fmt.Errorf("%s needs a positive width, e.g. %s:20", name, name)}
	}
	return param.Integer(), nil
}

// filterCol pads (with spaces) or cuts its input to exactly N columns.
func filterCol(in, param *pongo2.Value) (*pongo2.Value, *pongo2.Error) {
	n, err := widthParam("col", param)
	if err != nil {
		return nil, err
	}
	s, w := cut(toText(in.Interface()), n)
	return pongo2.AsValue(s + strings.Repeat(" ", n-w)), nil
}

// filterRcol is col with the text right-aligned.
func filterRcol(in, param *pongo2.Value) (*pongo2.Value, *pongo2.Error) {
	n, err := widthParam("rcol", param)
	if err != nil {
		return nil, err
	}
	s, w := cut(toText(in.Interface()), n)
	return pongo2.AsValue(strings.Repeat(" ", n-w) + s), nil
}

// filterReverse reverses a list, or the characters of anything else.
func filterReverse(in, _ *pongo2.Value) (*pongo2.Value, *pongo2.Error) {
	v := in.Interface()
	if v == nil {
		return pongo2.AsValue(nil), nil
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array {
		if _, isBytes := v.([]byte); !isBytes {
			out := make([]any, rv.Len())
			for i := range out {
				out[len(out)-1-i] = rv.Index(i).Interface()
			}
			return pongo2.AsValue(out), nil
		}
	}
	r := []rune(toText(v))
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return pongo2.AsValue(string(r)), nil
}

// filterWordwrap wraps text so no line is wider than N columns, breaking at
// spaces. Existing line breaks are kept; a word wider than N stays whole on
// its own line.
func filterWordwrap(in, param *pongo2.Value) (*pongo2.Value, *pongo2.Error) {
	n, err := widthParam("wordwrap", param)
	if err != nil {
		return nil, err
	}
	return pongo2.AsValue(wordwrap(toText(in.Interface()), n)), nil
}

func wordwrap(s string, n int) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/n)
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		col := 0
		for _, word := range strings.Fields(line) {
			w := strWidth(word)
			switch {
			case col == 0:
			case col+1+w > n:
				b.WriteByte('\n')
				col = 0
			default:
				b.WriteByte(' ')
				col++
			}
			b.WriteString(word)
			col += w
		}
	}
	return b.String()
}

// runeWidth is the number of terminal columns r occupies: 2 for East Asian
// wide and fullwidth characters, 0 for combining marks and format
// characters, 1 otherwise.
func runeWidth(r rune) int {
	switch {
	case r < 0x300:
		return 1
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

func strWidth(s string) int {
	w := 0
	for _, r := range s {
		w += runeWidth(r)
	}
	return w
}

// cut returns the longest prefix of s at most n columns wide, and its width.
func cut(s string, n int) (string, int) {
	w := 0
	for i, r := range s {
		rw := runeWidth(r)
		if w+rw > n {
			return s[:i], w
		}
		w += rw
	}
	return s, w
}

// filterReference embeds a document as cited evidence, as Kitsoki's
// reference filter does: {{ args.spec|reference:"api-spec.md" }} numbers
// the input's lines (right-aligned to the widest number) and wraps them in
// <reference src="LABEL" lines="1-N" sha256="…">, the first 8 hex digits of
// the input's SHA-256. The text is taken as it is, never rendered as a
// template. A nil or empty input renders nothing.
func filterReference(in, param *pongo2.Value) (*pongo2.Value, *pongo2.Error) {
	v := in.Interface()
	if v == nil {
		return pongo2.AsValue(""), nil
	}
	text := toText(v)
	if text == "" {
		return pongo2.AsValue(""), nil
	}
	label := ""
	if param != nil && !param.IsNil() {
		label = toText(param.Interface())
	}
	sum := sha256.Sum256([]byte(text))
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	w := len(strconv.Itoa(len(lines)))
	var b strings.Builder
	fmt.Fprintf(&b, "<reference src=%q lines=\"1-%d\" sha256=\"%s\">\n", label, len(lines), hex.EncodeToString(sum[:4]))
	for i, l := range lines {
		b.WriteString(strings.TrimRight(fmt.Sprintf("%*d | %s", w, i+1, l), " "))
		b.WriteByte('\n')
	}
	b.WriteString("</reference>")
	return pongo2.AsSafeValue(b.String()), nil
}
