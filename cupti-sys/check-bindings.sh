#!/usr/bin/env bash
# Drift check: regenerate into a temp dir and compare with the committed files.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$here/regenerate.sh" "$tmp" >/dev/null
if ! diff -ru "$here/src/generated" "$tmp" >"$tmp.diff"; then
    head -c 20000 "$tmp.diff"
    rm -f "$tmp.diff"
    echo
    echo "FAIL: cupti-sys/src/generated is out of date with cupti-sys/bindgen.toml or the generator."
    echo "      Regenerate with: cupti-sys/regenerate.sh   (then commit the result)"
    exit 1
fi
rm -f "$tmp.diff"
echo "cupti-sys bindings: up to date"
