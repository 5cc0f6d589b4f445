package web

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/check/eval"
	"github.com/kitsoki/kitsoki/internal/load/project"
	"github.com/kitsoki/kitsoki/internal/load/story"
)

// Discover finds the stories `kitsoki web` serves, as root files
// (absolute, sorted, each once). Each argument is a story directory
// (holding app.yaml), a story's root file, or a directory of stories
// (NAME/app.yaml). With no argument, the story_dirs of the project's
// .kitsoki.yaml in dir are read; without those, dir itself is.
func Discover(args []string, dir string) ([]string, error) {
	if len(args) == 0 {
		cfg, err := project.Load(dir)
		if err != nil {
			return nil, err
		}
		args = cfg.StoryDirs
		if len(args) == 0 {
			args = []string{dir}
		}
	}
	var out []string
	for _, a := range args {
		files, err := storiesIn(a)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// storiesIn is the stories one argument names.
func storiesIn(arg string) ([]string, error) {
	abs, err := filepath.Abs(arg)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (give a story directory, its app.yaml, or a directory of stories)", arg, err)
	}
	if !fi.IsDir() {
		return []string{abs}, nil
	}
	if _, err := os.Stat(filepath.Join(abs, "app.yaml")); err == nil {
		return []string{filepath.Join(abs, "app.yaml")}, nil
	}
	found, err := filepath.Glob(filepath.Join(abs, "*", "app.yaml"))
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("%s: no story here: want %s or %s", arg, filepath.Join(arg, "app.yaml"), filepath.Join(arg, "NAME", "app.yaml"))
	}
	return found, nil
}

// storyInfo is a story the server offers, as its card shows it.
type storyInfo struct {
	Key     string     `json:"key"` // the story's name in URLs
	File    string     `json:"file"`
	Title   string     `json:"title"`
	AppID   string     `json:"app_id,omitempty"`
	Version string     `json:"version,omitempty"`
	Error   string     `json:"error,omitempty"` // why it does not load
	Evals   []evalInfo `json:"evals,omitempty"`
}

// evalInfo is one of a story's eval datasets and its latest report.
type evalInfo struct {
	Name     string `json:"name"`
	Call     string `json:"call"`
	Report   string `json:"-"`                  // the report's path, "" without one
	HasRep   bool   `json:"has_report"`         // a report exists
	Decision string `json:"decision,omitempty"` // the report's decision
	Passing  int    `json:"passing"`            // candidates that passed the bar
	Total    int    `json:"total"`
	Error    string `json:"error,omitempty"`
}

// loadStories reads the card of each story; one that does not load is
// offered with its error.
func loadStories(files []string) []*storyInfo {
	var out []*storyInfo
	keys := map[string]bool{}
	for _, f := range files {
		key := filepath.Base(filepath.Dir(f))
		for i := 2; keys[key]; i++ {
			key = fmt.Sprintf("%s-%d", filepath.Base(filepath.Dir(f)), i)
		}
		keys[key] = true
		si := &storyInfo{Key: key, File: f, Title: key}
		// A card needs no handler and no secret.
		st, err := story.Load(f, story.WithStubbedHosts(), story.WithoutSecrets())
		if err != nil {
			si.Error = err.Error()
		} else {
			si.AppID, si.Version = st.App.ID, st.App.Version
			if st.App.Title != "" {
				si.Title = st.App.Title
			}
			st.Close()
		}
		si.Evals = evalsOf(filepath.Dir(f))
		out = append(out, si)
	}
	return out
}

// evalsOf reads a story's eval datasets (evals/*.yaml) and their latest
// reports.
func evalsOf(dir string) []evalInfo {
	paths, _ := filepath.Glob(filepath.Join(dir, "evals", "*.yaml"))
	var out []evalInfo
	for _, p := range paths {
		d, err := eval.ReadDataset(p)
		if err != nil {
			out = append(out, evalInfo{Name: strings.TrimSuffix(filepath.Base(p), ".yaml"), Error: err.Error()})
			continue
		}
		if d.Kind != eval.KindDataset {
			continue
		}
		ei := evalInfo{Name: d.Name(), Call: d.Call}
		path, r, err := eval.LatestReport(d.ReportsDir())
		switch {
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			ei.Error = err.Error()
		case r != nil:
			ei.Report, ei.HasRep, ei.Total = path, true, len(r.Candidates)
			for _, c := range r.Candidates {
				if c.Pass {
					ei.Passing++
				}
			}
			if dec := r.Decision; dec != nil {
				ei.Decision = dec.Strategy
				if dec.SelectedProfile != "" {
					ei.Decision += ": " + dec.SelectedProfile + "/" + dec.SelectedModel
				}
			}
		}
		out = append(out, ei)
	}
	return out
}
