#!/bin/sh
# Answers every call with a text holding a NUL byte (\u0000 in JSON).
while read line; do
  id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  [ -n "$id" ] || exit 0
  printf '{"jsonrpc":"2.0","id":%s,"result":{"submission":{"text":"a\\u0000b"}}}\n' "$id"
done
