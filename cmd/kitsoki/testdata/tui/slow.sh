#!/bin/sh
# agent.slow for the terminal UI test: a router request (its prompt starts
# "Route what the user typed") is answered at once; any other call waits
# for a line on ./release.fifo, which the test writes once it has seen the
# spinner.
while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/^{"jsonrpc":"2.0","id":\([0-9]*\),.*/\1/p')
  case "$line" in
    *'Route what the user typed'*Tokyo*) sub='{"intent":"forecast","slots":{"city":"Tokyo"},"confidence":0.9}' ;;
    *'Route what the user typed'*) sub='{"intent":"none","confidence":0.9}' ;;
    *) read -r _ < ./release.fifo; sub='{"sky":"sunny"}' ;;
  esac
  printf '{"jsonrpc":"2.0","id":%s,"result":{"submission":%s}}\n' "$id" "$sub"
done
