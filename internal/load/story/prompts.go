package story

import (
	"errors"
	"path/filepath"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"go.yaml.in/yaml/v3"
)

// prompts: is the story's prompt search path (Kitsoki's prompt
// extension): shared: directories that @shared/<path> names in a prompt's
// include and extends tags, and overlay: a directory whose prompt files
// shadow the story's of the same name (a bare prompts/x.md resolves there
// first) and may {% extends "@story/prompts/x.md" %} the file they shadow.
// WithPromptOverlay (kitsoki run --prompt-overlay) wins over overlay:.

var promptsKeys = &keySpec{v1: []string{"shared", "overlay"}}

// WithPromptOverlay sets the prompt overlay directory (the --prompt-overlay
// flag), over the story's prompts.overlay.
func WithPromptOverlay(dir string) Option {
	return func(o *options) { o.promptOverlay = dir }
}

// loadPromptsConfig reads prompts: (the root file only, before any prompt
// is read).
func (l *loader) loadPromptsConfig(f *file, e entry, isRoot bool) {
	if !isRoot && !f.imported {
		l.errAt(f, e.key, "prompts", "prompts: is read from the root story file only (%s is included); move it to the root file", f.rel)
		return
	}
	fs, ok := l.fields(f, e.val, "prompts", promptsKeys)
	if !ok {
		return
	}
	if sh, ok := fs.get("shared"); ok {
		l.loadPromptShared(f, sh, isRoot)
	}
	ov, ok := fs.get("overlay")
	switch {
	case !ok:
	case !isRoot:
		// An overlay shadows the prompts of the whole run: the importing
		// story (or --prompt-overlay) names it.
		l.warnAt(f, ov.val, "prompts.overlay", "an imported story's prompts.overlay is not used: the overlay of a run is the importing story's prompts.overlay or --prompt-overlay; name it there")
	case l.opts.promptOverlay == "":
		var d string
		strField(l, f, fs, "prompts", "overlay", &d)
		if d != "" {
			l.setOverlay(f, ov.val, d)
		}
	}
}

// loadPromptShared reads prompts.shared: directories relative to the
// story file's own directory. The root story's are the story's @shared/
// search path; an imported story's are the search path of its own
// prompts (its @shared/ names its fragments, not the importer's).
func (l *loader) loadPromptShared(f *file, sh entry, isRoot bool) {
	dirs, _ := l.strList(f, sh.val, "prompts.shared")
	items, _ := l.list(f, sh.val, "prompts.shared")
	base := l.dir
	if !isRoot && f.dir != "" {
		base = f.dir
	}
	var out []string
	for i, d := range dirs {
		abs := filepath.FromSlash(d)
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(base, abs)
		}
		if st, err := l.ws.Stat(abs); err != nil || !st.IsDir() {
			l.errAt(f, items[i], indexPath("prompts.shared", i), "prompts.shared: %q is not a directory of the story", d)
			continue
		}
		if _, err := l.ws.Resolve(base, abs); err != nil {
			l.errAt(f, items[i], indexPath("prompts.shared", i), "%v", renamed(err, d))
			continue
		}
		out = append(out, abs)
	}
	if isRoot {
		l.promptShared = append(l.promptShared, out...)
		return
	}
	if l.importShared == nil {
		l.importShared = map[string][]string{}
	}
	l.importShared[base] = append(l.importShared[base], out...)
}

// sharedDirs is the @shared/ search path of a prompt of the story in
// storyDir: an imported story's own prompts.shared when it has one, else
// the root story's.
func (l *loader) sharedDirs(storyDir string) []string {
	if d, ok := l.importShared[storyDir]; ok {
		return d
	}
	return l.promptShared
}

// setOverlay records the prompt overlay directory; n is where it is named
// (nil for the option).
func (l *loader) setOverlay(f *file, n *yaml.Node, dir string) {
	abs := dir
	switch {
	case f == nil:
		// The flag's directory is relative to where kitsoki runs.
		if a, err := filepath.Abs(dir); err == nil {
			abs = a
		}
	case !filepath.IsAbs(abs):
		abs = filepath.Join(l.dir, filepath.FromSlash(dir))
	}
	st, err := l.ws.Stat(abs)
	if err == nil && st.IsDir() {
		_, err = l.ws.Resolve(l.dir, abs)
	} else if err == nil {
		err = errNotDir
	}
	if err != nil {
		if f == nil {
			l.diags = append(l.diags, Diagnostic{Pos: Pos{File: filepath.Base(l.st.File)}, Path: "prompts.overlay", Message: "--prompt-overlay " + dir + ": " + unwrapPathErr(err).Error()})
			return
		}
		l.errAt(f, n, "prompts.overlay", "prompt overlay %q: %v", dir, unwrapPathErr(err))
		return
	}
	l.promptOverlay = abs
}

