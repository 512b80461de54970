#!/usr/bin/env bash
# Runs every Fuzz* target in the module for the given time each.
set -euo pipefail
time=${1:-10s}
cd "$(dirname "$0")/.."
go list -f '{{.ImportPath}} {{.Dir}}' ./... | while read -r pkg dir; do
  for f in $(grep -hoE '^func (Fuzz[A-Za-z0-9_]+)' "$dir"/*_test.go 2>/dev/null | awk '{print $2}' | sed 's/(.*//'); do
    echo "fuzz $pkg $f ($time)"
    go test -run '^$' -fuzz "^${f}\$" -fuzztime "$time" "$pkg"
  done
done
