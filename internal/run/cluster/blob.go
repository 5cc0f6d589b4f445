package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/kitsoki/kitsoki/internal/base/outfile"
)

// DefaultBlobThreshold is the payload size (bytes, the encoded payload
// with its metadata) above which a payload travels by reference: 256 KiB,
// well under Temporal's 2 MiB payload limit and its 512 KiB warning.
const DefaultBlobThreshold = 256 << 10

// EnvBlobsDir names the blob directory when no flag does.
const EnvBlobsDir = "KITSOKI_BLOBS_DIR"

// BlobEncoding is the metadata encoding of a payload that is a blob
// reference; its data is the JSON BlobRef.
const BlobEncoding = "kitsoki/blob-ref"

// BlobsDir is the blob directory a worker or client uses: flag when set,
// else $KITSOKI_BLOBS_DIR (getenv), else .kitsoki/blobs in the stories
// directory.
func BlobsDir(flag, storiesDir string, getenv func(string) string) string {
	if flag != "" {
		return flag
	}
	if getenv != nil {
		if d := getenv(EnvBlobsDir); d != "" {
			return d
		}
	}
	return filepath.Join(storiesDir, ".kitsoki", "blobs")
}

// BlobRef is what a payload over the threshold is replaced with in
// history: the sha256 of the stored bytes (the original payload, proto
// encoded, metadata included) and their size.
type BlobRef struct {
	Digest string `json:"digest"`
	Size   int    `json:"size"`
}

// Blobs is a content-addressed blob store on the filesystem: blob
// sha256:<hex> is the file <Dir>/sha256/<hex[:2]>/<hex>. Blobs are
// immutable: a digest always names the same bytes, so reading one is
// deterministic, and writing one twice is a no-op. Every worker of a task
// queue, and every client that reads results, must see the same
// directory (a shared mount).
type Blobs struct {
	Dir string
	// Threshold is the payload size above which Encode stores a blob; 0
	// is DefaultBlobThreshold.
	Threshold int
}

// ErrBlobMissing and ErrBlobCorrupt are the two ways a blob cannot be
// read.
var (
	ErrBlobMissing = errors.New("blob missing")
	ErrBlobCorrupt = errors.New("blob corrupt")
)

func (b *Blobs) path(digest string) (string, error) {
	hexd, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(hexd) != sha256.Size*2 {
		return "", fmt.Errorf("blob reference %q: want sha256:<64 hex digits>", digest)
	}
	if _, err := hex.DecodeString(hexd); err != nil {
		return "", fmt.Errorf("blob reference %q: want sha256:<64 hex digits>", digest)
	}
	return filepath.Join(b.Dir, "sha256", hexd[:2], hexd), nil
}

// Put stores data and returns its digest. A blob already stored is kept
// when its content is data; one whose file was damaged is written again.
func (b *Blobs) Put(data []byte) (string, error) {
	sum := sha256.Sum256(data)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	p, _ := b.path(digest)
	if fi, err := os.Stat(p); err == nil && fi.Size() == int64(len(data)) {
		if old, err := os.ReadFile(p); err == nil && sha256.Sum256(old) == sum {
			return digest, nil
		}
	}
	if err := outfile.MkdirAll(filepath.Dir(p)); err != nil {
		return "", fmt.Errorf("blob store %s: %w", b.Dir, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return "", fmt.Errorf("blob store %s: %w", b.Dir, err)
	}
	_, werr := tmp.Write(data)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), p)
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("blob store %s: write %s: %w", b.Dir, digest, werr)
	}
	return digest, nil
}

// Get reads the blob digest names and checks its content hashes to it.
func (b *Blobs) Get(digest string) ([]byte, error) {
	p, err := b.path(digest)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("blob %s is not in the blob store %s: %w; every worker and client of the cluster must share one blob directory (--blobs, $%s)",
			digest, b.Dir, ErrBlobMissing, EnvBlobsDir)
	}
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", digest, err)
	}
	sum := sha256.Sum256(data)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != digest {
		return nil, fmt.Errorf("blob %s in the blob store %s: %w: its content hashes to %s; restore the file %s from another copy of the store",
			digest, b.Dir, ErrBlobCorrupt, got, p)
	}
	return data, nil
}

func (b *Blobs) threshold() int {
	if b.Threshold > 0 {
		return b.Threshold
	}
	return DefaultBlobThreshold
}

// Encode is the converter.PayloadCodec side that writes: a payload over
// the threshold is stored and replaced by its BlobRef.
func (b *Blobs) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if proto.Size(p) <= b.threshold() {
			out[i] = p
			continue
		}
		data, err := proto.MarshalOptions{Deterministic: true}.Marshal(p)
		if err != nil {
			return payloads, fmt.Errorf("blob store: %w", err)
		}
		digest, err := b.Put(data)
		if err != nil {
			return payloads, err
		}
		ref, _ := json.Marshal(BlobRef{Digest: digest, Size: len(data)})
		out[i] = &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(BlobEncoding)}, Data: ref}
	}
	return out, nil
}

// Decode is the side that reads: a BlobRef is replaced by the payload it
// names; any other payload passes unchanged.
func (b *Blobs) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != BlobEncoding {
			out[i] = p
			continue
		}
		var ref BlobRef
		if err := json.Unmarshal(p.GetData(), &ref); err != nil {
			return payloads, fmt.Errorf("blob reference %.80q: %w", p.GetData(), err)
		}
		data, err := b.Get(ref.Digest)
		if err != nil {
			return payloads, err
		}
		var orig commonpb.Payload
		if err := proto.Unmarshal(data, &orig); err != nil {
			return payloads, fmt.Errorf("blob %s in the blob store %s: %w: not a payload: %v", ref.Digest, b.Dir, ErrBlobCorrupt, err)
		}
		out[i] = &orig
	}
	return out, nil
}

var _ converter.PayloadCodec = (*Blobs)(nil)

// DataConverter is the SDK's default data converter with the blob store
// as its codec: set it as client.Options.DataConverter on every worker and
// every client of the cluster (a worker uses its client's), and on the
// test suite's environment.
func (b *Blobs) DataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), b)
}
