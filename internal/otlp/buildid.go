package otlp

import (
	"bytes"
	"debug/elf"
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
	if string(magic[:]) != elf.ELFMAG {
		return "", nil
	}

	ef, err := elf.NewFile(f)
	if err != nil {
		return "", fmt.Errorf("go build id of %s: %w", path, err)
	}
	sec := ef.Section(goBuildIDSection)
	if sec == nil {
		return "", nil
	}
	data, err := sec.Data()
	if err != nil {
		return "", fmt.Errorf("go build id of %s: section %s: %w", path, goBuildIDSection, err)
	}
	id, ok := parseGoNote(data, ef.ByteOrder)
	if !ok {
		return "", fmt.Errorf("go build id of %s: section %s does not hold a %q note of type %d", path, goBuildIDSection, "Go", goBuildIDNoteType)
	}
	return id, nil
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
