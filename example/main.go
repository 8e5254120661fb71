// Command example runs a small HTTP service under load and profiles it with
// pprofotel: every profile type this Go offers (the goroutine-leak profile
// needs Go 1.27), a short period.
//
// It is configured as a service would be: the environment variables of the
// README's Configuration section apply, and the flags only fill in what the
// environment leaves unset. With no exporter or OTLP endpoint in the
// environment it writes every window into a directory with the file
// exporter, prints a summary of each window of this run (per profile and
// sample type, the total and the top functions by flat value, as go tool
// pprof -top ranks them), and ends with the command that opens the run in
// go tool pprof's flame graph. With OTEL_EXPORTER_OTLP_ENDPOINT (or the
// PROFILES form) set, it sends the windows there instead.
//
//	go run ./example -duration 30s -window 5s
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
	"sync/atomic"
	"time"

	gpprof "github.com/google/pprof/profile"

	"github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/exporters/otlpprofilefile"
	_ "github.com/pprofotel/profiler/offcpu" // so that PPROFOTEL_PROFILES=...,offcpu works here
	"github.com/pprofotel/profiler/pprofconv"
)

func main() {
	duration := flag.Duration("duration", 30*time.Second, "how long to run the service under load")
	period := flag.Duration("window", 5*time.Second, "length of a profiling window (PPROFOTEL_WINDOW wins)")
	dir := flag.String("dir", "", "where the file exporter writes windows (PPROFOTEL_FILE_DIR wins; default: a new temporary directory)")
	flag.Parse()

	// The example is configured like any service: the environment
	// (README, Configuration) sets the profiler up, and the example's flags
	// and defaults apply only to what the environment leaves unset, since
	// an option would win over it. A bad value is warned about and
	// ignored, as the OpenTelemetry specification asks.
	set := func(name string) bool { return os.Getenv(name) != "" }
	var opts []profiler.Option
	if !set("OTEL_SERVICE_NAME") && !strings.Contains(os.Getenv("OTEL_RESOURCE_ATTRIBUTES"), "service.name=") {
		opts = append(opts, profiler.WithServiceName("pprofotel-example"))
	}
	periodText := period.String()
	if set("PPROFOTEL_WINDOW") {
		periodText = os.Getenv("PPROFOTEL_WINDOW")
	} else {
		opts = append(opts, profiler.WithWindow(*period))
	}
	if !set("PPROFOTEL_PROFILES") {
		types := []profiler.ProfileType{profiler.CPUProfile, profiler.HeapProfile, profiler.GoroutineProfile,
			profiler.MutexProfile, profiler.BlockProfile}
		// Taken in the first window and at Stop, at the default interval.
		if err := profiler.GoroutineLeakProfile.Available(); err == nil {
			types = append(types, profiler.GoroutineLeakProfile)
		} else {
			fmt.Printf("no goroutine-leak profile: %v\n", err)
		}
		opts = append(opts, profiler.WithProfileTypes(types...))
	}
	var madeDir string // removed if Start fails
	toFiles := os.Getenv("PPROFOTEL_EXPORTER") == "file" ||
		!set("PPROFOTEL_EXPORTER") && !set("OTEL_EXPORTER_OTLP_ENDPOINT") && !set("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT")
	if toFiles {
		switch {
		case set("PPROFOTEL_FILE_DIR"):
			*dir = os.Getenv("PPROFOTEL_FILE_DIR")
		case *dir == "":
			d, err := os.MkdirTemp("", "pprofotel-example-")
			if err != nil {
				log.Fatal(err)
			}
			*dir, madeDir = d, d
		}
		exp, err := otlpprofilefile.New(context.Background(), otlpprofilefile.WithDir(*dir))
		if err != nil {
			log.Fatal(err)
		}
		opts = append(opts, profiler.WithExporter(exp))
		fmt.Printf("writing windows to %s\n", *dir)
	} else {
		fmt.Println("sending windows to the exporter the environment configures")
	}

	// Windows already in the directory are another run's.
	windows := &windowPrinter{out: os.Stdout, dir: *dir, seen: windowFiles(*dir)}
	runStart := time.Now()
	p, err := profiler.Start(opts...)
	if err != nil {
		if madeDir != "" {
			os.Remove(madeDir)
		}
		log.Fatal(err)
	}

	srv := newService()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go http.Serve(ln, srv.routes())
	fmt.Printf("service on http://%s, under load for %s, one window every %s\n", ln.Addr(), *duration, periodText)
	if toFiles {
		fmt.Println("per window, profile and sample type: the total, and the top functions by flat value (the function on top of the stack), as go tool pprof -top ranks them")
	}

	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	var summaries sync.WaitGroup
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
	if !toFiles {
		return
	}
	windows.printNew() // the last, partial window written by Stop
	fmt.Printf("\nthis run's windows are in %s; to open them, merged, in go tool pprof on a flame graph:\n", *dir)
	fmt.Println(" ", openCommand(*dir, runStart))
}

