#!/usr/bin/env bash
# Unpacks the Grafana Pyroscope v2.2.1 server that the Pyroscope tests run
# against and prints the path of the binary on stdout (diagnostics go to
# stderr):
#
#   PPROFOTEL_PYROSCOPE=$(integration/pyroscope.sh)
#
# The archive is PPROFOTEL_PYROSCOPE_ARCHIVE, by default the gzipped static
# build in ../shared/tools/pyroscope next to this repository. Elsewhere, build
# it from its source: check out github.com/grafana/pyroscope at tag v2.2.1 and
# run `go build ./cmd/pyroscope` (about 13 minutes and 2 GB of memory on two
# cores), then point PPROFOTEL_PYROSCOPE at the binary.
#
# The binary is cached under ${PPROFOTEL_CACHE:-$HOME/.cache/pprofotel} and
# checked against the sha256 of the build the tests were written against.
set -euo pipefail

version=v2.2.1
sum=a0563807bd325fc04f323f9eb555bd5f1053b13fe902a814cbab01774a6e8796
here=$(cd "$(dirname "$0")" && pwd)
archive=${PPROFOTEL_PYROSCOPE_ARCHIVE:-$here/../../shared/tools/pyroscope/pyroscope-$version-linux-amd64.gz}
cache=${PPROFOTEL_CACHE:-$HOME/.cache/pprofotel}
bin=$cache/pyroscope-$version

if [[ -x $bin ]] && echo "$sum  $bin" | sha256sum --check --status; then
	echo "pyroscope: using cached $bin" >&2
	echo "$bin"
	exit 0
fi
if [[ ! -f $archive ]]; then
	echo "pyroscope: no archive at $archive; set PPROFOTEL_PYROSCOPE_ARCHIVE, or build Pyroscope $version (see this script's header)" >&2
	exit 1
fi
mkdir -p "$cache"
tmp=$(mktemp "$bin.XXXXXX")
trap 'rm -f "$tmp"' EXIT
gunzip -c "$archive" >"$tmp"
if ! echo "$sum  $tmp" | sha256sum --check --status; then
	echo "pyroscope: $archive does not unpack to the expected binary (sha256 $sum)" >&2
	exit 1
fi
chmod +x "$tmp"
mv "$tmp" "$bin"
echo "pyroscope: unpacked $bin" >&2
echo "$bin"
