package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// printer renders validation messages; LocalizedString needs a non-nil one.
var printer = message.NewPrinter(language.English)

// InvalidError is a submission that failed validation. Its text is what the
// agent contract puts in a schema_invalid detail.
type InvalidError struct {
	// Violations are "<json-pointer>: <message>" leaves, in instance order.
	Violations []string
	// Parse is set instead when the submission was not JSON at all.
	Parse error
}

func (e *InvalidError) Error() string {
	if e.Parse != nil {
		return "submission is not valid JSON: " + e.Parse.Error()
	}
	return strings.Join(e.Violations, "; ")
}

// Decode parses JSON into plain Go values: objects become map[string]any,
// arrays []any, integral numbers int64 (when they fit) and others float64
// (a number beyond float64's range stays its text). It is the one decoding
// every submission goes through, so the world sees the same types whichever
// transport answered: encoding/json with UseNumber, then the conversion of
// the numbers.
func Decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return normalize(v), nil
}

func normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = normalize(e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = normalize(e)
		}
		return t
	case json.Number:
		if !strings.ContainsAny(string(t), ".eE") { // not integral: skip the failing (allocating) parse
			if i, err := t.Int64(); err == nil {
				return i
			}
		}
		f, err := t.Float64()
		if err != nil || math.IsInf(f, 0) {
			return t.String()
		}
		return f
	}
	return v
}

// ValidateJSON parses a submission and validates it, returning the decoded
// value. Failures are *InvalidError.
func (s *Schema) ValidateJSON(b []byte) (any, error) {
	v, err := Decode(b)
	if err != nil {
		return nil, &InvalidError{Parse: err}
	}
	if err := s.Validate(v); err != nil {
		return nil, err
	}
	return v, nil
}

// Validate checks a decoded value with the schema library, the one
// validator kitsoki has. Failures are *InvalidError listing every leaf
// violation with its instance location and constraint, in the library's
// words.
func (s *Schema) Validate(v any) error {
	err := s.sch.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &InvalidError{Violations: []string{"/: " + err.Error()}}
	}
	var leaves []string
	collect(ve, &leaves)
	sort.SliceStable(leaves, func(i, j int) bool { return leaves[i] < leaves[j] })
	return &InvalidError{Violations: leaves}
}

func collect(e *jsonschema.ValidationError, out *[]string) {
	if len(e.Causes) == 0 {
		ptr := "/" + strings.Join(e.InstanceLocation, "/")
		msg := e.ErrorKind.LocalizedString(printer)
		if kw := e.ErrorKind.KeywordPath(); len(kw) > 0 && !strings.HasPrefix(msg, kw[len(kw)-1]) {
			msg = kw[len(kw)-1] + ": " + msg
		}
		*out = append(*out, fmt.Sprintf("%s: %s", ptr, msg))
		return
	}
	for _, c := range e.Causes {
		collect(c, out)
	}
}
