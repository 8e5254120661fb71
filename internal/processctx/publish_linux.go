//go:build linux && (amd64 || arm64)

package processctx

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"golang.org/x/sys/unix"
)

// header is the mapped header. Its Go layout on amd64 and arm64 is the C
// reference's packed struct: no padding, little-endian, 8-byte pointer.
type header struct {
	signature   [8]byte
	version     uint32
	payloadSize uint32
	publishedAt uint64
	payload     uint64
}

// anonName is the C string given to prctl. It is a global so that the
// kernel reads memory that the garbage collector neither moves nor frees.
var anonName = [...]byte{'O', 'T', 'E', 'L', '_', 'C', 'T', 'X', 0}

// memfdCreate is unix.MemfdCreate; tests replace it to take the fallback.
var memfdCreate = unix.MemfdCreate

var (
	mu sync.Mutex
	// published is the context this package published, or nil.
	published *Context
	// lastPublishedAt keeps publication times strictly increasing across
	// updates and re-publications, so that a reader remembering the last
	// time it read always sees a new publication as new.
	lastPublishedAt uint64
)

// Context is a published process context. Its methods are safe for
// concurrent use.
type Context struct {
	header  []byte // the mapping named OTEL_CTX
	payload []byte // an anonymous mapping, read-only once written
}

