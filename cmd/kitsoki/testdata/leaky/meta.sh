#!/bin/sh
read line
printf '{"jsonrpc":"2.0","id":1,"result":{"submission":{"ok":true},"meta":{"model":"%s","note":"served with %s"}}}\n' "$API_KEY" "$API_KEY"
read line
