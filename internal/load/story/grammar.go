package story

import (
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/schema"
)

// checkGrammarSubset refuses, at load, a decide schema that a grammar: true
// builtin.local_llm alias could not turn into a llama.cpp grammar: the
// model would answer unconstrained and the call would fail at run time.
// Templated schema paths are skipped; json_schema: true sends the schema in
// OpenAI's strict form instead, so it is not checked either.
func (l *loader) checkGrammarSubset(r *effectRef) {
	in := r.e.Invoke
	if in == nil || in.Name != "host.agent.decide" || in.Agent == "" || r.withSchema == "" {
		return
	}
	d, ok := l.st.Plugins[in.Agent]
	if !ok || d.Plugin != agent.PluginLocalLLM || !d.Grammar || d.JSONSchema {
		return
	}
	s := l.st.Schemas[r.withSchema]
	if s == nil {
		return // it did not compile; already reported
	}
	vs, err := schema.GrammarSubsetViolations(s.Raw)
	if err != nil {
		return // not JSON; the compile would have said so
	}
	for _, v := range vs {
		l.errAt(r.f, r.withSchemaNode, joinPath(r.path, "with.schema"), "%s", schema.FormatViolation(in.Agent, r.withSchema, v))
	}
}