// Publish publishes res as the process context and returns it. It returns
// the keys of the attributes it left out to stay within MaxPayloadSize
// (see encode). It fails with ErrPublished while a context it published is
// still published, with ErrForeign when another library published one,
// and with ErrUnfindable when readers could not find the mapping.
func Publish(res *resourcepb.Resource) (*Context, []string, error) {
	payload, dropped, err := encode(res)
	if err != nil {
		return nil, nil, fmt.Errorf("processctx: encoding the resource: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if published != nil {
		return nil, nil, ErrPublished
	}
	if foreign, err := foreignMapping(); err != nil {
		return nil, nil, err
	} else if foreign {
		return nil, nil, ErrForeign
	}

	c := &Context{}
	ok := false
	defer func() {
		if !ok {
			c.unmap()
		}
	}()
	var named bool
	if c.header, named, err = mapHeader(); err != nil {
		return nil, nil, err
	}
	if c.payload, err = mapPayload(payload); err != nil {
		return nil, nil, err
	}

	h := (*header)(unsafe.Pointer(&c.header[0]))
	copy(h.signature[:], Signature)
	atomic.StoreUint32(&h.version, Version)
	atomic.StoreUint32(&h.payloadSize, uint32(len(c.payload)))
	atomic.StoreUint64(&h.payload, address(c.payload))
	// Last: a non-zero time tells readers that the header is complete.
	// Go's atomics are sequentially consistent, so no store above is seen
	// after this one.
	atomic.StoreUint64(&h.publishedAt, nextPublishedAt())

	if err := nameMapping(c.header); err != nil && !named {
		return nil, nil, ErrUnfindable
	}
	published, ok = c, true
	return c, dropped, nil
}

// Update replaces the published resource in place: readers keep the
// mapping they found and see a later publication time. It returns the
// keys of the attributes it left out, as Publish does.
func (c *Context) Update(res *resourcepb.Resource) (dropped []string, err error) {
	payload, dropped, err := encode(res)
	if err != nil {
		return nil, fmt.Errorf("processctx: encoding the resource: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if c == nil || published != c {
		return nil, errors.New("processctx: update of a withdrawn context")
	}
	mapped, err := mapPayload(payload)
	if err != nil {
		return nil, err
	}

	h := (*header)(unsafe.Pointer(&c.header[0]))
	// A zero time tells readers that the header is changing; one who
	// read the old payload sees the time change and reads again.
	atomic.StoreUint64(&h.publishedAt, 0)
	atomic.StoreUint32(&h.payloadSize, uint32(len(mapped)))
	atomic.StoreUint64(&h.payload, address(mapped))
	atomic.StoreUint64(&h.publishedAt, nextPublishedAt())
	// The eBPF profiler hooks prctl to learn of publications, so the call
	// is made again even where naming fails.
	_ = nameMapping(c.header)

	old := c.payload
	c.payload = mapped
	// A reader still copying the old payload gets an error or the old
	// bytes, and in both cases a changed time on its second look.
	_ = unix.Munmap(old)
	return dropped, nil
}

// Withdraw unmaps the header and the payload, as the C reference does: the
// mapping disappears from /proc/<pid>/maps, and a reader that kept its
// address fails to read it. Withdrawing twice, or a nil Context, does
// nothing.
func (c *Context) Withdraw() error {
	mu.Lock()
	defer mu.Unlock()
	if c == nil || published != c {
		return nil
	}
	published = nil
	return c.unmap()
}

func (c *Context) unmap() error {
	var errs []error
	if c.header != nil {
		errs = append(errs, unix.Munmap(c.header))
		c.header = nil
	}
	if c.payload != nil {
		errs = append(errs, unix.Munmap(c.payload))
		c.payload = nil
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("processctx: unmapping: %w", err)
	}
	return nil
}

// mapHeader maps HeaderSize bytes from a memfd named OTEL_CTX, so that the
// mapping shows as /memfd:OTEL_CTX even where anonymous mappings cannot be
// named, or from anonymous memory where memfd_create is refused (seccomp,
// an old kernel). named reports a memfd mapping.
func mapHeader() (mapped []byte, named bool, err error) {
	fd, err := memfdCreate(Signature, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_NOEXEC_SEAL)
	if err != nil {
		// Kernels before 6.3 refuse the flag they do not know.
		fd, err = memfdCreate(Signature, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err == nil {
		defer unix.Close(fd) // the mapping keeps the file
		if err := unix.Ftruncate(fd, HeaderSize); err != nil {
			return nil, false, fmt.Errorf("processctx: sizing the memfd: %w", err)
		}
		mapped, err = unix.Mmap(fd, 0, HeaderSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
		named = err == nil
	}
	if !named {
		mapped, err = unix.Mmap(-1, 0, HeaderSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return nil, false, fmt.Errorf("processctx: mapping the header: %w", err)
		}
	}
	if err := dontFork(mapped); err != nil {
		return nil, false, err
	}
	return mapped, named, nil
}

// mapPayload copies payload into an anonymous mapping, read-only from then
// on: the bytes a reader follows the header's pointer to never change.
func mapPayload(payload []byte) ([]byte, error) {
	mapped, err := unix.Mmap(-1, 0, len(payload), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("processctx: mapping the payload: %w", err)
	}
	copy(mapped, payload)
	if err := unix.Mprotect(mapped, unix.PROT_READ); err != nil {
		unix.Munmap(mapped)
		return nil, fmt.Errorf("processctx: protecting the payload: %w", err)
	}
	if err := dontFork(mapped); err != nil {
		unix.Munmap(mapped)
		return nil, err
	}
	return mapped, nil
}

// dontFork keeps a forked child from inheriting the context: the child is
// another process, and its own SDK publishes its own context.
func dontFork(mapped []byte) error {
	if err := unix.Madvise(mapped, unix.MADV_DONTFORK); err != nil {
		return fmt.Errorf("processctx: madvise(MADV_DONTFORK): %w", err)
	}
	return nil
}

// nameMapping names the header's mapping OTEL_CTX. Naming needs Linux 5.17
// with CONFIG_ANON_VMA_NAME; it is attempted regardless, because the eBPF
// profiler watches the prctl call itself.
func nameMapping(mapped []byte) error {
	return unix.Prctl(unix.PR_SET_VMA, unix.PR_SET_VMA_ANON_NAME,
		uintptr(address(mapped)), uintptr(len(mapped)), uintptr(unsafe.Pointer(&anonName[0])))
}

// nextPublishedAt returns CLOCK_BOOTTIME in nanoseconds, the clock of the
// eBPF profiler's reader, made strictly later than the previous
// publication. The caller holds mu.
func nextPublishedAt() uint64 {
	var ts unix.Timespec
	var now uint64
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) == nil {
		now = uint64(ts.Nano())
	}
	if now <= lastPublishedAt {
		now = lastPublishedAt + 1
	}
	lastPublishedAt = now
	return now
}

func address(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }

// foreignMapping reports whether /proc/self/maps holds a context mapping.
// The caller holds mu and has none published.
func foreignMapping() (bool, error) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return false, fmt.Errorf("processctx: %w", err)
	}
	for line := range bytes.Lines(maps) {
		if IsContextMapping(line) {
			return true, nil
		}
	}
	return false, nil
}
