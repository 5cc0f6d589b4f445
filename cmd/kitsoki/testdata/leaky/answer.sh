#!/bin/sh
# Answers every call (an eval makes several) with the secret in the text.
# The key JSON-escaped, so a key holding " or \ stays valid JSON.
k=$(printf '%s' "$API_KEY" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')
while read line; do
  id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  [ -n "$id" ] || exit 0
  printf '{"jsonrpc":"2.0","id":%s,"result":{"submission":{"text":"the key is %s"}}}\n' "$id" "$k"
done
