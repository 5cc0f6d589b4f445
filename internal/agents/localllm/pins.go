package localllm

import (
	"fmt"
	"path"
	"runtime"
	"sort"
	"strings"
)

// Artifact is one pinned download: where it comes from and the sha256 its
// bytes must have. An empty SHA256 means "no pin known": managed mode refuses
// such an artifact rather than run unverified bytes.
type Artifact struct {
	// Name is how the artifact is announced and named in errors.
	Name string
	// URL is the download location.
	URL string
	// SHA256 is the lowercase hex digest of the file's bytes.
	SHA256 string
}

// FileName is the artifact's file name in the cache: the last path element
// of its URL.
func (a Artifact) FileName() string { return path.Base(a.URL) }

// Release is a pinned llama-server build for one platform.
type Release struct {
	// Tag names the release (e.g. "b9444"); the archive is extracted into
	// bin/llama-<Tag> under the cache.
	Tag string
	// Archive is the .tar.gz holding llama-server and its shared libraries.
	Archive Artifact
}

// Model is a pinned GGUF model.
type Model struct {
	ID   string
	File Artifact
	// Embedding marks an embedding model (served with --embeddings).
	Embedding bool
}

// Shim is the libstdc++ compatibility library fetched only on Linux systems
// whose own libstdc++ lacks Needs.
type Shim struct {
	Archive Artifact
	// Member is the path of the library inside the (tar.bz2) archive.
	Member string
	// InstallAs is the file name it gets beside llama-server.
	InstallAs string
	// Needs is the symbol version the release requires of libstdc++.
	Needs string
}

// Pins is the table of everything managed mode may download. Tests build
// their own pointing at a local server; production uses DefaultPins.
type Pins struct {
	// Releases maps "GOOS/GOARCH" to the llama-server build for it.
	Releases map[string]Release
	// Models maps a model id (the declaration's model:) to its GGUF.
	Models map[string]Model
	// Shims maps "GOOS/GOARCH" to a libstdc++ shim; absent means none is
	// ever needed there.
	Shims map[string]Shim
	// DefaultChatModel and DefaultEmbeddingModel are what the fetch
	// commands use when no model id is given.
	DefaultChatModel      string
	DefaultEmbeddingModel string
}

// Platform is the "GOOS/GOARCH" key of the running process.
func Platform() string { return runtime.GOOS + "/" + runtime.GOARCH }

// DefaultPins returns the pins from shared/spec/local-llm-pins.md: llama.cpp
// release b9444 for linux/amd64 and darwin/arm64, the default chat and
// embedding models, and the conda-forge libstdc++ shim for older-glibc Linux.
func DefaultPins() Pins {
	const rel = "https://github.com/ggml-org/llama.cpp/releases/download/b9444/"
	return Pins{
		Releases: map[string]Release{
			"linux/amd64": {Tag: "b9444", Archive: Artifact{
				Name:   "llama-server b9444 (linux/amd64)",
				URL:    rel + "llama-b9444-bin-ubuntu-x64.tar.gz",
				SHA256: "5d676e97ca82353256f24ed381be60c71f721b4ab52962483e5fce22ea8b3fd4",
			}},
			"darwin/arm64": {Tag: "b9444", Archive: Artifact{
				Name:   "llama-server b9444 (darwin/arm64)",
				URL:    rel + "llama-b9444-bin-macos-arm64.tar.gz",
				SHA256: "36cd51637cf480220eb29b0adf2003b25e4d6e1665920c29634b49355414e8b8",
			}},
		},
		Models: map[string]Model{
			"qwen2.5-1.5b-instruct": {ID: "qwen2.5-1.5b-instruct", File: Artifact{
				Name:   "model qwen2.5-1.5b-instruct (Q4_K_M GGUF)",
				URL:    "https://huggingface.co/Qwen/Qwen2.5-1.5B-Instruct-GGUF/resolve/main/qwen2.5-1.5b-instruct-q4_k_m.gguf",
				SHA256: "6a1a2eb6d15622bf3c96857206351ba97e1af16c30d7a74ee38970e434e9407e",
			}},
			"nomic-embed-text-v1.5": {ID: "nomic-embed-text-v1.5", Embedding: true, File: Artifact{
				Name:   "embedding model nomic-embed-text-v1.5 (Q4_K_M GGUF)",
				URL:    "https://huggingface.co/nomic-ai/nomic-embed-text-v1.5-GGUF/resolve/main/nomic-embed-text-v1.5.Q4_K_M.gguf",
				SHA256: "d4e388894e09cf3816e8b0896d81d265b55e7a9fff9ab03fe8bf4ef5e11295ac",
			}},
			// No pin is known for bge-small: listed so the refusal can say
			// so instead of "unknown model".
			"bge-small-en-v1.5": {ID: "bge-small-en-v1.5", Embedding: true, File: Artifact{
				Name: "embedding model bge-small-en-v1.5 (q8_0 GGUF)",
				URL:  "https://huggingface.co/BAAI/bge-small-en-v1.5/resolve/main/gguf/bge-small-en-v1.5-q8_0.gguf",
			}},
		},
		Shims: map[string]Shim{
			"linux/amd64": {
				Archive: Artifact{
					Name:   "libstdc++ shim (conda-forge libstdcxx-ng 12.2.0)",
					URL:    "https://conda.anaconda.org/conda-forge/linux-64/libstdcxx-ng-12.2.0-h46fd767_19.tar.bz2",
					SHA256: "0289e6a7b9a5249161a3967909e12dcfb4ab4475cdede984635d3fb65c606f08",
				},
				Member:    "lib/libstdc++.so.6.0.30",
				InstallAs: "libstdc++.so.6",
				Needs:     "GLIBCXX_3.4.30",
			},
		},
		DefaultChatModel:      "qwen2.5-1.5b-instruct",
		DefaultEmbeddingModel: "nomic-embed-text-v1.5",
	}
}

// release returns the build for platform, or an error that points to
// endpoint mode.
func (p Pins) release(platform string) (Release, error) {
	r, ok := p.Releases[platform]
	if !ok {
		return Release{}, fmt.Errorf("no pinned llama-server build for %s (pinned: %s): set server_bin: to a llama-server you built, or use endpoint: mode against a server you run", platform, strings.Join(sortedKeys(p.Releases), ", "))
	}
	if r.Archive.SHA256 == "" {
		return Release{}, fmt.Errorf("llama-server build for %s has no sha256 pin: refusing to run unverified bytes; use endpoint: mode", platform)
	}
	return r, nil
}

// model returns the pinned GGUF for id, or an error naming the known ids.
func (p Pins) model(id string) (Model, error) {
	m, ok := p.Models[id]
	if !ok {
		return Model{}, fmt.Errorf("unknown model %q (pinned models: %s); to use another model run llama-server yourself and use endpoint: mode", id, strings.Join(p.pinnedModels(), ", "))
	}
	if m.File.SHA256 == "" {
		return Model{}, fmt.Errorf("model %q has no sha256 pin, so managed mode refuses to fetch it; run llama-server with it yourself and use endpoint: mode", id)
	}
	return m, nil
}

// pinnedModels lists, sorted, the model ids managed mode can fetch: those
// with a sha256 pin.
func (p Pins) pinnedModels() []string {
	var ids []string
	for _, id := range sortedKeys(p.Models) {
		if p.Models[id].File.SHA256 != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
