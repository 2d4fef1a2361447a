#!/usr/bin/env bash
# Fails when a generated file (CRD, RBAC, webhook manifests, deepcopy, the
# chart's values.schema.json and README.md, the package graph in
# docs/architecture.md) is out of date with the sources
# in the working tree, or when gofmt would change a file. It regenerates in place and compares against a snapshot taken before,
# so it works on a dirty working tree as well as in CI: after a failure the
# files are up to date and only need committing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

generated() {
  { find config charts/retention-guard/templates/crds charts/retention-guard/files/generated -type f -name '*.yaml' 2>/dev/null; git ls-files -co --exclude-standard -- '*zz_generated*.go'
    echo charts/retention-guard/values.schema.json; echo charts/retention-guard/README.md; echo docs/architecture.md; } | sort -u
}

snap=$(mktemp -d)
trap 'rm -rf "$snap"' EXIT
generated | while read -r f; do mkdir -p "$snap/$(dirname "$f")"; cp "$f" "$snap/$f"; done

make --no-print-directory -s manifests generate chart-docs arch-graph

status=0
while read -r f; do
  if [ ! -f "$snap/$f" ]; then
    echo "verify: $f was missing; it is generated now (commit it)"; status=1
  elif ! diff -u "$snap/$f" "$f"; then
    echo "verify: $f was out of date with its sources; regenerated it (commit it)"; status=1
  fi
done < <(generated)

unformatted=$(gofmt -l $(git ls-files -co --exclude-standard '*.go'))
if [ -n "$unformatted" ]; then
  echo "verify: gofmt would change these files (run 'make fmt'):"; echo "$unformatted"; status=1
fi

if [ $status -ne 0 ]; then
  echo "verify: FAILED"
else
  echo "verify: generated files and formatting are up to date"
fi
exit $status
