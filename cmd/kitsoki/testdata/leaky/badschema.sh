#!/bin/sh
read line
printf '{"jsonrpc":"2.0","id":1,"result":{"submission":{"decision":"%s"}}}\n' "$API_KEY"
read line
