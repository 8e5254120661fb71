#!/bin/sh
# Prints what the SDK in this checkout adds to an application that already
# sends traces with otel-go's otlptracegrpc, and where those bytes go.
# Programs, each its own module in a temporary directory (removed on exit):
#   a  the otlptracegrpc application alone
#   b  a + profiler.Start() with no option: the OTLP exporter the
#      environment chooses (otlpprofilehttp or otlpprofilegrpc)
#   c  b + import _ ".../offcpu" and OffCPUProfile asked for
#   d  b + import _ ".../exporters/splunk" (registered, not chosen)
#   e  b + profiler.WithExporter(otlpprofilehttp.New(ctx, WithJSON()))
#   f  b + opamp.Start(ctx, p): remote control over OpAMP
#   p  a + pyroscope-go's pyroscope.Start, the peer the target is set by
# For each, against the program it extends (and b against p, which shows
# what the SDK holds beyond pyroscope-go): the modules `go list -m all`
# adds, the versions it raises, the difference of the binaries built with
# go build -trimpath -ldflags="-s -w", the sections that grow (.gopclntab,
# the function table, has no symbols), and the packages whose symbols grow
# the most (cmd/binsizes on the same binaries built with their symbol
# table). Needs the module proxy (or a warm module cache) and an ELF
# platform.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
otel=v1.47.0
pyroscope=v1.4.3
top=${FOOTPRINT_TOP:-25}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 1' HUP INT TERM
export GOWORK=off GOFLAGS=-mod=mod LC_ALL=C

# quiet CMD...: runs CMD, showing what it wrote to stderr only if it fails.
quiet() {
	"$@" 2>"$work/stderr" || { cat "$work/stderr" >&2; return 1; }
}

(cd "$root/benchmark" && go build -o "$work/binsizes" ./cmd/binsizes)

# The start of main in b, d and e.
start='	p, err := profiler.Start()
	if err != nil {
		panic(err)
	}
	defer p.Stop(ctx)'

# build NAME IMPORTS START [MODULE@VERSION...]: a module NAME whose main
# imports IMPORTS and runs START before it sends a span, requiring the
# modules named besides otel-go's; writes NAME.mods, NAME.size and
# NAME.sizes.
build() {
	name=$1 imports=$2 code=$3
	shift 3
	dir=$work/$name
	mkdir "$dir"
	cat > "$dir/main.go" <<EOF
package main

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
$imports
)

func main() {
	ctx := context.Background()
$code
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
		quiet go mod init example.com/footprint/"$name"
		case $imports in *github.com/pprofotel/profiler*)
			go mod edit -replace github.com/pprofotel/profiler="$root" \
				-require github.com/pprofotel/profiler@v0.0.0-00010101000000-000000000000
		esac
		case $imports in *github.com/pprofotel/profiler/opamp*)
			go mod edit -replace github.com/pprofotel/profiler/opamp="$root/opamp" \
				-require github.com/pprofotel/profiler/opamp@v0.0.0-00010101000000-000000000000
		esac
		quiet go get go.opentelemetry.io/otel@$otel go.opentelemetry.io/otel/sdk@$otel \
			go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc@$otel "$@"
		quiet go mod tidy
		go list -m -f '{{if not .Main}}{{.Path}} {{.Version}}{{end}}' all | sort > "$work/$name.mods"
		go build -trimpath -ldflags="-s -w" -o "$work/$name.bin" .
		wc -c < "$work/$name.bin" | tr -d ' ' > "$work/$name.size"
		go build -trimpath -o "$work/$name.full" .
		"$work/binsizes" "$work/$name.full" > "$work/$name.sizes"
	)
}

build a "" ""
build b '	"github.com/pprofotel/profiler"' "$start"
build c '	"github.com/pprofotel/profiler"
	_ "github.com/pprofotel/profiler/offcpu"' '	p, err := profiler.Start(profiler.WithProfileTypes(profiler.CPUProfile,
		profiler.HeapProfile, profiler.GoroutineProfile, profiler.OffCPUProfile))
	if err != nil {
		panic(err)
	}
	defer p.Stop(ctx)'
build d '	"github.com/pprofotel/profiler"
	_ "github.com/pprofotel/profiler/exporters/splunk"' "$start"
