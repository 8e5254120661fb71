//go:build linux && (amd64 || arm64)

package processctx_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/processctx"
	"github.com/pprofotel/profiler/internal/processctx/processctxtest"
)

func testResource(service string, extra ...string) *resourcepb.Resource {
	res := &resourcepb.Resource{}
	kvs := append([]string{"service.name", service, "telemetry.sdk.language", "go"}, extra...)
	for i := 0; i < len(kvs); i += 2 {
		res.Attributes = append(res.Attributes, &commonpb.KeyValue{
			Key:   kvs[i],
			Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: kvs[i+1]}},
		})
	}
	res.Attributes = append(res.Attributes, &commonpb.KeyValue{
		Key:   "process.pid",
		Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(os.Getpid())}},
	})
	return res
}

func publish(t *testing.T, res *resourcepb.Resource) *processctx.Context {
	t.Helper()
	c, dropped, err := processctx.Publish(res)
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) > 0 {
		t.Fatalf("dropped %v from a small resource", dropped)
	}
	t.Cleanup(func() { c.Withdraw() })
	return c
}

// read reads the context as the eBPF profiler does, retrying only a read
// that an update of this test could not have caused: none.
func read(t *testing.T) processctxtest.Context {
	t.Helper()
	got, err := processctxtest.Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// mapsLine returns the line of /proc/self/maps of the mapping holding addr
// and its VmFlags from /proc/self/smaps, or "" when nothing maps addr.
func mapsLine(t *testing.T, addr uint64) (line, vmFlags string) {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	inside := false
	for sc.Scan() {
		text := sc.Text()
		if lo, hi, ok := addressRange(text); ok {
			if inside {
				return line, ""
			}
			inside = lo <= addr && addr < hi
			if inside {
				line = text
			}
			continue
		}
		if inside && strings.HasPrefix(text, "VmFlags:") {
			return line, strings.TrimPrefix(text, "VmFlags:")
		}
	}
	return line, ""
}

func addressRange(line string) (lo, hi uint64, ok bool) {
	r, _, _ := strings.Cut(line, " ")
	a, b, found := strings.Cut(r, "-")
	if !found {
		return 0, 0, false
	}
	lo, err1 := strconv.ParseUint(a, 16, 64)
	hi, err2 := strconv.ParseUint(b, 16, 64)
	return lo, hi, err1 == nil && err2 == nil
}

func payloadAddress(t *testing.T, header uint64) uint64 {
	t.Helper()
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	var b [8]byte
	if _, err := mem.ReadAt(b[:], int64(header+processctx.OffsetPayload)); err != nil {
		t.Fatal(err)
	}
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

func TestPublishedContextReadsBack(t *testing.T) {
	want := testResource("checkout", "deployment.environment.name", "prod")
	publish(t, want)

	got := read(t)
	if !proto.Equal(got.Resource, want) {
		t.Errorf("resource read back\n%v\nwant\n%v", got.Resource, want)
	}
	if got.Mappings != 1 {
		t.Errorf("%d context mappings in /proc/self/maps, want 1", got.Mappings)
	}
	if len(got.ExtraAttributes) != 1 || got.ExtraAttributes[0].GetKey() != processctx.SchemaVersionKey ||
		got.ExtraAttributes[0].GetValue().GetStringValue() != processctx.SchemaVersionGo {
		t.Errorf("attributes %v, want only %s=%s", got.ExtraAttributes, processctx.SchemaVersionKey, processctx.SchemaVersionGo)
	}

	// This kernel lacks CONFIG_ANON_VMA_NAME, so the memfd's name is what
	// a reader finds; a kernel with it shows the prctl name instead.
	line, flags := mapsLine(t, got.Address)
	if !strings.Contains(line, processctx.MappingMemfd) && !strings.Contains(line, processctx.MappingMemfdNamed) {
		t.Errorf("header mapping %q, want %s or %s", line, processctx.MappingMemfd, processctx.MappingMemfdNamed)
	}
	if !strings.Contains(flags, " dc") {
		t.Errorf("header mapping VmFlags %q lack dc (MADV_DONTFORK)", flags)
	}
	pline, pflags := mapsLine(t, payloadAddress(t, got.Address))
	if f := strings.Fields(pline); len(f) < 2 || f[1] != "r--p" {
		t.Errorf("payload mapping %q, want private and read-only", pline)
	}
	if !strings.Contains(pflags, " dc") {
		t.Errorf("payload mapping VmFlags %q lack dc (MADV_DONTFORK)", pflags)
	}
}

func TestUpdateIsInPlaceAndLater(t *testing.T) {
	c := publish(t, testResource("before"))
	first := read(t)

	want := testResource("after", "service.version", "2")
	if _, err := c.Update(want); err != nil {
		t.Fatal(err)
	}
	second := read(t)
	if !proto.Equal(second.Resource, want) {
		t.Errorf("resource after update\n%v\nwant\n%v", second.Resource, want)
	}
	if second.Address != first.Address {
		t.Errorf("header moved from %#x to %#x: readers keep the address they found", first.Address, second.Address)
	}
	if second.PublishedAt <= first.PublishedAt {
		t.Errorf("publication time %d after update, not later than %d", second.PublishedAt, first.PublishedAt)
	}
	if line, _ := mapsLine(t, payloadAddress(t, first.Address)); line == "" {
		t.Error("the new payload is not mapped")
	}
}

func TestWithdrawLeavesNothing(t *testing.T) {
	c := publish(t, testResource("gone"))
	got := read(t)
	payload := payloadAddress(t, got.Address)
	addrs := map[string]uint64{"header": got.Address, "payload": payload}
	ours := make(map[string]string, len(addrs))
	for name, addr := range addrs {
		if ours[name], _ = mapsLine(t, addr); ours[name] == "" {
			t.Fatalf("the %s at %#x is not mapped before Withdraw", name, addr)
		}
	}

	if err := c.Withdraw(); err != nil {
		t.Fatal(err)
	}
	if _, err := processctxtest.Read(os.Getpid()); !errors.Is(err, processctxtest.ErrNotFound) {
		t.Errorf("read after Withdraw: %v, want %v", err, processctxtest.ErrNotFound)
	}
	// Once unmapped, the range is free: the runtime or another test may map
	// it again at once (an anonymous rw-p heap mapping was seen). What must
	// be gone is our mapping, the line maps showed for it.
	for name, addr := range addrs {
		if line, _ := mapsLine(t, addr); line != "" && line == ours[name] {
			t.Errorf("the %s at %#x is still mapped after Withdraw: %s", name, addr, line)
		}
	}
	if err := c.Withdraw(); err != nil {
		t.Errorf("second Withdraw: %v", err)
	}
	if err := (*processctx.Context)(nil).Withdraw(); err != nil {
		t.Errorf("Withdraw of nil: %v", err)
	}
	if _, err := c.Update(testResource("again")); err == nil {
		t.Error("Update of a withdrawn context succeeded")
	}
}

func TestRepublicationIsLater(t *testing.T) {
	c := publish(t, testResource("one"))
	first := read(t)
	if err := c.Withdraw(); err != nil {
		t.Fatal(err)
	}
	publish(t, testResource("two"))
	second := read(t)
	if second.PublishedAt <= first.PublishedAt {
		t.Errorf("re-publication at %d, not later than %d", second.PublishedAt, first.PublishedAt)
	}
}

// TestHugeResourceIsReadable publishes a resource over the reader's limit:
// the reader must accept what is published, with the huge value left out
// and counted.
func TestHugeResourceIsReadable(t *testing.T) {
	res := testResource("huge", "process.command_args", strings.Repeat("a", 100<<10))
	c, dropped, err := processctx.Publish(res)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Withdraw()
	if !slices.Equal(dropped, []string{"process.command_args"}) {
		t.Errorf("dropped %v, want [process.command_args]", dropped)
	}
	got := read(t)
	want := testResource("huge")
	want.DroppedAttributesCount = 1
	if !proto.Equal(got.Resource, want) {
		t.Errorf("resource read back\n%v\nwant\n%v", got.Resource, want)
	}
}

func TestOneContextPerProcess(t *testing.T) {
	publish(t, testResource("first"))
	if _, _, err := processctx.Publish(testResource("second")); !errors.Is(err, processctx.ErrPublished) {
		t.Errorf("second Publish: %v, want %v", err, processctx.ErrPublished)
	}
	if got := read(t); got.Mappings != 1 {
		t.Errorf("%d context mappings, want 1", got.Mappings)
	}
}

// TestForeignContextIsLeftAlone maps what another library's publisher
// would, and checks that Publish does not add a second context.
func TestForeignContextIsLeftAlone(t *testing.T) {
	fd, err := unix.MemfdCreate(processctx.Signature, unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, processctx.HeaderSize); err != nil {
		t.Fatal(err)
	}
	foreign, err := unix.Mmap(fd, 0, processctx.HeaderSize, unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(foreign)

	if c, _, err := processctx.Publish(testResource("mine")); !errors.Is(err, processctx.ErrForeign) {
		c.Withdraw()
		t.Fatalf("Publish beside a foreign context: %v, want %v", err, processctx.ErrForeign)
	}
}

// TestAnonymousFallback refuses memfd_create, as a seccomp policy may. The
// anonymous mapping is found only when the kernel names it; where it
// cannot (this machine), Publish must say so and leave nothing behind.
func TestAnonymousFallback(t *testing.T) {
	processctx.SetMemfdCreate(t, func(string, int) (int, error) { return -1, unix.EPERM })

	want := testResource("anonymous")
	c, _, err := processctx.Publish(want)
	if errors.Is(err, processctx.ErrUnfindable) {
		t.Log("this kernel cannot name anonymous mappings:", err)
		if _, err := processctxtest.Read(os.Getpid()); !errors.Is(err, processctxtest.ErrNotFound) {
			t.Errorf("read after an unfindable publication: %v, want %v", err, processctxtest.ErrNotFound)
		}
		if _, _, err := processctx.Publish(want); !errors.Is(err, processctx.ErrUnfindable) {
			t.Errorf("second attempt: %v: the failed one must not count as published", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Withdraw()
	got := read(t)
	if line, _ := mapsLine(t, got.Address); !strings.Contains(line, processctx.MappingAnonNamed) {
		t.Errorf("anonymous header mapping %q, want %s", line, processctx.MappingAnonNamed)
	}
	if !proto.Equal(got.Resource, want) {
		t.Errorf("resource %v, want %v", got.Resource, want)
	}
}

// TestReaderDuringPublications publishes, updates and withdraws over and
// over while a reader reads. Every read that succeeds must decode to one
// of the published resources, whole, at a time that never goes back.
func TestReaderDuringPublications(t *testing.T) {
	const cycles = 300
	var mu sync.Mutex
	published := make(map[string]bool)
	resource := func(i int) *resourcepb.Resource {
		name := fmt.Sprintf("service-%d", i)
		mu.Lock()
		published[name] = true
		mu.Unlock()
		// Sizes vary so that a torn read would mix lengths.
		return testResource(name, "padding", strings.Repeat("x", i%97*31))
	}

	var reads atomic.Int64
	stop := make(chan struct{})
	result := make(chan error, 1)
	go func() {
		var last uint64
		var notFound, concurrent, vanished int
		for {
			select {
			case <-stop:
				t.Logf("%d reads, %d found nothing, %d saw an update, %d saw a withdrawal",
					reads.Load(), notFound, concurrent, vanished)
				result <- nil
				return
			default:
			}
			got, err := processctxtest.Read(os.Getpid())
			switch {
			case errors.Is(err, processctxtest.ErrNotFound):
				notFound++
			case errors.Is(err, processctxtest.ErrConcurrentUpdate):
				concurrent++
			case errors.Is(err, unix.EIO):
				// Withdrawn between the maps and the mem reads: the
				// mapping is gone, as the eBPF profiler finds it.
				vanished++
			case err != nil:
				result <- err
				return
			default:
				name := got.Resource.GetAttributes()[0].GetValue().GetStringValue()
				mu.Lock()
				ok := published[name]
				mu.Unlock()
				if !ok || len(got.Resource.GetAttributes()) != 4 {
					result <- fmt.Errorf("read a resource never published: %v", got.Resource)
					return
				}
				if got.PublishedAt < last {
					result <- fmt.Errorf("publication time went back from %d to %d", last, got.PublishedAt)
					return
				}
				last = got.PublishedAt
				reads.Add(1)
			}
		}
	}()

	for i := range cycles {
		c, _, err := processctx.Publish(resource(3 * i))
		if err != nil {
			t.Fatal(err)
		}
		for j := 1; j <= 2; j++ {
			if _, err := c.Update(resource(3*i + j)); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Withdraw(); err != nil {
			t.Fatal(err)
		}
	}
	// Keep a context until the reader has read one, so that the test
	// cannot pass without a single successful read.
	publish(t, resource(3*cycles))
	for reads.Load() == 0 && len(result) == 0 {
		runtime.Gosched()
	}
	close(stop)
	if err := <-result; err != nil {
		t.Fatal(err)
	}
}

// BenchmarkPublishWithdraw measures what Start and Stop spend on the
// process context: a publication (with the scan of /proc/self/maps for a
// foreign context) and its withdrawal.
func BenchmarkPublishWithdraw(b *testing.B) {
	res := testResource("bench", "deployment.environment.name", "prod", "host.name", "h")
	b.ReportAllocs()
	for b.Loop() {
		c, _, err := processctx.Publish(res)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Withdraw(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUpdate(b *testing.B) {
	c, _, err := processctx.Publish(testResource("bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Withdraw()
	res := testResource("bench", "deployment.environment.name", "prod", "host.name", "h")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Update(res); err != nil {
			b.Fatal(err)
		}
	}
}
