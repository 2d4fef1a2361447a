#!/usr/bin/env bash
# Builds Argo Rollouts' controller (github.com/argoproj/argo-rollouts
# cmd/rollouts-controller) from the Go module proxy, at the release whose
# Rollout CRD the envtest tests load (testenv.ArgoRolloutsVersion), and
# copies that release's CRDs beside it. The real-node tier (test/node) runs
# the controller against the node's API server, so a Rollout there creates
# its ReplicaSets and pods as it does in a user's cluster.
#
# The module is built as its own main module (in a scratch copy of the
# module's source), because its go.mod replaces k8s.io modules: `go install
# pkg@version` refuses modules with replace directives. Nothing of it is
# committed or linked into retention-guard.
#
# Idempotent and cached by version (the Kubernetes binaries' cache folder):
# a second run only checks the cache. Cold, about 5 minutes on 2 cores.
# Prints the folder on its last line of stdout: rollouts-controller and
# crds/*.yaml.
set -euo pipefail

log() { printf '[argo-rollouts] %s\n' "$*" >&2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
version=$(sed -n 's/^const ArgoRolloutsVersion = "\(.*\)"$/\1/p' "$root/internal/testenv/testenv.go")
[ -n "$version" ] || { log "ArgoRolloutsVersion not found in internal/testenv/testenv.go"; exit 1; }
cache=${RETENTION_GUARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/retention-guard}
out="$cache/argo-rollouts/$version"

ready() { [ -x "$out/rollouts-controller" ] && [ -f "$out/crds/rollout-crd.yaml" ]; }
if ready; then
  log "cached: $out (rollouts-controller $version)"
  echo "$out"
  exit 0
fi

mkdir -p "$out"
if command -v flock >/dev/null; then
  exec 9>"$out.lock"
  if ! flock -n 9; then
    log "another build of rollouts-controller $version is running; waiting for it"
    flock 9
  fi
fi
if ready; then
  echo "$out"
  exit 0
fi

log "building rollouts-controller $version from the Go module proxy into $out (first build about 5 minutes; later runs reuse the cache)"
work=$(mktemp -d "$cache/argo-rollouts/build.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
src=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "github.com/argoproj/argo-rollouts@$version" \
  | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$src" ] || { log "could not download github.com/argoproj/argo-rollouts@$version"; exit 1; }
cp -R "$src/." "$work/src"
chmod -R u+w "$work/src"
(
  cd "$work/src"
  # The module's own go.mod and go.sum pin every dependency; -trimpath
  # keeps this machine's paths out of the binary.
  CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "$work/rollouts-controller" ./cmd/rollouts-controller
) >"$work/build.log" 2>&1 || { tail -40 "$work/build.log" >&2; log "build failed"; exit 1; }
mkdir -p "$out/crds"
cp "$work/src/manifests/crds/"*-crd.yaml "$out/crds/"
mv "$work/rollouts-controller" "$out/rollouts-controller"
log "ready: $out"
echo "$out"
