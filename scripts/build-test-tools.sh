#!/usr/bin/env bash
# Builds the programs the tests use as references and counterparts, from their Go modules (the
# Go module proxy; no binary download, no container), and prints where they are:
#   kube-apiserver  k8s.io/kubernetes/cmd/kube-apiserver  (tools/kube-apiserver)
#   etcd            go.etcd.io/etcd/server/v3              (tools/etcd)
#   helm            helm.sh/helm/v3/cmd/helm               (tools/helm)
#   source-controller     github.com/fluxcd/source-controller     (tools/source-controller)
#   kustomize-controller  github.com/fluxcd/kustomize-controller  (tools/kustomize-controller)
#   argocd          github.com/argoproj/argo-cd/v3/cmd     (tools/argocd): Argo CD's one binary,
#                   whose name (or ARGOCD_BINARY_NAME) says which program it is
#   crds            the CustomResourceDefinitions of Flux's source- and kustomize-controller and of
#                   Argo CD, as their projects ship them in the modules the tools above are built
#                   from (CRDS below), and Argo CD's git-verify-wrapper.sh
# None of them ships: they are test tools (ADR 0022). Each tools/<name> module pins its versions in
# its go.mod and go.sum; a binary is cached under $GITOPS_BROKER_TEST_TOOLS (default
# ~/.cache/gitops-broker/test-tools) by a key of those files, the flags and the Go release, and
# built again only when one of them changes.
#   scripts/build-test-tools.sh [NAME ...]   build what is missing (all by default); print NAME=PATH
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cache=${GITOPS_BROKER_TEST_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/gitops-broker/test-tools}

# Each tools module names its toolchain in its go.mod (go1.26.8, the machine's, for Kubernetes and
# Helm); `use_toolchain` makes the go command run exactly that release, fetched from the Go module
# proxy when the machine's go is another: never a silent switch. (go/go.mod pins the older release
# the WebAssembly module is built with: ADR 0011.)
use_toolchain() {
  local want; want=$(sed -n 's/^toolchain //p' "tools/$1/go.mod")
  export GOTOOLCHAIN="$want"
  have=$(go env GOVERSION)
  if [ "$have" != "$want" ]; then
    echo "scripts/build-test-tools.sh: tools/$1/go.mod names $want, but GOTOOLCHAIN=$want runs $have" >&2
    exit 1
  fi
}
export CGO_ENABLED=0 GOFLAGS="-trimpath -mod=readonly -buildvcs=false"

# The Go release tools/NAME names (its toolchain line), and `go` run with it: tools/argocd names
# go1.27.3 (Argo CD v3.6 needs Go 1.27, ADR 0035), which the go command takes from the proxy.
toolchain_of() { sed -n 's/^toolchain //p' "$root/tools/$1/go.mod"; }
go_for() { local name=$1; shift; GOTOOLCHAIN=$(toolchain_of "$name") go "$@"; }

# The version of a module the tools module requires.
version_of() { (cd "tools/$1" && go_for "$1" list -m -f '{{.Version}}' "$2"); }

# NAME -> package and link flags. The flags set the version the programs report, as their own
# release builds do (Kubernetes' hack/lib/version.sh, Helm's Makefile); without them kube-apiserver
# says v0.0.0-master and helm's .Capabilities.KubeVersion is v1.20.
spec() {
  case "$1" in
    kube-apiserver)
      local v; v=$(version_of kube-apiserver k8s.io/kubernetes)
      local minor; minor=$(echo "$v" | cut -d. -f2)
      package=k8s.io/kubernetes/cmd/kube-apiserver
      ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$v -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
      ;;
    etcd)
      package=go.etcd.io/etcd/server/v3
      ldflags="-s -w"
      ;;
    helm)
      local v; v=$(version_of helm helm.sh/helm/v3)
      # Helm's Makefile: Kubernetes 1.<client-go's minor> is what .Capabilities.KubeVersion defaults to.
      local minor; minor=$(version_of helm k8s.io/client-go | cut -d. -f2)
      package=helm.sh/helm/v3/cmd/helm
      ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$v -X helm.sh/helm/v3/internal/version.metadata="
      for p in pkg/chartutil pkg/lint/rules; do
        ldflags="$ldflags -X helm.sh/helm/v3/$p.k8sVersionMajor=1 -X helm.sh/helm/v3/$p.k8sVersionMinor=$minor"
      done
      ;;
    source-controller|kustomize-controller)
      # Flux's Makefile: GO_STATIC_FLAGS=-ldflags "-s -w" (its version comes from the module's build info).
      package=github.com/fluxcd/$1
      ldflags="-s -w"
      ;;
    argocd)
      # Argo CD's Makefile: common.version from its VERSION file, kubectlVersion from client-go.
      local v; v=$(version_of argocd github.com/argoproj/argo-cd/v3)
      local p=github.com/argoproj/argo-cd/v3/common
      package=github.com/argoproj/argo-cd/v3/cmd
      ldflags="-s -w -X $p.version=${v#v} -X $p.gitTag=$v -X $p.gitTreeState=clean -X $p.kubectlVersion=$(version_of argocd k8s.io/client-go)"
      ;;
    *) echo "scripts/build-test-tools.sh: no tool named $1 (kube-apiserver, etcd, helm, source-controller, kustomize-controller, argocd, crds)" >&2; exit 2 ;;
  esac
}

