#!/usr/bin/env bash
# Builds the control-plane binaries the tests run against — kube-apiserver,
# etcd and kubectl — from the Go module proxy, into a cache outside the
# repository. Prebuilt binaries cannot be downloaded on our build machines,
# so we compile them:
#
#   kube-apiserver, kubectl: k8s.io/kubernetes at the version matching our
#     client-go, with every k8s.io/* staging module replaced by its published
#     v0.x version (the repository's own go.mod points them at ./staging).
#   etcd: a tiny main calling go.etcd.io/etcd/server/v3/etcdmain.
#
# Idempotent: a binary already in the cache is kept. Each binary is built into
# a temporary folder and renamed into place, so an interrupted build never
# leaves a broken binary behind. Prints the folder to use as
# KUBEBUILDER_ASSETS on its last line of stdout (progress goes to stderr).
#
# The first build takes about 8-10 minutes on 2 cores (kube-apiserver is the
# long part); later runs only check the cache.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The Kubernetes version follows client-go: v0.X.Y  <->  v1.X.Y.
client_go=$(cd "$root" && go list -m -f '{{.Version}}' k8s.io/client-go)
k8s_version=${K8S_VERSION:-v1${client_go#v0}}
staging_version=${client_go}
etcd_version=${ETCD_VERSION:-v3.6.16}

cache=${RETENTION_GUARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/retention-guard}
out="$cache/k8s/$k8s_version"
mkdir -p "$out"

log() { printf '[control-plane] %s\n' "$*" >&2; }

need=()
for b in etcd kube-apiserver kubectl; do
  [ -x "$out/$b" ] || need+=("$b")
done
if [ ${#need[@]} -eq 0 ]; then
  log "cached: $out (kube-apiserver, etcd, kubectl $k8s_version)"
  echo "$out"
  exit 0
fi

log "building ${need[*]} for Kubernetes $k8s_version into $out"
log "first build takes about 8-10 minutes on 2 cores; later runs reuse the cache"

work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT

export GOFLAGS=-mod=mod
export CGO_ENABLED=0

build_k8s() {
  local mod="$work/kubernetes"
  mkdir -p "$mod"
  cd "$mod"
  log "resolving k8s.io/kubernetes@$k8s_version and its staging modules"
  local gomod
  gomod=$(go mod download -json "k8s.io/kubernetes@$k8s_version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  [ -f "$gomod" ] || { log "could not download k8s.io/kubernetes@$k8s_version"; exit 1; }
  {
    echo "module retentionguard.local/controlplane"
    echo
    echo "go 1.26"
    echo
    echo "require k8s.io/kubernetes $k8s_version"
    echo
    # Every staging module the upstream go.mod replaces with ./staging/src/...
    grep -E '^[[:space:]]*k8s\.io/[^ ]+ => \./staging/src/' "$gomod" \
      | awk -v v="$staging_version" '{print "replace " $1 " => " $1 " " v}'
  } > go.mod
  cat > tools.go <<'GO'
//go:build tools

package controlplane

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
  log "downloading modules for kube-apiserver and kubectl"
  go mod tidy >/dev/null 2>"$work/tidy.log" || { cat "$work/tidy.log" >&2; exit 1; }
  local b
  for b in kube-apiserver kubectl; do
    [ -x "$out/$b" ] && continue
    log "compiling $b (this is the slow part)"
    local start=$SECONDS
    go build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version -X k8s.io/client-go/pkg/version.gitVersion=$k8s_version" \
      -o "$work/$b" "k8s.io/kubernetes/cmd/$b"
    mv -f "$work/$b" "$out/$b"
    log "built $b in $((SECONDS - start))s"
  done
}

build_etcd() {
  local mod="$work/etcd"
  mkdir -p "$mod"
  cd "$mod"
  cat > go.mod <<GOMOD
module retentionguard.local/etcd

go 1.26
GOMOD
  cat > main.go <<'GO'
// Command etcd is etcd's own server entry point, built from the module proxy.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  log "downloading go.etcd.io/etcd/server/v3@$etcd_version"
  go get "go.etcd.io/etcd/server/v3@$etcd_version" >/dev/null 2>"$work/etcd-get.log" || { cat "$work/etcd-get.log" >&2; exit 1; }
  go mod tidy >/dev/null 2>"$work/etcd-tidy.log" || { cat "$work/etcd-tidy.log" >&2; exit 1; }
  log "compiling etcd"
  local start=$SECONDS
  go build -trimpath -ldflags "-s -w" -o "$work/etcd.bin" .
  mv -f "$work/etcd.bin" "$out/etcd"
  log "built etcd in $((SECONDS - start))s"
}

[ -x "$out/etcd" ] || build_etcd
if [ ! -x "$out/kube-apiserver" ] || [ ! -x "$out/kubectl" ]; then build_k8s; fi

log "ready: $out"
echo "$out"
