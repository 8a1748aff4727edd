#!/usr/bin/env bash
# Regenerates cupti-sys/src/generated/{bindings,api,cbid_names}.rs from the
# CUDA 13.0 headers pinned in gen/wheels.txt.
#
#   cupti-sys/regenerate.sh            # rewrite the committed files
#   cupti-sys/regenerate.sh OUT_DIR    # write elsewhere (the drift check does)
#
# Needs: python3 + pip (PyPI reachable), unzip, cargo, libclang
# (Debian: apt-get install -y libclang-dev clang). Output is byte-identical
# across runs with the same bindgen (pinned by gen/Cargo.lock) and libclang.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/src/generated}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

python3 -m pip download --quiet --no-deps --only-binary=:all: --require-hashes \
    -r "$here/gen/wheels.txt" -d "$tmp/wheels"
mkdir -p "$tmp/inc"
for w in "$tmp"/wheels/*.whl; do
    unzip -q -o "$w" 'nvidia/cu13/include/*' -d "$tmp/inc"
done
provenance="$(grep -E '^[a-z].*==' "$here/gen/wheels.txt" | cut -d' ' -f1 | sort | tr '\n' ' ' | sed 's/ $//')"

cargo build --quiet --release --locked --manifest-path "$here/gen/Cargo.toml"
"$here/gen/target/release/cupti-sys-gen" \
    "$tmp/inc/nvidia/cu13/include" "$here/bindgen.toml" "$out" "$provenance"
echo "wrote $out/{bindings,api,cbid_names}.rs from $provenance"
