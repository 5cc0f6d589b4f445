#!/usr/bin/env python3
"""echo_plugin.py: an example kitsoki subprocess plugin in Python, standard
library only. It speaks the same protocol as the Go SDK: JSON-RPC 2.0, one
JSON object per line on stdin/stdout, method "agent.ask", params = an
AskRequest, result = an AskResponse. Diagnostics go to stderr, which kitsoki
logs; stdout carries nothing but responses.

It answers like the Go echo agent (examples/plugins/echo): with.answer is the
submission, with.sleep_ms delays the answer, with.fail answers with an error,
with.sub_events is returned as sub_events; without an answer it echoes the
verb, prompt and call_id back.
"""
import json
import sys
import threading
import time

AGENT_ERROR = -32000
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
PARSE_ERROR = -32700

_write_lock = threading.Lock()


def send(message):
    line = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    with _write_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def submission(req):
    w = req.get("with") or {}
    if "answer" not in w:
        return {"verb": req.get("verb", ""), "prompt": req.get("prompt", ""), "call_id": req.get("call_id", "")}
    answer = w["answer"]
    if isinstance(answer, str):
        try:
            return json.loads(answer)
        except ValueError:
            return answer
    return answer


def ask(req):
    w = req.get("with") or {}
    sleep_ms = w.get("sleep_ms")
    if isinstance(sleep_ms, (int, float)) and sleep_ms > 0:
        time.sleep(sleep_ms / 1000.0)
    if isinstance(w.get("fail"), str) and w["fail"]:
        raise RuntimeError(w["fail"])
    resp = {
        "submission": submission(req),
        "meta": {"agent": "echo", "prompt_bytes": len(req.get("prompt", "").encode("utf-8"))},
    }
    if w.get("sub_events") is not None:
        resp["sub_events"] = w["sub_events"]
    return resp


def handle(msg):
    rid = msg.get("id")
    if rid is None:
        return  # a notification: the protocol has none, ignore it
    if msg.get("method") != "agent.ask":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": METHOD_NOT_FOUND, "message": "method %r not found" % msg.get("method")}})
        return
    params = msg.get("params")
    if not isinstance(params, dict):
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": INVALID_PARAMS, "message": "params must be an AskRequest object"}})
        return
    try:
        result = ask(params)
    except Exception as exc:  # the agent failed: tell kitsoki why
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": AGENT_ERROR, "message": str(exc)}})
        return
    send({"jsonrpc": "2.0", "id": rid, "result": result})


def main():
    threads = []
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError as exc:
            send({"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": str(exc)}})
            continue
        # One thread per call, so a slow answer does not hold up the others:
        # kitsoki matches responses by id.
        t = threading.Thread(target=handle, args=(msg,), daemon=True)
        t.start()
        threads = [x for x in threads if x.is_alive()] + [t]
    for t in threads:  # finish the calls in flight before exiting
        t.join()
    print("echo_plugin: stdin closed, exiting", file=sys.stderr)


if __name__ == "__main__":
    main()
