package pprofconv

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/klauspost/compress/zstd"
	"github.com/pprofotel/profiler/internal/convert/otlpjson"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Request is one OTLP profiles request and where it was read.
type Request struct {
	// Source names where the request came from: the file, followed when
	// it holds several requests by ":" and the line a JSON request starts
	// on, or by "@" and the byte offset of a length-prefixed protobuf
	// request.
	Source  string
	Request *collectorpb.ExportProfilesServiceRequest
}

// dirExtensions are the file name extensions ReadPath reads in a
// directory: the profiler's file exporter writes .pb and .json, the
// Collector's file exporter is configured with a path of the user's choice,
// commonly .json or .jsonl, and .pb for its format proto.
var dirExtensions = []string{".pb", ".json", ".jsonl"}

// MaxInputSize is the most Read reads from one input: a file, a file in a
// directory, or standard input. It is 32 times the largest request the
// profiler sends whole (4 MiB, a gRPC server's default receive limit) and
// above the 100 MB at which the Collector's file exporter rotates its file
// when rotation is configured. A larger input is refused with an error that
// names it and this limit, rather than read until memory runs out: a path
// to /dev/zero, or a file that keeps growing, ends there.
const MaxInputSize = 128 << 20

// ReadPath reads the requests in the file at path or, when path is a
// directory, in its files ending in .pb, .json or .jsonl, in name order
// (the profiler names its files so that this is the order they were
// written). Files starting with "." are skipped: the file exporter writes
// under such a name and renames the file when it is complete.
//
// In a directory, ReadPath reads regular files only, through symbolic
// links too, and refuses, with an error naming it, an entry that is a
// named pipe, a device or a socket: reading one could block forever or
// never end. A path named explicitly is read whatever it is (a pipe from
// the shell's <(...) works), up to MaxInputSize.
func ReadPath(path string) ([]Request, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return ReadFile(path)
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var out []Request
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !slices.Contains(dirExtensions, filepath.Ext(name)) {
			continue
		}
		reqs, err := readRegular(filepath.Join(path, name))
		if err != nil {
			return nil, err
		}
		out = append(out, reqs...)
	}
	return out, nil
}

// readRegular reads the requests in the file at path if it is a regular
// file, or the target of a symbolic link that is one. It looks before it
// opens, since opening a device can have effects of its own and opening a
// named pipe for reading waits for a writer; and it opens without blocking
// and checks what it opened, since the entry can be replaced in between.
func readRegular(path string) ([]Request, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, notRegular(path, info)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info, err = f.Stat(); err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, notRegular(path, info)
	}
	return readFile(f, info, path)
}

// notRegular is the error for a file in a directory that is not a regular
// file.
func notRegular(path string, info fs.FileInfo) error {
	return fmt.Errorf("%s: not a regular file (%s): refusing to read it from a directory; name it on the command line to read it", path, fileKind(info.Mode()))
}

// fileKind names the type of a file that is not a regular one.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return m.Type().String()
}

// ReadFile reads the requests in the file at path, whatever its name.
func ReadFile(path string) ([]Request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return readFile(f, info, path)
}

// readFile reads the open file f, described by info, refusing a regular
// file longer than MaxInputSize before reading any of it.
func readFile(f *os.File, info fs.FileInfo, path string) ([]Request, error) {
	if info.Mode().IsRegular() && info.Size() > MaxInputSize {
		return nil, tooLong(path)
	}
	return Read(f, path)
}

// tooLong is the error for an input longer than MaxInputSize.
func tooLong(source string) error {
	return fmt.Errorf("%s: longer than %d MiB, the most pprofotel reads from one input: split it into smaller files", source, MaxInputSize>>20)
}

// Read reads OTLP profiles requests from r, naming source in errors and in
// the Source of each request. The format is told by the content:
//
//   - Input starting with "{" is OTLP/JSON: one request, indented or not,
//     or several, one per line, as the Collector's file exporter writes
//     them with format json.
//   - Input starting with a byte below 8 is a stream of protobuf-encoded
//     requests, each preceded by its length in 4 bytes, a big-endian
//     uint32, as the Collector's file exporter writes them with format
//     proto. A protobuf message cannot start with such a byte: it would
//     be a field number 0. A request compressed with zstd, as the file
//     exporter writes it with compression zstd, is decompressed, and so is
//     a whole input compressed with zstd (the file exporter's
//     exporter.file.nativeCompression feature gate).
//   - Other input is one protobuf-encoded request, as the profiler's file
//     exporter writes it.
//
// Read returns an error naming source and what is wrong when the input is
// not OTLP profiles, is truncated, was written for another version of the
// OTLP profiles protocol than v1development, or is longer than
// MaxInputSize, compressed or decompressed.
func Read(r io.Reader, source string) ([]Request, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInputSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if len(data) > MaxInputSize {
		return nil, tooLong(source)
	}
	if bytes.HasPrefix(data, zstdMagic) {
		// The decompressed input is bound as the input is.
		if data, err = unzstd(data, MaxInputSize); err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		if bytes.HasPrefix(data, zstdMagic) {
			return nil, fmt.Errorf("%s: compressed with zstd twice: not what a Collector writes", source)
		}
	}
	return readData(data, source, MaxInputSize-len(data))
}

