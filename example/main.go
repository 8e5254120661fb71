// Command example runs a small HTTP service under load and profiles it with
// pprofotel: every profile type this Go offers (the goroutine-leak profile
// needs Go 1.27), the off-CPU one and with it the slow-request one
// included, short windows, and the CPU profile recording continuously, as
// suits a demo.
//
// The service is traced as a real one would be: the OpenTelemetry SDK's
// tracer provider, wrapped by package labels, serves each request in a
// server span whose http.route is the pattern the mux matched, so samples
// link to spans and carry their route, and requests are counted by
// route. One route, /checkout, is slow now and then: it refreshes its
// stock under a lock for 200ms, and the checkouts waiting for the lock
// are slow too. Another, /lookup, leaks a goroutine now and then, for the
// goroutine-leak profile to find.
//
// It is configured as a service would be: the environment variables of the
// package documentation apply, and the flags only fill in what the
// environment leaves unset. With no exporter or OTLP endpoint in the
// environment it writes every window into a directory with the file
// exporter, prints a summary of each window of this run (the window, the
// part the CPU profile recorded, and per profile and sample type the total
// and the top functions), then reads the run's windows back and prints
// requests, CPU and off-CPU time by route and where the time of one
// slow request went, and ends with the commands that serve the run in
// pprof's web UI and list its slowest requests. With
// OTEL_EXPORTER_OTLP_ENDPOINT (or the PROFILES form) set, it sends the
// windows there instead.
//
//	go run ./example -duration 30s -window 5s
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	gpprof "github.com/google/pprof/profile"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/exporters/otlpprofilefile"
	"github.com/pprofotel/profiler/labels"
	_ "github.com/pprofotel/profiler/offcpu" // so that PPROFOTEL_PROFILES=...,offcpu works here
	"github.com/pprofotel/profiler/pprofconv"
)

func main() {
	// Ctrl-C ends the load early; the profiler still sends the last window.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			log.Print(err)
		}
		os.Exit(2)
	}
}

// run runs the example with the command-line arguments args, printing to
// stdout, until its -duration passes or ctx ends.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("example", flag.ContinueOnError)
	duration := fs.Duration("duration", 30*time.Second, "how long to run the service under load")
	period := fs.Duration("window", 5*time.Second, "length of a profiling window (PPROFOTEL_WINDOW wins)")
	dir := fs.String("dir", "", "where the file exporter writes windows (PPROFOTEL_FILE_DIR wins; default: a new temporary directory)")
	if err := fs.Parse(args); err != nil {
		return err
	}

	cfg, err := configure(stdout, *period, *dir)
	if err != nil {
		return err
	}

	// Windows already in the directory are another run's.
	before := windowFiles(cfg.dir)
	windows := &windowPrinter{out: stdout, dir: cfg.dir, seen: maps.Clone(before)}
	runStart := time.Now()
	p, err := profiler.Start(cfg.opts...)
	if err != nil {
		if cfg.madeDir != "" {
			os.Remove(cfg.madeDir)
		}
		return err
	}

	srv, requests, err := serveUnderLoad(ctx, stdout, cfg, *duration, windows)
	if err != nil {
		p.Stop(context.Background())
		return err
	}
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer stopCancel()
	stopErr := p.Stop(stopCtx)
	// The service's workers still wait for jobs: keep the service
	// reachable until the last goroutine-leak profile is read, so that
	// only the goroutines lookup leaks are reported.
	runtime.KeepAlive(srv)
	fmt.Fprintf(stdout, "load done: %d requests\n", requests)
	if stopErr != nil {
		fmt.Fprintf(stdout, "stop: %v\n", stopErr)
	}
	if !cfg.toFiles {
		return nil
	}
	windows.printNew() // the last, partial window written by Stop
	printEnd(stdout, cfg.dir, before, runStart)
	return nil
}

