package testrunner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
)

// checkFiles checks a fixture's expect_files: once the flow ended. The
// paths were confined to the workspace when the flow was set up.
func checkFiles(want []FileExpect) []string {
	var fails []string
	for i, fe := range want {
		label := fmt.Sprintf("expect_files[%d] (%s)", i, fe.Path)
		_, err := os.Stat(fe.Abs)
		switch {
		case fe.MustNotExist && err == nil:
			fails = append(fails, label+": the file exists, want must_not_exist")
			continue
		case fe.MustNotExist && errors.Is(err, fs.ErrNotExist):
			continue
		case errors.Is(err, fs.ErrNotExist):
			fails = append(fails, label+": no such file")
			continue
		case err != nil:
			fails = append(fails, fmt.Sprintf("%s: %v", label, err))
			continue
		}
		if fe.ContentMatches == nil {
			continue
		}
		b, err := workspace.ReadFile(fe.Abs, fe.Path)
		if err != nil {
			fails = append(fails, fmt.Sprintf("%s: %v", label, err))
			continue
		}
		if !fe.ContentMatches.Match(b) {
			fails = append(fails, fmt.Sprintf("%s: content does not match /%s/: %q", label, fe.ContentMatches, clipValue(string(b))))
		}
	}
	return fails
}
