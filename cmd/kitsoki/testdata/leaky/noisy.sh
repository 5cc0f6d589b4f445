#!/bin/sh
# The key JSON-escaped, so a key holding " or \ stays valid JSON.
k=$(printf '%s' "$API_KEY" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')
read line
call=$(printf '%s\n' "$line" | sed -n 's/.*"call_id":"\([^"]*\)".*/\1/p')
echo "my token is $API_KEY" >&2
printf '{"debug":{"token":"%s"}}\n' "$k" >&2
printf '{"jsonrpc":"2.0","id":1,"result":{"submission":"fine","sub_events":[{"turn":0,"seq":0,"ts":"","kind":"agent.noisy.note","call_id":"%s","payload":{"token":"%s"}}]}}\n' "$call" "$k"
read line
