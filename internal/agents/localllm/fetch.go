package localllm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/kitsoki/kitsoki/internal/base/clock"
)

// fetcher downloads pinned artifacts into the cache and verifies them. The
// same code serves a managed agent's first call and `kitsoki fetch`.
type fetcher struct {
	cacheDir string
	client   *http.Client
	out      io.Writer // announcements and progress
	clk      clock.Clock
	logger   *slog.Logger
}

// ErrChecksum is wrapped by every sha256 mismatch.
var ErrChecksum = errors.New("sha256 mismatch")

// fetch makes sure dest holds art's verified bytes and returns whether it
// downloaded anything. An existing file is re-hashed and reused; a partial
// download (dest + ".part") is resumed with an HTTP Range request. A file
// whose hash differs from the pin is deleted and the error names both
// hashes. A lock on the .part file keeps two processes sharing a cache from
// writing the same download.
func (f *fetcher) fetch(ctx context.Context, art Artifact, dest string) (bool, error) {
	if art.SHA256 == "" {
		return false, fmt.Errorf("%s has no sha256 pin: refusing to fetch unverified bytes", art.Name)
	}
	if ok, err := f.verifyExisting(art, dest); ok || err != nil {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return false, fmt.Errorf("create cache dir: %w", err)
	}
	part := dest + ".part"
	pf, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return false, fmt.Errorf("open %s: %w", part, err)
	}
	defer pf.Close()
	if err := lockFile(ctx, pf); err != nil {
		return false, fmt.Errorf("lock %s: %w", part, err)
	}
	// Another process may have finished the download while we waited.
	if ok, err := f.verifyExisting(art, dest); ok || err != nil {
		if ok {
			_ = os.Remove(part)
		}
		return false, err
	}
	if err := f.download(ctx, art, pf); err != nil {
		return true, err
	}
	if got, err := hashFile(part); err != nil {
		return true, err
	} else if got != art.SHA256 {
		_ = os.Remove(part)
		return true, fmt.Errorf("%s: %w: want %s, got %s (the downloaded file was deleted)", art.Name, ErrChecksum, art.SHA256, got)
	}
	if err := os.Rename(part, dest); err != nil {
		return true, fmt.Errorf("move %s into place: %w", art.Name, err)
	}
	fmt.Fprintf(f.out, "verified %s (sha256 %s)\n", art.Name, art.SHA256)
	return true, nil
}

// verifyExisting reports whether dest already holds the pinned bytes. A
// cached file with the wrong hash is deleted and reported as an error.
func (f *fetcher) verifyExisting(art Artifact, dest string) (bool, error) {
	if _, err := os.Stat(dest); err != nil {
		return false, nil
	}
	got, err := hashFile(dest)
	if err != nil {
		return false, err
	}
	if got != art.SHA256 {
		_ = os.Remove(dest)
		return false, fmt.Errorf("cached %s (%s): %w: want %s, got %s (the file was deleted; the next use downloads it again)", art.Name, dest, ErrChecksum, art.SHA256, got)
	}
	f.logger.Debug("local_llm: cache hit", "artifact", art.Name, "path", dest)
	return true, nil
}

// download appends the rest of art to pf, resuming from its current size.
func (f *fetcher) download(ctx context.Context, art Artifact, pf *os.File) error {
	offset, err := pf.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("seek %s: %w", pf.Name(), err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, art.URL, nil)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", art.Name, err)
	}
	if offset > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(offset, 10)+"-")
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return fmt.Errorf("fetch %s from %s: %w", art.Name, art.URL, err)
	}
	defer resp.Body.Close()
	total := int64(-1)
	switch {
	case resp.StatusCode == http.StatusPartialContent && offset > 0:
		if resp.ContentLength >= 0 {
			total = offset + resp.ContentLength
		}
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && offset > 0:
		// The partial file is already whole; the hash decides.
		return nil
	case resp.StatusCode == http.StatusOK:
		if offset > 0 { // server ignored the range: start over
			if err := pf.Truncate(0); err != nil {
				return fmt.Errorf("truncate %s: %w", pf.Name(), err)
			}
			if _, err := pf.Seek(0, io.SeekStart); err != nil {
				return fmt.Errorf("seek %s: %w", pf.Name(), err)
			}
			offset = 0
		}
		total = resp.ContentLength
	default:
		return fmt.Errorf("fetch %s from %s: http %d", art.Name, art.URL, resp.StatusCode)
	}
	if offset > 0 {
		fmt.Fprintf(f.out, "downloading %s … (resuming at %s)\n", art.Name, size(offset))
	} else {
		fmt.Fprintf(f.out, "downloading %s …\n", art.Name)
	}
	p := newProgress(f.out, f.clk, art.Name, offset, total)
	_, err = io.Copy(pf, io.TeeReader(resp.Body, p))
	p.finish()
	if err != nil {
		return fmt.Errorf("fetch %s: download interrupted after %s (the partial file is kept and resumed next time): %w", art.Name, size(p.done), err)
	}
	if err := pf.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", pf.Name(), err)
	}
	return nil
}

// hashFile returns the lowercase hex sha256 of the file at p.
func hashFile(p string) (string, error) {
	fh, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return "", fmt.Errorf("hash %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// lockFile takes an exclusive advisory lock on fh, polling so that a
// cancelled context stops the wait.
func lockFile(ctx context.Context, fh *os.File) error {
	for {
		err := syscall.Flock(int(fh.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		if err := sleepCtx(ctx, lockPoll); err != nil {
			return err
		}
	}
}
