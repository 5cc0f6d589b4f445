package eval

import (
	"encoding/json"
	"fmt"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/routes"
)

// Checked is a dataset after offline validation: the story it points at,
// its call site and schema when they could be resolved, and every error and
// warning found (eval-format.md §2).
type Checked struct {
	Dataset  *Dataset
	Story    *story.Story   // nil when the app did not load
	Site     *CallSite      // nil when the call site was not found
	Schema   *schema.Schema // nil when the call site has no schema
	Errors   []string
	Warnings []string
}

// OK reports whether the dataset has no errors.
func (c *Checked) OK() bool { return len(c.Errors) == 0 }

// Close releases the story's resources.
func (c *Checked) Close() error {
	if c == nil || c.Story == nil {
		return nil
	}
	return c.Story.Close()
}

// Check reads and validates the dataset at path. Only an unreadable file is
// an error; everything else, including YAML that does not parse, is
// collected in Errors.
func Check(path string, opts ...CheckOption) (*Checked, error) {
	raw, err := workspace.ReadFile(path, path)
	if err != nil {
		return nil, fmt.Errorf("read dataset: %w", err)
	}
	d, err := ParseDataset(path, raw)
	if err != nil {
		return &Checked{Dataset: &Dataset{Path: path, Raw: raw}, Errors: []string{err.Error()}}, nil
	}
	return CheckDataset(d, opts...), nil
}

// CheckDataset validates a parsed dataset: its own shape, then the app, the
// call site, the dataset's agent, the schema, and each example's expect
// against the schema, collecting every failure.
func CheckDataset(d *Dataset, opts ...CheckOption) *Checked {
	var o checkOptions
	for _, opt := range opts {
		opt(&o)
	}
	c := &Checked{Dataset: d}
	c.Errors, c.Warnings = d.checkShape()
	if d.App == "" {
		return c
	}
	ws, err := d.confine(o.workspace)
	if err != nil {
		c.Errors = append(c.Errors, err.Error())
		return c
	}
	st, err := story.Load(d.AppPath(), story.WithWorkspace(ws))
	if err != nil {
		c.Errors = append(c.Errors, "load app: "+err.Error())
		return c
	}
	c.Story = st
	if d.Call == "" {
		return c
	}
	site, err := routes.FindCallSite(st, d.Call)
	if err != nil {
		c.Errors = append(c.Errors, err.Error())
		return c
	}
	c.Site = site
	if d.Agent != "" && site.Agent != "" && d.Agent != site.Agent {
		c.Errors = append(c.Errors, fmt.Sprintf("dataset agent %q does not match call-site agent %q", d.Agent, site.Agent))
	}
	if site.SchemaPath == "" {
		return c
	}
	s, err := loadSchema(st, site.SchemaPath)
	if err != nil {
		c.Errors = append(c.Errors, "read schema: "+err.Error())
		return c
	}
	c.Schema = s
	for _, ex := range d.Examples {
		if ex.Expect == nil {
			continue
		}
		if aerr := validateLikeSubmission(s, ex.Expect); aerr != nil {
			c.Errors = append(c.Errors, fmt.Sprintf("example %q expect schema invalid: %s", ex.Name, aerr.Error()))
		}
	}
	return c
}

// loadSchema reads the call site's schema relative to the story directory
// and compiles it with the story's rooted compiler.
func loadSchema(st *story.Story, p string) (*schema.Schema, error) {
	real := routes.StoryPath(st.Dir, p)
	if !st.Workspace.IsZero() {
		r, err := st.Workspace.Resolve(st.Dir, p)
		if err != nil {
			return nil, err
		}
		real = r
	}
	if _, err := st.Workspace.Stat(real); err != nil {
		return nil, err
	}
	if s, ok := st.Schemas[p]; ok {
		return s, nil
	}
	if st.SchemaCompiler == nil {
		return nil, fmt.Errorf("schema %q: story has no schema compiler", p)
	}
	return st.SchemaCompiler.Compile(p)
}

// validateLikeSubmission checks v against s the way the host checks an
// agent's submission, returning the same AskError.
func validateLikeSubmission(s *schema.Schema, v any) *agent.AskError {
	raw, err := json.Marshal(v)
	if err != nil {
		return &agent.AskError{Kind: agent.KindSchemaInvalid, Detail: "submission is not valid JSON: " + err.Error(), Err: err}
	}
	if _, err := s.ValidateJSON(raw); err != nil {
		return &agent.AskError{Kind: agent.KindSchemaInvalid, Detail: err.Error(), Err: err}
	}
	return nil
}
