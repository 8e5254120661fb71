package validutf8

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	tests := []struct {
		in, want string
		repaired bool
	}{
		{"", "", false},
		{"/checkout", "/checkout", false},
		{"café ☕", "café ☕", false},
		{"/caf\xe9", "/caf\uFFFD", true},
		{"\xff\xfe", "\uFFFD", true},             // one run, one replacement
		{"a\xffb\xfec", "a\uFFFDb\uFFFDc", true}, // two runs
		{"\xe2\x82", "\uFFFD", true},             // a sequence cut short
		{"\xed\xa0\x80", "\uFFFD", true},         // a surrogate, which UTF-8 excludes
		{"\xc0\xaf", "\uFFFD", true},             // an overlong encoding
		{"ok\uFFFD", "ok\uFFFD", false},          // U+FFFD itself is valid
		{strings.Repeat("a", 1000) + "\x80", strings.Repeat("a", 1000) + "\uFFFD", true},
	}
	for _, tt := range tests {
		var r Repairs
		got := r.String(tt.in)
		if got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
		wantN, wantFirst := int64(0), ""
		if tt.repaired {
			wantN, wantFirst = 1, tt.want
		}
		if r.N != wantN || r.First != wantFirst {
			t.Errorf("String(%q) counted %d, first %q; want %d, %q", tt.in, r.N, r.First, wantN, wantFirst)
		}
	}
}

func TestRepairsCountAndKeepTheFirst(t *testing.T) {
	var r Repairs
	for _, s := range []string{"a", "b\xff", "c", "d\xfe"} {
		r.String(s)
	}
	var total Repairs
	total.Add(Repairs{})
	total.Add(r)
	total.Add(Repairs{N: 3, First: "later"})
	if total.N != 5 || total.First != "b\uFFFD" {
		t.Errorf("total %d, first %q; want 5, %q", total.N, total.First, "b\uFFFD")
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven char", 10, "eleven cha…(11 bytes)"},
		{"aaaaaaaaaé", 10, "aaaaaaaaa…(11 bytes)"}, // é is bytes 9-10: not cut in two
		{"日本語", 4, "日…(9 bytes)"},
		{"\xff\xff\xff", 2, "\xff\xff…(3 bytes)"}, // invalid bytes each start a character
		{"abc", 0, "…(3 bytes)"},
	}
	for _, tt := range tests {
		if got := Clip(tt.in, tt.max); got != tt.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

// BenchmarkStringValid is the cost of the common case, a valid string, per
// byte: what every new string of a request pays.
func BenchmarkStringValid(b *testing.B) {
	s := "github.com/pprofotel/profiler/internal/otlp.(*Builder).resolveSample"
	var r Repairs
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		_ = r.String(s)
	}
}
