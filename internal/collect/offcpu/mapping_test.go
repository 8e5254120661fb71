package offcpu

import (
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestTextRange(t *testing.T) {
	const exe = "/srv/app"
	tests := []struct {
		name                 string
		maps                 string
		start, limit, offset uint64
		ok                   bool
	}{
		{
			name: "text, rodata and data of the executable",
			maps: "00400000-00b40000 r-xp 00000000 fd:01 42 /srv/app\n" +
				"00b40000-01200000 r--p 00740000 fd:01 42 /srv/app\n" +
				"01200000-01240000 rw-p 00e00000 fd:01 42 /srv/app\n" +
				"7f0000000000-7f0000021000 r-xp 00000000 fd:01 7 /usr/lib/libc.so.6\n",
			start: 0x400000, limit: 0xb40000, offset: 0, ok: true,
		},
		{
			name: "two executable segments: their union, the first's offset",
			maps: "55d000002000-55d000100000 r-xp 00002000 fd:01 42 /srv/app\n" +
				"55d000200000-55d000300000 r-xp 00200000 fd:01 42 /srv/app\n",
			start: 0x55d000002000, limit: 0x55d000300000, offset: 0x2000, ok: true,
		},
		{
			name: "another file of the same prefix is not the executable",
			maps: "00400000-00b40000 r-xp 00000000 fd:01 42 /srv/app.old\n",
		},
		{
			name: "malformed lines are passed over",
			maps: "zz-00b40000 r-xp 00000000 fd:01 42 /srv/app\n00b40000-00400000 r-xp 0 fd:01 42 /srv/app\nshort\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start, limit, offset, ok := textRange([]byte(tt.maps), exe)
			if start != tt.start || limit != tt.limit || offset != tt.offset || ok != tt.ok {
				t.Errorf("textRange = %#x, %#x, %#x, %v; want %#x, %#x, %#x, %v",
					start, limit, offset, ok, tt.start, tt.limit, tt.offset, tt.ok)
			}
		})
	}
}

// TestRecorderFuncNamesTheRecorder checks that recorderFunc, by which the
// parser leaves the recorder's own waits out, is the prefix of the
// Recorder's methods' names as the runtime spells them: a package move
// would silently let them in.
func TestRecorderFuncNamesTheRecorder(t *testing.T) {
	name := runtime.FuncForPC(reflect.ValueOf((*Recorder).Collect).Pointer()).Name()
	if !strings.HasPrefix(name, recorderFunc) {
		t.Errorf("the Recorder's Collect is %q, which recorderFunc %q does not name", name, recorderFunc)
	}
}
