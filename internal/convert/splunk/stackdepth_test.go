package splunk

import "testing"

func TestMemoryStackDepth(t *testing.T) {
	tests := []struct {
		godebug string
		want    int
	}{
		{"", DefaultMemoryStackDepth},
		{"gctrace=1", DefaultMemoryStackDepth},
		{"profstackdepth=64,gctrace=1,profstackdepth=256", 256},
		{"profstackdepth=5000", 1024},
		{"profstackdepth=0", DefaultMemoryStackDepth},
		{"profstackdepth=-3", DefaultMemoryStackDepth},
		{"profstackdepth=many", DefaultMemoryStackDepth},
		{" profstackdepth=32 ", 32},
	}
	for _, tt := range tests {
		if got := MemoryStackDepth(tt.godebug); got != tt.want {
			t.Errorf("MemoryStackDepth(%q) = %d, want %d", tt.godebug, got, tt.want)
		}
	}
}
