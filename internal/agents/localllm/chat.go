package localllm

// DefaultMaxTokens is the max_tokens sent on every request when the
// declaration sets none. A completion endpoint without it may generate
// until the context fills; 1024 tokens is ample for the small JSON
// answers this backend is for, and an answer cut off by it fails as a
// transport_error rather than as truncated JSON.
const DefaultMaxTokens = 1024

// maxBody is the largest embeddings response read from a server (16 MiB).
const maxBody = 16 << 20
