package main

import "testing"

func TestPackageOf(t *testing.T) {
	tests := []struct{ name, want string }{
		{"runtime.mallocgc", "runtime"},
		{"github.com/pprofotel/profiler/internal/convert/otlp.(*Builder).Add", "github.com/pprofotel/profiler/internal/convert/otlp"},
		{"github.com/pprofotel/profiler.Start.func1", "github.com/pprofotel/profiler"},
		{"slices.SortFunc[go.shape.[]*github.com/a/b.T,go.shape.*uint8]", "slices"},
		{"google.golang.org/grpc.(*ClientConn[go.shape.struct { a/b.c }]).Close", "google.golang.org/grpc"},
		{"vendor/golang.org/x/net/idna.idnaValues", "vendor/golang.org/x/net/idna"},
		{"go:itab.*net/http.Transport,net/http.RoundTripper", "net/http"},
		{"go:itab.github.com/a/b.T,io.Writer", "github.com/a/b"},
		{"type:.eq.github.com/a/b.T", "github.com/a/b"},
		{"type:.eq.[8]string", "(type:*)"},
		{"type:*", "(type:*)"},
		{"go:func.*", "(go:func.*)"},
		{"go:string.*", "(go:string.*)"},
		{"go:buildinfo", "(go:buildinfo)"},
		{"$f32.3f800000", "(constants)"},
		{"malloc", "(C and linker symbols)"},
		{".dummy", "(other)"},
	}
	for _, tt := range tests {
		if got := packageOf(tt.name); got != tt.want {
			t.Errorf("packageOf(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}
