#!/bin/sh
# Splits what issue 29's endpoints and slow requests cost the child, from
# recordings kept by PERF_KEEP=DIR ./perf.sh CONFIG 60 0.01 -lock-every N
# (one DIR per run). For each DIR it prints the shares of the child's CPU
# samples whose stack holds, at any depth:
#   tracker  the requests tracker (internal/collect/requests): on the
#            request path, Begin, the route and name updates and End; off
#            it, the sweeper and the window's counts
#   window   the collector's use of it: endpoints given to samples
#            (labelEndpoints), the requests profile, ending the tracker's
#            window
#   slow     the slow-request capture in the off-CPU recorder (functions
#            named slow or watch in internal/collect/offcpu)
#   labels   package labels as a whole (what a wrapped span costs, the
#            request hooks inlined into it included): compare with a
#            -baseline recording
#   offcpu   the off-CPU recorder as a whole (slow included)
# and the share of the bytes allocated during the measured load under the
# tracker and under the slow-request capture (allocation profiles at its
# start and end).
# Usage: ./requests-split.sh DIR...
set -eu
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
			if (f ~ /internal\/collect\/offcpu\..*([Ss]low|[Ww]atch)/) hit["slow"] = 1
			if (f ~ /^github\.com\/pprofotel\/profiler\/labels\./) hit["labels"] = 1
			if (f ~ /internal\/collect\/offcpu\./) hit["offcpu"] = 1
		}
		for (h in hit) c[h] += w
		n = 0
	}
	/^[ \t]*[0-9]+[ \t]*$/ { flush(); w = $1; next }
	NF >= 2 { fr[++n] = $2; next }
	END {
		flush()
		printf "%s: %d samples", run, samples
		split("tracker window slow labels offcpu", names, " ")
		for (i = 1; i in names; i++) printf "  %s %.3f%%", names[i], 100 * c[names[i]] / total
		printf "\n"
	}'
	if [ -f "$d/allocs.2" ]; then
		share() {
			go tool pprof -sample_index=alloc_space -unit=B -nodefraction=0 -nodecount=1000000 -top -base "$d/allocs.1" "$@" "$d/allocs.2" 2>/dev/null |
				sed -n 's/^Showing nodes accounting for \([0-9.]*\)B, .* of \([0-9.]*\)B total$/\1 \2/p'
		}
		printf '%s: allocated %s B during the load; tracker %s B; slow-request capture %s B\n' "$d" \
			"$(share | cut -d' ' -f2)" \
			"$(share -focus='internal/collect/requests\.' | cut -d' ' -f1)" \
			"$(share -focus='internal/collect/offcpu\..*([Ss]low|[Ww]atch)' | cut -d' ' -f1)"
	fi
done
