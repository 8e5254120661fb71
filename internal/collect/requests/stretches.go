package requests

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Stretches tells a Tracker when a profile whose samples name local roots
// by their labels records, and which roots its samples named: the CPU
// profile and the execution trace the off-CPU profile is read from. A root
// that ended, and whose whole life lay outside every stretch, is named by
// no sample but those of goroutines that outlive it: the goroutine
// profiles, read at a window's end, name the roots running then, which the
// Tracker follows, and the heap, mutex and block profiles carry no labels.
// So the Tracker need not remember it; nor one that a stretch overlapped
// and whose samples, once read and told (Named), do not name it.
//
// Begin, End and Cancel cost an atomic add; the Tracker reads them in its
// sweep, never on the request path. Its methods are safe for concurrent
// use; the zero value is ready, with no stretch begun, and on a nil
// Stretches they do nothing.
type Stretches struct {
	// word holds the stretches begun so far above stretchOpenBits and
	// those running in the low bits: one atomic word, read at once.
	word atomic.Uint64

	// listening is set while a Tracker takes what Named tells.
	listening atomic.Bool
	// mu guards what Named told and the Tracker's sweep has not taken:
	// the roots named, the time up to which every sample was read (Unix
	// nanoseconds), and the roots left out for want of room.
	mu      sync.Mutex
	named   []uint64
	through int64
	lost    int64
}

// maxTold bounds the root ids told and not yet taken by a sweep, 8 bytes
// each. A sweep takes them every 100 ms while requests run; a window of
// the off-CPU profile names at most 50,000, and a part of the CPU profile
// at most its samples.
const maxTold = 1 << 17

// Named tells the local root span ids, in hex and in any order, that the
// stretches' samples read since the last call name, and that every sample
// taken up to through has been read: a root that ended by then, and that
// none of its window's samples named, is named by none. Ids that are not
// span ids are ignored; one told twice counts once. It does nothing while
// no Tracker listens.
func (s *Stretches) Named(rootIDs []string, through time.Time) {
	if s == nil || !s.listening.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range rootIDs {
		k, ok := rootKey(id)
		switch {
		case !ok:
		case len(s.named) >= maxTold:
			s.lost++
		default:
			s.named = append(s.named, k)
		}
	}
	s.through = max(s.through, through.UnixNano())
}

// take returns what Named told since the last take: the roots named,
// sorted and without repeats, the time up to which every sample was
// read, and the number of roots left out.
func (s *Stretches) take() (named []uint64, through, lost int64) {
	if s == nil {
		return nil, 0, 0
	}
	s.mu.Lock()
	named, through, lost = s.named, s.through, s.lost
	s.named, s.lost = nil, 0
	s.mu.Unlock()
	slices.Sort(named)
	return slices.Compact(named), through, lost
}

// listen has s keep what Named tells for a Tracker, or not.
func (s *Stretches) listen(on bool) {
	if s != nil {
		s.listening.Store(on)
	}
}

// Begin tells of a stretch that starts recording: it is called before
// the first sample can be taken.
func (s *Stretches) Begin() {
	if s != nil {
		s.word.Add(1<<stretchOpenBits | 1)
	}
}

// End tells of the end of a stretch that Begin told of: it is called once
// no sample can be taken any more.
func (s *Stretches) End() {
	if s != nil {
		s.word.Add(^uint64(0))
	}
}

// Cancel takes back a Begin whose stretch did not start (the profiler
// was someone else's): no sample was taken in it.
func (s *Stretches) Cancel() {
	if s != nil {
		s.word.Add(^uint64(1<<stretchOpenBits|1) + 1)
	}
}

const (
	stretchOpenBits = 16
	// markOpen is set in a mark taken while a stretch ran; the other
	// bits count the stretches begun, modulo 2^15. The count comes round
	// after 32,768 stretches: at the CPU profile's quickest, a part every
	// 100 ms, in 55 minutes. A request followed that long (MaxAge is an
	// hour by default) whose mark fell between two parts, a few
	// milliseconds each, may then be taken for one that no part overlapped.
	markOpen = 1 << 15
)

// marks are the marks of a Tracker's Stretches and Parts: 16 bits each,
// so that a Request takes no more memory for having two.
type marks struct{ stretches, parts uint16 }

// mark returns the state of s now, for overlaps: markOpen for a nil
// Stretches, which knows no stretch, so that every root overlaps one.
func (s *Stretches) mark() uint16 {
	if s == nil {
		return markOpen
	}
	w := s.word.Load()
	m := uint16(w>>stretchOpenBits) &^ markOpen
	if w&(1<<stretchOpenBits-1) != 0 {
		m |= markOpen
	}
	return m
}

// within reports whether one stretch ran, unbroken, from mark's time to
// now: it ran then, and no stretch ended or began since.
func (s *Stretches) within(mark uint16) bool {
	return s != nil && mark&markOpen != 0 && s.mark() == mark
}

// overlaps reports whether a stretch ran at some time between mark's and
// now: one ran at mark's time, or one began since. It errs towards true
// only: a stretch that began after the life it is asked about ended,
// within the same sweep, counts.
func (s *Stretches) overlaps(mark uint16) bool {
	if mark&markOpen != 0 || s == nil {
		return true
	}
	return s.mark()&^markOpen != mark
}
