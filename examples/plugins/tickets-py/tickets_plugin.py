#!/usr/bin/env python3
"""tickets_plugin.py: an example kitsoki host plugin in Python, standard
library only. A story declares it under host_plugins: (say as host.tickets)
and each invoke of host.tickets.<op> arrives as one JSON-RPC 2.0 request,
one JSON object per line on stdin:

  {"jsonrpc":"2.0","id":1,"method":"host.invoke",
   "params":{"handler":"host.tickets","op":"create","args":{...},
             "context":{"session_id":...,"turn":...,"state_path":...,"call_id":...}}}

The answer is one line on stdout, {"result":{"data":{...}}} (the invoke binds
from data) or {"error":{"code":...,"message":...}} (the invoke's on_error
fires). host.describe lists the ops, so `kitsoki validate` can check a
story's calls. Diagnostics go to stderr, which kitsoki logs; stdout carries
nothing but responses.

Ops: create (args.title, optional args.priority) opens a ticket; get
(args.id) reads one; crash exits without answering, to show how kitsoki
reports a plugin that dies in the middle of a call.
"""
import json
import os
import sys
import threading

PLUGIN_ERROR = -32000
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
PARSE_ERROR = -32700

_write_lock = threading.Lock()
_state_lock = threading.Lock()
_tickets = {}


def send(message):
    line = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    with _write_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class PluginError(Exception):
    def __init__(self, message, code=PLUGIN_ERROR):
        super().__init__(message)
        self.code = code


def create(args, context):
    title = args.get("title")
    if not isinstance(title, str) or not title:
        raise PluginError("create: args.title is required", INVALID_PARAMS)
    with _state_lock:
        tid = "PY-%d" % (len(_tickets) + 1)
        ticket = {"id": tid, "title": title, "priority": args.get("priority", "normal"),
                  "status": "open", "opened_in": context.get("state_path", "")}
        _tickets[tid] = ticket
    print("tickets_plugin: opened %s (%s)" % (tid, title), file=sys.stderr, flush=True)
    return ticket


def get(args, context):
    with _state_lock:
        ticket = _tickets.get(args.get("id"))
    if ticket is None:
        raise PluginError("no ticket %r" % args.get("id"))
    return ticket


def crash(args, context):
    print("tickets_plugin: crashing on purpose", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(3)


OPS = {
    "create": (create, "Open a ticket; returns it.",
               {"type": "object", "required": ["title"],
                "properties": {"title": {"type": "string"}, "priority": {"enum": ["low", "normal", "high"]}},
                "additionalProperties": False}),
    "get": (get, "Read a ticket by id.",
            {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}),
    "crash": (crash, "Exit without answering (a demonstration of a crash).", {"type": "object"}),
}


def describe():
    return {"ops": [{"name": name, "description": desc, "args_schema": schema}
                    for name, (_, desc, schema) in sorted(OPS.items())]}


def handle(msg):
    rid = msg.get("id")
    if rid is None:
        return  # a notification ($/cancelRequest): nothing to cancel here
    method = msg.get("method")
    if method == "host.describe":
        send({"jsonrpc": "2.0", "id": rid, "result": describe()})
        return
    if method != "host.invoke":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": METHOD_NOT_FOUND, "message": "method %r not found" % method}})
        return
    params = msg.get("params")
    if not isinstance(params, dict):
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": INVALID_PARAMS, "message": "params must be a host.invoke object"}})
        return
    op = OPS.get(params.get("op"))
    if op is None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": INVALID_PARAMS,
                                                     "message": "unknown op %r (ops: %s)" % (params.get("op"), ", ".join(sorted(OPS)))}})
        return
    try:
        data = op[0](params.get("args") or {}, params.get("context") or {})
    except PluginError as exc:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": exc.code, "message": str(exc)}})
        return
    except Exception as exc:  # a bug in an op: tell kitsoki what happened
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": PLUGIN_ERROR, "message": "%s: %s" % (type(exc).__name__, exc)}})
        return
    send({"jsonrpc": "2.0", "id": rid, "result": {"data": data}})


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
        # One thread per call: kitsoki matches answers by id.
        t = threading.Thread(target=handle, args=(msg,), daemon=True)
        t.start()
        threads = [x for x in threads if x.is_alive()] + [t]
    for t in threads:  # finish the calls in flight before exiting
        t.join()


if __name__ == "__main__":
    main()