// serveUnderLoad serves the traced service on a loopback port and loads
// it for d, printing each window's summary meanwhile when windows go to
// files; it returns the service, which the caller keeps reachable, and
// the requests it served.
func serveUnderLoad(ctx context.Context, stdout io.Writer, cfg setup, d time.Duration, windows *windowPrinter) (*service, int64, error) {
	// The tracing SDK, wrapped so that samples link to spans and
	// requests are counted by route. A service would give the SDK a
	// span exporter too; the example keeps its spans in the process.
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	otel.SetTracerProvider(labels.WrapTracerProvider(tp))

	srv := newService()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	httpSrv := &http.Server{Handler: srv.handler(otel.Tracer("example"))}
	go httpSrv.Serve(ln)
	defer httpSrv.Close()
	fmt.Fprintf(stdout, "service on http://%s, under load for %s, one window every %s; each request in a server span\n", ln.Addr(), d, cfg.periodText)
	if cfg.toFiles {
		printLegend(stdout)
	}

	loadCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var summaries sync.WaitGroup
	if cfg.toFiles {
		summaries.Go(func() { watch(loadCtx, windows) })
	}
	requests := load(loadCtx, "http://"+ln.Addr().String())
	summaries.Wait() // no more printing from watch from here on
	return srv, requests, nil
}

// printLegend says what each window's summary shows.
func printLegend(stdout io.Writer) {
	fmt.Fprintln(stdout, "per window: its bounds and, apart, the part the CPU profile recorded; per profile and sample type, the total and the top three functions:")
	fmt.Fprintln(stdout, "  cpu, heap and mutex by flat value, the function on top of the stack, as go tool pprof -top ranks them;")
	fmt.Fprintln(stdout, "  the others by where goroutines wait: the first function on the stack outside the runtime")
}

// printEnd prints the run's report, from the windows written in dir
// since runStart (those in before are another run's), and the commands
// that show them.
func printEnd(stdout io.Writer, dir string, before map[string]bool, runStart time.Time) {
	if err := writeReport(stdout, dir, before); err != nil {
		fmt.Fprintf(stdout, "\nreading this run's windows back: %v\n", err)
	}
	fmt.Fprintf(stdout, "\nthis run's windows are in %s; to see them merged in pprof's web UI, at the URL it prints, and to list the slowest requests:\n", dir)
	fmt.Fprintln(stdout, " ", openCommand(dir, runStart, len(before) > 0))
	fmt.Fprintln(stdout, " ", slowCommand(dir, runStart, len(before) > 0))
}

// setup is what configure chose: the profiler's options, the window as
// the user gave it, whether windows go to files in dir, and the directory
// configure made for them ("" if none), to remove if Start fails.
type setup struct {
	opts         []profiler.Option
	periodText   string
	toFiles      bool
	dir, madeDir string
}

// configure chooses the profiler's options from the environment, and the
// example's window and directory where the environment is silent, saying
// on stdout what it chose.
func configure(stdout io.Writer, period time.Duration, dir string) (setup, error) {
	// The example is configured like any service: the environment
	// (README, Configuration) sets the profiler up, and the example's flags
	// and defaults apply only to what the environment leaves unset, since
	// an option would win over it. A bad value is warned about and
	// ignored, as the OpenTelemetry specification asks.
	var opts []profiler.Option
	if !set("OTEL_SERVICE_NAME") && !strings.Contains(os.Getenv("OTEL_RESOURCE_ATTRIBUTES"), "service.name=") {
		opts = append(opts, profiler.WithServiceName("pprofotel-example"))
	}
	periodText := period.String()
	if set("PPROFOTEL_WINDOW") {
		periodText = os.Getenv("PPROFOTEL_WINDOW")
	} else {
		opts = append(opts, profiler.WithWindow(period))
	}
	if !set("PPROFOTEL_PROFILES") {
		opts = append(opts, profileTypes(stdout, period)...)
	}
	opts = append(opts, cpuDuty(stdout)...)
	cfg := setup{periodText: periodText}
	cfg.toFiles = os.Getenv("OTEL_PROFILES_EXPORTER") == "file" ||
		!set("OTEL_PROFILES_EXPORTER") && !set("OTEL_EXPORTER_OTLP_ENDPOINT") && !set("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT")
	if !cfg.toFiles {
		fmt.Fprintln(stdout, "sending windows to the exporter the environment configures")
		cfg.opts = opts
		return cfg, nil
	}
	exp, err := cfg.fileExporter(dir)
	if err != nil {
		return setup{}, err
	}
	fmt.Fprintf(stdout, "writing windows to %s\n", cfg.dir)
	cfg.opts = append(opts, profiler.WithExporter(exp))
	return cfg, nil
}

// set reports whether the environment variable name is set.
func set(name string) bool { return os.Getenv(name) != "" }

