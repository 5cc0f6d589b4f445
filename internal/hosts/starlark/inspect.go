package starlark

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/base/yamlnode"
)

// Prober answers ctx.probe in place of running the allow-listed command:
// the exit code and output of probe name with args. Options.Probe nil runs
// the real command.
type Prober interface {
	Probe(ctx context.Context, name string, args []string) (exit int, out string, err error)
}

// InspectCassetteKind is the kind: an inspect cassette file declares.
const InspectCassetteKind = "inspect_cassette"

// InspectCassette is an inspect cassette: recorded ctx.probe results that a
// flow replays instead of running the commands (a flow's
// starlark_inspect_cassette:). A probe is matched by its name; its
// arguments do not take part, and the same interaction answers every call
// of that name.
type InspectCassette struct {
	path  string
	probe map[string]InspectInteraction
}

// InspectInteraction is one recorded probe: its name (target), exit code
// and output.
type InspectInteraction struct {
	Op     string `yaml:"op"`
	Target string `yaml:"target"`
	Exit   int    `yaml:"exit"`
	Out    string `yaml:"out"`
}

// LoadInspectCassette reads the inspect cassette at path.
func LoadInspectCassette(path string) (*InspectCassette, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("inspect cassette: %w", err)
	}
	c, err := parseInspectCassette(data)
	if err != nil {
		return nil, fmt.Errorf("inspect cassette %s: %w", path, err)
	}
	c.path = path
	return c, nil
}

func parseInspectCassette(data []byte) (*InspectCassette, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	if err := yamlnode.CheckExpansion(&doc, 0); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		//lint:ignore ST1005 the message ends with a YAML key as the author writes it, colon included.
		return nil, errors.New("expected a mapping with kind: inspect_cassette and interactions:")
	}
	if err := knownKeys(doc.Content[0], "", []string{"kind", "interactions"}); err != nil {
		return nil, err
	}
	var f struct {
		Kind         string               `yaml:"kind"`
		Interactions []InspectInteraction `yaml:"interactions"`
	}
	if its := mapGet(doc.Content[0], "interactions"); its != nil && its.Kind == yaml.SequenceNode {
		for i, it := range its.Content {
			if err := knownKeys(it, fmt.Sprintf("interactions[%d]", i), []string{"op", "target", "exit", "out"}); err != nil {
				return nil, err
			}
		}
	}
	if err := doc.Decode(&f); err != nil {
		return nil, err
	}
	if f.Kind != InspectCassetteKind {
		return nil, fmt.Errorf("kind: is %q; an inspect cassette says kind: %s", f.Kind, InspectCassetteKind)
	}
	c := &InspectCassette{probe: map[string]InspectInteraction{}}
	for i, it := range f.Interactions {
		p := fmt.Sprintf("interactions[%d]", i)
		switch {
		case it.Op != "probe":
			return nil, fmt.Errorf("%s.op: %q is not replayed: kitsoki replays probe interactions (ctx.fs reads the workspace)", p, it.Op)
		case it.Target == "":
			return nil, fmt.Errorf("%s.target: the probe name is required (one of %s)", p, strings.Join(ProbeNames(), ", "))
		}
		if _, ok := probes[it.Target]; !ok {
			return nil, fmt.Errorf("%s.target: %q is not an allow-listed probe (known: %s)", p, it.Target, strings.Join(ProbeNames(), ", "))
		}
		if _, dup := c.probe[it.Target]; dup {
			return nil, fmt.Errorf("%s.target: probe %q is recorded twice; a probe is matched by its name, so keep one", p, it.Target)
		}
		c.probe[it.Target] = it
	}
	return c, nil
}

// Probe answers a probe from the cassette; one it does not hold is an
// error naming what it holds.
func (c *InspectCassette) Probe(_ context.Context, name string, _ []string) (int, string, error) {
	it, ok := c.probe[name]
	if !ok {
		have := make([]string, 0, len(c.probe))
		for n := range c.probe {
			have = append(have, n)
		}
		if len(have) == 0 {
			have = append(have, "none")
		}
		slices.Sort(have)
		return 0, "", fmt.Errorf("the inspect cassette %s has no probe %q (recorded: %s)", c.path, name, strings.Join(have, ", "))
	}
	return it.Exit, it.Out, nil
}
