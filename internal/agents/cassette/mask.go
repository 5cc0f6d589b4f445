package cassette

import (
	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/base/secret"
)

// WithSecrets gives the story's resolved ${VAR} values: every cassette
// written from this one (Encode, WriteFile, appended new_episodes, a
// Recorder's recording) has them masked by the rule of internal/base/secret,
// scalars as whole string values and mapping keys as keys. Cassettes are
// meant to be committed, so a secret a plugin echoed never reaches one.
func WithSecrets(values []string) LoadOption {
	return func(o *loadOptions) { o.secrets = append(o.secrets, values...) }
}

// maskNode masks the secrets in a YAML tree in place: string scalars as
// whole string values, other scalars (numbers) as numbers, mapping keys as
// keys. A scalar that changes becomes a plain string (a masked number is no
// longer one).
func maskNode(m *secret.Masker, n *yaml.Node) {
	if m.Empty() || n == nil {
		return
	}
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			maskNode(m, c)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Kind == yaml.ScalarNode {
				if v := m.Key(k.Value); v != k.Value {
					k.Value, k.Tag = v, "!!str"
				}
			}
			maskNode(m, n.Content[i+1])
		}
	case yaml.ScalarNode:
		if n.ShortTag() != "!!str" { // numbers, booleans, null
			if v, ok := m.Number(n.Value); ok {
				n.Value, n.Tag, n.Style = v, "!!str", 0
			}
			return
		}
		if v := m.String(n.Value); v != n.Value {
			n.Value, n.Tag = v, "!!str"
		}
	}
}