// readData reads the requests in data, of any format Read reads except a
// whole input compressed with zstd. The requests of a length-prefixed stream
// may be compressed one by one, to at most inflate bytes in all.
func readData(data []byte, source string, inflate int) ([]Request, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	switch {
	case len(trimmed) == 0:
		return nil, fmt.Errorf("%s: empty: not an OTLP profiles request", source)
	case bytes.HasPrefix(data, []byte{0x1f, 0x8b}):
		return nil, fmt.Errorf("%s: gzip-compressed, as pprof profiles are; want an OTLP profiles request (protobuf or OTLP/JSON)", source)
	case trimmed[0] == '{':
		return readJSON(data, source)
	case data[0] < 8:
		return readLengthPrefixed(data, source, inflate)
	}
	req, err := readProtobuf(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return []Request{{Source: source, Request: req}}, nil
}

// readProtobuf decodes and checks one protobuf-encoded request.
func readProtobuf(data []byte) (*collectorpb.ExportProfilesServiceRequest, error) {
	req := new(collectorpb.ExportProfilesServiceRequest)
	if err := proto.Unmarshal(data, req); err != nil {
		return nil, fmt.Errorf("not an OTLP profiles request in protobuf, or truncated: %w", err)
	}
	if err := checkRequest(req, true); err != nil {
		return nil, err
	}
	return req, nil
}

// lengthPrefix is the size of the length that precedes each request in the
// protobuf output of the Collector's file exporter.
const lengthPrefix = 4

// readLengthPrefixed reads a stream of protobuf-encoded requests, each
// preceded by its length, a big-endian uint32, as the Collector's file
// exporter writes them with format proto; each may be compressed with zstd,
// and then be OTLP/JSON (format json with compression zstd), to at most
// inflate bytes in all. A request of zero bytes is an empty one and holds
// nothing to read. A length longer than the data that follows it is
// refused: the exporter may be in the middle of a request, or the data is
// not such a stream.
func readLengthPrefixed(data []byte, source string, inflate int) ([]Request, error) {
	var out []Request
	for off := 0; off < len(data); {
		where := fmt.Sprintf("%s@%d", source, off)
		rest := data[off:]
		if len(rest) < lengthPrefix {
			return nil, fmt.Errorf("%s: truncated: %d bytes at offset %d where a %d-byte request length should be", where, len(rest), off, lengthPrefix)
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[lengthPrefix:]
		if uint64(n) > uint64(len(rest)) {
			return nil, fmt.Errorf("%s: truncated, or not the length-prefixed protobuf of a Collector's file exporter: the length at offset %d says %d bytes, %d follow", where, off, n, len(rest))
		}
		msg := rest[:n]
		off += lengthPrefix + int(n)
		if n == 0 {
			continue
		}
		if bytes.HasPrefix(msg, zstdMagic) {
			var err error
			if msg, err = unzstd(msg, inflate); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			inflate -= len(msg)
			if t := bytes.TrimLeft(msg, " \t\r\n"); len(t) > 0 && t[0] == '{' {
				reqs, err := readJSON(msg, where)
				if err != nil {
					return nil, err
				}
				out = append(out, reqs...)
				continue
			}
		}
		req, err := readProtobuf(msg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		out = append(out, Request{Source: where, Request: req})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: holds only empty requests: no OTLP profiles to read", source)
	}
	if len(out) == 1 {
		out[0].Source = source
	}
	return out, nil
}

// maxZstdWindow is the largest zstd window unzstd accepts: what the
// Collector's encoder (klauspost/compress) uses at every level, and the zstd
// command at every level short of --ultra and --long. The decoder allocates
// a frame's window before it decompresses a byte, so a few bytes of input
// that declared a larger one would cost that much memory.
const maxZstdWindow = 8 << 20

// zstdMagic starts every zstd frame.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// unzstd decompresses data, compressed with zstd, into at most limit bytes.
// It decompresses as a stream, so that the memory it takes follows what it
// decompresses, whatever the frames say of their size.
func unzstd(data []byte, limit int) ([]byte, error) {
	tooLong := fmt.Errorf("compressed with zstd, and longer decompressed than %d MiB, the most pprofotel reads from one input: split it into smaller files", MaxInputSize>>20)
	if limit <= 0 {
		return nil, tooLong
	}
	dec, err := zstd.NewReader(bytes.NewReader(data), zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(uint64(limit)), zstd.WithDecoderMaxWindow(maxZstdWindow))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	// Decompressed in chunks, joined once the size is known: growing one
	// slice would allocate several times what is decompressed (5 times
	// with io.ReadAll). The chunks grow with what was decompressed, from
	// 64 KiB to 1 MiB, so that a small request takes a small chunk.
	var chunks [][]byte
	n := 0
	for err == nil && n <= limit {
		chunk := make([]byte, min(limit+1-n, max(64<<10, min(n, 1<<20))))
		k := 0
		for k < len(chunk) && err == nil {
			var m int
			m, err = dec.Read(chunk[k:])
			k += m
		}
		chunks = append(chunks, chunk[:k])
		n += k
	}
	if errors.Is(err, zstd.ErrWindowSizeExceeded) && limit >= maxZstdWindow {
		return nil, fmt.Errorf("compressed with zstd with a window over %d MiB, which no Collector writes: decompress it first (zstd -d)", maxZstdWindow>>20)
	}
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) || n > limit {
		return nil, tooLong
	}
	if err != io.EOF {
		return nil, fmt.Errorf("compressed with zstd, and cannot be decompressed: %w", err)
	}
	return bytes.Join(chunks, nil), nil
}

// readJSON reads a stream of OTLP/JSON requests. A request that does not end
// before the data does is reported as truncated: the Collector's file
// exporter may be in the middle of a line.
func readJSON(data []byte, source string) ([]Request, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []Request
	for {
		start := dec.InputOffset()
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			break
		}
		// The line of the value, not of the whitespace before it.
		start += int64(len(data[start:]) - len(bytes.TrimLeft(data[start:], " \t\r\n")))
		where := fmt.Sprintf("%s:%d", source, 1+bytes.Count(data[:start], []byte{'\n'}))
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%s: truncated: the JSON ends before the request does", where)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: not OTLP/JSON: %w", where, err)
		}
		req, err := otlpjson.Unmarshal(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: not an OTLP profiles request: %w", where, err)
		}
		if err := checkRequest(req, false); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		out = append(out, Request{Source: where, Request: req})
	}
	if len(out) == 1 {
		out[0].Source = source
	}
	return out, nil
}

