#!/usr/bin/env bash
# Builds the WebAssembly module from go/src (GOPATH mode, offline, Debian's Go packages) into
# wasm/gitops-broker.wasm.gz and copies Go's wasm_exec.js beside it. Deterministic: -trimpath,
# no build id, gzip -n (no name, no time). See docs/adr/0011-gotemplate-webassembly.md.
#   scripts/build-wasm.sh          rebuild the committed files
#   scripts/build-wasm.sh --check  rebuild in a temporary directory; fail when the committed
#                                  module or wasm_exec.js differ from what the sources build
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
goroot=$(go env GOROOT)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GOPATH="$root/go:/usr/share/gocode" GO111MODULE=off GOFLAGS=-trimpath GOCACHE="$tmp/cache"
go test gitops-broker/...
GOOS=js GOARCH=wasm go build -ldflags="-s -w -buildid=" -o "$tmp/gitops-broker.wasm" gitops-broker/wasm

if [ "${1:-}" = "--check" ]; then
  status=0
  # Compare the module itself, not its gzip stream: another gzip version may compress differently.
  if ! gzip -dc wasm/gitops-broker.wasm.gz | cmp -s - "$tmp/gitops-broker.wasm"; then
    echo "wasm/gitops-broker.wasm.gz is not what go/src builds ($(go version)); run scripts/build-wasm.sh and commit" >&2
    status=1
  fi
  if ! cmp -s wasm/wasm_exec.js "$goroot/misc/wasm/wasm_exec.js"; then
    echo "wasm/wasm_exec.js differs from $goroot/misc/wasm/wasm_exec.js; run scripts/build-wasm.sh and commit" >&2
    status=1
  fi
  [ $status = 0 ] && echo "wasm module up to date ($(go version))"
  exit $status
fi
gzip -9 -n -c "$tmp/gitops-broker.wasm" > wasm/gitops-broker.wasm.gz
cp "$goroot/misc/wasm/wasm_exec.js" wasm/wasm_exec.js
echo "wasm/gitops-broker.wasm.gz: $(wc -c < "$tmp/gitops-broker.wasm") bytes, $(wc -c < wasm/gitops-broker.wasm.gz) gzipped ($(go version))"
