#!/bin/sh
# Regenerates the screenshots in this folder from the bundled examples (needs chromium).
# Usage: docs/screenshots/make.sh   (from anywhere; builds whylate first)
set -eu
cd "$(dirname "$0")/../.."
cargo build --release -q -p whylate-cli
W=target/release/whylate
out=docs/screenshots
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
FROB="--from sys_enter_write[comm=frobnicator,count=7] --to sys_exit_read[comm=frobnicator,ret>0] --deadline 3.5ms"
# shellcheck disable=SC2086
$W explain examples/frob.dat.zst $FROB --html "$tmp/frob.html" --svg "$tmp/frob" >/dev/null
$W explain examples/timer.dat.zst --timer --task periodic --deadline 300us --html "$tmp/timer.html" >/dev/null
$W explain examples/softirq.dat.zst --softirq NET_RX --html "$tmp/softirq.html" >/dev/null
$W report examples/softirq.dat.zst -o "$tmp/auto.html" >/dev/null
shot() { # name file height
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
    --window-size=1150,"$3" --screenshot="$out/$1.png" "file://$tmp/$2" >/dev/null 2>&1
}
shot explain-cycles frob.html 1750
shot explain-timer timer.html 1750
shot explain-softirq softirq.html 1750
shot report-auto auto.html 1750
shot swimlane frob/miss-1.svg 300
ls -la "$out"/*.png