// profileTypes returns the options of the profiles the example shows:
// all of them, the goroutine-leak profile read every window where the
// Go release has it.
func profileTypes(stdout io.Writer, period time.Duration) []profiler.Option {
	// The off-CPU profile brings the slow-request one, which explains
	// the slow checkouts.
	types := []profiler.ProfileType{profiler.CPUProfile, profiler.OffCPUProfile, profiler.HeapProfile,
		profiler.GoroutineProfile, profiler.MutexProfile, profiler.BlockProfile}
	var opts []profiler.Option
	if profiler.GoroutineLeakProfile.Available() == nil {
		types = append(types, profiler.GoroutineLeakProfile)
		if !set("PPROFOTEL_GOROUTINELEAK_INTERVAL") {
			// Every window, so that the leak is seen growing: each read
			// runs a full garbage collection, which a demo can afford.
			opts = append(opts, profiler.WithGoroutineLeakInterval(period))
		}
	} else {
		// Not an error: the profile is new in Go 1.27.
		fmt.Fprintf(stdout, "goroutine-leak profile: needs Go 1.27, skipped (this is %s)\n", runtime.Version())
	}
	return append(opts, profiler.WithProfileTypes(types...))
}

// cpuDuty returns the CPU duty cycle's option, none when the environment
// sets it (under its name, or the one it had before 0.2.0).
func cpuDuty(stdout io.Writer) []profiler.Option {
	if v := cmp.Or(os.Getenv("PPROFOTEL_CPU_DUTY_CYCLE"), os.Getenv("PPROFOTEL_CPU_DUTY")); v != "" {
		fmt.Fprintf(stdout, "CPU profile: records %s %% of each window, at a random offset; each window's header shows the part it recorded, and its CPU time is that part's\n", v)
		return nil
	}
	// A service keeps the default, a sixth of each window, for a sixth
	// of the cost; a demo wants all of it.
	fmt.Fprintln(stdout, "CPU profile: recorded continuously, as suits a demo (WithCPUDutyCycle(100)); by default it records 17 % of each window, at a random offset, so a 30s run would hold about 5s of it")
	return []profiler.Option{profiler.WithCPUDutyCycle(100)}
}

// fileExporter sets cfg's directory, PPROFOTEL_FILE_DIR's, or dir, or
// a new temporary one (cfg.madeDir, removed if Start fails), and returns
// a file exporter that writes there.
func (cfg *setup) fileExporter(dir string) (profiler.Exporter, error) {
	switch {
	case set("PPROFOTEL_FILE_DIR"):
		dir = os.Getenv("PPROFOTEL_FILE_DIR")
	case dir == "":
		d, err := os.MkdirTemp("", "pprofotel-example-")
		if err != nil {
			return nil, err
		}
		dir, cfg.madeDir = d, d
	}
	cfg.dir = dir
	return otlpprofilefile.New(context.Background(), otlpprofilefile.WithDir(dir))
}

// openCommand returns the command that converts the windows of the run
// started at start, in dir, to pprof profiles in dir/pprof and serves the
// CPU profile in pprof's web UI, printing its URL. When dir holds other
// runs' windows (others), -from leaves them out.
func openCommand(dir string, start time.Time, others bool) string {
	cmd := "go run ./cmd/pprofotel pprof "
	if others {
		cmd += "-from " + start.UTC().Format(time.RFC3339Nano) + " "
	}
	return cmd + "-o " + shellQuote(filepath.Join(dir, "pprof")) + " -http=127.0.0.1:0 " + shellQuote(dir)
}

