// Command example runs a small HTTP service under load and profiles it with
// pprofotel: all five profile types, a short period.
//
// With no OTLP endpoint in the environment it writes every window into a
// directory with the file exporter and prints a summary of each window: per
// profile type, the total of every sample type and the functions that
// account for most of it. With OTEL_EXPORTER_OTLP_ENDPOINT (or the
// PROFILES form) set, it sends the windows there instead.
//
//	go run ./example -duration 30s -period 5s
package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler"
)

func main() {
	duration := flag.Duration("duration", 30*time.Second, "how long to run the service under load")
	period := flag.Duration("period", 5*time.Second, "profiling period: one window, one export, per period")
	dir := flag.String("dir", "", "where the file exporter writes windows (default: a new temporary directory)")
	flag.Parse()

	opts := []profiler.Option{
		profiler.WithServiceName("pprofotel-example"),
		profiler.WithPeriod(*period),
		profiler.WithProfileTypes(profiler.CPUProfile, profiler.HeapProfile, profiler.GoroutineProfile,
			profiler.MutexProfile, profiler.BlockProfile),
	}
	toFiles := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT") == ""
	if toFiles {
		if *dir == "" {
			d, err := os.MkdirTemp("", "pprofotel-example-")
			if err != nil {
				log.Fatal(err)
			}
			*dir = d
		}
		opts = append(opts, profiler.WithExporter(profiler.ExporterFile), profiler.WithFileDir(*dir))
		fmt.Printf("no OTLP endpoint configured: writing windows to %s\n", *dir)
	} else {
		fmt.Println("sending windows to the OTLP endpoint from the environment")
	}

	p, err := profiler.Start(opts...)
	if err != nil {
		log.Fatal(err)
	}

	srv := newService()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go http.Serve(ln, srv.routes())
	fmt.Printf("service on http://%s, under load for %s, one window every %s\n", ln.Addr(), *duration, *period)

	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	var summaries sync.WaitGroup
	windows := &windowPrinter{out: os.Stdout, dir: *dir, seen: map[string]bool{}}
	if toFiles {
		summaries.Add(1)
		go func() {
			defer summaries.Done()
			watch(ctx, windows)
		}()
	}
	requests := load(ctx, "http://"+ln.Addr().String())
	fmt.Printf("load done: %d requests\n", requests)

	stopCtx, stopCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer stopCancel()
	if err := p.Stop(stopCtx); err != nil {
		log.Printf("stop: %v", err)
	}
	summaries.Wait()
	if toFiles {
		windows.printNew() // the last, partial window written by Stop
		fmt.Printf("windows are in %s\n", *dir)
	}
}

// service is the application being profiled.
type service struct {
	mu      sync.Mutex
	counter map[string]int
	jobs    chan job
}

type job struct {
	n    int
	done chan int
}

func newService() *service {
	s := &service{counter: make(map[string]int), jobs: make(chan job)}
	for range 2 {
		go s.worker()
	}
	return s
}

func (s *service) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/hash", s.hash)
	mux.HandleFunc("/report", s.report)
	mux.HandleFunc("/count", s.count)
	mux.HandleFunc("/queue", s.queue)
	return mux
}

// hash burns CPU.
func (s *service) hash(w http.ResponseWriter, r *http.Request) {
	sum := sha256.Sum256([]byte(r.URL.Path))
	for range 2000 {
		sum = sha256.Sum256(sum[:])
	}
	fmt.Fprintf(w, "%x\n", sum[:8])
}

// report allocates: it builds a document and encodes it.
func (s *service) report(w http.ResponseWriter, r *http.Request) {
	rows := make([]map[string]any, 0, 200)
	for i := range 200 {
		rows = append(rows, map[string]any{"id": i, "name": strings.Repeat("x", i%32), "tags": []string{"a", "b"}})
	}
	json.NewEncoder(w).Encode(rows)
}

// count contends on one lock.
func (s *service) count(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.counter[r.URL.Query().Get("k")]++
	time.Sleep(200 * time.Microsecond) // work done while holding the lock
	s.mu.Unlock()
	io.WriteString(w, "ok\n")
}

// queue blocks on channels: it hands work to a small pool and waits.
func (s *service) queue(w http.ResponseWriter, r *http.Request) {
	j := job{n: 1000, done: make(chan int)}
	s.jobs <- j
	fmt.Fprintln(w, <-j.done)
}

func (s *service) worker() {
	for j := range s.jobs {
		time.Sleep(time.Millisecond)
		j.done <- j.n * 2
	}
}

// load sends requests from a few clients until ctx ends.
func load(ctx context.Context, base string) int64 {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total int64
	)
	paths := []string{"/hash", "/report", "/count?k=a", "/queue"}
	client := &http.Client{Timeout: 5 * time.Second}
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n int64
			for i := c; ctx.Err() == nil; i++ {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+paths[i%len(paths)], nil)
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				n++
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	return total
}

