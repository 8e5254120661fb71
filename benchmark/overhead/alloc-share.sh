# Sourced by offcpu-split.sh and requests-split.sh.
# alloc_share DIR [pprof flags...] prints two numbers: the bytes allocated
# during the measured load that the flags select (-focus, -ignore), and all
# the bytes allocated during it, from the child's allocation profiles at its
# start and end (DIR/allocs.1, DIR/allocs.2, which perf.sh keeps with
# PERF_KEEP).
alloc_share() {
	dir=$1
	shift
	go tool pprof -sample_index=alloc_space -unit=B -nodefraction=0 -nodecount=1000000 -top -base "$dir/allocs.1" "$@" "$dir/allocs.2" 2>/dev/null |
		sed -n 's/^Showing nodes accounting for \([0-9.]*\)B, .* of \([0-9.]*\)B total$/\1 \2/p'
}
