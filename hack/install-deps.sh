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

# Debian packages the tests use, named by the caller (make deps): kcat
# (librdkafka's command-line client, a real consumer that shows
# auto.offset.reset skipping expired records), shellcheck (actionlint checks
# workflow scripts with it), postgresql and mariadb-server (real databases
# holding business cursors), prometheus (the server the end-to-end suite
# scrapes the manager and the API server with, and promtool, which checks
# and unit-tests the chart's alerts). The tests start their own servers in
# temporary directories, so the packages' services are kept from starting
# at install. "node" stands for what the real-node tier (test/node) runs
# besides the binaries hack/build-node.sh builds: containerd, runc, the CNI
# plugins, iptables and conntrack (no service of theirs is started either:
# the tier starts containerd itself, in its run folder). "java" stands for
# OpenJDK 17 (javac included) and Maven, which hack/build-kafka.sh assembles
# the real Apache Kafka brokers and the Java consumer with: installed from
# Debian only where the machine has none on PATH.
apt_pkgs=()
for spec in "$@"; do
  case "$spec" in
    node) apt_pkgs+=(containerd runc containernetworking-plugins iptables conntrack) ;;
    java)
      { command -v java >/dev/null && command -v javac >/dev/null; } || apt_pkgs+=(openjdk-17-jdk-headless)
      command -v mvn >/dev/null || apt_pkgs+=(maven)
      ;;
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
  # No service starts at install (policy-rc.d exit 101): the tests run
  # their own database servers, and a machine without an init system has
  # none to start them anyway.
  policy=/usr/sbin/policy-rc.d
  added_policy=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
    $sudo chmod +x "$policy"
    added_policy=1
  fi
  status=0
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || status=$?
  if [ -n "$added_policy" ]; then $sudo rm -f "$policy"; fi
  if [ $status -ne 0 ]; then log "apt-get install failed ($status)"; exit $status; fi
fi
# Debian's PostgreSQL server binaries live under /usr/lib/postgresql/<v>/bin,
# not on PATH (a postgres on PATH may be another program).
for p in "${apt_pkgs[@]}"; do
  case "$p" in
    postgresql) ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { log "postgresql installed but no initdb under /usr/lib/postgresql/*/bin"; exit 1; } ;;
    mariadb-server) [ -x /usr/sbin/mariadbd ] || { log "mariadb-server installed but no /usr/sbin/mariadbd"; exit 1; } ;;
  esac
done
log "ok (go $have_go${apt_pkgs:+, ${apt_pkgs[*]}})"
