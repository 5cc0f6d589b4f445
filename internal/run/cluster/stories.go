package cluster

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"

	"github.com/kitsoki/kitsoki/internal/load/story"
)

// StoryRef names the story a session runs: the content hash the session
// was started with (story.Story.ContentHash), so every worker runs the
// same compiled story or refuses, and its root file, relative to the
// bundle Bundle names (the story's files in the blob store, PackStory),
// or, without one, to the stories directory every worker has.
type StoryRef struct {
	Path   string `json:"path"`
	Hash   string `json:"hash"`
	Bundle string `json:"bundle,omitempty"`
}

// Stories loads stories from a stories directory, each once per content
// hash. It is safe for concurrent use.
type Stories struct {
	// Dir is the stories directory; the paths of StoryRefs without a
	// bundle are relative to it.
	Dir string
	// Options are passed to story.Load.
	Options []story.Option
	// Blobs holds the story bundles; BundleDir is where this worker
	// unpacks them ("" is <Blobs.Dir>/bundles).
	Blobs     *Blobs
	BundleDir string

	mu     sync.Mutex
	loaded map[StoryRef]*loadedStory
	// anyHash skips the content-hash check; only the replay test sets it,
	// to replay a history against a deliberately changed story.
	anyHash bool
}

type loadedStory struct {
	st      *story.Story
	invokes map[InvokeRef]*story.Invoke
	refs    map[*story.Invoke]InvokeRef
}

// InvokeRef is a stable reference to an invoke of a story: its position
// (file relative to the story directory, line, column) and, for the rare
// invokes that share one (a file imported twice), its ordinal among them
// in Invokes order.
type InvokeRef struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
	N    int    `json:"n,omitempty"`
}

func (r InvokeRef) String() string {
	if r.N > 0 {
		return fmt.Sprintf("%s:%d:%d (#%d)", r.File, r.Line, r.Col, r.N+1)
	}
	return fmt.Sprintf("%s:%d:%d", r.File, r.Line, r.Col)
}

// Load returns the story ref names, refusing a path outside the stories
// directory and a story whose content hash is not ref.Hash.
func (s *Stories) Load(ref StoryRef) (*story.Story, error) {
	ls, err := s.load(ref)
	if err != nil {
		return nil, err
	}
	return ls.st, nil
}

// Invoke returns the invoke of ref's story that at names.
func (s *Stories) Invoke(ref StoryRef, at InvokeRef) (*story.Story, *story.Invoke, error) {
	ls, err := s.load(ref)
	if err != nil {
		return nil, nil, err
	}
	inv := ls.invokes[at]
	if inv == nil {
		return nil, nil, fmt.Errorf("story %s (%s): no invoke at %s", ref.Path, ref.Hash, at)
	}
	return ls.st, inv, nil
}

// Ref returns the stable reference of inv, an invoke of ref's story.
func (s *Stories) Ref(ref StoryRef, inv *story.Invoke) (InvokeRef, error) {
	ls, err := s.load(ref)
	if err != nil {
		return InvokeRef{}, err
	}
	r, ok := ls.refs[inv]
	if !ok {
		return InvokeRef{}, fmt.Errorf("story %s: invoke %s at %s:%d:%d is not one of the story's invokes", ref.Path, inv.Name, inv.Pos.File, inv.Pos.Line, inv.Pos.Col)
	}
	return r, nil
}

