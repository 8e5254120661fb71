package processctx

import (
	"bytes"
	"errors"
)

// ErrPublished is returned by Publish while a context it published is
// still published: a process has one context.
var ErrPublished = errors.New("processctx: a process context is already published; update or withdraw it")

// ErrForeign is returned by Publish when /proc/self/maps already holds an
// OTEL_CTX mapping that this package did not create: another library in
// the process publishes the context, and readers take the first mapping
// they find, so a second one would be ignored or, worse, win.
var ErrForeign = errors.New("processctx: another library of this process publishes a process context")

// ErrUnfindable is returned by Publish when neither memfd_create nor the
// naming of anonymous mappings (CONFIG_ANON_VMA_NAME) is available: the
// mapping would carry no name, and no reader could find it.
var ErrUnfindable = errors.New("processctx: neither memfd_create nor anonymous mapping names are available, so no reader could find the context")

// Mapping names under which readers look for the header in
// /proc/<pid>/maps. A memfd mapping shows as MappingMemfd (the kernel
// appends " (deleted)" since the file has no link) unless naming it
// succeeded; an anonymous mapping shows only once named.
const (
	MappingMemfd      = "/memfd:OTEL_CTX"
	MappingMemfdNamed = "[anon_shmem:OTEL_CTX]"
	MappingAnonNamed  = "[anon:OTEL_CTX]"
)

// Header layout.
const (
	Signature         = "OTEL_CTX"
	Version           = 2
	HeaderSize        = 32
	OffsetVersion     = 8
	OffsetPayloadSize = 12
	OffsetPublishedAt = 16
	OffsetPayload     = 24
)

// IsContextMapping reports whether line, one line of /proc/<pid>/maps,
// is a context header's mapping: not executable, and named as the
// publisher's memfd or named mapping would be.
func IsContextMapping(line []byte) bool {
	fields := bytes.Fields(line)
	if len(fields) < 6 || bytes.IndexByte(fields[1], 'x') >= 0 {
		return false
	}
	// The path is the rest of the line and may hold spaces, " (deleted)"
	// among them.
	path := bytes.TrimSpace(line[bytes.Index(line, fields[5]):])
	path = bytes.TrimSuffix(path, []byte(" (deleted)"))
	switch string(path) {
	case MappingMemfd, MappingMemfdNamed, MappingAnonNamed:
		return true
	}
	return false
}
