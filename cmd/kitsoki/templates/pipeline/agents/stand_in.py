"""A scripted stand-in for a model: it answers kitsoki's agent calls by rule,
so the story runs with no model, no key and no network.

kitsoki starts it and writes one JSON-RPC request a line on its stdin
(method agent.ask; params: the prompt, the schema, the call's with: and
args); it answers one line on stdout. See kitsoki's docs/plugins.md.
"""
import json
import sys


def answer(args):
    lines, words = (int(n) for n in args.get("stats", "0 0").split()[:2])  # wc -l -w prints "LINES WORDS FILE"
    ok = lines <= 200
    advice = "Fine as it is." if ok else "Split it into shorter files."
    return {"lines": lines, "words": words, "ok": ok, "advice": advice}


for line in sys.stdin:
    if not line.strip():
        continue
    req = json.loads(line)
    args = (req["params"].get("with") or {}).get("args") or {}
    print(json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": {"submission": answer(args)}}), flush=True)
