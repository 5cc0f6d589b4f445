// Command slidey-html is an example kitsoki host plugin standing in for
// slidey, a product kitsoki does not build: it serves host.slidey.render
// for format html, rendering a slidey scene spec (meta, scenes of type
// title, cards, narrative, bullets, …) to one self-contained HTML page and
// a <page>.semantic.json sidecar naming each scene. mp4 and pdf need the
// real slidey and are refused. See README.md.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strings"

	"github.com/kitsoki/kitsoki/plugin"
)

// spec is the part of a slidey scene spec the page shows.
type spec struct {
	Meta struct {
		Title string `json:"title"`
	} `json:"meta"`
	Scenes []scene `json:"scenes"`
}

type scene struct {
	Type     string `json:"type"`
	ID       string `json:"id"`
	Eyebrow  string `json:"eyebrow"`
	Title    string `json:"title"`
	Subtitle string `json:"subtitle"`
	Lede     string `json:"lede"`
	Body     string `json:"body"`
	Caption  string `json:"caption"`
	Bullets  []any  `json:"bullets"`
	Items    []any  `json:"items"`
	Cards    []struct {
		Label string `json:"label"`
		Sub   string `json:"sub"`
	} `json:"cards"`
}

var page = template.Must(template.New("deck").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ .Title }}</title>
<style>body{margin:0;font-family:system-ui,sans-serif;background:#232136;color:#e0def4}
section{min-height:100vh;padding:8vh 10vw;box-sizing:border-box;border-bottom:1px solid #393552}
.eyebrow{text-transform:uppercase;letter-spacing:.1em;color:#9ccfd8}h1,h2{margin:.2em 0}
.cards{display:flex;gap:1em;flex-wrap:wrap}.card{background:#393552;padding:1em;border-radius:.5em;min-width:10em}</style></head>
<body>{{ range $i, $s := .Scenes }}<section id="{{ $s.Anchor }}" data-scene="{{ $i }}" data-type="{{ $s.Type }}">
{{ with $s.Eyebrow }}<div class="eyebrow">{{ . }}</div>{{ end }}{{ with $s.Title }}<h2>{{ . }}</h2>{{ end }}
{{ with $s.Subtitle }}<p>{{ . }}</p>{{ end }}{{ with $s.Lede }}<p><strong>{{ . }}</strong></p>{{ end }}{{ with $s.Body }}<p>{{ . }}</p>{{ end }}
{{ with $s.List }}<ul>{{ range . }}<li>{{ . }}</li>{{ end }}</ul>{{ end }}
{{ with $s.Cards }}<div class="cards">{{ range . }}<div class="card"><strong>{{ .Label }}</strong><br>{{ .Sub }}</div>{{ end }}</div>{{ end }}
{{ with $s.Caption }}<p><em>{{ . }}</em></p>{{ end }}</section>
{{ end }}</body></html>
`))

// view is a scene as the page shows it.
type view struct {
	scene
	Anchor string
	List   []string
}

func render(_ context.Context, req *plugin.HostInvokeRequest) (map[string]any, error) {
	specPath, _ := req.Args["spec_path"].(string)
	format, _ := req.Args["format"].(string)
	if strings.TrimSpace(specPath) == "" {
		return nil, &plugin.Error{Code: plugin.CodeInvalidParams, Message: "render: args.spec_path is required: the slidey scene spec (JSON)"}
	}
	if format != "html" {
		return nil, &plugin.Error{Code: plugin.CodeInvalidParams, Message: fmt.Sprintf("render: format %q needs the real slidey (this stand-in renders html only)", format)}
	}
	b, err := os.ReadFile(specPath)
	if err != nil {
		return nil, plugin.Errorf("render: read the spec: %v", err)
	}
	var s spec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, plugin.Errorf("render: %s is not a scene spec: %v", specPath, err)
	}
	if len(s.Scenes) == 0 {
		return nil, plugin.Errorf("render: %s has no scenes", specPath)
	}
	out, _ := req.Args["output_path"].(string)
	if out == "" {
		out = strings.TrimSuffix(specPath, filepath.Ext(specPath)) + ".html"
	}
	title := s.Meta.Title
	if title == "" {
		title = s.Scenes[0].Title
	}
	var views []view
	var semantic []map[string]any
	for i, sc := range s.Scenes {
		v := view{scene: sc, Anchor: sc.ID}
		if v.Anchor == "" {
			v.Anchor = fmt.Sprintf("scene-%d", i)
		}
		for _, x := range append(sc.Bullets, sc.Items...) {
			v.List = append(v.List, text(x))
		}
		views = append(views, v)
		semantic = append(semantic, map[string]any{"index": i, "id": v.Anchor, "type": sc.Type, "title": sc.Title})
	}
	var buf strings.Builder
	if err := page.Execute(&buf, map[string]any{"Title": title, "Scenes": views}); err != nil {
		return nil, plugin.Errorf("render: %v", err)
	}
	if err := os.WriteFile(out, []byte(buf.String()), 0o644); err != nil {
		return nil, plugin.Errorf("render: write %s: %v", out, err)
	}
	sem := out + ".semantic.json"
	sb, _ := json.MarshalIndent(map[string]any{"title": title, "scenes": semantic}, "", "  ")
	if err := os.WriteFile(sem, append(sb, '\n'), 0o644); err != nil {
		return nil, plugin.Errorf("render: write %s: %v", sem, err)
	}
	abs, _ := filepath.Abs(out)
	semAbs, _ := filepath.Abs(sem)
	return map[string]any{"ok": true, "path": abs, "semantic_path": semAbs, "mime": "text/html", "kind": "html", "exit_code": 0, "scenes": len(s.Scenes)}, nil
}

// text is a bullet or item as a line: a string, or an object's label,
// title or text.
func text(x any) string {
	switch v := x.(type) {
	case string:
		return v
	case map[string]any:
		for _, k := range []string{"label", "title", "text"} {
			if s, ok := v[k].(string); ok {
				return s
			}
		}
	}
	b, _ := json.Marshal(x)
	return string(b)
}

func main() {
	ops := map[string]plugin.HostOp{
		"render": {Description: "Render a slidey scene spec to a self-contained HTML page (format html only).", Run: render,
			ArgsSchema: json.RawMessage(`{"type":"object","required":["spec_path","format"],"properties":{` +
				`"spec_path":{"type":"string","description":"the scene spec (JSON), relative to the story directory"},` +
				`"format":{"enum":["html"],"description":"html (mp4 and pdf need the real slidey)"},` +
				`"output_path":{"type":"string","description":"default the spec's path with .html"}},"additionalProperties":false}`)},
	}
	if err := plugin.ServeHost(ops); err != nil {
		fmt.Fprintln(os.Stderr, "slidey-html:", err)
		os.Exit(1)
	}
}