func (s *Stories) load(ref StoryRef) (*loadedStory, error) {
	if !filepath.IsLocal(ref.Path) {
		return nil, fmt.Errorf("story path %q: must be relative to the stories directory %s and stay inside it", ref.Path, s.Dir)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ls := s.loaded[ref]; ls != nil {
		return ls, nil
	}
	st, err := s.open(ref)
	if err != nil {
		return nil, fmt.Errorf("story %s: %w", ref.Path, err)
	}
	if st.ContentHash != ref.Hash && !s.anyHash {
		st.Close()
		return nil, &HashMismatchError{Path: ref.Path, Want: ref.Hash, Got: st.ContentHash, Bundle: ref.Bundle}
	}
	ls := &loadedStory{st: st, invokes: map[InvokeRef]*story.Invoke{}, refs: map[*story.Invoke]InvokeRef{}}
	for _, inv := range Invokes(st) {
		r := InvokeRef{File: inv.Pos.File, Line: inv.Pos.Line, Col: inv.Pos.Col}
		for ls.invokes[r] != nil {
			r.N++
		}
		ls.invokes[r], ls.refs[inv] = inv, r
	}
	if s.loaded == nil {
		s.loaded = map[StoryRef]*loadedStory{}
	}
	s.loaded[ref] = ls
	return ls, nil
}

// open loads ref's story: from its bundle when it has one, else from the
// stories directory.
func (s *Stories) open(ref StoryRef) (*story.Story, error) {
	if ref.Bundle == "" {
		return story.Load(filepath.Join(s.Dir, ref.Path), s.Options...)
	}
	if s.Blobs == nil {
		return nil, &BundleError{Digest: ref.Bundle, Err: errors.New("this worker has no blob store; give it the cluster's (kitsoki worker --blobs DIR, $" + EnvBlobsDir + ")")}
	}
	dir := s.BundleDir
	if dir == "" {
		dir = filepath.Join(s.Blobs.Dir, "bundles")
	}
	root, man, err := unpack(s.Blobs, dir, ref.Bundle)
	if err != nil {
		return nil, err
	}
	// The bundle is the whole story: imports are looked up where the
	// client found them, not through this worker's search path, library
	// or $KITSOKI_STORIES_PATH.
	search := make([]string, len(man.StoriesPath))
	for i, d := range man.StoriesPath {
		search[i] = filepath.Join(root, filepath.FromSlash(d))
	}
	opts := append(slices.Clone(s.Options), story.WithWorkspace(root), story.WithLibrary(""), story.WithSearchPath(search...),
		story.WithLookupEnv(hideSearchEnv))
	return story.Load(filepath.Join(root, filepath.FromSlash(ref.Path)), opts...)
}

// hideSearchEnv is os.LookupEnv without the variables that add to the
// @kitsoki/NAME search path.
func hideSearchEnv(name string) (string, bool) {
	if name == "KITSOKI_STORIES_PATH" || name == "KITSOKI_REPO" {
		return "", false
	}
	return os.LookupEnv(name)
}

// HashMismatchError is a story whose files changed since the session
// started: the session's history was made with another story.
type HashMismatchError struct{ Path, Want, Got, Bundle string }

func (e *HashMismatchError) Error() string {
	if e.Bundle != "" {
		return fmt.Sprintf("story %s of the bundle %s: content hash is %s, but the session was started with %s: the bundle does not hold the story the session started with; "+
			"start a new session (kitsoki run --temporal stores its story's bundle)", e.Path, e.Bundle, e.Got, e.Want)
	}
	return fmt.Sprintf("story %s: content hash is %s, but the session was started with %s: the story files changed under the session; "+
		"deploy the story the session started with to this worker's stories directory, or start a new session", e.Path, e.Got, e.Want)
}

// Invokes lists every invoke of st (on_enter, arms, overlays, timeouts,
// on_complete: wherever the story's types hold one), ordered by position,
// then by the walk (struct fields in order, maps in key order), so the
// order is the same for every load of the same story.
func Invokes(st *story.Story) []*story.Invoke {
	var out []*story.Invoke
	seen := map[uintptr]bool{}
	storyPkg := reflect.TypeFor[story.Story]().PkgPath()
	invokeType := reflect.TypeFor[*story.Invoke]()
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() || v.Elem().Type().PkgPath() != storyPkg || seen[v.Pointer()] {
				return
			}
			seen[v.Pointer()] = true
			if v.Type() == invokeType {
				out = append(out, v.Interface().(*story.Invoke))
			}
			walk(v.Elem())
		case reflect.Struct:
			if v.Type().PkgPath() != storyPkg {
				return
			}
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Map: // in key order, so the walk is the same on every worker
			keys := v.MapKeys()
			slices.SortFunc(keys, func(a, b reflect.Value) int { return cmp.Compare(fmt.Sprint(a.Interface()), fmt.Sprint(b.Interface())) })
			for _, k := range keys {
				walk(v.MapIndex(k))
			}
		}
	}
	walk(reflect.ValueOf(st))
	slices.SortStableFunc(out, func(a, b *story.Invoke) int {
		return cmp.Or(cmp.Compare(a.Pos.File, b.Pos.File), cmp.Compare(a.Pos.Line, b.Pos.Line), cmp.Compare(a.Pos.Col, b.Pos.Col))
	})
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// PathRef names the story at path (st) by its path relative to the
// stories directory every worker has (kitsoki worker --stories DIR), with
// no bundle: the workers read it there. path must be inside storiesDir.
func PathRef(storiesDir, path string, st *story.Story) (StoryRef, error) {
	dir, err := filepath.Abs(storiesDir)
	if err != nil {
		return StoryRef{}, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return StoryRef{}, err
	}
	rel, err := filepath.Rel(dir, abs)
	if err != nil || !filepath.IsLocal(rel) {
		return StoryRef{}, fmt.Errorf("%s is not inside the stories directory %s (--stories): the workers find a session's story by its path relative to that directory; run from it, pass --stories DIR, or drop --stories to send the story with the session", path, dir)
	}
	return StoryRef{Path: filepath.ToSlash(rel), Hash: st.ContentHash}, nil
}
