#!/bin/sh
# Splits what issue 29's endpoints and slow requests cost the child, from
# recordings kept by PERF_KEEP=DIR ./perf.sh CONFIG 60 0.01 -lock-every N
# (one DIR per run; record the -baseline build too, to compare). For each
# DIR it prints the shares of the child's CPU samples, each sample counted
# once, in the first of these that a frame of its stack (at any depth)
# belongs to:
#   tracker  the requests tracker (internal/collect/requests): on the
#            request path, Begin, the route and name updates and End; off
#            it, the sweeper and the window's counts
#   window   the collector's use of it: endpoints given to samples
#            (labelEndpoints), the requests profile, ending the tracker's
#            window
#   slow     the slow-request capture's own code in the off-CPU recorder
#            (watching, the requests' timelines, explaining them)
#   labels   the rest of package labels: what a wrapped span costs beyond
#            the tracker, to compare with a -baseline recording
#   offcpu   the rest of the off-CPU recorder: tracing and parsing, the
#            stretches traced for slow requests included, to compare with
#            a -baseline recording
# The runtime's tracer hooks and the GC are offcpu-split.sh's. Then the
# bytes allocated during the measured load: in all, under the tracker, and
# under the slow-request capture (the child's allocation profiles at its
# start and end).
# Usage: ./requests-split.sh DIR...
set -eu
. "$(dirname "$0")/alloc-share.sh"
for d in "$@"; do
	perf script -i "$d/perf.data" -F period,ip,sym --no-demangle 2>/dev/null | awk -v run="$d" '
	function flush() {
		if (n == 0) return
		total += w; samples++
		delete hit
		for (i = 1; i <= n; i++) {
			f = fr[i]
			if (f ~ /internal\/collect\/requests\./) hit["tracker"] = 1
			if (f ~ /internal\/collect\.(labelEndpoints|requestsProfile|\(\*Collector\)\.endRequests)/) hit["window"] = 1
			if (f ~ slow) hit["slow"] = 1
			if (f ~ /^github\.com\/pprofotel\/profiler\/labels\./) hit["labels"] = 1
			if (f ~ /internal\/collect\/offcpu\./) hit["offcpu"] = 1
		}
		for (i = 1; i in names; i++) {
			if (names[i] in hit) {
				c[names[i]] += w
				break
			}
		}
		n = 0
	}
	BEGIN {
		split("tracker window slow labels offcpu", names, " ")
		slow = "internal/collect/offcpu\\.(\\(\\*Recorder\\)\\.(Watch|Ended|post|drain|refill|startWatch|rest)|\\(\\*slowState\\)|\\(\\*timeline\\)|\\(\\*interval\\)|\\(\\*watch\\)|explainParts|reasonFromStack|\\(\\*reading\\)\\.(slow|target|closeInterval|framesOf|finishSlow))"
	}
	/^[ \t]*[0-9]+[ \t]*$/ { flush(); w = $1; next }
	NF >= 2 { fr[++n] = $2; next }
	END {
		flush()
		printf "%s: %d samples", run, samples
		for (i = 1; i in names; i++) printf "  %s %.3f%%", names[i], 100 * c[names[i]] / total
		printf "\n"
	}'
	if [ -f "$d/allocs.2" ]; then
		printf '%s: allocated %s B during the load; tracker %s B; slow-request capture %s B\n' "$d" \
			"$(alloc_share "$d" | cut -d' ' -f2)" \
			"$(alloc_share "$d" -focus='internal/collect/requests\.' | cut -d' ' -f1)" \
			"$(alloc_share "$d" -focus='offcpu\.(\(\*slowState\)|\(\*timeline\)|explainParts|\(\*reading\)\.(slow|target|closeInterval|framesOf|finishSlow))' | cut -d' ' -f1)"
	fi
done
