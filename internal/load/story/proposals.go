package story

import (
	"slices"
	"strings"

	"github.com/expr-lang/expr/parser"
	"go.yaml.in/yaml/v3"
)

// proposals: declares draft → review → execute kinds (Kitsoki's proposal
// pattern). Kitsoki loads and checks them but its engine never runs them:
// a story writes the lifecycle out as states (its own stories do), and the
// declarations document it. kitsoki does the same: every key is read and
// checked (prompt files exist, the execute invoke's handler, on_complete's
// effects, the policy's expression parses) and the loader says, once, that
// the kinds are not run. Story.Proposals holds them for tools to show.

var (
	proposalKeys       = &keySpec{v1: []string{"schema", "draft", "refine", "execute", "views", "policy"}}
	proposalStepKeys   = &keySpec{v1: []string{"prompt"}}
	proposalExecKeys   = &keySpec{v1: []string{"invoke", "with", "repeatable", "on_success", "background", "on_complete"}}
	proposalPolicyKeys = &keySpec{v1: []string{"auto_accept_if", "require_confirm"}}
	// proposalPhases are the lifecycle phases views: may override.
	proposalPhases = []string{"drafting", "reviewing", "executing", "reviewing_result", "done", "failed", "cancelled"}
	// proposalFieldTypes are the types a schema: field may have.
	proposalFieldTypes = []string{"string", "int", "float", "bool", "list", "object", "text", "enum"}
)

// Proposal is a proposals: entry, as declared.
type Proposal struct {
	Name           string
	Schema         map[string]string // field → type
	DraftPrompt    string
	RefinePrompt   string
	Execute        *ProposalExecute
	Views          map[string]string // lifecycle phase → template text
	AutoAcceptIf   string
	RequireConfirm bool
	Pos            Pos
}

// ProposalExecute is a proposal's execute: block.
type ProposalExecute struct {
	Invoke     string
	With       map[string]any
	Repeatable bool
	OnSuccess  string // stay, back or a state
	Background bool
	OnComplete []*Effect
}

func (l *loader) loadProposals(f *file, e entry) {
	es, _ := l.entries(f, e.val, "proposals")
	for _, pe := range es {
		path := joinPath("proposals", pe.name)
		if !l.dup(f, pe, path, "proposal", l.st.Proposals[pe.name] != nil) {
			continue
		}
		p := &Proposal{Name: pe.name, Pos: l.pos(f, pe.key)}
		if l.st.Proposals == nil {
			l.st.Proposals = map[string]*Proposal{}
		}
		l.st.Proposals[pe.name] = p
		if l.proposalAt == nil {
			l.proposalAt = &nodeRef{f: f, n: e.key, path: "proposals"}
		}
		fs, ok := l.fields(f, pe.val, path, proposalKeys)
		if !ok {
			continue
		}
		if sc, ok := fs.get("schema"); ok {
			p.Schema = l.proposalSchema(f, sc.val, joinPath(path, "schema"))
		}
		for _, step := range []struct {
			key string
			dst *string
		}{{"draft", &p.DraftPrompt}, {"refine", &p.RefinePrompt}} {
			if st, ok := fs.get(step.key); ok {
				*step.dst = l.proposalStep(f, st.val, joinPath(path, step.key))
			}
		}
		if ex, ok := fs.get("execute"); ok {
			p.Execute = l.proposalExecute(f, ex.val, joinPath(path, "execute"))
		}
		if vs, ok := fs.get("views"); ok {
			p.Views = l.proposalViews(f, vs.val, joinPath(path, "views"))
		}
		if po, ok := fs.get("policy"); ok {
			l.proposalPolicy(f, po.val, joinPath(path, "policy"), p)
		}
	}
}

func (l *loader) proposalSchema(f *file, n *yaml.Node, path string) map[string]string {
	es, _ := l.entries(f, n, path)
	out := make(map[string]string, len(es))
	for _, fe := range es {
		t, ok := l.str(f, fe.val, joinPath(path, fe.name))
		if !ok {
			continue
		}
		if !slices.Contains(proposalFieldTypes, canonType(t)) {
			l.errAt(f, fe.val, joinPath(path, fe.name), "unknown field type %q: use one of %s%s", t, strings.Join(proposalFieldTypes, ", "), didYouMean(t, proposalFieldTypes))
		}
		out[fe.name] = t
	}
	return out
}

