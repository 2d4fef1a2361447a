#!/usr/bin/env bash
# Builds what a real Kubernetes node runs besides containerd (a Debian
# package, see hack/install-deps.sh node): kubelet, kube-controller-manager,
# kube-scheduler and kube-proxy, for the same Kubernetes version as the
# control plane (hack/build-control-plane.sh, which it runs first), into the
# same cache folder. The real-node tier (test/node) runs them.
#
# Idempotent and cached by version like the control plane: a second run only
# checks the cache. Cold, it takes about 12 minutes on 2 cores on top of the
# control plane (kubelet is the long part; much of the control plane's Go
# build cache is reused). Prints the folder on its last line of stdout.
set -euo pipefail

log() { printf '[node] %s\n' "$*" >&2; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/kubernetes.sh"
node_bins=(kubelet kube-controller-manager kube-scheduler kube-proxy)

"$(dirname "${BASH_SOURCE[0]}")/build-control-plane.sh" >/dev/null

if [ -z "$(k8s_missing "${node_bins[@]}")" ]; then
  log "cached: $k8s_out (${node_bins[*]} $k8s_version)"
  echo "$k8s_out"
  exit 0
fi
k8s_lock
need=$(k8s_missing "${node_bins[@]}" | tr '\n' ' ')
if [ -n "$need" ]; then
  log "building ${need% } for Kubernetes $k8s_version into $k8s_out"
  log "first build takes about 12 minutes on 2 cores; later runs reuse the cache"
  work=$(mktemp -d "$k8s_cache/build.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  k8s_build "$work" "${node_bins[@]}"
fi

log "ready: $k8s_out"
echo "$k8s_out"
