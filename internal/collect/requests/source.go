package requests

import "slices"

// source is what a window holds for one profile whose samples name
// local roots and that tells which (Config.Parts, Config.Stretches): the
// roots kept until it tells whether its samples named them, and the roots
// it named.
type source struct {
	// pending holds the roots kept for the source's verdict, in the order
	// the sweeps took them; swept says, for each sweep that added some,
	// how many and when it had looked: those roots ended by then.
	pending roots
	swept   []sweptRoots
	// carried is the number of pending's first roots carried from the
	// window before: forgotten at this window's end if still pending.
	carried int
	// named holds the roots the source named in this window, prevNamed
	// those it named in the window before, sorted: a sample read just
	// before a window's end may be told just after it.
	named, prevNamed []uint64
	// through is the time up to which the source read every sample,
	// Unix nanoseconds.
	through int64
	// remembered counts the roots remembered for the source's samples.
	remembered int
}

// sweptRoots are n roots a sweep kept pending, which ended by at (Unix
// nanoseconds).
type sweptRoots struct {
	n  int
	at int64
}

// sweptBy marks the roots kept pending since the last call as ended by
// at.
func (s *source) sweptBy(at int64) {
	n := s.pending.len()
	for _, r := range s.swept {
		n -= r.n
	}
	if n > 0 {
		s.swept = append(s.swept, sweptRoots{n: n, at: at})
	}
}

// hear takes in what src told since the last sweep: the roots it named,
// and how far it read.
func (s *source) hear(named []uint64, through int64) {
	if len(named) > 0 {
		s.named = mergeSorted(s.named, named)
	}
	s.through = max(s.through, through)
}

// names reports whether the source named root id in this window or the
// one before.
func (s *source) names(id uint64) bool {
	_, ok := slices.BinarySearch(s.named, id)
	if !ok {
		_, ok = slices.BinarySearch(s.prevNamed, id)
	}
	return ok
}

// due returns the number of pending's first roots that ended by the time
// the source read to: its verdict on them is in.
func (s *source) due() int {
	n := 0
	for _, r := range s.swept {
		if r.at > s.through {
			break
		}
		n += r.n
	}
	return n
}

// next returns the source of the window after s's: the named roots and
// the time read to go on, the roots pending are to be carried into it.
func (s *source) next() source {
	return source{prevNamed: s.named, through: s.through}
}

// drop removes pending's first n roots, and their sweeps.
func (s *source) drop(n int) {
	s.pending.ids = append(s.pending.ids[:0], s.pending.ids[n:]...)
	s.pending.routes = append(s.pending.routes[:0], s.pending.routes[n:]...)
	s.carried = max(s.carried-n, 0)
	for n > 0 {
		if s.swept[0].n > n {
			s.swept[0].n -= n
			break
		}
		n -= s.swept[0].n
		s.swept = s.swept[1:]
	}
}

// mergeSorted merges b into a, both sorted and without repeats, in a's
// memory grown by b's length, and returns the result, sorted and without
// repeats: the window's ids grow by a part's at a time, which a sort of
// the whole would go through again at every part.
func mergeSorted(a, b []uint64) []uint64 {
	n := len(a)
	a = append(a, b...)
	i, j, k := n-1, len(b)-1, len(a)-1
	for j >= 0 {
		if i >= 0 && a[i] > b[j] {
			a[k] = a[i]
			i--
		} else {
			a[k] = b[j]
			j--
		}
		k--
	}
	return slices.Compact(a)
}
