#!/bin/sh
# Builds this harness, as it is in the working tree, against the SDK at
# COMMIT (by default b62fcc8, the SDK before issue 29's routes and slow
# requests) and prints the binary's path, for -baseline:
#
#   ./run.sh -baseline "$(./baseline.sh)" -configs base:pprofotel-cpu-offcpu-spans,pprofotel-cpu-offcpu-spans
#
# The harness and the service (integration/testservice) are the same in
# both builds; only the SDK differs. The build lives in a temporary
# directory that the caller removes (the binary's parent directory).
set -eu
cd "$(dirname "$0")"
commit=${1:-b62fcc8}
dir=$(mktemp -d)
git -C ../.. archive "$commit" | tar -x -C "$dir"
rm -rf "$dir/benchmark/overhead" "$dir/integration"
mkdir -p "$dir/benchmark/overhead" "$dir/integration"
cp -r . "$dir/benchmark/overhead/"
cp -r ../../integration/go.mod ../../integration/go.sum ../../integration/testservice "$dir/integration/"
(cd "$dir/benchmark/overhead" && go build -o "$dir/overhead" .) >&2
echo "$dir/overhead"
