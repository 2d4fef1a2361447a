#!/usr/bin/env bash
# Assembles real Apache Kafka brokers, and the Java consumer the tests replay
# the seeds with, from Maven Central into a cache outside the repository. No
# Docker and no release tarball: the broker is published as jars, and
# `java -cp 'libs/*' kafka.Kafka server.properties` runs it.
#
#   hack/kafka/3.9/pom.xml  the newest 3.9.x (the Scala group coordinator)
#   hack/kafka/4/pom.xml    the newest 4.x Maven Central serves (the Java
#                           coordinator, KIP-848, streams and share groups)
#   test/javaconsumer/      a consumer on kafka-clients (its own pom), compiled
#                           with javac
#
# Each is cached by what defines it (a broker by its Kafka version and a
# hash of its pom, so that a jar added to the pom, as LocalTieredStorage's
# was, reaches a machine whose cache holds the same version without it; the
# consumer by a hash of its pom and sources), built into a temporary folder
# and renamed into place (an interrupted build leaves nothing half-made),
# under a lock (two worktrees or CI jobs never assemble the same thing at
# once). Once cached, nothing is downloaded: Maven is not even started.
#
# Prints, on stdout, the variables the tests read (progress goes to stderr):
#
#   RETENTION_GUARD_KAFKA_DISTS=DIR:DIR   one folder per broker line (libs/, VERSION)
#   RETENTION_GUARD_JAVA_CONSUMER=DIR     classes/ and libs/ of the Java consumer
#
# so that `export $(hack/build-kafka.sh)` sets them. The first run downloads
# about 90 MB (about a minute); later runs only check the cache.
set -euo pipefail

log() { printf '[kafka] %s\n' "$*" >&2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${RETENTION_GUARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/retention-guard}/kafka
mkdir -p "$cache"

for tool in java javac mvn; do
  command -v "$tool" >/dev/null || { log "$tool is missing: hack/install-deps.sh java installs OpenJDK 17 and Maven"; exit 1; }
done

# pom_kafka_version POM prints the version of org.apache.kafka:kafka_2.13 in POM.
pom_kafka_version() {
  awk '/<artifactId>kafka_2.13<\/artifactId>/ {found=1; next}
       found && /<version>/ {gsub(/.*<version>|<\/version>.*/, ""); print; exit}' "$1"
}

locked=""
lock() {
  [ -n "$locked" ] && return 0
  locked=1
  command -v flock >/dev/null || return 0 # macOS: builds are not serialized
  exec 9>"$cache/.lock"
  if ! flock -n 9; then
    log "another assembly is running; waiting for it"
    flock 9
  fi
}

# maven_libs POM OUT copies POM's runtime dependencies into OUT.
maven_libs() {
  local pom=$1 out=$2 logf
  logf=$(mktemp)
  if ! mvn -B -q -f "$pom" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$out" >"$logf" 2>&1; then
    cat "$logf" >&2
    rm -f "$logf"
    log "mvn failed for $pom (is Maven Central reachable? ~/.m2/settings.xml?)"
    return 1
  fi
  rm -f "$logf"
}

dists=()
for pom in "$root"/hack/kafka/*/pom.xml; do
  version=$(pom_kafka_version "$pom")
  [ -n "$version" ] || { log "no kafka_2.13 version in $pom"; exit 1; }
  # Keyed by the pom's hash too: a changed pom is assembled anew beside the
  # old folder (which stays for other worktrees still on the old pom).
  dir="$cache/$version-$(sha256sum "$pom" | cut -c1-12)"
  dists+=("$dir")
  if [ -f "$dir/VERSION" ]; then
    log "cached: Apache Kafka $version ($dir)"
    continue
  fi
  lock
  [ -f "$dir/VERSION" ] && continue
  start=$SECONDS
  log "assembling Apache Kafka $version from Maven Central into $dir"
  work=$(mktemp -d "$cache/build.XXXXXX")
  maven_libs "$pom" "$work/libs" || { rm -rf "$work"; exit 1; }
  ls "$work/libs"/kafka_2.13-"$version".jar >/dev/null || { rm -rf "$work"; log "kafka_2.13-$version.jar missing after mvn"; exit 1; }
  echo "$version" >"$work/VERSION"
  rm -rf "$dir"
  mv "$work" "$dir"
  log "assembled Apache Kafka $version in $((SECONDS - start))s ($(du -sh "$dir/libs" | cut -f1))"
done

# The Java consumer: cached by the hash of everything that defines it.
src="$root/test/javaconsumer"
hash=$(cd "$src" && find pom.xml src -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)
consumer="$cache/javaconsumer/$hash"
if [ -f "$consumer/OK" ]; then
  log "cached: the Java consumer ($consumer)"
else
  lock
  if [ ! -f "$consumer/OK" ]; then
    start=$SECONDS
    log "building the Java consumer (kafka-clients) into $consumer"
    mkdir -p "$cache/javaconsumer"
    work=$(mktemp -d "$cache/javaconsumer/build.XXXXXX")
    maven_libs "$src/pom.xml" "$work/libs" || { rm -rf "$work"; exit 1; }
    mapfile -t sources < <(find "$src/src" -name '*.java' | LC_ALL=C sort)
    javac -nowarn -d "$work/classes" -cp "$work/libs/*" "${sources[@]}" >&2 || { rm -rf "$work"; exit 1; }
    touch "$work/OK"
    rm -rf "$consumer"
    mv "$work" "$consumer"
    log "built the Java consumer in $((SECONDS - start))s"
  fi
fi

(IFS=:; echo "RETENTION_GUARD_KAFKA_DISTS=${dists[*]}")
echo "RETENTION_GUARD_JAVA_CONSUMER=$consumer"
