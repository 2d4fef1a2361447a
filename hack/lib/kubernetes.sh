# Shared by hack/build-control-plane.sh and hack/build-node.sh: where the
# Kubernetes binaries are cached and how they are compiled from the Go module
# proxy. Source it; it defines variables and functions, runs nothing.
#
# Binaries are compiled from k8s.io/kubernetes at the version matching our
# client-go, with every k8s.io/* staging module replaced by its published
# v0.x version (the repository's own go.mod points them at ./staging). Every
# command built is imported in a `//go:build tools` file before `go mod tidy`:
# tidy then records the go.sum entries of all of them (kube-proxy fails with
# a missing go.sum entry for vishvananda/netlink otherwise).

k8s_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# The Kubernetes version follows client-go: v0.X.Y  <->  v1.X.Y.
k8s_client_go=$(cd "$k8s_root" && go list -m -f '{{.Version}}' k8s.io/client-go)
k8s_version=${K8S_VERSION:-v1${k8s_client_go#v0}}
k8s_staging_version=${k8s_client_go}
k8s_cache=${RETENTION_GUARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/retention-guard}
k8s_out="$k8s_cache/k8s/$k8s_version"

# k8s_missing NAME... prints the names whose binary is not in the cache.
k8s_missing() {
  local b
  for b in "$@"; do
    [ -x "$k8s_out/$b" ] || printf '%s\n' "$b"
  done
}

# k8s_lock takes the cache's build lock on file descriptor 9 for the rest of
# the calling script, so two builds (two worktrees, two CI jobs on one
# machine) never compile the same binaries at once: the second waits, then
# finds them cached. log is the caller's logging function.
k8s_lock() {
  mkdir -p "$k8s_out"
  if ! command -v flock >/dev/null; then
    return 0 # macOS has no flock(1): builds are not serialized there
  fi
  exec 9>"$k8s_cache/k8s/$k8s_version.lock"
  if ! flock -n 9; then
    log "another build of Kubernetes $k8s_version binaries is running; waiting for it"
    flock 9
  fi
}

# k8s_build WORK NAME... compiles k8s.io/kubernetes/cmd/NAME for every NAME
# not yet cached, in a module under WORK, each into WORK then renamed into
# the cache (an interrupted build never leaves a broken binary behind).
k8s_build() {
  local work=$1; shift
  local mod="$work/kubernetes"
  mkdir -p "$mod"
  (
    cd "$mod"
    log "resolving k8s.io/kubernetes@$k8s_version and its staging modules"
    local gomod
    gomod=$(go mod download -json "k8s.io/kubernetes@$k8s_version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
    [ -f "$gomod" ] || { log "could not download k8s.io/kubernetes@$k8s_version"; exit 1; }
    {
      echo "module retentionguard.local/kubernetes"
      echo
      echo "go 1.26"
      echo
      echo "require k8s.io/kubernetes $k8s_version"
      echo
      # Every staging module the upstream go.mod replaces with ./staging/src/...
      grep -E '^[[:space:]]*k8s\.io/[^ ]+ => \./staging/src/' "$gomod" \
        | awk -v v="$k8s_staging_version" '{print "replace " $1 " => " $1 " " v}'
    } > go.mod
    {
      echo "//go:build tools"
      echo
      echo "package kubernetes"
      echo
      echo "import ("
      local b
      for b in "$@"; do echo "	_ \"k8s.io/kubernetes/cmd/$b\""; done
      echo ")"
    } > tools.go
    log "downloading modules for $*"
    go mod tidy >/dev/null 2>"$work/tidy.log" || { cat "$work/tidy.log" >&2; exit 1; }
    local major=${k8s_version#v}; major=${major%%.*}
    local minor=${k8s_version#v*.}; minor=${minor%%.*}
    local pkg=k8s.io/component-base/version
    local ldflags="-s -w -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X k8s.io/client-go/pkg/version.gitVersion=$k8s_version"
    for b in "$@"; do
      [ -x "$k8s_out/$b" ] && continue
      log "compiling $b"
      local start=$SECONDS
      GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$work/$b" "k8s.io/kubernetes/cmd/$b"
      mv -f "$work/$b" "$k8s_out/$b"
      log "built $b in $((SECONDS - start))s"
    done
  )
}
