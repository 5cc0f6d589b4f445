//go:build ignore

package clean

import _ "example.com/m/internal/story"