// checkRequest tells a request of another protocol version, or data that
// only happens to decode, from an OTLP profiles v1development request.
// Protobuf decoding keeps fields it does not know, which an older or newer
// version of the protocol has; OTLP/JSON decoding drops them, so a JSON
// request of another version shows as profiles without a dictionary.
func checkRequest(req *collectorpb.ExportProfilesServiceRequest, binary bool) error {
	if len(req.GetResourceProfiles()) == 0 {
		return errors.New("holds no resource profiles: not an OTLP profiles request")
	}
	if binary {
		if field, ok := unknownField(req.ProtoReflect()); ok {
			return fmt.Errorf("field %s is unknown to OTLP profiles v1development: a request of another version of the protocol, or not OTLP profiles", field)
		}
	}
	hasProfiles := false
	for _, rp := range req.ResourceProfiles {
		for _, sp := range rp.GetScopeProfiles() {
			hasProfiles = hasProfiles || len(sp.GetProfiles()) > 0
		}
	}
	if hasProfiles && len(req.GetDictionary().GetStringTable()) == 0 {
		return errors.New("profiles without a dictionary: a request of another version of OTLP profiles than v1development, or not OTLP profiles")
	}
	return nil
}

// unknownField returns the path of the first field of m, or of a message
// within it, that the protocol does not define.
func unknownField(m protoreflect.Message) (string, bool) {
	if u := m.GetUnknown(); len(u) > 0 {
		return fmt.Sprintf("%s #%d", m.Descriptor().FullName(), unknownNumber(u)), true
	}
	var path string
	var found bool
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind {
			return true
		}
		switch {
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				if path, found = unknownField(l.Get(i).Message()); found {
					return false
				}
			}
		case fd.IsMap():
		default:
			path, found = unknownField(v.Message())
		}
		return !found
	})
	return path, found
}

// unknownNumber returns the field number of the first unknown field in u.
func unknownNumber(u protoreflect.RawFields) protowire.Number {
	num, _, _ := protowire.ConsumeTag(u)
	return num
}
