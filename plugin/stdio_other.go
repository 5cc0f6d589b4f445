//go:build !unix

package plugin

import "os"

// stdio returns stdin and stdout for serving.
func stdio() (in, out *os.File) { return os.Stdin, os.Stdout }
