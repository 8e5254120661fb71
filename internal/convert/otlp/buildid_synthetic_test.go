package otlp_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/pprofotel/profiler/internal/convert/otlp"
)

// syntheticELF builds an ELF file of the given class (1: 32-bit, 2:
// 64-bit) and byte order with three sections: the null section, a
// .note.go.buildid holding a Go note with id, and the section name table.
func syntheticELF(class byte, order binary.ByteOrder, id string) []byte {
	names := []byte("\x00.note.go.buildid\x00.shstrtab\x00")
	note := make([]byte, 12)
	order.PutUint32(note[0:], 4) // "Go\x00\x00"
	order.PutUint32(note[4:], uint32(len(id)))
	order.PutUint32(note[8:], 4)
	note = append(note, "Go\x00\x00"...)
	note = append(note, id...)

	hdrSize, entSize := 52, 40
	if class == 2 {
		hdrSize, entSize = 64, 64
	}
	noteOff := hdrSize
	namesOff := noteOff + len(note)
	shoff := namesOff + len(names)
	out := make([]byte, shoff+3*entSize)
	copy(out, "\x7fELF")
	out[4], out[5], out[6] = class, 1, 1
	if order == binary.BigEndian {
		out[5] = 2
	}
	copy(out[noteOff:], note)
	copy(out[namesOff:], names)
	section := func(i int, name uint32, off, size int) {
		b := out[shoff+i*entSize:]
		order.PutUint32(b, name)
		if class == 1 {
			order.PutUint32(b[16:], uint32(off))
			order.PutUint32(b[20:], uint32(size))
		} else {
			order.PutUint64(b[24:], uint64(off))
			order.PutUint64(b[32:], uint64(size))
		}
	}
	section(1, 1, noteOff, len(note))
	section(2, 18, namesOff, len(names))
	if class == 1 {
		order.PutUint32(out[0x20:], uint32(shoff))
		order.PutUint16(out[0x2e:], uint16(entSize))
		order.PutUint16(out[0x30:], 3)
		order.PutUint16(out[0x32:], 2)
	} else {
		order.PutUint64(out[0x28:], uint64(shoff))
		order.PutUint16(out[0x3a:], uint16(entSize))
		order.PutUint16(out[0x3c:], 3)
		order.PutUint16(out[0x3e:], 2)
	}
	return out
}

// TestGoBuildIDEveryELFLayout reads the note from 32- and 64-bit files of
// either byte order, which the test binary alone does not cover.
func TestGoBuildIDEveryELFLayout(t *testing.T) {
	const id = "abc/def/ghi/jkl"
	for _, tt := range []struct {
		name  string
		class byte
		order binary.ByteOrder
	}{
		{"elf32 little-endian", 1, binary.LittleEndian},
		{"elf32 big-endian", 1, binary.BigEndian},
		{"elf64 little-endian", 2, binary.LittleEndian},
		{"elf64 big-endian", 2, binary.BigEndian},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "exe")
			if err := os.WriteFile(path, syntheticELF(tt.class, tt.order, id), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := otlp.GoBuildID(path)
			if err != nil || got != id {
				t.Errorf("GoBuildID = %q, %v; want %q", got, err, id)
			}
		})
	}
}

// FuzzGoBuildID reads arbitrary files as executables: whatever their
// headers claim, GoBuildID returns a build id, none, or an error, and
// neither panics nor reads past its bounds.
func FuzzGoBuildID(f *testing.F) {
	for _, class := range []byte{1, 2} {
		for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			f.Add(syntheticELF(class, order, "abc/def/ghi/jkl"))
		}
	}
	f.Add([]byte("\x7fELF"))
	f.Add([]byte("MZ not ELF"))
	path := filepath.Join(f.TempDir(), "exe")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if id, err := otlp.GoBuildID(path); err != nil && id != "" {
			t.Errorf("GoBuildID = %q with error %v", id, err)
		}
	})
}
