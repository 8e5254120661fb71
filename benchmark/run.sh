#!/bin/sh
# Reproduces every figure of README.md's "Per-window cost, wire size and
# memory" section: ROUNDS (default 1) rounds of the per-window benchmarks
# (each round runs write, godeltaprof, ours and naive of each input one after
# the other; more rounds interleave them and the table takes medians), one
# run of the 1,000-window memory benchmark, then the tables. Raw output goes
# to results.txt. One round takes two to five minutes on 2 vCPUs, depending
# on what else runs; the memory benchmark as long again.
set -eu
cd "$(dirname "$0")"
out=results.txt
: > "$out"
{
	echo "# $(go version); nproc $(nproc); $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
	for round in $(seq "${ROUNDS:-1}"); do
		echo "# round $round"
		go test -run '^$' -bench 'SourceSize|Window' -benchtime 8x -benchmem -count 1 .
	done
	go test -run '^$' -bench 'Retained' -benchtime 1x -benchmem -count 1 -timeout 30m .
} 2>&1 | tee -a "$out"
echo
go run ./cmd/benchtable < "$out"