# module@version and the CRDs' paths in it: the modules the Flux and Argo CD tools above are built
# from (ADR 0035), at the versions their tools modules pin. The newest Flux (v1.10) and Argo CD
# (v3.6) need Go 1.27 and modules the proxy refuses; ADR 0035 says which.
crd_list() {
  local flux_source flux_kustomize argocd
  flux_source=$(version_of source-controller github.com/fluxcd/source-controller)
  flux_kustomize=$(version_of kustomize-controller github.com/fluxcd/kustomize-controller)
  argocd=$(version_of argocd github.com/argoproj/argo-cd/v3)
  local kind
  for kind in buckets externalartifacts gitrepositories helmcharts helmrepositories ocirepositories; do
    echo "github.com/fluxcd/source-controller@$flux_source config/crd/bases/source.toolkit.fluxcd.io_$kind.yaml source-controller"
  done
  echo "github.com/fluxcd/kustomize-controller@$flux_kustomize config/crd/bases/kustomize.toolkit.fluxcd.io_kustomizations.yaml kustomize-controller"
  for kind in application applicationset appproject; do
    echo "github.com/argoproj/argo-cd/v3@$argocd manifests/crds/$kind-crd.yaml argocd"
  done
  # Not a CRD: the helper Argo CD's image puts on the repo-server's PATH, which v3.6 runs for every
  # commit it generates manifests from (util/git VerifyCommitSignature).
  echo "github.com/argoproj/argo-cd/v3@$argocd hack/git-verify-wrapper.sh argocd"
}

# The CRDs, copied out of the module cache into one directory (go mod download checks each
# module against go.sum's database like any dependency).
crds() {
  local key dir CRDS list
  list=$(crd_list)
  mapfile -t CRDS <<<"$list"
  key=$(printf '%s\n' "${CRDS[@]}" | sha256sum | cut -c1-16)
  dir="$cache/crds-$key"
  if [ ! -d "$dir" ]; then
    mkdir -p "$cache"
    local tmp entry module file tool moddir
    tmp=$(mktemp -d "$cache/.crds-XXXXXX")
    for entry in "${CRDS[@]}"; do
      read -r module file tool <<<"$entry"
      moddir=$(cd "$tmp" && GOFLAGS= go_for "$tool" mod download -json "$module" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
      [ -n "$moddir" ] || { echo "scripts/build-test-tools.sh: go mod download $module failed" >&2; exit 1; }
      cp "$moddir/$file" "$tmp/$(basename "$file")"
    done
    chmod -R u+w "$tmp" && rm -rf "$dir" && mv "$tmp" "$dir"
  fi
  echo "crds=$dir"
}

build() {
  local name=$1 package ldflags
  if [ "$name" = crds ]; then use_toolchain kube-apiserver; crds; return; fi
  use_toolchain "$name"
  spec "$name"
  local key
  key=$(cat "tools/$name/go.mod" "tools/$name/go.sum" <(echo "$package $ldflags $have $GOFLAGS") | sha256sum | cut -c1-16)
  local dir="$cache/$name-$key"
  if [ ! -x "$dir/$name" ]; then
    mkdir -p "$cache"
    # One build at a time per tool, however many suites start at once; the others wait for it.
    exec 9>"$cache/$name.lock"
    flock 9
    if [ ! -x "$dir/$name" ]; then
      echo "building $name ($package) into $dir: a few minutes on a fresh machine" >&2
      local started=$SECONDS tmp
      tmp=$(mktemp -d "$cache/.$name-XXXXXX")
      (cd "tools/$name" && go build -ldflags "$ldflags" -o "$tmp/$name" "$package")
      rm -rf "$dir" && mv "$tmp" "$dir"
      echo "built $name in $((SECONDS - started)) s" >&2
    fi
    exec 9>&-
  fi
  echo "$name=$dir/$name"
}

names=("$@")
[ ${#names[@]} -gt 0 ] || names=(kube-apiserver etcd helm source-controller kustomize-controller argocd crds)
for name in "${names[@]}"; do build "$name"; done
