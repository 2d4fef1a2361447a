#!/usr/bin/env bash
# Installs what the tests need that the Go module proxy does not bring.
# Idempotent: anything already present is left alone. Go tools
# (controller-gen, staticcheck) are pinned in go.mod's tool directive and need
# no install; the control plane is built by hack/build-control-plane.sh.
set -euo pipefail

log() { printf '[deps] %s\n' "$*" >&2; }

need_go=1.26
have_go=$(go env GOVERSION 2>/dev/null | sed 's/^go//')
case "$have_go" in
  "") log "Go is not installed: install Go $need_go or newer"; exit 1 ;;
esac
if [ "$(printf '%s\n%s\n' "$need_go" "$have_go" | sort -V | head -1)" != "$need_go" ]; then
  log "Go $have_go is too old: retention-guard needs Go $need_go or newer"; exit 1
fi

# Debian packages the tests use, named on the command line (kcat:
# librdkafka's command-line client, a real consumer that shows
# auto.offset.reset skipping expired records). "node" stands for what the
# real-node tier (test/node) runs besides the binaries hack/build-node.sh
# builds: containerd, runc, the CNI plugins, iptables and conntrack.
apt_pkgs=()
for spec in "$@"; do
  case "$spec" in
    node) apt_pkgs+=(containerd runc containernetworking-plugins iptables conntrack) ;;
    *) apt_pkgs+=("$spec") ;;
  esac
done
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  log "installing Debian packages: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
log "ok (go $have_go${apt_pkgs:+, ${apt_pkgs[*]}})"
