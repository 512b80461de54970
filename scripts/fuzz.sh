#!/usr/bin/env bash
# Runs every Fuzz* target in the module for the given time each.
#
# Go 1.26's fuzzing coordinator can fail a target with a bare "context
# deadline exceeded" when -fuzztime runs out while a worker is busy (a race
# fixed in Go 1.27: go.dev/issue/75804). Such a failure writes no failing
# input. It is told apart from a real finding here: when it is the only
# complaint, the target's corpus (seeds and testdata) is replayed, and the
# run fails only if that fails. A real finding always writes its input to
# testdata/fuzz and fails the run.
set -euo pipefail
time=${1:-10s}
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
go list -f '{{.ImportPath}} {{.Dir}}' ./... | while read -r pkg dir; do
  for f in $(grep -hoE '^func (Fuzz[A-Za-z0-9_]+)' "$dir"/*_test.go 2>/dev/null | awk '{print $2}' | sed 's/(.*//'); do
    echo "fuzz $pkg $f ($time)"
    if go test -run '^$' -fuzz "^${f}\$" -fuzztime "$time" "$pkg" 2>&1 | tee "$log"; then
      continue
    fi
    if grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
      echo "fuzz $pkg $f: the fuzzing coordinator stopped at its deadline without a finding (go.dev/issue/75804); replaying the corpus"
      go test -count=1 -run "^${f}\$" "$pkg"
      continue
    fi
    exit 1
  done
done
