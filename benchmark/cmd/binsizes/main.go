// Command binsizes prints where the bytes of a Go ELF binary go, for
// footprint.sh to compare two programs: the size of each section the file
// holds, and the bytes of the symbols of each Go package.
//
// Usage:
//
//	binsizes BINARY
//
// BINARY must keep its symbol table (built without -ldflags=-s). Each line
// is "section NAME BYTES" or "package PATH BYTES". A package's bytes are
// its functions, read-only data and data, generic instantiations counted
// in the package that declares the generic function (slices.SortFunc's in
// slices); bss takes no room in the file and is not counted. What the
// linker lays out as one symbol for the whole program is listed under a
// name in parentheses: the function metadata (go:func.*), the type
// descriptors (type:*), floating-point constants, C and linker symbols. The function table
// (.gopclntab) has no symbols: its share shows only in the sections.
package main

import (
	"debug/elf"
	"fmt"
	"os"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: binsizes BINARY")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "binsizes:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOBITS && s.Size > 0 && s.Name != "" {
			fmt.Printf("section %s %d\n", s.Name, s.Size)
		}
	}
	syms, err := f.Symbols()
	if err != nil {
		return fmt.Errorf("%s: %w (built with -ldflags=-s?)", path, err)
	}
	sizes := make(map[string]uint64)
	for _, s := range syms {
		if s.Section == elf.SHN_UNDEF || int(s.Section) >= len(f.Sections) || s.Size == 0 {
			continue
		}
		if f.Sections[s.Section].Type == elf.SHT_NOBITS {
			continue
		}
		sizes[packageOf(s.Name)] += s.Size
	}
	for p, n := range sizes {
		fmt.Printf("package %s %d\n", p, n)
	}
	return nil
}

// packageOf returns the import path of the package a symbol belongs to,
// or, for what the linker makes for the whole program, a name for its kind
// in parentheses.
func packageOf(name string) string {
	switch {
	case strings.HasPrefix(name, "go:itab."):
		// go:itab.*pkg.T,pkg.I: the package of the concrete type.
		name = strings.TrimLeft(strings.TrimPrefix(name, "go:itab."), "*")
		name, _, _ = strings.Cut(name, ",")
	case strings.HasPrefix(name, "type:"):
		// type:.eq.pkg.T and its kind are a type's functions; the
		// descriptors themselves are one symbol.
		rest := strings.TrimPrefix(name, "type:")
		for _, p := range []string{".eq.", ".hash."} {
			if after, ok := strings.CutPrefix(rest, p); ok {
				if pkg := importPath(strings.TrimLeft(after, "*")); pkg != "" {
					return pkg
				}
			}
		}
		return "(type:*)"
	case strings.HasPrefix(name, "go:"):
		if kind, _, ok := strings.Cut(name, "."); ok {
			return "(" + kind + ".*)"
		}
		return "(" + name + ")"
	case strings.HasPrefix(name, "$"):
		// $f64.3ff0000000000000: a constant's bytes, shared program-wide.
		return "(constants)"
	case !strings.Contains(name, "."):
		return "(C and linker symbols)"
	}
	if pkg := importPath(name); pkg != "" {
		return pkg
	}
	return "(other)"
}

// importPath returns the package path of a Go symbol name such as
// github.com/a/b.(*T).M or pkg.F[go.shape.*x/y.T], or "" if name has none.
func importPath(name string) string {
	if i := strings.IndexAny(name, "[( "); i >= 0 {
		name = name[:i]
	}
	slash := strings.LastIndex(name, "/")
	dot := strings.Index(name[slash+1:], ".")
	if dot <= 0 {
		return ""
	}
	return name[:slash+1+dot]
}