// slowCommand returns the command that lists the slowest requests of the
// run started at start, in dir; others is as for openCommand.
func slowCommand(dir string, start time.Time, others bool) string {
	cmd := "go run ./cmd/pprofotel slow "
	if others {
		cmd += "-from " + start.UTC().Format(time.RFC3339Nano) + " "
	}
	return cmd + shellQuote(dir)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`*?[]#~;&|<>(){}!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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
	// offCPUExplained and leakExplained are set once the off-CPU unit
	// and the growing goroutine count have been explained.
	offCPUExplained, leakExplained bool
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

// printNew prints the summaries of the window files not printed yet. A
// file it cannot read is one line, and the others are still printed.
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
		if err == nil {
			var summary string
			if summary, err = p.summarize(name, reqs); err == nil {
				fmt.Fprint(p.out, summary)
				continue
			}
		}
		fmt.Fprintf(p.out, "\n== %s: %v\n", name, err)
	}
}

// The rankings of the summary's rows.
const (
	// byFlat ranks functions by flat value: the value of the samples where
	// the function is on top of the stack (the innermost frame, inlined
	// frames counting), as go tool pprof -top does. It fits the profiles
	// of where work is done, CPU time and allocations, and the mutex
	// profile, whose stacks end where a contended lock was released.
	byFlat = iota
	// byWaitSite ranks functions by the value of the samples where the
	// function is the first one outside the runtime on the stack. It fits
	// the profiles of where goroutines wait, whose top frame is always
	// the runtime's (runtime.gopark, runtime.selectgo, ...), while the
	// code a user would look at is the caller.
	byWaitSite
)

// ranking says how the rows of the runtime profile name rank functions.
func ranking(name string) int {
	switch name {
	case "cpu", "heap", "mutex":
		return byFlat
	}
	return byWaitSite
}

// summarize returns the summary of the window in file: its bounds and the
// part the CPU profile recorded, then, per profile and sample type, the
// total and the three functions that rank highest (see ranking).
func (w *windowPrinter) summarize(file string, reqs []pprofconv.Request) (string, error) {
	profiles, _, err := pprofconv.Convert(reqs, pprofconv.Filter{})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	window := writeBounds(&b, profiles, file)
	// The summary lists the profiles in the order they are collected,
	// the order of the ProfileType constants.
	for t := profiler.CPUProfile; t <= profiler.GoroutineLeakProfile; t++ {
		name := t.String()
		p := profiles[name]
		if p == nil {
			continue
		}
		for i, st := range p.SampleType {
			if name == "cpu" && st.Type == "cpu" {
				continue // the samples row says it, in seconds
			}
			total := writeRow(&b, name, p, i)
			w.explainRow(&b, name, total, window)
		}
	}
	return b.String(), nil
}

// writeBounds writes the window's heading line: its time range and the
// part of it the CPU profile recorded, and file; it returns the window's
// length. The window is the time range of any profile but the CPU
// profile's, which states the part it recorded (WithCPUDutyCycle); every
// other covers the whole window.
func writeBounds(b *strings.Builder, profiles map[string]*gpprof.Profile, file string) time.Duration {
	var window time.Duration
	b.WriteString("\n== ")
	for t := profiler.HeapProfile; t <= profiler.GoroutineLeakProfile; t++ {
		if p := profiles[t.String()]; p != nil {
			window = time.Duration(p.DurationNanos)
			b.WriteString("window " + timeRange(p))
			break
		}
	}
	if cpu := profiles["cpu"]; cpu != nil {
		if window != 0 {
			b.WriteString("; ")
		}
		b.WriteString("CPU recorded " + timeRange(cpu))
	} else {
		b.WriteString("; no CPU recorded")
	}
	fmt.Fprintf(b, "  [%s]\n", file)
	return window
}

// writeRow writes the row of profile name's sample type i: its total
// and the three functions (or wait sites) with the most of it; it
// returns the total.
func writeRow(b *strings.Builder, name string, p *gpprof.Profile, i int) int64 {
	st := p.SampleType[i]
	total := int64(0)
	byFunc := map[string]int64{}
	for _, s := range p.Sample {
		total += s.Value[i]
		fn := leaf(s)
		if ranking(name) == byWaitSite {
			fn = waitSite(s)
		}
		byFunc[fn] += s.Value[i]
	}
	label, value := st.Type, formatValue(total, st.Unit)
	switch {
	case name == "cpu" && st.Type == "samples":
		// One row: CPU time, each sample standing for a period of CPU
		// time (10ms at the runtime's default rate).
		label = "CPU time"
		value = fmt.Sprintf("%.2f s (%d samples)", time.Duration(total*p.Period).Seconds(), total)
		if total == 1 {
			value = strings.TrimSuffix(value, "s)") + ")"
		}
	case name == "goroutine":
		label = "goroutines"
	case name == "goroutineleak":
		label = "leaked goroutines"
	case name == "offcpu":
		label = "off-CPU time"
		value = fmt.Sprintf("%.1f goroutine-seconds", time.Duration(total).Seconds())
	}
	row := fmt.Sprintf("  %-13s %-17s %28s ", name, label, value)
	type fv struct {
		name string
		v    int64
	}
	var top []fv
	for n, v := range byFunc {
		if v != 0 {
			top = append(top, fv{n, v})
		}
	}
	sort.Slice(top, func(i, j int) bool { return top[i].v > top[j].v || top[i].v == top[j].v && top[i].name < top[j].name })
	for i := 0; i < len(top) && i < 3; i++ {
		row += fmt.Sprintf(" %s (%.0f%%)", shortName(top[i].name), 100*float64(top[i].v)/float64(total))
	}
	b.WriteString(strings.TrimRight(row, " ") + "\n")
	return total
}

// explainRow writes, once per run, what the goroutine and off-CPU rows
// of a window of length window mean, under the first of each.
func (w *windowPrinter) explainRow(b *strings.Builder, name string, total int64, window time.Duration) {
	if name == "goroutine" && !w.leakExplained {
		w.leakExplained = true
		b.WriteString("      (the count grows from window to window: /lookup leaks a goroutine whenever its backend\n" +
			"      answers after the 5ms deadline, one call in fifty, on purpose: Go 1.27's goroutine-leak profile finds it)\n")
	}
	if name == "offcpu" && !w.offCPUExplained && window > 0 {
		w.offCPUExplained = true
		fmt.Fprintf(b, "      (goroutine-seconds: the waits of all goroutines, summed, traced for part of the window and scaled\n"+
			"      to all of it; %.1f s in this %s window is %.1f goroutines waiting on average)\n",
			time.Duration(total).Seconds(), window.Round(time.Millisecond), float64(total)/float64(window))
	}
}

// timeRange formats the time range of p: its start and end, and its length.
func timeRange(p *gpprof.Profile) string {
	start := time.Unix(0, p.TimeNanos)
	d := time.Duration(p.DurationNanos)
	return fmt.Sprintf("%s–%s (%s)", start.Format("15:04:05.000"), start.Add(d).Format("15:04:05.000"), d.Round(time.Millisecond))
}

// formatValue formats v, in unit, in the unit a reader would use.
func formatValue(v int64, unit string) string {
	switch {
	case unit == "nanoseconds" && v >= 1e9:
		return fmt.Sprintf("%.2f s", float64(v)/1e9)
	case unit == "nanoseconds" && v >= 1e6:
		return fmt.Sprintf("%.2f ms", float64(v)/1e6)
	case unit == "nanoseconds":
		return fmt.Sprintf("%d ns", v)
	case unit == "bytes" && v >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(v)/1e6)
	case unit == "bytes" && v >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(v)/1e3)
	case unit == "bytes":
		return fmt.Sprintf("%d B", v)
	}
	return fmt.Sprint(v)
}

// leaf names the function on top of the stack of s.
func leaf(s *gpprof.Sample) string {
	if len(s.Location) == 0 || len(s.Location[0].Line) == 0 || s.Location[0].Line[0].Function == nil {
		return "?"
	}
	return s.Location[0].Line[0].Function.Name
}

// waitSite names the first function outside the runtime on the stack of s,
// from the top, inlined frames counting: where a user would look for the
// reason a goroutine waits. On a stack that is all the runtime's, it names
// the goroutine's own function, the outermost one but runtime.goexit (such
// as runtime.gcBgMarkWorker).
func waitSite(s *gpprof.Sample) string {
	outermost := "?"
	for _, loc := range s.Location {
		for _, line := range loc.Line {
			if line.Function == nil {
				continue
			}
			fn := line.Function.Name
			if !inRuntime(fn) {
				return fn
			}
			if fn != "runtime.goexit" {
				outermost = fn
			}
		}
	}
	return outermost
}

// inRuntime reports whether the function named fn is the runtime's: in
// package runtime or the runtime's internal packages, or a runtime
// function linked into another package under a name starting with
// runtime_ (sync.runtime_SemacquireMutex, internal/poll.runtime_pollWait).
// Packages under runtime/ that are not the runtime's own, such as
// runtime/pprof, are outside.
func inRuntime(fn string) bool {
	pkg, name := fn, ""
	slash := strings.LastIndex(fn, "/")
	if dot := strings.Index(fn[slash+1:], "."); dot >= 0 {
		pkg, name = fn[:slash+1+dot], fn[slash+1+dot+1:]
	}
	return pkg == "runtime" || strings.HasPrefix(pkg, "runtime/internal/") || strings.HasPrefix(pkg, "internal/runtime/") ||
		strings.HasPrefix(name, "runtime_")
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
