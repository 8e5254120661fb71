#!/bin/sh
# Measures the application overhead of pprofotel and its peers and prints a
# markdown table on stdout (progress on stderr). Flags are passed through,
# e.g. ./run.sh -rounds 5 -duration 30s; see `go run . -h`.
# The defaults (4 rounds × 5 configurations × ~25 s) take about 9 minutes.
set -eu
cd "$(dirname "$0")"
bin=$(mktemp -d)/overhead
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" .
echo "Machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(go version | cut -d' ' -f3-4)."
echo
"$bin" "$@"
