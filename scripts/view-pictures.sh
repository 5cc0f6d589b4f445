#!/usr/bin/env bash
# Renders the pictures of docs/views/ with kitsoki itself: the state graph
# of stories/hello with a recorded run highlighted (kitsoki viz), the
# coloured trace show report of that run and the two HTML views, both as
# headless Chromium shows them (the screenshots the browser tests save).
# Needs bin/kitsoki and bin/kitsoki-graphviz (make build) and Chromium
# (scripts/setup-browser.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
img=docs/views/img
run=internal/view/traceview/testdata/hello-run.jsonl
mkdir -p "$img"
bin/kitsoki viz stories/hello/app.yaml --highlight-trace "$run" -o "$img/viz-hello.png"
bin/kitsoki viz internal/view/viz/testdata/shapes/app.yaml -o "$img/viz-shapes.png"

# trace show on a terminal: its ANSI colours as HTML, then a screenshot.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
  echo '<!DOCTYPE html><meta charset="utf-8"><body style="margin:0;background:#1e1e1e"><pre style="margin:0;padding:12px;color:#ddd;font:13px/1.4 DejaVu Sans Mono,monospace">'
  # The report as a terminal gets it (script(1) gives it a tty).
  script -qc "bin/kitsoki trace show $run" /dev/null | tr -d '\r' |
    sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' \
        -e 's/\x1b\[1m/<b>/g' -e 's/\x1b\[2m/<span style="color:#888">/g' \
        -e 's/\x1b\[31m/<span style="color:#f66">/g' -e 's/\x1b\[32m/<span style="color:#6c6">/g' \
        -e 's/\x1b\[35m/<span style="color:#d7d">/g' -e 's/\x1b\[36m/<span style="color:#5cd">/g' \
        -e 's/<b>\([^\x1b]*\)\x1b\[0m/<b>\1<\/b>/g' -e 's/\x1b\[0m/<\/span>/g'
  echo '</pre></body>'
} >"$tmp/show.html"
/usr/bin/chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$tmp/profile" --hide-scrollbars --window-size=1000,900 \
  --screenshot="$PWD/$img/trace-show.png" "file://$tmp/show.html" 2>/dev/null

KITSOKI_TEST_ARTIFACTS="$tmp/artifacts" go test -count=1 -run 'TestBrowserTraceView|TestBrowserMatrix' ./internal/view/traceview ./internal/view/evalview >/dev/null
cp "$tmp/artifacts/TestBrowserTraceView/trace-view.png" "$img/trace-view.png"
cp "$tmp/artifacts/TestBrowserMatrix/eval-matrix.png" "$img/eval-matrix.png"
echo "view-pictures: wrote $(ls "$img" | tr '\n' ' ')"