// watch prints a summary of every window file as it appears.
func watch(ctx context.Context, p *windowPrinter) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			p.printNew()
		}
	}
}

// windowPrinter prints the summary of each window file in dir once: the
// files it has printed are in seen, so that the call after Stop prints only
// the window Stop wrote.
type windowPrinter struct {
	out  io.Writer
	dir  string
	seen map[string]bool
}

// printNew prints the summaries of the window files not printed yet.
func (p *windowPrinter) printNew() {
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if p.seen[name] || !(strings.HasSuffix(name, ".pb") || strings.HasSuffix(name, ".json")) {
			continue
		}
		p.seen[name] = true
		req, err := readRequest(filepath.Join(p.dir, name))
		if err != nil {
			log.Printf("%s: %v", name, err)
			continue
		}
		fmt.Fprint(p.out, summarize(name, req))
	}
}

func readRequest(path string) (*collectorpb.ExportProfilesServiceRequest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	req := new(collectorpb.ExportProfilesServiceRequest)
	if strings.HasSuffix(path, ".json") {
		return req, protojson.Unmarshal(data, req)
	}
	return req, proto.Unmarshal(data, req)
}

// summarize prints, per profile type and sample type, the total and the
// three functions with the most self value, charging the runtime's frames
// to the code that called them.
func summarize(file string, req *collectorpb.ExportProfilesServiceRequest) string {
	var b strings.Builder
	d := req.GetDictionary()
	str := func(i int32) string { return d.GetStringTable()[i] }
	// leaf names the innermost frame outside the runtime and the standard
	// library's synchronisation, where a reader of the summary can act.
	leaf := func(s *profilespb.Sample) string {
		first := "?"
		for _, li := range d.GetStackTable()[s.GetStackIndex()].GetLocationIndices() {
			for _, ln := range d.GetLocationTable()[li].GetLines() {
				name := str(d.GetFunctionTable()[ln.GetFunctionIndex()].GetNameStrindex())
				if first == "?" {
					first = name
				}
				if !isPlumbing(name) {
					return name
				}
			}
		}
		return first
	}
	for _, rp := range req.GetResourceProfiles() {
		for _, sp := range rp.GetScopeProfiles() {
			kind := "?"
			for _, kv := range sp.GetScope().GetAttributes() {
				if kv.GetKey() == "pprofotel.profile.name" {
					kind = kv.GetValue().GetStringValue()
				}
			}
			for _, prof := range sp.GetProfiles() {
				if b.Len() == 0 {
					start := time.Unix(0, int64(prof.GetTimeUnixNano()))
					fmt.Fprintf(&b, "\n== window %s +%s (%s)\n", start.Format("15:04:05"),
						time.Duration(prof.GetDurationNano()).Round(time.Millisecond), file)
				}
				st := prof.GetSampleType()
				total := int64(0)
				byFunc := map[string]int64{}
				for _, s := range prof.GetSamples() {
					for _, v := range s.GetValues() {
						total += v
						byFunc[leaf(s)] += v
					}
				}
				fmt.Fprintf(&b, "  %-9s %-14s %14d %-11s", kind, str(st.GetTypeStrindex()), total, str(st.GetUnitStrindex()))
				type fv struct {
					name string
					v    int64
				}
				var top []fv
				for n, v := range byFunc {
					top = append(top, fv{n, v})
				}
				sort.Slice(top, func(i, j int) bool { return top[i].v > top[j].v || top[i].v == top[j].v && top[i].name < top[j].name })
				for i := 0; i < len(top) && i < 3; i++ {
					fmt.Fprintf(&b, " %s (%.0f%%)", shortName(top[i].name), 100*float64(top[i].v)/float64(total))
				}
				b.WriteString("\n")
			}
		}
	}
	return b.String()
}

// isPlumbing tells the runtime's and the standard library's internals from
// code that called into them.
func isPlumbing(fn string) bool {
	for _, prefix := range []string{"runtime.", "sync.", "internal/", "syscall.", "time.Sleep"} {
		if strings.HasPrefix(fn, prefix) {
			return true
		}
	}
	return false
}

// shortName drops the package path of a function name, and the type
// arguments of a generic function or type, which hold package paths of
// their own.
func shortName(fn string) string {
	var b strings.Builder
	depth := 0
	for _, r := range fn {
		switch {
		case r == '[':
			if depth == 0 {
				b.WriteString("[...]")
			}
			depth++
		case r == ']' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	fn = b.String()
	if i := strings.LastIndex(fn, "/"); i >= 0 {
		fn = fn[i+1:]
	}
	return fn
}
