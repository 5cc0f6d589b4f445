#!/bin/sh
# A stand-in for kitsoki-graphviz: prints the format and the DOT's size,
# refuses png.
if [ "$1" = png ]; then echo "fake: png refused" >&2; exit 1; fi
n=$(wc -c | tr -d ' ')
echo "$1 $n"
