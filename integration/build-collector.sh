#!/usr/bin/env bash
# Builds the OpenTelemetry Collector described by otelcol/builder-config.yaml
# and prints the path of the binary on stdout (diagnostics go to stderr):
#
#   PPROFOTEL_OTELCOL=$(integration/build-collector.sh)
#
# The binary is cached under ${PPROFOTEL_CACHE:-$HOME/.cache/pprofotel}, in a
# directory named after the builder version and the hash of the manifest, so
# it is rebuilt only when the manifest changes. The first build downloads and
# compiles a few hundred modules and takes minutes; a cached one takes no
# time at all.
set -euo pipefail

builder_version=v0.165.0
here=$(cd "$(dirname "$0")" && pwd)
manifest=$here/otelcol/builder-config.yaml

hash=$(sha256sum "$manifest" | cut -c1-16)
cache=${PPROFOTEL_CACHE:-$HOME/.cache/pprofotel}
dir=$cache/otelcol-$builder_version-$hash
bin=$dir/otelcol

if [[ -x $bin ]]; then
	echo "build-collector: using cached $bin" >&2
	echo "$bin"
	exit 0
fi

gobin=$(go env GOPATH)/bin
builder=$gobin/builder
# The version is captured before it is compared: with pipefail, a grep -q
# that exits early would fail the pipeline on the builder's SIGPIPE.
installed=$("$builder" version 2>/dev/null || true)
if [[ $installed != *" $builder_version" ]]; then
	echo "build-collector: installing the builder $builder_version" >&2
	go install "go.opentelemetry.io/collector/cmd/builder@$builder_version"
fi

# Build in a scratch directory next to the cache entry and move the binary
# into place last, so that an interrupted build never leaves a binary that
# the next run would trust.
mkdir -p "$cache"
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
sed "s|^dist:\$|dist:\n  output_path: $work/dist|" "$manifest" >"$work/manifest.yaml"

echo "build-collector: building the Collector into $dir (this takes minutes the first time)" >&2
start=$SECONDS
# The builder runs "go mod tidy", which also resolves the modules imported
# by the tests of every component. Some of those (fileexporter's tests use
# extension/encoding/otlpencodingextension) are not served by the module
# proxy, although nothing the binary links needs them. -e, which GOFLAGS
# passes only to the go commands that know it (tidy among them), lets tidy
# record everything else; the builder's strict version check and the
# compilation that follow still fail on any module the binary does need.
GOFLAGS="$(go env GOFLAGS) -e" "$builder" --config="$work/manifest.yaml" >&2
mkdir -p "$dir"
mv "$work/dist/otelcol" "$bin.tmp"
mv "$bin.tmp" "$bin"
echo "build-collector: built in $((SECONDS - start))s" >&2
echo "$bin"