type notDirError struct{}

func (notDirError) Error() string { return "not a directory" }

var errNotDir error = notDirError{}

// importDir is the directory of the story imported as alias ("" when no
// import has that alias).
func (l *loader) importDir(alias string) string {
	w := l.wrappers[alias]
	if w == nil {
		return ""
	}
	return filepath.Dir(l.resolve(w.source))
}

// promptScope is the search path of a prompt read for file f.
func (l *loader) promptScope(f *file) tmplScope {
	dir := l.dir
	if f != nil && f.dir != "" {
		dir = f.dir
	}
	return tmplScope{kind: promptTemplate, storyDir: dir}
}

// overlayFile is the overlay's file shadowing the prompt file raw (a
// path relative to the story directory), or "" when there is none.
func (l *loader) overlayFile(raw string) string {
	if l.promptOverlay == "" || filepath.IsAbs(raw) || strings.HasPrefix(raw, "@") {
		return ""
	}
	abs := filepath.Join(l.promptOverlay, filepath.FromSlash(raw))
	if st, err := l.ws.Stat(abs); err == nil && st.Mode().IsRegular() {
		return abs
	}
	return ""
}

// assemblePrompt resolves the file references of a prompt's text and
// hands the text to compile to use; a prompt naming @import/ waits until
// the imports are folded.
func (l *loader) assemblePrompt(f *file, n *yaml.Node, path, src string, from tmplFile, use func(string)) {
	if !needsAssembly(src) {
		use(src)
		return
	}
	run := func() {
		out, msg := l.assemble(src, from, l.promptScope(f), []string{from.rel})
		if msg != "" {
			l.errAt(f, n, path, "%s", msg)
			return
		}
		use(out)
	}
	if strings.Contains(src, "@import/") {
		l.lateTemplates = append(l.lateTemplates, run)
		return
	}
	run()
}

// projectContext is the prompt file that gives the story's context when
// app: sets neither context nor context_path (Kitsoki's convention).
const projectContext = "prompts/_project.md"

// loadContext reads app.context_path (or, when app: sets no context,
// prompts/_project.md if the story has it) into App.Context: a prompt file
// found along the prompt search path, its includes resolved, rendered once
// (it is the same for every agent call).
func (l *loader) loadContext() {
	r := l.contextPath
	if r == nil {
		if l.st.App.Context != "" {
			return
		}
		if _, err := l.ws.Stat(filepath.Join(l.dir, filepath.FromSlash(projectContext))); err != nil && l.overlayFile(projectContext) == "" {
			return
		}
		r = &nodeRef{path: "app", value: projectContext}
	}
	f := r.f
	if f == nil {
		f = &file{rel: filepath.Base(l.st.File)}
	}
	sc := l.promptScope(nil)
	tf, data, err := l.findTemplate(r.value, tmplFile{}, sc)
	if err != nil {
		l.errAt(f, r.n, r.path, "context file %q: %v", r.value, err)
		return
	}
	src, msg := l.assemble(string(data), tf, sc, []string{tf.rel})
	if msg != "" {
		l.errAt(f, r.n, r.path, "%s", msg)
		return
	}
	t, err := expr.CompileText(src)
	if err == nil {
		src, err = t.Render(expr.Env{})
	}
	if err != nil {
		l.errAt(f, r.n, r.path, "context file %s: %v (it is rendered once, with no world)", tf.rel, err)
		return
	}
	l.st.App.Context = src
}

// AssemblePrompt resolves the {% include %}, {% extends %} and
// {% import %} tags of a prompt file read at run time (a templated prompt
// path, rendered): src is the text of the file at abs. The tags resolve
// along the prompt search path, as those of prompt files named literally
// do at load; the text returned has none left.
func (s *Story) AssemblePrompt(abs, src string) (string, error) {
	if s == nil || s.promptAssembler == nil || !needsAssembly(src) {
		return src, nil
	}
	rel := s.promptAssembler.relPath(abs)
	out, msg := s.promptAssembler.assemble(src, tmplFile{abs: abs, rel: rel}, tmplScope{kind: promptTemplate, storyDir: s.Dir}, []string{rel})
	if msg != "" {
		return "", errors.New(msg)
	}
	return out, nil
}
