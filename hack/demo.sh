#!/usr/bin/env bash
# make demo: runs retention-guard on embedded defaults — a local
# kube-apiserver and etcd, a Kafka broker process (franz-go's kfake), a
# PostgreSQL holding the consumer's business cursor, and the manager
# installed from the Helm chart — then replays seed 003's incident (a batch
# consumer whose group offsets expired while it was down) to its end in
# compressed time. Everything it starts is stopped on exit or Ctrl-C.
#
#   hack/demo.sh [--keep]   --keep: leave the stack running until Ctrl-C
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

log() { printf '[demo] %s\n' "$*" >&2; }

if ! command -v go >/dev/null; then
  log "Go is not installed: install Go 1.26 or newer"; exit 1
fi

# PostgreSQL from Debian's package (idempotent: nothing happens when it is
# installed). The demo starts its own server in a temporary directory.
hack/install-deps.sh postgresql

log "control plane: kube-apiserver, etcd and kubectl are built from source on the first run"
log "(about 10 minutes on 2 cores; progress below, later runs reuse the cache)"
assets=$(hack/build-control-plane.sh)
export KUBEBUILDER_ASSETS=$assets

bin=$(mktemp -d "${TMPDIR:-/tmp}/retention-guard-demo.XXXXXX")
trap 'rm -rf "$bin"' EXIT
log "building the demo"
go build -o "$bin/demo" ./hack/demo
# Not exec: the trap above removes the build folder afterwards. The demo
# handles SIGINT and SIGTERM itself and stops everything it started.
trap 'kill -TERM "$pid" 2>/dev/null || true' INT TERM
"$bin/demo" "$@" &
pid=$!
status=0
wait "$pid" || status=$?
# A signal interrupts the first wait; wait again for the demo's cleanup.
if kill -0 "$pid" 2>/dev/null; then wait "$pid" || status=$?; fi
exit "$status"