// proposalStep reads draft: or refine: {prompt}; the prompt file must be
// there.
func (l *loader) proposalStep(f *file, n *yaml.Node, path string) string {
	fs, ok := l.fields(f, n, path, proposalStepKeys)
	if !ok {
		return ""
	}
	pr, ok := fs.get("prompt")
	if !ok {
		l.errAt(f, n, path, "a proposal step needs prompt: (the prompt file of the step)")
		return ""
	}
	s, ok := l.str(f, pr.val, joinPath(path, "prompt"))
	if !ok || s == "" {
		return ""
	}
	if !isTemplated(s) {
		l.loadPrompt(f, deref(pr.val), joinPath(path, "prompt"), true)
	}
	return s
}

func (l *loader) proposalExecute(f *file, n *yaml.Node, path string) *ProposalExecute {
	fs, ok := l.fields(f, n, path, proposalExecKeys)
	if !ok {
		return nil
	}
	x := &ProposalExecute{}
	strField(l, f, fs, path, "invoke", &x.Invoke)
	boolField(l, f, fs, path, "repeatable", &x.Repeatable)
	boolField(l, f, fs, path, "background", &x.Background)
	strField(l, f, fs, path, "on_success", &x.OnSuccess)
	if w, ok := fs.get("with"); ok {
		if v, ok := l.value(f, w.val, joinPath(path, "with")); ok {
			m, isMap := v.(map[string]any)
			if !isMap && v != nil {
				l.errAt(f, w.val, joinPath(path, "with"), "with: is a mapping of the handler's arguments, got %s", kindName(deref(w.val)))
			}
			x.With = m
		}
	}
	if x.Invoke == "" {
		at := n
		if b, ok := fs.get("background"); ok && x.Background {
			at = b.key
			l.errAt(f, at, joinPath(path, "background"), "background: true runs the execute's invoke as a job, and execute: has no invoke:")
		} else {
			l.errAt(f, at, path, "execute: needs invoke: (the handler that runs the proposal)")
		}
	}
	if x.OnSuccess != "" && x.OnSuccess != "stay" && x.OnSuccess != "back" {
		if os, ok := fs.get("on_success"); ok {
			l.targets = append(l.targets, &targetRef{f: f, n: deref(os.val), path: joinPath(path, "on_success"), raw: x.OnSuccess,
				set: func(string, bool) {}})
		}
	}
	if oc, ok := fs.get("on_complete"); ok {
		if !x.Background {
			l.errAt(f, oc.key, joinPath(path, "on_complete"), "on_complete: runs when a background execute ends; set background: true or drop on_complete:")
		}
		x.OnComplete = l.loadEffects(f, oc.val, joinPath(path, "on_complete"), effCtx{where: path + ".on_complete", onComplete: true})
	}
	return x
}

func (l *loader) proposalViews(f *file, n *yaml.Node, path string) map[string]string {
	es, _ := l.entries(f, n, path)
	out := make(map[string]string, len(es))
	for _, ve := range es {
		vp := joinPath(path, ve.name)
		if !slices.Contains(proposalPhases, ve.name) {
			l.errAt(f, ve.key, vp, "unknown proposal phase %q: views: are keyed by %s%s", ve.name, strings.Join(proposalPhases, ", "), didYouMean(ve.name, proposalPhases))
			continue
		}
		if s, ok := l.str(f, ve.val, vp); ok {
			out[ve.name] = s
		}
	}
	return out
}

func (l *loader) proposalPolicy(f *file, n *yaml.Node, path string, p *Proposal) {
	fs, ok := l.fields(f, n, path, proposalPolicyKeys)
	if !ok {
		return
	}
	boolField(l, f, fs, path, "require_confirm", &p.RequireConfirm)
	if a, ok := fs.get("auto_accept_if"); ok {
		strField(l, f, fs, path, "auto_accept_if", &p.AutoAcceptIf)
		// The expression reads $proposal, $world and $slots, which no
		// running story has: only its syntax is checked.
		src := strings.NewReplacer("$proposal", "proposal", "$world", "world", "$slots", "slots").Replace(p.AutoAcceptIf)
		if _, err := parser.Parse(src); err != nil {
			l.errAt(f, a.val, joinPath(path, "auto_accept_if"), "invalid expression: %v", firstLine(err.Error()))
		}
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// noteProposals says, once, what the declared proposals do.
func (l *loader) noteProposals() {
	if r := l.proposalAt; r != nil {
		l.warnAt(r.f, r.n, r.path, "proposals: are declarations: as in Kitsoki they are checked and not run; write the draft, review and execute rooms under states: (the kinds document them)")
	}
}
