package cassette

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/kitsoki/kitsoki/internal/base/outfile"
)

// maxDecoded caps what a compressed cassette may expand to.
const maxDecoded = 256 << 20

// compressed reports whether path names a zstd-compressed file
// (".yaml.zst", or any ".zst").
func compressed(path string) bool { return strings.HasSuffix(path, ".zst") }

// ReadFile reads a cassette or fixture file, decompressing it when its name
// ends in .zst.
func ReadFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !compressed(path) {
		return b, nil
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxDecoded))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	out, err := dec.DecodeAll(b, nil)
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	return out, nil
}

// encodeFor returns the bytes to store at path: b itself, or b compressed
// when the name ends in .zst. The encoder is single-threaded at a fixed
// level, so the same input always gives the same bytes.
func encodeFor(path string, b []byte) ([]byte, error) {
	if !compressed(path) {
		return b, nil
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		return nil, err
	}
	defer enc.Close()
	return enc.EncodeAll(b, nil), nil
}

// WriteFileAtomic writes b (compressed when the name asks for it) through a
// temporary file and a rename, so a reader never sees half a cassette.
func WriteFileAtomic(path string, b []byte) error {
	data, err := encodeFor(path, b)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := outfile.MkdirAll(dir); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".cassette-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := firstErr(werr, serr, cerr); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Chmod(tmp, outfile.File); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
