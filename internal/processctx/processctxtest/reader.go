// Package processctxtest reads a process context from outside, as the
// eBPF profiler does: the header's mapping from /proc/<pid>/maps, the
// header and the payload from /proc/<pid>/mem, with the publication time
// read before and after, and the payload decoded. Tests use it to check
// what a reader gets, independently of how processctx writes it.
package processctxtest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/processctx"
)

// ErrNotFound: /proc/<pid>/maps holds no context mapping.
var ErrNotFound = errors.New("processctxtest: no OTEL_CTX mapping")

// ErrConcurrentUpdate: the publication time was zero or changed during
// the read; the eBPF profiler reads again.
var ErrConcurrentUpdate = errors.New("processctxtest: the context changed while read")

// Context is what a reader gets.
type Context struct {
	Mappings        int    // context mappings in /proc/<pid>/maps
	Address         uint64 // of the header
	PublishedAt     uint64 // CLOCK_BOOTTIME nanoseconds
	PayloadSize     uint32
	Resource        *resourcepb.Resource
	ExtraAttributes []*commonpb.KeyValue
}

// Read reads the context of process pid once. It returns ErrNotFound when
// there is none and ErrConcurrentUpdate when it changed under the read.
func Read(pid int) (Context, error) {
	addrs, err := mappings(pid)
	if err != nil {
		return Context{}, err
	}
	if len(addrs) == 0 {
		return Context{}, ErrNotFound
	}
	mem, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		return Context{}, err
	}
	defer mem.Close()

	c := Context{Mappings: len(addrs), Address: addrs[0]}
	publishedAt, err := readUint64(mem, c.Address+processctx.OffsetPublishedAt)
	if err != nil {
		return Context{}, err
	}
	if publishedAt == 0 {
		return Context{}, ErrConcurrentUpdate
	}
	var hdr [processctx.HeaderSize]byte
	if _, err := mem.ReadAt(hdr[:], int64(c.Address)); err != nil {
		return Context{}, fmt.Errorf("processctxtest: reading the header: %w", err)
	}
	if err := checkHeader(hdr[:]); err != nil {
		// The header found in the maps may have been unmapped since, and
		// its address given to another mapping (a payload): then the
		// read is of a changed context, not of a bad header.
		if changed(pid, mem, c.Address, publishedAt) {
			return Context{}, ErrConcurrentUpdate
		}
		return Context{}, err
	}
	c.PayloadSize = binary.LittleEndian.Uint32(hdr[processctx.OffsetPayloadSize:])
	payload := make([]byte, c.PayloadSize)
	// An error here may come from an update that unmapped the payload,
	// so the time decides first.
	_, payloadErr := mem.ReadAt(payload, int64(binary.LittleEndian.Uint64(hdr[processctx.OffsetPayload:])))
	again, err := readUint64(mem, c.Address+processctx.OffsetPublishedAt)
	if err != nil {
		return Context{}, err
	}
	if again != publishedAt || binary.LittleEndian.Uint64(hdr[processctx.OffsetPublishedAt:]) != publishedAt {
		return Context{}, ErrConcurrentUpdate
	}
	if payloadErr != nil {
		return Context{}, fmt.Errorf("processctxtest: reading the payload: %w", payloadErr)
	}
	c.PublishedAt = publishedAt
	c.Resource, c.ExtraAttributes, err = decode(payload)
	return c, err
}

// checkHeader checks a header's signature, version and payload size.
func checkHeader(hdr []byte) error {
	if string(hdr[:8]) != processctx.Signature {
		return fmt.Errorf("processctxtest: signature %q", hdr[:8])
	}
	if v := binary.LittleEndian.Uint32(hdr[processctx.OffsetVersion:]); v != processctx.Version {
		return fmt.Errorf("processctxtest: version %d", v)
	}
	if n := binary.LittleEndian.Uint32(hdr[processctx.OffsetPayloadSize:]); n == 0 || n > processctx.MaxPayloadSize {
		return fmt.Errorf("processctxtest: payload size %d", n)
	}
	return nil
}

// changed reports whether the context header at addr, whose publication
// time was publishedAt, is no longer the one pid's maps list there; mem
// is pid's memory.
func changed(pid int, mem *os.File, addr, publishedAt uint64) bool {
	addrs, err := mappings(pid)
	if err != nil || !slices.Contains(addrs, addr) {
		return true
	}
	now, err := readUint64(mem, addr+processctx.OffsetPublishedAt)
	return err != nil || now != publishedAt
}

// mappings returns the start addresses of the context mappings of pid.
func mappings(pid int) ([]uint64, error) {
	maps, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return nil, err
	}
	var addrs []uint64
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		if !processctx.IsContextMapping(sc.Bytes()) {
			continue
		}
		start, _, _ := bytes.Cut(sc.Bytes(), []byte("-"))
		addr, err := strconv.ParseUint(string(start), 16, 64)
		if err != nil {
			return nil, fmt.Errorf("processctxtest: maps line %q: %w", sc.Text(), err)
		}
		addrs = append(addrs, addr)
	}
	return addrs, sc.Err()
}

func readUint64(mem *os.File, addr uint64) (uint64, error) {
	var b [8]byte
	if _, err := mem.ReadAt(b[:], int64(addr)); err != nil {
		return 0, fmt.Errorf("processctxtest: reading the publication time: %w", err)
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// decode decodes ProcessContext{resource = 1, extra_attributes = 2}
// field by field, as the module with its generated type is not at hand.
func decode(payload []byte) (*resourcepb.Resource, []*commonpb.KeyValue, error) {
	res := new(resourcepb.Resource)
	var extra []*commonpb.KeyValue
	for len(payload) > 0 {
		num, typ, n := protowire.ConsumeTag(payload)
		if n < 0 {
			return nil, nil, protowire.ParseError(n)
		}
		payload = payload[n:]
		if typ != protowire.BytesType || (num != 1 && num != 2) {
			n = protowire.ConsumeFieldValue(num, typ, payload)
			if n < 0 {
				return nil, nil, protowire.ParseError(n)
			}
			payload = payload[n:]
			continue
		}
		field, n := protowire.ConsumeBytes(payload)
		if n < 0 {
			return nil, nil, protowire.ParseError(n)
		}
		payload = payload[n:]
		if num == 1 {
			// Repeated occurrences of a message field merge.
			if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(field, res); err != nil {
				return nil, nil, fmt.Errorf("processctxtest: resource: %w", err)
			}
			continue
		}
		kv := new(commonpb.KeyValue)
		if err := proto.Unmarshal(field, kv); err != nil {
			return nil, nil, fmt.Errorf("processctxtest: extra attribute: %w", err)
		}
		extra = append(extra, kv)
	}
	return res, extra, nil
}