// openCommand returns the command that converts the windows of the run
// started at start, in dir, to pprof and opens the CPU profile in go tool
// pprof's web UI, which starts on the flame graph. -from leaves out the
// windows of earlier runs into the same directory.
func openCommand(dir string, start time.Time) string {
	return "go run github.com/pprofotel/profiler/cmd/pprofotel pprof -from " + start.UTC().Format(time.RFC3339Nano) +
		" -o " + shellQuote(filepath.Join(dir, "pprof")) + " -http=: " + shellQuote(dir)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`*?[]#~;&|<>(){}!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// service is the application being profiled.
type service struct {
	mu      sync.Mutex
	counter map[string]int
	jobs    chan job
	lookups atomic.Int64
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
	mux.HandleFunc("/lookup", s.lookup)
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

// lookup races a backend call against a deadline. The call answers on an
// unbuffered channel, so when the deadline wins (one call in fifty is
// slow) no one ever receives the answer and the call's goroutine leaks:
// the bug the goroutine-leak profile finds.
func (s *service) lookup(w http.ResponseWriter, r *http.Request) {
	n := s.lookups.Add(1)
	answer := make(chan string)
	go func() { answer <- backend(n) }()
	select {
	case a := <-answer:
		io.WriteString(w, a)
	case <-time.After(5 * time.Millisecond):
		http.Error(w, "backend timeout", http.StatusGatewayTimeout)
	}
}

// backend answers call n, slowly for one call in fifty.
func backend(n int64) string {
	if n%50 == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	return "ok\n"
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
	paths := []string{"/hash", "/report", "/count?k=a", "/queue", "/lookup"}
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
// files it has printed, or that were there before the run, are in seen.
type windowPrinter struct {
	out  io.Writer
	dir  string
	seen map[string]bool
}

// isWindowFile tells the files the file exporter writes from its temporary
// files and anything else.
func isWindowFile(name string) bool {
	return !strings.HasPrefix(name, ".") && (strings.HasSuffix(name, ".pb") || strings.HasSuffix(name, ".json"))
}

// windowFiles returns the names of the window files in dir.
func windowFiles(dir string) map[string]bool {
	seen := make(map[string]bool)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if isWindowFile(e.Name()) {
			seen[e.Name()] = true
		}
	}
	return seen
}

// printNew prints the summaries of the window files not printed yet.
func (p *windowPrinter) printNew() {
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if p.seen[name] || !isWindowFile(name) {
			continue
		}
		p.seen[name] = true
		reqs, err := pprofconv.ReadFile(filepath.Join(p.dir, name))
		if err != nil {
			log.Print(err)
			continue
		}
		summary, err := summarize(name, reqs)
		if err != nil {
			log.Print(err)
			continue
		}
		fmt.Fprint(p.out, summary)
	}
}

// summarize prints, per profile and sample type, the total and the three
// functions with the most flat value: the value of the samples where the
// function is on top of the stack (the innermost frame, inlined frames
// counting), as go tool pprof -top ranks them.
func summarize(file string, reqs []pprofconv.Request) (string, error) {
	profiles, _, err := pprofconv.Convert(reqs, pprofconv.Filter{})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	// The summary lists the profiles in the order they are collected,
	// the order of the ProfileType constants.
	for t := profiler.CPUProfile; t <= profiler.GoroutineLeakProfile; t++ {
		name := t.String()
		p := profiles[name]
		if p == nil {
			continue
		}
		if b.Len() == 0 {
			fmt.Fprintf(&b, "\n== window %s +%s (%s)\n", time.Unix(0, p.TimeNanos).Format("15:04:05"),
				time.Duration(p.DurationNanos).Round(time.Millisecond), file)
		}
		for i, st := range p.SampleType {
			total := int64(0)
			flat := map[string]int64{}
			for _, s := range p.Sample {
				total += s.Value[i]
				flat[leaf(s)] += s.Value[i]
			}
			fmt.Fprintf(&b, "  %-13s %-14s %14d %-11s", name, st.Type, total, st.Unit)
			type fv struct {
				name string
				v    int64
			}
			var top []fv
			for n, v := range flat {
				if v != 0 {
					top = append(top, fv{n, v})
				}
			}
			sort.Slice(top, func(i, j int) bool { return top[i].v > top[j].v || top[i].v == top[j].v && top[i].name < top[j].name })
			for i := 0; i < len(top) && i < 3; i++ {
				fmt.Fprintf(&b, " %s (%.0f%%)", shortName(top[i].name), 100*float64(top[i].v)/float64(total))
			}
			b.WriteString("\n")
		}
	}
	return b.String(), nil
}

// leaf names the function on top of the stack of s.
func leaf(s *gpprof.Sample) string {
	if len(s.Location) == 0 || len(s.Location[0].Line) == 0 || s.Location[0].Line[0].Function == nil {
		return "?"
	}
	return s.Location[0].Line[0].Function.Name
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
