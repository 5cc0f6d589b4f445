#!/bin/sh
read line
printf '{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"token %s was refused"}}\n' "$API_KEY"
read line
