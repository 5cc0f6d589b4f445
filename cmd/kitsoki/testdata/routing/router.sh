#!/bin/sh
# A subprocess router plugin for the free-text tests: it answers each
# agent.ask (one JSON-RPC line) by looking at the user's text, which ends
# the router prompt ("User: ...").
while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/^{"jsonrpc":"2.0","id":\([0-9]*\),.*/\1/p')
  case "$line" in
    *'User: '*Tokyo*) sub='{"intent":"forecast","slots":{"city":"Tokyo"},"confidence":0.9}' ;;
    *'User: '*'I am done'*) sub='{"intent":"quit","confidence":0.95}' ;;
    *'User: '*maybe*) sub='{"intent":"quit","confidence":0.2}' ;;
    *) sub='{"intent":"none","confidence":0.9}' ;;
  esac
  printf '{"jsonrpc":"2.0","id":%s,"result":{"submission":%s}}\n' "$id" "$sub"
done
