package localllm

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"os"
	"path"
	"strconv"
	"sync"
)

// vectorCache keeps embeddings by content: the key is a hash of the model,
// the truncation and the exact text sent (its task prefix included), so a
// vector is reused only for the same text under the same model. Vectors
// are kept in memory (bounded) and, with a directory, on disk: one file a
// vector, under <dir>/<model>/<first two hex digits>/<hash>.vec, opened
// through an os.Root on dir so no path leads out of it.
type vectorCache struct {
	model string
	dims  int
	dir   string

	mu    sync.Mutex
	mem   map[string][]float32
	root  *os.Root // opened on first use; nil without dir
	rerr  error    // why the directory could not be opened (reported once)
	hits  int      // vectors served from the cache (tests read it)
	disks int      // of them, read from disk
}

// memCap bounds the vectors kept in memory; past it the map starts over.
const memCap = 8192

// vecMagic starts every cache file: a format tag and version.
var vecMagic = [4]byte{'K', 'E', 'V', '1'}

func newVectorCache(model string, dims int, dir string) *vectorCache {
	return &vectorCache{model: model, dims: dims, dir: dir, mem: map[string][]float32{}}
}

// key is the content address of text.
func (c *vectorCache) key(text string) string {
	h := sha256.New()
	h.Write([]byte(c.model))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(c.dims)))
	h.Write([]byte{0})
	h.Write([]byte(text))
	return hex.EncodeToString(h.Sum(nil))
}

// file is the key's path inside the cache directory.
func (c *vectorCache) file(key string) string {
	return path.Join(safeName(c.model), key[:2], key+".vec")
}

// safeName makes a model id one path element.
func safeName(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '-' || ch == '_') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] == '.' {
		return "_" + string(b)
	}
	return string(b)
}

// openRoot opens the cache directory, creating it; an error is kept and the
// cache goes on in memory.
func (c *vectorCache) openRoot() *os.Root {
	if c.dir == "" || c.rerr != nil {
		return nil
	}
	if c.root == nil {
		if err := os.MkdirAll(c.dir, 0o755); err != nil {
			c.rerr = err
			return nil
		}
		r, err := os.OpenRoot(c.dir)
		if err != nil {
			c.rerr = err
			return nil
		}
		c.root = r
	}
	return c.root
}

// get returns the cached vector of text, if any.
func (c *vectorCache) get(text string) ([]float32, bool) {
	k := c.key(text)
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.mem[k]; ok {
		c.hits++
		return v, true
	}
	r := c.openRoot()
	if r == nil {
		return nil, false
	}
	b, err := r.ReadFile(c.file(k))
	if err != nil {
		return nil, false
	}
	v, ok := decodeVec(b)
	if !ok {
		return nil, false // a torn or foreign file: embedded again and rewritten
	}
	c.remember(k, v)
	c.hits++
	c.disks++
	return v, true
}

// put stores text's vector; a failed disk write is returned (the vector is
// still kept in memory).
func (c *vectorCache) put(text string, v []float32) error {
	k := c.key(text)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remember(k, v)
	r := c.openRoot()
	if r == nil {
		return c.rerr
	}
	name := c.file(k)
	if err := r.MkdirAll(path.Dir(name), 0o755); err != nil {
		return err
	}
	tmp := name + ".tmp-" + strconv.Itoa(os.Getpid())
	if err := r.WriteFile(tmp, encodeVec(v), 0o644); err != nil {
		return err
	}
	if err := r.Rename(tmp, name); err != nil {
		_ = r.Remove(tmp)
		return err
	}
	return nil
}

func (c *vectorCache) remember(k string, v []float32) {
	if len(c.mem) >= memCap {
		clear(c.mem)
	}
	c.mem[k] = v
}

// close releases the directory.
func (c *vectorCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.root == nil {
		return nil
	}
	err := c.root.Close()
	c.root = nil
	return err
}

// encodeVec is the file form: the magic, the length, the floats (little
// endian).
func encodeVec(v []float32) []byte {
	b := make([]byte, 8+4*len(v))
	copy(b, vecMagic[:])
	binary.LittleEndian.PutUint32(b[4:], uint32(len(v)))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[8+4*i:], math.Float32bits(x))
	}
	return b
}

func decodeVec(b []byte) ([]float32, bool) {
	if len(b) < 8 || [4]byte(b[:4]) != vecMagic {
		return nil, false
	}
	n := int(binary.LittleEndian.Uint32(b[4:]))
	if n == 0 || len(b) != 8+4*n {
		return nil, false
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[8+4*i:]))
	}
	return v, true
}

// embedCached returns one vector per (prefixed) input: cached ones from the
// cache, the rest embedded in one request and stored. A cache file that
// cannot be written is logged; the vectors are returned all the same.
func (e *LocalEmbedder) embedCached(ctx context.Context, input []string) ([][]float32, error) {
	out := make([][]float32, len(input))
	var miss []string
	var at []int
	for i, t := range input {
		if v, ok := e.cache.get(t); ok {
			out[i] = v
			continue
		}
		miss = append(miss, t)
		at = append(at, i)
	}
	if len(miss) == 0 {
		return out, nil
	}
	vecs, err := e.embedRaw(ctx, miss)
	if err != nil {
		return nil, err
	}
	for j, v := range vecs {
		out[at[j]] = v
		if err := e.cache.put(miss[j], v); err != nil && !e.cacheWarned {
			e.cacheWarned = true
			e.logger.Warn("local_llm embed: the embedding cache cannot be written; vectors are kept in memory only", "dir", e.cfg.CacheDir, "err", err)
		}
	}
	return out, nil
}
