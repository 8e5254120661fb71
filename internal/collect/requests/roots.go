package requests

import (
	"math/bits"
	"slices"
)

// roots are the local root spans a window remembers: their span ids, as
// numbers, and the index of each one's route in its window's names, in
// two slices kept in step: 10 bytes a root, where a struct of the two
// would take 16. Appended in the order the roots ended, sorted by span
// id once the window ends (sort), then looked up (routeOf).
type roots struct {
	ids    []uint64
	routes []uint16
}

// len returns the number of roots.
func (rs *roots) len() int { return len(rs.ids) }

// reserve gives rs room for n roots, when it has none yet.
func (rs *roots) reserve(n int) {
	if rs.ids == nil {
		rs.ids, rs.routes = make([]uint64, 0, n), make([]uint16, 0, n)
	}
}

// add appends a root to rs, which holds fewer than limit, growing it by
// doubling up to limit and no further.
func (rs *roots) add(id uint64, route uint16, limit int) {
	if n := len(rs.ids); n == cap(rs.ids) {
		c := min(max(2*n, 64), limit)
		rs.ids = append(make([]uint64, 0, c), rs.ids...)
		rs.routes = append(make([]uint16, 0, c), rs.routes...)
	}
	rs.ids = append(rs.ids, id)
	rs.routes = append(rs.routes, route)
}

// routeOf returns the route index of the root with span id id, rs being
// sorted.
func (rs *roots) routeOf(id uint64) (uint16, bool) {
	i, ok := slices.BinarySearch(rs.ids, id)
	if !ok {
		return 0, false
	}
	return rs.routes[i], true
}

// sort sorts rs by span id, moving the routes along: an introsort
// (quicksort on the median of three, heapsort past 2·log₂ n levels,
// insertion sort for short runs), as fast as slices.Sort on the ids
// alone, where sort.Sort over both slices takes twice as long.
func (rs *roots) sort() {
	quickSort(rs.ids, rs.routes[:len(rs.ids)], 2*bits.Len(uint(len(rs.ids))))
}

// compact removes the repeats of rs, sorted: a root remembered twice
// keeps the route first given, which both had.
func (rs *roots) compact() {
	n := 0
	for i, id := range rs.ids {
		if i > 0 && id == rs.ids[n-1] {
			continue
		}
		rs.ids[n], rs.routes[n] = id, rs.routes[i]
		n++
	}
	rs.ids, rs.routes = rs.ids[:n], rs.routes[:n]
}

func quickSort(ids []uint64, routes []uint16, depth int) {
	for len(ids) > 12 {
		if depth == 0 {
			heapSort(ids, routes)
			return
		}
		depth--
		p := partition(ids, routes)
		// The shorter part first, by recursion, the longer in the loop:
		// the stack is at most log₂ n deep.
		if p < len(ids)-p {
			quickSort(ids[:p], routes[:p], depth)
			ids, routes = ids[p+1:], routes[p+1:]
		} else {
			quickSort(ids[p+1:], routes[p+1:], depth)
			ids, routes = ids[:p], routes[:p]
		}
	}
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && ids[j] < ids[j-1]; j-- {
			swap(ids, routes, j, j-1)
		}
	}
}

func swap(ids []uint64, routes []uint16, i, j int) {
	ids[i], ids[j] = ids[j], ids[i]
	routes[i], routes[j] = routes[j], routes[i]
}

// partition moves the median of the first, middle and last ids to the
// front, partitions the rest around it, and returns its final index:
// the ids before it are not greater, those after not less.
func partition(ids []uint64, routes []uint16) int {
	n := len(ids)
	a, b, c := 0, n/2, n-1
	if ids[b] < ids[a] {
		a, b = b, a
	}
	if ids[c] < ids[b] {
		b = c
		if ids[b] < ids[a] {
			b = a
		}
	}
	swap(ids, routes, 0, b)
	pivot := ids[0]
	i, j := 1, n-1
	for {
		for i <= j && ids[i] < pivot {
			i++
		}
		for i <= j && ids[j] > pivot {
			j--
		}
		if i >= j {
			break
		}
		swap(ids, routes, i, j)
		i++
		j--
	}
	swap(ids, routes, 0, j)
	return j
}

func heapSort(ids []uint64, routes []uint16) {
	n := len(ids)
	for i := n/2 - 1; i >= 0; i-- {
		siftDown(ids, routes, i, n)
	}
	for end := n - 1; end > 0; end-- {
		swap(ids, routes, 0, end)
		siftDown(ids, routes, 0, end)
	}
}

// siftDown moves the id at root down the heap of the first n ids.
func siftDown(ids []uint64, routes []uint16, root, n int) {
	for {
		child := 2*root + 1
		if child >= n {
			return
		}
		if child+1 < n && ids[child] < ids[child+1] {
			child++
		}
		if ids[root] >= ids[child] {
			return
		}
		swap(ids, routes, root, child)
		root = child
	}
}
