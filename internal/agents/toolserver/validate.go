package toolserver

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// compileValidator compiles a schema document given as bytes, for calls
// whose host supplied no validator. References to other files are not
// resolved (the schema travelled without its directory); the host validates
// the final submission again with the story's compiler.
func compileValidator(doc []byte) (func([]byte) error, error) {
	parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	const url = "mem:///call-schema.json"
	if err := c.AddResource(url, parsed); err != nil {
		return nil, err
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, err
	}
	p := message.NewPrinter(language.English)
	return func(b []byte) error {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("submission is not valid JSON: %w", err)
		}
		err = sch.Validate(v)
		var ve *jsonschema.ValidationError
		if err == nil || !errors.As(err, &ve) {
			return err
		}
		var leaves []string
		collectLeaves(ve, p, &leaves)
		sort.Strings(leaves)
		return errors.New(strings.Join(leaves, "; "))
	}, nil
}

func collectLeaves(e *jsonschema.ValidationError, p *message.Printer, out *[]string) {
	if len(e.Causes) == 0 {
		*out = append(*out, "/"+strings.Join(e.InstanceLocation, "/")+": "+e.ErrorKind.LocalizedString(p))
		return
	}
	for _, c := range e.Causes {
		collectLeaves(c, p, out)
	}
}

// noLoader refuses every external reference.
type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("reference %s is not resolved here", u)
}
