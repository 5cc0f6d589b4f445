// Package localllm is the builtin.local_llm transport: an Agent that answers
// agent calls from a local llama.cpp llama-server (or any OpenAI-compatible
// chat endpoint) over HTTP. Its calls run through the builtin.openai agent
// (internal/agents/openai, Chat Completions) with the local_llm
// openai.Flavor: every verb, tool loop, repairs, usage and cost are that
// agent's; the grammar:/json_schema: rule is its Flavor.Constraint.
//
// Two modes share that path; they differ in where the server is:
//
//   - Endpoint mode (endpoint: set) attaches to a server someone else runs
//     and never fetches, spawns or owns anything.
//   - Managed mode (model: without endpoint:) lazily fetches the pinned
//     llama-server release and the model's GGUF into the cache, verifies
//     their sha256 against the pins, spawns llama-server on 127.0.0.1 and
//     health-gates it before the first request. Nothing happens until a call
//     is actually routed to the agent.
//
// The package also carries the pieces around the transport: the load-time
// grammar-subset check (schema.GrammarSubsetViolations), the fetch functions behind
// `kitsoki fetch` (FetchServer, FetchModel), and the embedding sidecar with
// its LocalEmbedder and cosine ranking (Rank) used by host.agent.search.
package localllm
