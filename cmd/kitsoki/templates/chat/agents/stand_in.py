"""A scripted stand-in for a model: it answers kitsoki's agent calls by rule,
so the story runs with no model, no key and no network.

kitsoki starts it and writes one JSON-RPC request a line on its stdin
(method agent.ask; params: the prompt, the schema, the call's with: and
args); it answers one line on stdout. See kitsoki's docs/plugins.md.
"""
import json
import sys


def answer(args):
    text = args.get("text", "").strip()
    words = len(text.split())
    return {"text": f"You said {words} word(s): \"{text}\". A model would answer here; this is the stand-in."}


for line in sys.stdin:
    if not line.strip():
        continue
    req = json.loads(line)
    args = (req["params"].get("with") or {}).get("args") or {}
    print(json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": {"submission": answer(args)}}), flush=True)
