package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	gpprof "github.com/google/pprof/profile"
)

// testProfile is a CPU profile of two stacks.
func testProfile() *gpprof.Profile {
	m := &gpprof.Mapping{ID: 1, Start: 0x1000, Limit: 0x9000, File: "/srv/app", HasFunctions: true}
	handle := &gpprof.Function{ID: 1, Name: "main.handleCheckout", SystemName: "main.handleCheckout", Filename: "main.go"}
	encode := &gpprof.Function{ID: 2, Name: "encoding/json.Marshal", SystemName: "encoding/json.Marshal", Filename: "encode.go"}
	l1 := &gpprof.Location{ID: 1, Mapping: m, Address: 0x1100, Line: []gpprof.Line{{Function: handle, Line: 10}}}
	l2 := &gpprof.Location{ID: 2, Mapping: m, Address: 0x1200, Line: []gpprof.Line{{Function: encode, Line: 20}}}
	return &gpprof.Profile{
		SampleType: []*gpprof.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &gpprof.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10000000,
		Sample: []*gpprof.Sample{
			{Location: []*gpprof.Location{l2, l1}, Value: []int64{30, 300000000}},
			{Location: []*gpprof.Location{l1}, Value: []int64{10, 100000000}},
		},
		Location: []*gpprof.Location{l1, l2},
		Function: []*gpprof.Function{handle, encode},
		Mapping:  []*gpprof.Mapping{m},
	}
}

// TestServeWebFlameGraph serves a profile on a free port, as
// "pprofotel pprof -http=127.0.0.1:0" does, reads the URL it prints, and
// gets the flame graph from the command's own server: no go tool pprof, no
// browser.
func TestServeWebFlameGraph(t *testing.T) {
	tests := []struct{ name, addr string }{
		{"port 0", "127.0.0.1:0"},
		{"colon alone", ":"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Where the driver would save a copy of a remote profile.
			saved := t.TempDir()
			t.Setenv("PPROF_TMPDIR", saved)
			ctx, cancel := context.WithCancel(context.Background())
			out, w := io.Pipe()
			served := make(chan error, 1)
			go func() {
				served <- serveWeb(ctx, tt.addr, "cpu", testProfile(), w, io.Discard)
				w.Close()
			}()
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				t.Fatalf("no URL printed: %v", err)
			}
			go io.Copy(io.Discard, out)
			_, url, ok := strings.Cut(strings.TrimSpace(line), "web UI: ")
			if !ok || !strings.HasPrefix(url, "http://") || strings.Contains(url, ":0/") || !strings.HasSuffix(url, "/ui/flamegraph") {
				t.Fatalf("printed %q, want the flame graph's URL with the real port", line)
			}
			resp, err := http.Get(url)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %s", url, resp.Status)
			}
			for _, want := range []string{"main.handleCheckout", "encoding/json.Marshal"} {
				if !strings.Contains(string(body), want) {
					t.Errorf("the flame graph page does not name %s", want)
				}
			}
			cancel()
			if err := <-served; err != nil {
				t.Errorf("serveWeb returned %v after its context ended", err)
			}
			if entries, _ := os.ReadDir(saved); len(entries) != 0 {
				t.Errorf("the profile was saved as if fetched remotely: %v", entries)
			}
		})
	}
}

func TestServeWebRefusesABadAddress(t *testing.T) {
	err := serveWeb(context.Background(), "no-port", "cpu", testProfile(), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `-http "no-port"`) {
		t.Errorf("serveWeb(no-port) = %v, want an error naming the flag and its value", err)
	}
}
