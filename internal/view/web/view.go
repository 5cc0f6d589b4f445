package web

import (
	"fmt"

	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// viewElement is one typed view element as the page renders it. Every
// string is text: the page puts it in the document as text, never as
// markup.
type viewElement struct {
	Kind     string      `json:"kind"`
	Block    string      `json:"block,omitempty"`
	Text     string      `json:"text,omitempty"` // the element as the terminal prints it
	Body     string      `json:"body,omitempty"`
	Subtitle string      `json:"subtitle,omitempty"`
	Color    string      `json:"color,omitempty"`
	Pairs    []viewPair  `json:"pairs,omitempty"`
	Items    []viewItem  `json:"items,omitempty"`
	Choice   *viewChoice `json:"choice,omitempty"`
	Media    *viewMedia  `json:"media,omitempty"`
}

type viewPair struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// viewItem is a list or choice item: a single choice's item takes Intent
// with Slots (and Param, the one slot the person types); a multi
// choice's item is Value.
type viewItem struct {
	Label  string         `json:"label"`
	Hint   string         `json:"hint,omitempty"`
	Intent string         `json:"intent,omitempty"`
	Slots  map[string]any `json:"slots,omitempty"`
	Param  *viewParam     `json:"param,omitempty"`
	Value  string         `json:"value,omitempty"`
}

type viewParam struct {
	Slot        string   `json:"slot"`
	Type        string   `json:"type,omitempty"`
	Placeholder string   `json:"placeholder,omitempty"`
	Required    bool     `json:"required,omitempty"`
	Values      []string `json:"values,omitempty"`
}

type viewChoice struct {
	Mode     string      `json:"mode"`
	Prompt   string      `json:"prompt,omitempty"`
	Intent   string      `json:"intent,omitempty"`
	Slot     string      `json:"slot,omitempty"`
	Min      int64       `json:"min,omitempty"`
	Max      int64       `json:"max,omitempty"`
	Template string      `json:"template,omitempty"`
	Fields   []viewField `json:"fields,omitempty"`
}

type viewField struct {
	Name        string   `json:"name"`
	Type        string   `json:"type,omitempty"`
	Hint        string   `json:"hint,omitempty"`
	Placeholder string   `json:"placeholder,omitempty"`
	Default     string   `json:"default,omitempty"`
	Min         string   `json:"min,omitempty"`
	Max         string   `json:"max,omitempty"`
	Values      []string `json:"values,omitempty"`
	Required    bool     `json:"required,omitempty"`
	Readonly    bool     `json:"readonly,omitempty"`
	Value       string   `json:"value,omitempty"` // a readonly field's value
}

type viewMedia struct {
	Handle  string `json:"handle"`
	Caption string `json:"caption,omitempty"`
	Kind    string `json:"kind,omitempty"`
	// Src is where the page loads the file from (an image or video
	// element whose path: the server may read); "" shows a link.
	Src string `json:"src,omitempty"`
}

// viewElements converts the rendered typed view, masking the story's
// secrets in every text (the world a view reads may hold one).
func viewElements(els []orchestrator.ViewElement, m *secret.Masker) []viewElement {
	t := m.Text
	out := make([]viewElement, 0, len(els))
	for _, e := range els {
		v := viewElement{Kind: e.Kind, Block: e.Block, Text: t(e.Text), Body: t(e.Body), Subtitle: t(e.Subtitle), Color: e.Color}
		for _, p := range e.Pairs {
			v.Pairs = append(v.Pairs, viewPair{Key: t(p.Key), Value: t(p.Value)})
		}
		for _, it := range e.Items {
			vi := viewItem{Label: t(it.Label), Hint: t(it.Hint), Intent: it.Intent, Value: it.Value}
			if it.Slots != nil {
				vi.Slots, _ = m.Value(orchestrator.DeepCopy(it.Slots)).(map[string]any)
			}
			if p := it.Param; p != nil {
				vi.Param = &viewParam{Slot: p.Slot, Type: p.Type, Placeholder: t(p.Placeholder), Required: p.Required, Values: p.Values}
			}
			v.Items = append(v.Items, vi)
		}
		if c := e.Choice; c != nil {
			vc := &viewChoice{Mode: c.Mode, Prompt: t(c.Prompt), Intent: c.Intent, Slot: c.Slot, Min: c.Min, Max: c.Max, Template: c.Template}
			for _, f := range c.Fields {
				vf := viewField{Name: f.Name, Type: f.Type, Hint: t(f.Hint), Placeholder: t(f.Placeholder), Default: t(f.Default),
					Min: f.Min, Max: f.Max, Values: f.Values, Required: f.Required, Readonly: f.Readonly}
				if f.Readonly && f.Value != nil {
					vf.Value = t(fmt.Sprint(f.Value))
				}
				vc.Fields = append(vc.Fields, vf)
			}
			v.Choice = vc
		}
		if md := e.Media; md != nil {
			v.Media = &viewMedia{Handle: t(md.Handle), Caption: t(md.Caption), Kind: md.Kind}
		}
		out = append(out, v)
	}
	return out
}
