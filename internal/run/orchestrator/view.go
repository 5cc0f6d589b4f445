package orchestrator

import (
	"fmt"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/load/story"
)

// ViewElement is one rendered element of a typed view: Text is the element
// as the REPL and flows see it; the other fields carry its parts, rendered.
type ViewElement struct {
	Kind  string // prose, heading, banner, kv, list, code, template, choice, media; "base" for base-view text
	Block string // the extends block it fills, "" outside one
	Text  string

	Body     string // prose, heading, code, template, banner text
	Subtitle string // banner
	Color    string // banner
	Pairs    []ViewPair
	Items    []ViewItem // list and choice items whose when: holds
	Marker   string     // list: its bullet as written ("" for the default)
	Choice   *ViewChoice
	Media    *ViewMedia
}

// ViewPair is a rendered kv pair.
type ViewPair struct{ Key, Value string }

// ViewItem is a rendered list or choice item.
type ViewItem struct {
	Label, Hint string
	Intent      string         // choice single
	Slots       map[string]any // choice single
	Param       *story.ViewParam
	Value       string // choice multi
}

// ViewChoice is a rendered choice envelope.
type ViewChoice struct {
	Mode, Prompt, Intent, Slot string
	Min, Max                   int64
	Template                   string
	Fields                     []ViewField // fields whose when: holds
}

// ViewField is a rendered form field.
type ViewField struct {
	Name, Type, Hint, Placeholder, Default, Min, Max string
	Values                                           []string
	Required, Readonly                               bool
	Value                                            any // a readonly field's expr value
}

// ViewMedia is a rendered media element: Path is the artifact's file
// (path:, "" when absent); an annotation of it dispatches AnnotateIntent
// with its text in slot AnnotateSlot ("" when the element sets none).
type ViewMedia struct {
	Handle, Caption, Kind, Path  string
	AnnotateIntent, AnnotateSlot string
}

// ViewDoc renders the current state's typed view as elements. A string view
// is one "template" element; no view is nil.
func (s *Session) ViewDoc() ([]ViewElement, error) {
	if !s.inParallel() {
		return s.viewDocOf(s.viewHolder(s.state, ""))
	}
	vs := s.viewStates()
	var out []ViewElement
	for _, st := range vs {
		els, err := s.viewDocOf(st)
		if err != nil {
			return nil, err
		}
		out = append(out, els...)
	}
	return out, nil
}

// viewDocOf renders one state's view as elements.
func (s *Session) viewDocOf(st *story.State) ([]ViewElement, error) {
	if st == nil {
		return nil, nil
	}
	env := s.stateEnv(&turnCtx{n: s.turn})
	if st.View != nil {
		t, err := st.View.Render(env)
		if err != nil {
			return nil, err
		}
		return []ViewElement{{Kind: "template", Body: t, Text: t}}, nil
	}
	if st.ViewDoc == nil {
		return nil, nil
	}
	return renderDoc(st.ViewDoc, env)
}

// viewText renders a typed view to text: elements apart by a blank line;
// an extends view is its base with the blocks filled in.
func viewText(doc *story.ViewDoc, env expr.Env) (string, error) {
	els, err := renderDoc(doc, env)
	if err != nil {
		return "", err
	}
	if doc.Extends == "" || doc.NoBase {
		return joinElements(els), nil
	}
	var b strings.Builder
	for i := 0; i < len(els); {
		if els[i].Block == "" {
			b.WriteString(els[i].Text)
			i++
			continue
		}
		j := i
		for j < len(els) && els[j].Block == els[i].Block {
			j++
		}
		b.WriteString(joinElements(els[i:j]))
		i = j
	}
	return strings.TrimSpace(b.String()), nil
}

