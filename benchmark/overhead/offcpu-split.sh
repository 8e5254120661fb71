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
# followed by the share of the bytes allocated during the measured load
# (the child's allocation profiles) under the recorder and under the rest
# of pprofotel.
# Usage: ./offcpu-split.sh DIR...
set -eu
. "$(dirname "$0")/alloc-share.sh"
for d in "$@"; do
	perf script -i "$d/perf.data" -F period,ip,sym --no-demangle 2>/dev/null | awk -v run="$d" '
	function flush() {
		if (n == 0) return
		total += w; samples++
		first = ""
		rec = 0; sdk = 0; reader = 0
		for (i = 1; i <= n; i++) {
			f = fr[i]
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
		n = 0
	}
	BEGIN {
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
		printf "\n"
	}'
	if [ -f "$d/allocs.2" ]; then
		printf '%s: allocated %s B during the load; recorder %s B; rest of pprofotel %s B\n' "$d" \
			"$(alloc_share "$d" | cut -d' ' -f2)" \
			"$(alloc_share "$d" -focus='offcpu\.\(\*Recorder\)' | cut -d' ' -f1)" \
			"$(alloc_share "$d" -focus='^github\.com/pprofotel/profiler' -ignore='offcpu\.\(\*Recorder\)' | cut -d' ' -f1)"
	fi
done
