#!/bin/sh
# Prints the last two rows of README.md's "Dependencies and footprint"
# table: what importing the SDK in this checkout costs an application that
# already sends traces with otel-go's otlptracegrpc. Three programs, each
# its own module in a temporary directory (removed on exit):
#   a  the otlptracegrpc application alone
#   b  a + profiler.Start
#   c  b + import _ ".../offcpu" and OffCPUProfile asked for
# For b and c against a: the modules `go list -m all` adds, the versions it
# raises, and the difference of the binaries built with
# go build -trimpath -ldflags="-s -w". Needs the module proxy (or a warm
# module cache), nothing else.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
otel=v1.47.0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 1' HUP INT TERM
export GOWORK=off GOFLAGS=-mod=mod LC_ALL=C

# quiet CMD...: runs CMD, showing what it wrote to stderr only if it fails.
quiet() {
	"$@" 2>"$work/stderr" || { cat "$work/stderr" >&2; return 1; }
}

# build NAME IMPORTS START: a module NAME whose main imports IMPORTS and
# runs START before it sends a span; writes NAME.mods and NAME.size.
build() {
	dir=$work/$1
	mkdir "$dir"
	cat > "$dir/main.go" <<EOF
package main

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
$2
)

func main() {
	ctx := context.Background()
$3
	exp, err := otlptracegrpc.New(ctx)
	if err != nil {
		panic(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	defer tp.Shutdown(ctx)
	otel.SetTracerProvider(tp)
	_, span := otel.Tracer("footprint").Start(ctx, "main")
	span.End()
}
EOF
	(
		cd "$dir"
		quiet go mod init example.com/footprint/"$1"
		if [ -n "$2" ]; then
			go mod edit -replace github.com/pprofotel/profiler="$root" \
				-require github.com/pprofotel/profiler@v0.0.0-00010101000000-000000000000
		fi
		quiet go get go.opentelemetry.io/otel@$otel go.opentelemetry.io/otel/sdk@$otel \
			go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc@$otel
		quiet go mod tidy
		go list -m -f '{{if not .Main}}{{.Path}} {{.Version}}{{end}}' all | sort > "$work/$1.mods"
		go build -trimpath -ldflags="-s -w" -o "$work/$1.bin" .
		wc -c < "$work/$1.bin" | tr -d ' ' > "$work/$1.size"
	)
}

build a "" ""
build b '	"github.com/pprofotel/profiler"' '	p, err := profiler.Start()
	if err != nil {
		panic(err)
	}
	defer p.Stop(ctx)'
build c '	"github.com/pprofotel/profiler"
	_ "github.com/pprofotel/profiler/offcpu"' '	p, err := profiler.Start(profiler.WithProfileTypes(profiler.CPUProfile,
		profiler.HeapProfile, profiler.GoroutineProfile, profiler.OffCPUProfile))
	if err != nil {
		panic(err)
	}
	defer p.Stop(ctx)'

echo "# $(go version); otel-go and otlptracegrpc $otel; SDK at $(git -C "$root" describe --always --dirty 2>/dev/null || echo "$root")"
for v in b c; do
	echo
	echo "## $v against a"
	added=$(join -v 2 "$work/a.mods" "$work/$v.mods")
	echo "modules added: $(printf '%s\n' "$added" | grep -c .)"
	printf '%s\n' "$added" | sed '/^$/d; s/^/  /'
	raised=$(join "$work/a.mods" "$work/$v.mods" | awk '$2 != $3 { print $1, $2, "->", $3 }')
	echo "versions raised: $(printf '%s\n' "$raised" | grep -c .)"
	printf '%s\n' "$raised" | sed '/^$/d; s/^/  /'
	sa=$(cat "$work/a.size") sv=$(cat "$work/$v.size")
	echo "stripped binary: $sa -> $sv B, +$((sv - sa)) B"
done
