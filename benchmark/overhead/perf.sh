#!/bin/sh
# Attributes the child's CPU time to the profiler under test with perf(1):
# runs one configuration for one round, samples the child process with
# call graphs while the load is on, and prints the share of the child's
# CPU samples spent under profiler code (inclusive, "children" mode).
# Go's CPU profiler cannot be used for this: every configuration but
# "none" already runs it.
# Usage: ./perf.sh CONFIG [seconds [percent-limit [harness flags...]]]
#   e.g. ./perf.sh pprofotel-continuous 15, or ./perf.sh pyroscope 60 0.01 for
#   the smaller entries of a longer recording
# With PERF_KEEP=DIR set, the recording (DIR/perf.data) and the child's
# allocation profiles at the start and end of the measured load
# (DIR/allocs.1, DIR/allocs.2) are kept there, for offcpu-split.sh.
set -eu
cd "$(dirname "$0")"
cfg=${1:?configuration, e.g. pprofotel-continuous}
secs=${2:-15}
limit=${3:-0.05}
shift $(($# < 3 ? $# : 3))
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go build -o "$dir/overhead" .
if [ -n "${PERF_KEEP:-}" ]; then
	mkdir -p "$PERF_KEEP"
	export OVERHEAD_ALLOCS_PROFILE="$PERF_KEEP/allocs"
fi
"$dir/overhead" "$@" -configs "$cfg" -rounds 1 -warmup 3s -duration "$((secs + 5))s" >/dev/null 2>"$dir/err" &
harness=$!
child=""
for _ in $(seq 1 100); do
	child=$(pgrep -P "$harness" || true)
	[ -n "$child" ] && break
	sleep 0.1
done
[ -n "$child" ] || { echo "child of $harness not found" >&2; exit 1; }
sleep 4
perf record -q -F 499 -g -p "$child" -o "$dir/perf.data" -- sleep "$secs" 2>/dev/null
wait "$harness"
cat "$dir/err" >&2
[ -z "${PERF_KEEP:-}" ] || cp "$dir/perf.data" "$PERF_KEEP/perf.data"
# Inclusive share of the child's samples under each entry point of
# profiling work, whichever profiler runs it: the runtime's sampling hooks
# (sigprof for CPU, blockevent/mutexevent, mProf for heap), the profile
# writers, and each profiler's own goroutines.
perf report -i "$dir/perf.data" --children --stdio --no-demangle -g none --percent-limit "$limit" --sort symbol 2>/dev/null |
	grep -E 'sigprof|profileWriter|runtime/pprof\.|saveblockevent|blockevent|mutexevent|mProf_|profilealloc|pprofotel/profiler|pyroscope|dd-trace-go|DataDog|compress/|runtime\.GC$|gcStart|gcBgMarkWorker|ServeHTTP' |
	grep -vE 'Unwind|__' | sed 's/ \+/ /g' | head -60
