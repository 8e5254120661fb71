#!/bin/sh
# Splits what the off-CPU profile costs the child, from recordings kept by
# PERF_KEEP=DIR ./perf.sh CONFIG 60 (one DIR per run). For each DIR it
# prints the shares of the child's CPU samples, every sample counted once
# by the first of these that its stack meets, leaf first:
#   gc       the garbage collector's work: background mark workers, mark
#            assists, sweeping (in the background or on allocation), write
#            barrier flushes; gc-rec is the part on the recorder's goroutine
#   trace    the runtime's execution tracer: the trace hooks on the
#            goroutines that run (traceLocker.*, traceAdvance, trace stacks,
#            CPU samples into the trace) and the flight recorder's reader
#            goroutine (runtime/trace, not under the recorder)
# and then, by any frame of the stack:
#   recorder the off-CPU recorder's goroutine, internal/collect/offcpu.(*Recorder):
#            starting and stopping the flight recorder, WriteTo, parsing,
#            building the window (its trace hooks included, its GC not)
#   sdk      the rest of pprofotel (collection, encoding, export)
# Then, for issue 29's routes and slow requests, every sample counted
# once more, in the first of these that a frame of its stack belongs to
# (GC and tracer hooks included):
#   tracker  the requests tracker (internal/collect/requests): on the
#            request path, Begin, the route and name updates and End; off
#            it, the sweeper and the window's counts
#   slow     the slow-request capture's own code in the off-CPU recorder
#            (watching, the requests' timelines, explaining them)
#   labels   the rest of package labels: what a wrapped span costs beyond
#            the tracker, to compare with a recording of the SDK before
#            (-baseline); labels-own is its part not under the
#            OpenTelemetry SDK's own frames (the wrapped tracer's Start,
#            the span's SetAttributes and End, which the wrapper calls and
#            which cost the same with any SDK version): the wrapper's own
#            work, with less of the SDK's noise
#   offcpu   the rest of the off-CPU recorder: tracing and parsing, the
#            stretches traced for slow requests included
# followed by the share of the bytes allocated during the measured load
# (the child's allocation profiles) under the recorder, under the rest of
# pprofotel, under the tracker and under the slow-request capture.
# Usage: ./offcpu-split.sh DIR...
set -eu
# alloc_share DIR [pprof flags...] prints the bytes allocated during the
# measured load that the flags select (-focus, -ignore), and all of them.
alloc_share() {
	dir=$1
	shift
	go tool pprof -sample_index=alloc_space -unit=B -nodefraction=0 -nodecount=1000000 -top -base "$dir/allocs.1" "$@" "$dir/allocs.2" 2>/dev/null |
		sed -n 's/^Showing nodes accounting for \([0-9.]*\)B, .* of \([0-9.]*\)B total$/\1 \2/p'
}
for d in "$@"; do
	perf script -i "$d/perf.data" -F period,ip,sym --no-demangle 2>/dev/null | awk -v run="$d" '
	function flush() {
		if (n == 0) return
		total += w; samples++
		first = ""
		rec = 0; sdk = 0; reader = 0
		delete hit
		otel = 0
		for (i = 1; i <= n; i++) {
			f = fr[i]
			if (f ~ /internal\/collect\/requests\./) hit["tracker"] = 1
			if (f ~ slow) hit["slow"] = 1
			if (f ~ /^github\.com\/pprofotel\/profiler\/labels\./) {
				if (!("labels" in hit) && !otel) hit["labels-own"] = 1
				hit["labels"] = 1
			}
			if (f ~ /^go\.opentelemetry\.io\/otel\/sdk\//) otel = 1
			if (f ~ /internal\/collect\/offcpu\./) hit["offcpu"] = 1
			if (first == "" && f ~ gc) first = "gc"
			if (first == "" && f ~ tr) first = "trace"
			if (f ~ /offcpu\.\(\*Recorder\)/) rec = 1
			else if (f ~ /^github\.com\/pprofotel\/profiler/) sdk = 1
			if (f ~ /^runtime\/trace\./) reader = 1
		}
		if (first == "gc") { c["gc"] += w; if (rec) c["gc-rec"] += w }
		else if (rec) c["recorder"] += w
		else if (first == "trace") { c["trace"] += w; if (reader && !sdk) c["trace-reader"] += w }
		else if (sdk) c["sdk"] += w
		for (i = 1; i in issue29; i++) {
			if (issue29[i] in hit) {
				c[issue29[i]] += w
				if (issue29[i] == "labels" && ("labels-own" in hit)) c["labels-own"] += w
				break
			}
		}
		n = 0
	}
	BEGIN {
		split("tracker slow labels offcpu", issue29, " ")
		slow = "internal/collect/offcpu\\.(\\(\\*Recorder\\)\\.(Watch|Ended|post|drain|refill|startWatch|rest)|\\(\\*slowState\\)|\\(\\*timeline\\)|\\(\\*interval\\)|\\(\\*watch\\)|explainParts|reasonFromStack|\\(\\*reading\\)\\.(slow|target|closeInterval|framesOf|finishSlow))"
		gc = "^runtime\\.(gcBgMarkWorker|gcDrain|gcAssistAlloc|gcStart|gcMarkDone|gcMarkTermination|gcSweep|bgsweep|sweepone|deductSweepCredit|wbBufFlush|gcWriteBarrier|markroot|\\(\\*sweepLocked\\)\\.sweep|\\(\\*mheap\\)\\.reclaim|\\(\\*gcWork\\))"
		tr = "^runtime\\.(\\(\\*)?trace[A-Z]|^runtime\\.(ReadTrace|readTrace0|StartTrace|StopTrace)$|^runtime/trace\\."
	}
	/^[ \t]*[0-9]+[ \t]*$/ { flush(); w = $1; next }
	NF >= 2 { fr[++n] = $2; next }
	END {
		flush()
		printf "%s: %d samples", run, samples
		split("recorder trace trace-reader gc gc-rec sdk", k, " ")
		for (i = 1; i in k; i++) printf "  %s %.2f%%", k[i], 100 * c[k[i]] / total
		printf "\n%s: issue 29:", run
		for (i = 1; i in issue29; i++) printf "  %s %.2f%%", issue29[i], 100 * c[issue29[i]] / total
		printf "  (labels-own %.2f%%)\n", 100 * c["labels-own"] / total
	}'
	if [ -f "$d/allocs.2" ]; then
		printf '%s: allocated %s B during the load; recorder %s B; rest of pprofotel %s B; tracker %s B; slow-request capture %s B\n' "$d" \
			"$(alloc_share "$d" | cut -d' ' -f2)" \
			"$(alloc_share "$d" -focus='offcpu\.\(\*Recorder\)' | cut -d' ' -f1)" \
			"$(alloc_share "$d" -focus='^github\.com/pprofotel/profiler' -ignore='offcpu\.\(\*Recorder\)' | cut -d' ' -f1)" \
			"$(alloc_share "$d" -focus='internal/collect/requests\.' | cut -d' ' -f1)" \
			"$(alloc_share "$d" -focus='offcpu\.(\(\*slowState\)|\(\*timeline\)|explainParts|\(\*reading\)\.(slow|target|closeInterval|framesOf|finishSlow))' | cut -d' ' -f1)"
	fi
done