func joinElements(els []ViewElement) string {
	parts := make([]string, 0, len(els))
	for _, e := range els {
		if e.Text != "" {
			parts = append(parts, e.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}

func renderDoc(doc *story.ViewDoc, env expr.Env) ([]ViewElement, error) {
	if doc.Extends == "" {
		return renderElements(doc.Elements, "", "view", env)
	}
	var out []ViewElement
	if doc.NoBase {
		for _, name := range doc.Order {
			r, err := renderElements(doc.Blocks[name], name, "view.blocks."+name, env)
			if err != nil {
				return nil, err
			}
			out = append(out, r...)
		}
		return out, nil
	}
	for _, seg := range doc.Base {
		if filledWithin(doc, seg.Within) {
			continue // an enclosing block the view fills replaces it
		}
		if seg.Block == "" {
			t, err := seg.Text.Render(env)
			if err != nil {
				return nil, fmt.Errorf("base view %q: %w", doc.Extends, err)
			}
			out = append(out, ViewElement{Kind: "base", Text: t, Body: t})
			continue
		}
		if els, ok := doc.Blocks[seg.Block]; ok {
			r, err := renderElements(els, seg.Block, "view.blocks."+seg.Block, env)
			if err != nil {
				return nil, err
			}
			if len(r) == 0 {
				// an empty block still takes the block's place
				r = []ViewElement{{Kind: "base", Block: seg.Block}}
			}
			out = append(out, r...)
			continue
		}
		if seg.Default == nil {
			continue // its default's pieces follow
		}
		t, err := seg.Default.Render(env)
		if err != nil {
			return nil, fmt.Errorf("base view %q, block %q: %w", doc.Extends, seg.Block, err)
		}
		out = append(out, ViewElement{Kind: "base", Text: t, Body: t})
	}
	return out, nil
}

// filledWithin reports whether the view fills one of the blocks a base
// segment sits in.
func filledWithin(doc *story.ViewDoc, within []string) bool {
	for _, b := range within {
		if _, ok := doc.Blocks[b]; ok {
			return true
		}
	}
	return false
}

func renderElements(els []*story.ViewElement, block, where string, env expr.Env) ([]ViewElement, error) {
	out := make([]ViewElement, 0, len(els))
	for i, el := range els {
		ok, err := holds(el.When, env)
		if err != nil {
			return nil, fmt.Errorf("%s[%d] (%s, %s) when: %w", where, i, el.Kind, el.Pos, err)
		}
		if !ok {
			continue
		}
		r, err := renderElement(el, env)
		if err != nil {
			return nil, fmt.Errorf("%s[%d] (%s, %s): %w", where, i, el.Kind, el.Pos, err)
		}
		r.Block = block
		out = append(out, r)
	}
	return out, nil
}

func holds(g *expr.Value, env expr.Env) (bool, error) {
	if g == nil {
		return true, nil
	}
	v, err := g.Eval(env)
	return expr.Truthy(v), err
}

func text(t *expr.Text, env expr.Env) (string, error) {
	if t == nil {
		return "", nil
	}
	return t.Render(env)
}

// kvKeyCap is the widest key that widens a kv element's key column; longer
// keys overflow it.
const kvKeyCap = 20

func renderElement(el *story.ViewElement, env expr.Env) (ViewElement, error) {
	r := ViewElement{Kind: el.Kind, Color: el.Color}
	var err error
	if r.Body, err = text(el.Body, env); err != nil {
		return r, err
	}
	switch el.Kind {
	case "prose", "heading", "code", "template":
		r.Text = r.Body
		if el.Kind == "prose" || el.Kind == "heading" {
			r.Text = strings.TrimSpace(r.Body)
		}
	case "banner":
		if r.Subtitle, err = text(el.Subtitle, env); err != nil {
			return r, fmt.Errorf("subtitle: %w", err)
		}
		r.Text = "== " + r.Body + " =="
		if r.Subtitle != "" {
			r.Text += "\n" + r.Subtitle
		}
	case "kv":
		width := 0
		r.Pairs = make([]ViewPair, len(el.Pairs))
		for i, p := range el.Pairs {
			v, err := text(p.Value, env)
			if err != nil {
				return r, fmt.Errorf("pairs.%s: %w", p.Key, err)
			}
			r.Pairs[i] = ViewPair{Key: p.Key, Value: v}
			if n := len([]rune(p.Key)); n <= kvKeyCap && n > width {
				width = n
			}
		}
		lines := make([]string, len(r.Pairs))
		for i, p := range r.Pairs {
			k := p.Key + ":"
			pad := width + 1 - len([]rune(k))
			lines[i] = k + strings.Repeat(" ", max(pad, 0)+2) + p.Value
		}
		r.Text = strings.Join(lines, "\n")
	case "list":
		if r.Items, err = renderItems(el.Items, env); err != nil {
			return r, err
		}
		r.Marker = el.Marker
		marker := el.Marker
		if marker == "" {
			marker = "-"
		}
		lines := make([]string, len(r.Items))
		width := labelWidth(r.Items) + len([]rune(marker)) + 1
		for i, it := range r.Items {
			lines[i] = withHint(marker+" "+it.Label, width, it.Hint)
		}
		r.Text = strings.Join(lines, "\n")
	case "choice":
		return renderChoice(el, r, env)
	case "media":
		m := &ViewMedia{Kind: el.Media.Kind, AnnotateIntent: el.Media.AnnotateIntent, AnnotateSlot: el.Media.AnnotateSlot}
		if m.Handle, err = text(el.Media.Handle, env); err != nil {
			return r, fmt.Errorf("handle: %w", err)
		}
		if m.Path, err = text(el.Media.Path, env); err != nil {
			return r, fmt.Errorf("path: %w", err)
		}
		m.Caption = m.Handle
		if el.Media.Caption != nil {
			if m.Caption, err = text(el.Media.Caption, env); err != nil {
				return r, fmt.Errorf("caption: %w", err)
			}
		}
		r.Media = m
		kind := m.Kind
		if kind == "" {
			kind = "media"
		}
		where := m.Handle
		if m.Path != "" {
			where = m.Path // the pointer shows the file when the story gives it
		}
		r.Text = fmt.Sprintf("[%s] %s (%s)", kind, m.Caption, where)
	}
	return r, nil
}

func labelWidth(items []ViewItem) int {
	w := 0
	for _, it := range items {
		w = max(w, len([]rune(it.Label)))
	}
	return w
}

func withHint(head string, width int, hint string) string {
	if hint == "" {
		return head
	}
	return head + strings.Repeat(" ", max(width-len([]rune(head)), 0)+2) + hint
}

func renderItems(items []*story.ViewItem, env expr.Env) ([]ViewItem, error) {
	out := make([]ViewItem, 0, len(items))
	for i, it := range items {
		ok, err := holds(it.When, env)
		if err != nil {
			return nil, fmt.Errorf("items[%d].when: %w", i, err)
		}
		if !ok {
			continue
		}
		r := ViewItem{Intent: it.Intent, Param: it.Param, Value: it.Value}
		if r.Label, err = text(it.Label, env); err != nil {
			return nil, fmt.Errorf("items[%d].label: %w", i, err)
		}
		if r.Hint, err = text(it.Hint, env); err != nil {
			return nil, fmt.Errorf("items[%d].hint: %w", i, err)
		}
		if it.Slots != nil {
			r.Slots = make(map[string]any, len(it.Slots))
			for _, sl := range it.Slots {
				if sl.Text == nil {
					r.Slots[sl.Key] = sl.Value
					continue
				}
				if r.Slots[sl.Key], err = sl.Text.Render(env); err != nil {
					return nil, fmt.Errorf("items[%d].slots.%s: %w", i, sl.Key, err)
				}
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// renderChoice renders a choice statically: a numbered list with the
// intent (single) or value (multi) in parentheses, or the form's template
// with each {field} blank shown as [field].
func renderChoice(el *story.ViewElement, r ViewElement, env expr.Env) (ViewElement, error) {
	c := el.Choice
	rc := &ViewChoice{Mode: c.Mode, Intent: c.Intent, Slot: c.Slot, Min: c.Min, Max: c.Max, Template: c.Template}
	r.Choice = rc
	var err error
	if rc.Prompt, err = text(c.Prompt, env); err != nil {
		return r, fmt.Errorf("prompt: %w", err)
	}
	var lines []string
	if rc.Prompt != "" {
		lines = append(lines, rc.Prompt)
	}
	switch c.Mode {
	case "single", "multi":
		if r.Items, err = renderItems(el.Items, env); err != nil {
			return r, err
		}
		heads := make([]string, len(r.Items))
		w := 0
		for i, it := range r.Items {
			tag := it.Intent
			box := ""
			if c.Mode == "multi" {
				tag, box = it.Value, "[ ] "
			}
			heads[i] = fmt.Sprintf("%d. %s%s (%s)", i+1, box, it.Label, tag)
			w = max(w, len([]rune(heads[i])))
		}
		for i, it := range r.Items {
			lines = append(lines, withHint(heads[i], w, it.Hint))
		}
		if c.Mode == "multi" {
			lines = append(lines, fmt.Sprintf("(%s: pick values for %s)", c.Intent, c.Slot))
		}
	case "form":
		for _, fd := range c.Fields {
			ok, err := holds(fd.When, env)
			if err != nil {
				return r, fmt.Errorf("fields.%s.when: %w", fd.Name, err)
			}
			if !ok {
				continue
			}
			vf := ViewField{Name: fd.Name, Type: fd.Type, Hint: fd.Hint, Values: fd.Values, Required: fd.Required, Readonly: fd.Readonly}
			for _, p := range []struct {
				t   *expr.Text
				dst *string
				key string
			}{{fd.Placeholder, &vf.Placeholder, "placeholder"}, {fd.Default, &vf.Default, "default"}, {fd.Min, &vf.Min, "min"}, {fd.Max, &vf.Max, "max"}} {
				if *p.dst, err = text(p.t, env); err != nil {
					return r, fmt.Errorf("fields.%s.%s: %w", fd.Name, p.key, err)
				}
			}
			if fd.Expr != nil {
				if vf.Value, err = fd.Expr.Eval(env); err != nil {
					return r, fmt.Errorf("fields.%s.expr: %w", fd.Name, err)
				}
			}
			rc.Fields = append(rc.Fields, vf)
		}
		shown := map[string]string{}
		for _, vf := range rc.Fields {
			switch {
			case vf.Readonly:
				shown[vf.Name] = fmt.Sprint(vf.Value)
			case vf.Default != "":
				shown[vf.Name] = "[" + vf.Default + "]"
			default:
				shown[vf.Name] = "[" + vf.Name + "]"
			}
		}
		echo := formBlank(c.Template, shown)
		lines = append(lines, echo, "("+c.Intent+")")
	}
	r.Text = strings.Join(lines, "\n")
	return r, nil
}

// formBlank replaces {name} blanks by shown[name]; a blank whose field is
// hidden by its when: is left out.
func formBlank(tmpl string, shown map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(tmpl); i++ {
		if tmpl[i] == '{' {
			if j := strings.IndexByte(tmpl[i:], '}'); j > 1 && isIdent(tmpl[i+1:i+j]) {
				b.WriteString(shown[tmpl[i+1:i+j]])
				i += j
				continue
			}
		}
		b.WriteByte(tmpl[i])
	}
	return b.String()
}

func isIdent(s string) bool {
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}
