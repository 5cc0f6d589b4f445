package main

import (
	"errors"
	"io"

	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/run/driver"
)

// redacting wraps w so that what is written is masked as plain text by
// the rule every artifact follows (internal/base/secret): a secret value of 8
// bytes or more wherever it occurs, a shorter one where it stands as a
// whole word. The CLI writes whole lines (and slog whole records) in
// single Write calls, so a secret never straddles two writes. Everything a
// command that loaded a story prints on stderr, handled agent errors
// included, goes through this writer.
func redacting(w io.Writer, secrets []string) io.Writer {
	return secret.New(secrets).Writer(w)
}

// maskedExit masks the text of the error a command returns: main prints
// it on the process's stderr, outside the command's masked writers. The
// exit code is kept.
func maskedExit(secrets []string, err error) error {
	m := secret.New(secrets)
	var ee *exitError
	if errors.As(err, &ee) {
		return &exitError{code: ee.code, err: m.Error(ee.err)}
	}
	if de, ok := errors.AsType[*driver.ExitError](err); ok {
		return &exitError{code: de.Code, err: m.Error(de.Err)}
	}
	return m.Error(err)
}
