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

# The module's bytes depend on the Go release: build with exactly the toolchain go.mod names.
# GOTOOLCHAIN=local (the default here): never switch or download silently, so another Go fails
# here, loudly. GOTOOLCHAIN=<the pinned release> lets a newer or older go command fetch exactly
# that release from the Go module proxy (.ci/run does so when the machine's go is another).
want=$(sed -n 's/^toolchain //p' go/go.mod)
if [ "${GOTOOLCHAIN:-local}" != "$want" ]; then
  export GOTOOLCHAIN=local
fi
have=$(go env GOVERSION)
if [ "$have" != "$want" ]; then
  echo "scripts/build-wasm.sh: go/go.mod pins $want, but 'go' is $have ($(command -v go))." >&2
  echo "Put $want first on PATH (or run with GOTOOLCHAIN=$want in the environment of a newer go" >&2
  echo "command, which fetches that release from the Go module proxy); the module's bytes differ" >&2
  echo "between Go releases, so nothing else may build it." >&2
  exit 1
fi
goroot=$(go env GOROOT)
wasm_exec="$goroot/lib/wasm/wasm_exec.js"

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
