package otlp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// goBuildIDSection is the ELF section in which the Go linker stores the
// build id, as a note named "Go" of type goBuildIDNoteType. The linker pads
// the name with NULs to 4 bytes and counts the padding in the name size.
const (
	goBuildIDSection  = ".note.go.buildid"
	goBuildIDNoteName = "Go"
	goBuildIDNoteType = 4
)

// GoBuildID returns the Go build id recorded in the ELF executable at path,
// the same text that "go tool buildid path" prints.
//
// It returns "", nil when the file is not ELF (for example a Mach-O or PE
// binary) or has no Go build id note: the build id is then simply unknown.
// It returns an error when the file cannot be read or the note is malformed.
//
// It reads the ELF header and section headers itself rather than through
// debug/elf, which would link debug/dwarf, compress/zlib and
// internal/zstd, all unused otherwise, into every application's binary
// for these few fields.
func GoBuildID(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("go build id: %w", err)
	}
	defer f.Close()

	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return "", nil // too short to be ELF
		}
		return "", fmt.Errorf("go build id of %s: %w", path, err)
	}
	if string(magic[:]) != "\x7fELF" {
		return "", nil
	}
	data, order, found, err := elfSection(f, goBuildIDSection)
	if err != nil {
		return "", fmt.Errorf("go build id of %s: %w", path, err)
	}
	if !found {
		return "", nil
	}
	id, ok := parseGoNote(data, order)
	if !ok {
		return "", fmt.Errorf("go build id of %s: section %s does not hold a %q note of type %d", path, goBuildIDSection, "Go", goBuildIDNoteType)
	}
	return id, nil
}

// Bounds on what elfSection reads: a section name table and a build id
// note are far smaller; a header that claims more is malformed.
const (
	maxSectionHeader = 256
	maxSectionNames  = 1 << 20
	maxNoteSection   = 64 << 10
)

// elfSection returns the contents of the section called name in the ELF
// file r, and the file's byte order. found is false when there is no such
// section.
func elfSection(r io.ReaderAt, name string) (data []byte, order binary.ByteOrder, found bool, err error) {
	var hdr [64]byte
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return nil, nil, false, fmt.Errorf("ELF header: %w", err)
	}
	st, err := parseELFHeader(hdr[:])
	if err != nil {
		return nil, nil, false, err
	}
	if st.num == 0 || st.strndx >= st.num {
		return nil, st.order, false, nil // no sections, or no names for them
	}
	table := make([]byte, st.num*st.entsize)
	if _, err := r.ReadAt(table, int64(st.off)); err != nil {
		return nil, nil, false, fmt.Errorf("section headers: %w", err)
	}
	read := func(off, size, limit uint64) ([]byte, error) {
		if size > limit {
			return nil, fmt.Errorf("section of %d bytes", size)
		}
		b := make([]byte, size)
		_, err := r.ReadAt(b, int64(off))
		return b, err
	}
	_, namesOff, namesSize := st.entry(table[st.strndx*st.entsize:])
	names, err := read(namesOff, namesSize, maxSectionNames)
	if err != nil {
		return nil, nil, false, fmt.Errorf("section names: %w", err)
	}
	for i := range st.num {
		nameOff, off, size := st.entry(table[i*st.entsize:])
		if uint64(nameOff) >= uint64(len(names)) {
			continue
		}
		n := names[nameOff:]
		if end := bytes.IndexByte(n, 0); end >= 0 {
			n = n[:end]
		}
		if string(n) != name {
			continue
		}
		data, err := read(off, size, maxNoteSection)
		if err != nil {
			return nil, nil, false, fmt.Errorf("section %s: %w", name, err)
		}
		return data, st.order, true, nil
	}
	return nil, st.order, false, nil
}

// sectionTable is where an ELF file's section headers are and how to
// read one.
type sectionTable struct {
	order binary.ByteOrder
	// off is the table's offset; entsize, num and strndx its entries'
	// size, their number and the index of the section name table's.
	off                  uint64
	entsize, num, strndx int
	// entry reads a header's name offset, section offset and size.
	entry func(b []byte) (nameOff uint32, off, size uint64)
}

// parseELFHeader reads the section table's place from an ELF header.
func parseELFHeader(hdr []byte) (sectionTable, error) {
	var st sectionTable
	switch hdr[5] { // EI_DATA
	case 1:
		st.order = binary.LittleEndian
	case 2:
		st.order = binary.BigEndian
	default:
		return st, fmt.Errorf("ELF header: unknown data encoding %d", hdr[5])
	}
	order := st.order
	minSize := 0
	switch hdr[4] { // EI_CLASS
	case 1:
		st.off = uint64(order.Uint32(hdr[0x20:]))
		st.entsize, st.num, st.strndx = int(order.Uint16(hdr[0x2e:])), int(order.Uint16(hdr[0x30:])), int(order.Uint16(hdr[0x32:]))
		st.entry = func(b []byte) (uint32, uint64, uint64) {
			return order.Uint32(b), uint64(order.Uint32(b[16:])), uint64(order.Uint32(b[20:]))
		}
		minSize = 40
	case 2:
		st.off = order.Uint64(hdr[0x28:])
		st.entsize, st.num, st.strndx = int(order.Uint16(hdr[0x3a:])), int(order.Uint16(hdr[0x3c:])), int(order.Uint16(hdr[0x3e:]))
		st.entry = func(b []byte) (uint32, uint64, uint64) {
			return order.Uint32(b), order.Uint64(b[24:]), order.Uint64(b[32:])
		}
		minSize = 64
	default:
		return st, fmt.Errorf("ELF header: unknown class %d", hdr[4])
	}
	if st.num > 0 && (st.entsize < minSize || st.entsize > maxSectionHeader) {
		return st, fmt.Errorf("ELF header: section header size %d", st.entsize)
	}
	return st, nil
}

// parseGoNote decodes an ELF note: name size, description size and type as
// 4-byte words, then the name and the description, each padded to 4 bytes.
func parseGoNote(data []byte, order binary.ByteOrder) (string, bool) {
	if len(data) < 12 {
		return "", false
	}
	nameSize := order.Uint32(data[0:])
	descSize := order.Uint32(data[4:])
	typ := order.Uint32(data[8:])
	data = data[12:]
	if typ != goBuildIDNoteType || nameSize < uint32(len(goBuildIDNoteName)) {
		return "", false
	}
	namePadded := (uint64(nameSize) + 3) &^ 3
	if uint64(len(data)) < namePadded+uint64(descSize) {
		return "", false
	}
	if string(bytes.TrimRight(data[:nameSize], "\x00")) != goBuildIDNoteName {
		return "", false
	}
	return string(data[namePadded : namePadded+uint64(descSize)]), true
}
