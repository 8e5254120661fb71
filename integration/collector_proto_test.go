package integration

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	pprofprofile "github.com/google/pprof/profile"

	"github.com/pprofotel/profiler/pprofconv"
)

// TestCollectorProtobufFile runs the profiler against a real Collector
// whose file exporter writes profiles with format proto (each request
// preceded by its length), through a proxy that records what the profiler
// sent, and turns that file into pprof and PGO profiles with the pprofotel
// command: each pprof profile must hold the same totals per sample type and
// the same functions as the requests sent, converted directly, and go build
// must accept the PGO profile.
func TestCollectorProtobufFile(t *testing.T) {
	col := startCollectorWriting(t, "proto")
	proxy := startRecordingProxy(t, col.GRPCAddr, "http://"+col.HTTPAddr)
	run := profileWorkload(t, protocolGRPC, proxy.GRPCAddr)

	var sent []pprofconv.Request
	for _, x := range proxy.recorded() {
		if x.rejection != "" {
			t.Fatalf("the Collector rejected a request: %s", x.rejection)
		}
		if requestService(x.req) == run.service {
			sent = append(sent, pprofconv.Request{Source: "sent", Request: x.req})
		}
	}
	if len(sent) < 2 {
		t.Fatalf("the proxy saw %d requests of %s; want at least 2", len(sent), run.service)
	}
	written := waitForRequests(t, col.ProfilesFile, len(sent))
	t.Logf("%d requests sent, %d read back from the Collector's %s", len(sent), len(written), col.ProfilesFile)
	// The file is the exporter's length-prefixed form, not one request.
	data, err := os.ReadFile(col.ProfilesFile)
	if err != nil {
		t.Fatal(err)
	}
	if n := binary.BigEndian.Uint32(data); n == 0 || int(n) > len(data)-4 || data[0] >= 8 {
		t.Fatalf("%s starts % x: not a request preceded by its length", col.ProfilesFile, data[:4])
	}

	want, _, err := pprofconv.Convert(sent, pprofconv.Filter{})
	if err != nil {
		t.Fatalf("converting the requests sent: %v", err)
	}
	cmd := pprofotelCommand(t)
	out := t.TempDir()
	if msg, err := exec.Command(cmd, "pprof", "-o", out, col.ProfilesFile).CombinedOutput(); err != nil {
		t.Fatalf("pprofotel pprof %s: %v\n%s", col.ProfilesFile, err, msg)
	}
	for _, name := range allProfiles {
		w := want[name]
		if w == nil {
			t.Errorf("%s: the requests sent hold no %s profile", name, name)
			continue
		}
		got := readPprofFile(t, filepath.Join(out, name+".pb.gz"))
		gotTotals, wantTotals := pprofTotals(got), pprofTotals(w)
		if len(gotTotals) != len(wantTotals) {
			t.Errorf("%s: sample types %v from the Collector's file, %v sent", name, gotTotals, wantTotals)
		}
		for typ, v := range wantTotals {
			if gotTotals[typ] != v {
				t.Errorf("%s %s: total %d from the Collector's file, %d sent", name, typ, gotTotals[typ], v)
			}
		}
		if g, w := pprofFunctions(got), pprofFunctions(w); !slices.Equal(g, w) {
			t.Errorf("%s: functions differ: %d from the Collector's file, %d sent", name, len(g), len(w))
		}
		t.Logf("%s: totals %v, %d functions", name, gotTotals, len(pprofFunctions(got)))
	}
	// The values are real: the CPU profile holds the workload.
	cpu := readPprofFile(t, filepath.Join(out, "cpu.pb.gz"))
	if !slices.Contains(pprofFunctions(cpu), funcName(burnCPU)) || pprofTotals(cpu)["samples"] == 0 {
		t.Errorf("the CPU profile read from the Collector's file holds %d samples and lacks %s", pprofTotals(cpu)["samples"], funcName(burnCPU))
	}

	pgo := filepath.Join(t.TempDir(), "default.pgo")
	if msg, err := exec.Command(cmd, "pgo", "-o", pgo, col.ProfilesFile).CombinedOutput(); err != nil {
		t.Fatalf("pprofotel pgo %s: %v\n%s", col.ProfilesFile, err, msg)
	}
	if got, w := pprofTotals(readPprofFile(t, pgo))["samples"], pprofTotals(want["cpu"])["samples"]; got != w {
		t.Errorf("PGO profile: %d samples, %d sent", got, w)
	}
	prog := t.TempDir()
	for name, content := range map[string]string{
		"go.mod":  "module pgotest\n\ngo 1.26\n",
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(prog, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "build", "-pgo="+pgo, "-o", filepath.Join(prog, "hello"), ".")
	build.Dir = prog
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -pgo=%s: %v\n%s", pgo, err, msg)
	}
}

// waitForRequests reads the Collector's profiles file with pprofconv until
// it holds n requests, and returns them. The file exporter flushes every
// 100ms and may be in the middle of a request, which reads as truncated;
// the limit only bounds a test that would otherwise hang.
func waitForRequests(t *testing.T, path string, n int) []pprofconv.Request {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a bound against a hang
	for {
		reqs, err := pprofconv.ReadFile(path)
		if err == nil && len(reqs) >= n {
			if len(reqs) > n {
				t.Fatalf("%s holds %d requests, %d were sent", path, len(reqs), n)
			}
			return reqs
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New("fewer requests than sent")
			}
			if errors.Is(err, fs.ErrNotExist) {
				err = errors.New("the Collector wrote no file")
			}
			t.Fatalf("after a minute, %s holds %d of the %d requests sent: %v", path, len(reqs), n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readPprofFile parses the pprof profile at path.
func readPprofFile(t *testing.T, path string) *pprofprofile.Profile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := pprofprofile.Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return p
}

// pprofTotals returns the sum of each sample type's values in p.
func pprofTotals(p *pprofprofile.Profile) map[string]int64 {
	out := make(map[string]int64)
	for i, st := range p.SampleType {
		out[st.Type] += 0
		for _, s := range p.Sample {
			out[st.Type] += s.Value[i]
		}
	}
	return out
}

// pprofFunctions returns the names of the functions the samples of p
// cite, sorted, each once.
func pprofFunctions(p *pprofprofile.Profile) []string {
	var names []string
	for _, s := range p.Sample {
		for _, l := range s.Location {
			for _, ln := range l.Line {
				names = append(names, ln.Function.Name)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