build e '	"github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/exporters/otlpprofilehttp"' '	pexp, err := otlpprofilehttp.New(ctx, otlpprofilehttp.WithJSON())
	if err != nil {
		panic(err)
	}
	p, err := profiler.Start(profiler.WithExporter(pexp))
	if err != nil {
		panic(err)
	}
	defer p.Stop(ctx)'
build f '	"github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/opamp"' "$start"'
	c, err := opamp.Start(ctx, p)
	if err != nil {
		panic(err)
	}
	defer c.Shutdown(ctx)'
build p '	"github.com/grafana/pyroscope-go"' '	prof, err := pyroscope.Start(pyroscope.Config{ApplicationName: "footprint", ServerAddress: "http://localhost:4040"})
	if err != nil {
		panic(err)
	}
	defer prof.Stop()' github.com/grafana/pyroscope-go@$pyroscope

# grown KIND BASE V: the KIND (section or package) lines of V.sizes that
# differ from BASE.sizes, as "+bytes name", largest growth first, marking
# the packages BASE does not link.
grown() {
	awk -v kind="$1" '
		$1 != kind { next }
		FILENAME == base { was[$2] = $3; next }
		{ now[$2] = $3 }
		END {
			for (n in was) if (!(n in now)) now[n] = 0
			for (n in now) {
				d = now[n] - was[n]
				if (d != 0) printf "%d %s%s\n", d, n, (kind == "package" && !(n in was)) ? " (new)" : ""
			}
		}' base="$work/$2.sizes" "$work/$2.sizes" "$work/$3.sizes" | sort -k1,1nr -k2
}

# compare BASE V TITLE: what V adds to BASE.
compare() {
	echo
	echo "## $2 against $1: $3"
	added=$(join -v 2 "$work/$1.mods" "$work/$2.mods")
	echo "modules added: $(printf '%s\n' "$added" | grep -c .)"
	printf '%s\n' "$added" | sed '/^$/d; s/^/  /'
	raised=$(join "$work/$1.mods" "$work/$2.mods" | awk '$2 != $3 { print $1, $2, "->", $3 }')
	echo "versions raised: $(printf '%s\n' "$raised" | grep -c .)"
	printf '%s\n' "$raised" | sed '/^$/d; s/^/  /'
	sb=$(cat "$work/$1.size") sv=$(cat "$work/$2.size")
	echo "stripped binary: $sb -> $sv B, +$((sv - sb)) B"
	echo "sections that change (bytes):"
	grown section "$1" "$2" | grep -v ' \.debug_\| \.symtab$\| \.strtab$' |
		awk '{ printf "  %+10d %s\n", $1, $2 }'
	grown package "$1" "$2" > "$work/grown"
	n=$(grep -c . "$work/grown" || true)
	echo "symbols by package, the $top that grow most of $n that change (bytes):"
	head -n "$top" "$work/grown" | awk '{ d = $1; $1 = ""; printf "  %+10d%s\n", d, $0 }'
	awk -v top="$top" '
		NR > top && $1 > 0 { rest += $1; n++ }
		NR > top && $1 < 0 { less += $1; m++ }
		{ all += $1 }
		END {
			if (n) printf "  %+10d the other %d that grow\n", rest, n
			if (m) printf "  %+10d the %d that shrink\n", less, m
			printf "  %+10d in all\n", all
		}' "$work/grown"
}

echo "# $(go version); otel-go and otlptracegrpc $otel, pyroscope-go $pyroscope; SDK at $(git -C "$root" describe --always --dirty 2>/dev/null || echo "$root")"
compare a b "profiler.Start(), the OTLP exporter from the environment"
compare a p "pyroscope-go's pyroscope.Start, for the target"
compare p b "what b adds over p: the part over the target"
compare b c "the off-CPU profile (import _ .../offcpu)"
compare b d "import _ .../exporters/splunk"
compare b e "otlpprofilehttp.WithJSON()"
compare b f "opamp.Start(ctx, p)"
echo
sa=$(cat "$work/a.size")
for v in b c d e f p; do
	echo "$v: +$(($(cat "$work/$v.size") - sa)) B against a"
done
