package schema

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SlotFormats are the named formats a slot's format: may take: the string
// formats JSON Schema defines (the jsonschema library checks them), and
// jql, a Jira query (checked for its shape: balanced quotes and
// parentheses, a clause or an ORDER BY).
var SlotFormats = []string{"date", "date-time", "duration", "email", "hostname", "ipv4", "ipv6", "iri", "iri-reference",
	"jql", "json-pointer", "period", "relative-json-pointer", "semver", "time", "uri", "uri-reference", "uri-template", "uuid"}

var formatChecks sync.Map // name → *jsonschema.Schema

// CheckFormat reports whether v is a valid value of the named format (one
// of SlotFormats); a value that is not a string is not checked.
func CheckFormat(name string, v any) error {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	if name == "jql" {
		return checkJQL(s)
	}
	if !slices.Contains(SlotFormats, name) {
		return fmt.Errorf("unknown format %q", name)
	}
	sch, ok := formatChecks.Load(name)
	if !ok {
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		if err := c.AddResource("format.json", map[string]any{"type": "string", "format": name}); err != nil {
			return err
		}
		compiled, err := c.Compile("format.json")
		if err != nil {
			return err
		}
		sch, _ = formatChecks.LoadOrStore(name, compiled)
	}
	if err := sch.(*jsonschema.Schema).Validate(s); err != nil {
		return fmt.Errorf("%q is not a valid %s", s, name)
	}
	return nil
}

// jqlOps are the operators and keywords that make a JQL clause.
var jqlOps = []string{"=", "!=", "~", "!~", ">", "<", ">=", "<=", " in ", " not in ", " is ", " was ", " changed"}

// checkJQL checks the shape of a Jira query: not empty, quotes and
// parentheses balanced, and a clause (field, operator, value) or an ORDER
// BY alone.
func checkJQL(s string) error {
	q := strings.TrimSpace(s)
	if q == "" {
		return errors.New("an empty JQL query")
	}
	depth := 0
	var quote rune
	for _, r := range q {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '"' || r == '\'':
			quote = r
		case r == '(':
			depth++
		case r == ')':
			if depth--; depth < 0 {
				return fmt.Errorf("%q is not valid JQL: a ')' closes nothing", s)
			}
		}
	}
	switch {
	case quote != 0:
		return fmt.Errorf("%q is not valid JQL: a quote is not closed", s)
	case depth != 0:
		return fmt.Errorf("%q is not valid JQL: a '(' is not closed", s)
	}
	lower := " " + strings.ToLower(q) + " "
	if strings.HasPrefix(strings.TrimSpace(lower), "order by ") {
		return nil
	}
	for _, op := range jqlOps {
		if strings.Contains(lower, op) {
			return nil
		}
	}
	return fmt.Errorf("%q is not valid JQL: it has no clause (field operator value, e.g. project = KIT)", s)
}
