package localllm

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/usercache"
)

// serverName is the llama-server executable's name in a release.
const serverName = "llama-server"

// CacheEnv overrides the cache directory.
const CacheEnv = usercache.Env

// Options configures fetching: where the cache is, what the pins are, and
// where announcements go. The zero value is the production setup.
type Options struct {
	// CacheDir is the cache root ("" → DefaultCacheDir()). Binaries go under
	// bin/, models under models/.
	CacheDir string
	// Pins is the artifact table (nil → DefaultPins()).
	Pins *Pins
	// Platform is the "GOOS/GOARCH" whose release is fetched ("" → this
	// process's).
	Platform string
	// Client downloads (nil → a default client; downloads are bounded by
	// the context, not a timeout).
	Client *http.Client
	// Progress receives "downloading <artifact> …" and the progress display
	// (nil → os.Stderr).
	Progress io.Writer
	// Logger (nil → slog.Default()).
	Logger *slog.Logger
	// Clock paces the progress display (nil → the system clock).
	Clock clock.Clock
	// NeedShim decides whether the libstdc++ shim is fetched (nil → probe
	// the system libstdc++ for the shim's required symbol version).
	NeedShim func(ctx context.Context, need string) (bool, error)
}

// DefaultCacheDir is $KITSOKI_CACHE_DIR, else kitsoki/ under the user cache
// directory (~/.cache on Linux, ~/Library/Caches on macOS).
func DefaultCacheDir() (string, error) { return usercache.Dir() }

func (o Options) fetcher() (*fetcher, error) {
	dir := o.CacheDir
	if dir == "" {
		d, err := DefaultCacheDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	f := &fetcher{cacheDir: dir, client: o.Client, out: o.Progress, clk: o.Clock, logger: o.Logger}
	if f.client == nil {
		f.client = &http.Client{}
	}
	if f.out == nil {
		f.out = os.Stderr
	}
	if f.clk == nil {
		f.clk = clock.System{}
	}
	if f.logger == nil {
		f.logger = slog.Default()
	}
	return f, nil
}

func (o Options) pins() Pins {
	if o.Pins != nil {
		return *o.Pins
	}
	return DefaultPins()
}

func (o Options) platform() string {
	if o.Platform != "" {
		return o.Platform
	}
	return Platform()
}

// FetchServer makes sure the pinned llama-server release for the platform is
// in the cache, verified and extracted, together with the libstdc++ shim
// when the system needs it, and returns the path of the llama-server
// executable. It backs `kitsoki fetch llama-server` and a managed agent's
// first call alike.
func FetchServer(ctx context.Context, opts Options) (string, error) {
	f, err := opts.fetcher()
	if err != nil {
		return "", err
	}
	pins := opts.pins()
	platform := opts.platform()
	rel, err := pins.release(platform)
	if err != nil {
		return "", err
	}
	binDir := filepath.Join(f.cacheDir, "bin")
	dir := filepath.Join(binDir, "llama-"+rel.Tag)
	err = withFileLock(ctx, dir+".lock", func() error {
		if !releaseComplete(dir, rel.Archive.SHA256) {
			archive := filepath.Join(binDir, rel.Archive.FileName())
			if _, err := f.fetch(ctx, rel.Archive, archive); err != nil {
				return err
			}
			if err := extractFlat(archive, dir, rel.Archive.SHA256); err != nil {
				return err
			}
		}
		if shim, ok := pins.Shims[platform]; ok {
			return installShim(ctx, f, opts, shim, binDir, dir)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, serverName), nil
}

// withFileLock runs fn holding an exclusive lock on the file at p, so that
// goroutines and processes sharing a cache never extract into the same
// directory at once.
func withFileLock(ctx context.Context, p string, fn func() error) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("create cache dir: %w", err)
	}
	fh, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open lock %s: %w", p, err)
	}
	defer fh.Close()
	if err := lockFile(ctx, fh); err != nil {
		return fmt.Errorf("lock %s: %w", p, err)
	}
	return fn()
}

// installShim fetches the libstdc++ shim into the release directory when the
// system libstdc++ lacks the version the release needs.
func installShim(ctx context.Context, f *fetcher, opts Options, shim Shim, binDir, dir string) error {
	dest := filepath.Join(dir, shim.InstallAs)
	if _, err := os.Stat(dest); err == nil {
		return nil
	}
	need := opts.NeedShim
	if need == nil {
		need = systemLibstdcxxLacks
	}
	lacks, err := need(ctx, shim.Needs)
	if err != nil {
		return fmt.Errorf("probe system libstdc++: %w", err)
	}
	if !lacks {
		return nil
	}
	fmt.Fprintf(f.out, "the system libstdc++ lacks %s: adding %s beside llama-server\n", shim.Needs, shim.Archive.Name)
	archive := filepath.Join(binDir, shim.Archive.FileName())
	if _, err := f.fetch(ctx, shim.Archive, archive); err != nil {
		return err
	}
	return extractMember(archive, shim.Member, dest)
}

// FetchModel makes sure the pinned GGUF for model id ("" → the default chat
// model) is in the cache and verified, and returns its path. A model without
// a pin is refused with a message pointing to endpoint mode.
func FetchModel(ctx context.Context, id string, opts Options) (string, error) {
	f, err := opts.fetcher()
	if err != nil {
		return "", err
	}
	pins := opts.pins()
	if id == "" {
		id = pins.DefaultChatModel
	}
	m, err := pins.model(id)
	if err != nil {
		return "", err
	}
	dest := filepath.Join(f.cacheDir, "models", m.File.FileName())
	if _, err := f.fetch(ctx, m.File, dest); err != nil {
		return "", err
	}
	return dest, nil
}

// ModelIDs lists the model ids with a sha256 pin, for `kitsoki fetch`'s help
// and errors.
func ModelIDs(opts Options) []string { return opts.pins().pinnedModels() }

// serverLibDir returns the directory to put on LD_LIBRARY_PATH for a server
// binary that came from a release extraction ("" for a server_bin:).
func serverLibDir(bin string) string {
	dir := filepath.Dir(bin)
	if strings.HasPrefix(filepath.Base(dir), "llama-") {
		if _, err := os.Stat(filepath.Join(dir, releaseMarker)); err == nil {
			return dir
		}
	}
	return ""
}
