#!/usr/bin/env bash
# Builds the control-plane binaries the tests run against — kube-apiserver,
# etcd and kubectl — from the Go module proxy, into a cache outside the
# repository. Prebuilt binaries cannot be downloaded on our build machines,
# so we compile them:
#
#   kube-apiserver, kubectl: k8s.io/kubernetes at the version matching our
#     client-go (see hack/lib/kubernetes.sh).
#   etcd: a tiny main calling go.etcd.io/etcd/server/v3/etcdmain.
#
# Idempotent: a binary already in the cache is kept. Each binary is built into
# a temporary folder and renamed into place, so an interrupted build never
# leaves a broken binary behind; a lock in the cache keeps two builds from
# compiling the same binaries at once. Prints the folder to use as
# KUBEBUILDER_ASSETS on its last line of stdout (progress goes to stderr).
# hack/build-node.sh adds the node's binaries to the same folder.
#
# The first build takes about 8-10 minutes on 2 cores (kube-apiserver is the
# long part); later runs only check the cache.
set -euo pipefail

log() { printf '[control-plane] %s\n' "$*" >&2; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/kubernetes.sh"
etcd_version=${ETCD_VERSION:-v3.6.16}

if [ -z "$(k8s_missing etcd kube-apiserver kubectl)" ]; then
  log "cached: $k8s_out (kube-apiserver, etcd, kubectl $k8s_version)"
  echo "$k8s_out"
  exit 0
fi
k8s_lock
need=$(k8s_missing etcd kube-apiserver kubectl | tr '\n' ' ')
if [ -n "$need" ]; then
  log "building ${need% } for Kubernetes $k8s_version into $k8s_out"
  log "first build takes about 8-10 minutes on 2 cores; later runs reuse the cache"
fi

work=$(mktemp -d "$k8s_cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT

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
  GOFLAGS=-mod=mod go get "go.etcd.io/etcd/server/v3@$etcd_version" >/dev/null 2>"$work/etcd-get.log" || { cat "$work/etcd-get.log" >&2; exit 1; }
  GOFLAGS=-mod=mod go mod tidy >/dev/null 2>"$work/etcd-tidy.log" || { cat "$work/etcd-tidy.log" >&2; exit 1; }
  log "compiling etcd"
  local start=$SECONDS
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/etcd.bin" .
  mv -f "$work/etcd.bin" "$k8s_out/etcd"
  log "built etcd in $((SECONDS - start))s"
}

[ -x "$k8s_out/etcd" ] || (build_etcd)
if [ -n "$(k8s_missing kube-apiserver kubectl)" ]; then
  k8s_build "$work" kube-apiserver kubectl
fi

log "ready: $k8s_out"
echo "$k8s_out"
