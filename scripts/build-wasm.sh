#!/usr/bin/env bash
# Builds the WebAssembly module from the Go module in go/ (the versions Service Fabrik shipped,
# pinned in go/go.mod and go/go.sum) into wasm/gitops-broker.wasm.gz and copies Go's wasm_exec.js
# beside it. Deterministic: the toolchain named in go.mod and no other, -trimpath, no build id,
# a fresh build cache, gzip -n (no name, no time). See docs/adr/0011-gotemplate-webassembly.md.
#   scripts/build-wasm.sh          rebuild the committed files
#   scripts/build-wasm.sh --check  rebuild in a temporary directory; fail when the committed
#                                  module or wasm_exec.js differ from what the sources build
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# The module's bytes and its templates' behaviour depend on the Go release: build with exactly the
# toolchain go.mod names, the release Service Fabrik's last image was built with (ADR 0011). The
# machine's go fetches exactly that release from the Go module proxy (checked against the checksum
# database like any module) when it is another; nothing else may build it.
want=$(sed -n 's/^toolchain //p' go/go.mod)
export GOTOOLCHAIN="$want"
have=$(go env GOVERSION)
if [ "$have" != "$want" ]; then
  echo "scripts/build-wasm.sh: go/go.mod pins $want, but GOTOOLCHAIN=$want runs $have ($(command -v go))." >&2
  exit 1
fi
# wasm_exec.js, the JavaScript half of Go's js/wasm port, is not in go1.21.8's toolchain module
# (golang.org/toolchain leaves out misc/, where it lived until Go 1.24 moved it to lib/wasm). It is
# taken from go1.26.8's, whose imports (module "gojs", the same 24 functions with the same stack
# layout) are exactly what a go1.21 module imports; test/scripts/wasm-module.test.ts checks every
# import of the committed module against the committed wasm_exec.js.
wasm_exec_release=go1.26.8
wasm_exec="$(GOTOOLCHAIN=$wasm_exec_release go env GOROOT)/lib/wasm/wasm_exec.js"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# -mod=readonly: go.mod and go.sum are the pins; a build never edits them. -buildvcs=false: in
# module mode go stamps the commit and "modified" into the binary, which would change its bytes
# with every commit.
export GOFLAGS="-trimpath -mod=readonly -buildvcs=false" GOCACHE="$tmp/cache" CGO_ENABLED=0
(cd go && go mod verify >/dev/null && go test ./...)
(cd go && GOOS=js GOARCH=wasm go build -ldflags="-s -w -buildid=" -o "$tmp/gitops-broker.wasm" ./wasm)

if [ "${1:-}" = "--check" ]; then
  status=0
  # Compare the module itself, not its gzip stream: another gzip version may compress differently.
  if ! gzip -dc wasm/gitops-broker.wasm.gz | cmp -s - "$tmp/gitops-broker.wasm"; then
    echo "wasm/gitops-broker.wasm.gz is not what go/ builds ($have); run scripts/build-wasm.sh and commit" >&2
    status=1
  fi
  if ! cmp -s wasm/wasm_exec.js "$wasm_exec"; then
    echo "wasm/wasm_exec.js differs from $wasm_exec; run scripts/build-wasm.sh and commit" >&2
    status=1
  fi
  [ $status = 0 ] && echo "wasm module up to date ($have)"
  exit $status
fi
gzip -9 -n -c "$tmp/gitops-broker.wasm" > wasm/gitops-broker.wasm.gz
cp "$wasm_exec" wasm/wasm_exec.js
echo "wasm/gitops-broker.wasm.gz: $(wc -c < "$tmp/gitops-broker.wasm") bytes, $(wc -c < wasm/gitops-broker.wasm.gz) gzipped ($have)"
