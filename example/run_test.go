package main

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pprofotel/profiler"
)

// window is one window of the example's output: its header and its rows.
type window struct {
	header string
	rows   []row
}

// row is a row of a window: the runtime profile it is of, the whole line,
// and the first of the top functions it names ("" when none).
type row struct {
	profile, line, top string
}

var (
	// rowRE matches a row: two spaces, the profile, its label and value,
	// then the top functions, each with its share.
	rowRE = regexp.MustCompile(`^  (\S+) .*?  ([^ ]+) \(\d+%\)`)
	// headerRE matches a window's header: the window's bounds and length,
	// then, apart, the part the CPU profile recorded, then the file.
	headerRE = regexp.MustCompile(`^== window (\d\d:\d\d:\d\d\.\d{3})–(\d\d:\d\d:\d\d\.\d{3}) \(\S+\); ` +
		`CPU recorded \d\d:\d\d:\d\d\.\d{3}–\d\d:\d\d:\d\d\.\d{3} \(\S+\)  \[profiles-\S+\.pb\]$`)
)

// parseWindows returns the windows of the example's output.
func parseWindows(out string) []window {
	var windows []window
	var cur *window
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "== "):
			windows = append(windows, window{header: line})
			cur = &windows[len(windows)-1]
		case cur != nil && len(line) > 2 && strings.HasPrefix(line, "  ") && line[2] != ' ':
			r := row{profile: strings.Fields(line)[0], line: line}
			if m := rowRE.FindStringSubmatch(line); m != nil {
				r.top = m[2]
			}
			cur.rows = append(cur.rows, r)
		case !strings.HasPrefix(line, " "):
			cur = nil
		}
	}
	return windows
}

// TestRun runs the example for a few short windows and checks that its
// output explains itself, on the Go running the test: Go 1.26 says calmly
// that it has no goroutine-leak profile, Go 1.27 names the example's
// leaking function (GOTOOLCHAIN=go1.27.4 go test ./example/).
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the example for 3s per case")
	}
	// The example writes to files only when the environment names no
	// other exporter, and takes its flags only where the environment is
	// silent.
	for _, v := range []string{"OTEL_SDK_DISABLED", "PPROFOTEL_ENABLED", "OTEL_PROFILES_EXPORTER",
		"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT",
		"PPROFOTEL_FILE_DIR", "PPROFOTEL_WINDOW", "PPROFOTEL_PROFILES", "PPROFOTEL_CPU_DUTY_CYCLE", "PPROFOTEL_CPU_DUTY", "PPROFOTEL_GOROUTINELEAK_INTERVAL"} {
		t.Setenv(v, "")
	}
	leakSkipped := "goroutine-leak profile: needs Go 1.27, skipped (this is " + runtime.Version() + ")"
	hasLeakProfile := profiler.GoroutineLeakProfile.Available() == nil
	// The function lookup starts, which leaks: main.(*service).lookup.func1
	// in the example, named by this package's path in its test.
	pkg := runtime.FuncForPC(reflect.ValueOf(backend).Pointer()).Name()
	leaker := shortName(strings.TrimSuffix(pkg, ".backend") + ".(*service).lookup.func1")

	tests := []struct {
		name     string
		profiles string // PPROFOTEL_PROFILES
		// want and notWant are the runtime profiles every full window
		// has and none has.
		want, notWant []string
		check         func(t *testing.T, out string, windows []window)
	}{
		{
			name: "default",
			want: []string{"cpu", "offcpu", "heap", "goroutine", "mutex", "block"},
			check: func(t *testing.T, out string, windows []window) {
				checkRoutes(t, out, true)
				checkSlow(t, out)
				checkOffCPUUnit(t, out, windows)
				if n := strings.Count(out, "      (the count grows from window to window: /lookup leaks a goroutine"); n != 1 {
					t.Errorf("the output says why the goroutines grow %d times, want once:\n%s", n, out)
				}
				leakRows, anyLeakRows := 0, 0
				for _, w := range windows {
					for _, r := range w.rows {
						switch r.profile {
						case "goroutine", "goroutineleak":
							if strings.Contains(r.line, "runtime.gopark") {
								t.Errorf("a %s row names runtime.gopark, not where the goroutines wait:\n%s", r.profile, r.line)
							}
							if r.profile == "goroutineleak" {
								anyLeakRows++
							}
							// A window before the first leak has a row
							// of 0 that names no function.
							if r.profile == "goroutineleak" && r.top != "" {
								leakRows++
								if r.top != leaker {
									t.Errorf("the leak row's top function is %q, want %s, the goroutine lookup leaks:\n%s", r.top, leaker, r.line)
								}
							}
						}
					}
				}
				if hasLeakProfile {
					if leakRows == 0 {
						t.Errorf("%s has the goroutine-leak profile, but no window has a goroutineleak row naming a function", runtime.Version())
					}
					if strings.Contains(out, leakSkipped) {
						t.Errorf("%s has the goroutine-leak profile, but the output says it is skipped", runtime.Version())
					}
				} else {
					if !strings.HasPrefix(out, leakSkipped+"\n") {
						t.Errorf("the output does not start with the line\n%s", leakSkipped)
					}
					if anyLeakRows != 0 {
						t.Errorf("%d goroutineleak rows on %s, which has no such profile", anyLeakRows, runtime.Version())
					}
				}
			},
		},
		{
			// The environment's profiles win over the example's: no
			// off-CPU profile, so no slow request is explained.
			name:     "environment",
			profiles: "cpu,heap",
			want:     []string{"cpu", "heap"},
			notWant:  []string{"offcpu", "goroutine", "goroutineleak"},
			check: func(t *testing.T, out string, windows []window) {
				checkRoutes(t, out, false)
				if !strings.Contains(out, "\nno slow request explained: the slow-request profile comes with the off-CPU one (PPROFOTEL_PROFILES=...,offcpu)\n") {
					t.Errorf("the output does not say why no slow request is explained:\n%s", out)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PPROFOTEL_PROFILES", tt.profiles)
			dir := t.TempDir()
			var stdout bytes.Buffer
			if err := run(context.Background(), []string{"-duration", "3s", "-window", "1s", "-dir", dir}, &stdout); err != nil {
				t.Fatal(err)
			}
			out := stdout.String()
			if testing.Verbose() {
				t.Log("\n" + out)
			}
			if strings.Contains(out, "profiler:") {
				t.Errorf("the output holds an error-looking profiler message:\n%s", out)
			}
			if !strings.Contains("\n"+out, "\nCPU profile: recorded continuously, as suits a demo (WithCPUDutyCycle(100))") {
				t.Errorf("the output does not say that the CPU profile records continuously:\n%s", out)
			}

			windows := parseWindows(out)
			// A 3s run of 1s windows has full windows and the last,
			// partial one Stop sends.
			if len(windows) < 2 {
				t.Fatalf("%d windows, want at least 2:\n%s", len(windows), out)
			}
			var prevEnd string
			for i, w := range windows {
				m := headerRE.FindStringSubmatch(w.header)
				if m == nil {
					t.Errorf("window %d: header %q does not give the window and, apart, the CPU part", i, w.header)
					continue
				}
				// Windows follow one another: each starts where the
				// last ended.
				if i > 0 && m[1] != prevEnd {
					t.Errorf("window %d starts at %s, the one before it ended at %s", i, m[1], prevEnd)
				}
				prevEnd = m[2]
				count := map[string]int{}
				for _, r := range w.rows {
					count[r.profile]++
				}
				if count["cpu"] != 1 {
					t.Errorf("window %d has %d cpu rows, want 1:\n%s", i, count["cpu"], out)
				}
				for _, r := range w.rows {
					if r.profile == "cpu" && !regexp.MustCompile(`  CPU time +\d+\.\d\d s \(\d+ samples?\)`).MatchString(r.line) {
						t.Errorf("window %d: the CPU row does not give seconds and samples:\n%s", i, r.line)
					}
				}
				for _, p := range tt.notWant {
					if count[p] != 0 {
						t.Errorf("window %d has %s rows, not asked for:\n%s", i, p, out)
					}
				}
				if i == len(windows)-1 {
					continue // the partial window at Stop may have too little to rank
				}
				for _, p := range tt.want {
					if count[p] == 0 {
						t.Errorf("window %d has no %s row:\n%s", i, p, out)
					}
				}
			}
			tt.check(t, out, windows)

			lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
			wantLast := []string{
				"  go run ./cmd/pprofotel pprof -o " + shellQuote(filepath.Join(dir, "pprof")) + " -http=127.0.0.1:0 " + shellQuote(dir),
				"  go run ./cmd/pprofotel slow " + shellQuote(dir),
			}
			if last := lines[len(lines)-2:]; !slices.Equal(last, wantLast) {
				t.Errorf("last lines\n%s\nwant\n%s", strings.Join(last, "\n"), strings.Join(wantLast, "\n"))
			}
		})
	}
}

// checkOffCPUUnit checks that the off-CPU rows say their unit, and that
// the output explains it once.
func checkOffCPUUnit(t *testing.T, out string, windows []window) {
	t.Helper()
	for _, w := range windows {
		for _, r := range w.rows {
			if r.profile == "offcpu" && !regexp.MustCompile(`  off-CPU time +\d+\.\d goroutine-seconds`).MatchString(r.line) {
				t.Errorf("the off-CPU row does not say its unit:\n%s", r.line)
			}
		}
	}
	explained := regexp.MustCompile(`\n      \(goroutine-seconds: the waits of all goroutines, summed, traced for part of the window and scaled\n` +
		`      to all of it; [\d.]+ s in this \S+ window is [\d.]+ goroutines waiting on average\)\n`)
	if n := len(explained.FindAllString(out, -1)); n != 1 {
		t.Errorf("the output explains goroutine-seconds %d times, want once", n)
	}
}

// checkRoutes checks the run's table by route: a row for every
// route, each with requests, and the requests the load had answered
// all counted (an answered request's span ended before its answer was
// sent, the others may have ended too); off-CPU time beside CPU time
// when the off-CPU profile ran.
func checkRoutes(t *testing.T, out string, offCPU bool) {
	t.Helper()
	header := `\nthis run by route, the http.route of the request's server span, read back from its windows:\n` +
		`  route +requests  CPU time`
	if offCPU {
		header += `  off-CPU time \(goroutine-seconds\)`
	}
	loc := regexp.MustCompile(header + "\n").FindStringIndex(out)
	if loc == nil {
		t.Fatalf("the output has no table by route starting\n%s\noutput:\n%s", header, out)
	}
	table := out[loc[1]:]
	rowRE := regexp.MustCompile(`^  (\S+) +(\d+|-) +\d+\.\d\d s(?: +(\d+\.\d))?$`)
	counted := map[string]int{}
	total := 0
	var routed, unrouted float64 // off-CPU goroutine-seconds
	for line := range strings.Lines(table) {
		m := rowRE.FindStringSubmatch(strings.TrimSuffix(line, "\n"))
		if m == nil {
			break
		}
		if (m[3] != "") != offCPU {
			t.Errorf("row %q: off-CPU column present %v, want %v", line, m[3] != "", offCPU)
		}
		if m[1] == "(no" || m[2] == "-" {
			continue
		}
		if v, err := strconv.ParseFloat(m[3], 64); err == nil {
			known := false
			for _, r := range routes {
				known = known || r.pattern == m[1]
			}
			if known {
				routed += v
			} else {
				unrouted += v
			}
		}
		n, _ := strconv.Atoi(m[2])
		counted[m[1]] = n
		total += n
	}
	for _, r := range routes {
		if counted[r.pattern] == 0 {
			t.Errorf("the table by route counts no request of %s:\n%s", r.pattern, table)
		}
	}
	// A request's goroutines that wait after it ended, /lookup's, take
	// its route; only requests still running as the run stops may keep
	// the name they started with (the method).
	t.Logf("off the CPU: %.1f goroutine-seconds under the service's routes, %.1f under none of them", routed, unrouted)
	if unrouted > 0.1*routed {
		t.Errorf("the table by route gives %.1f goroutine-seconds off the CPU to no route of the service, against %.1f to its routes:\n%s", unrouted, routed, table)
	}
	m := regexp.MustCompile(`\nload done: (\d+) requests\n`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the output does not say how many requests the load sent:\n%s", out)
	}
	if answered, _ := strconv.Atoi(m[1]); total < answered || answered == 0 {
		t.Errorf("the table by route counts %d requests, the load had %s answered:\n%s", total, m[1], table)
	}
}

// checkSlow checks that one slow request, of one of the service's routes,
// is explained: its duration, span and the parts of its time.
func checkSlow(t *testing.T, out string) {
	t.Helper()
	var patterns []string
	for _, r := range routes {
		patterns = append(patterns, regexp.QuoteMeta(r.pattern))
	}
	re := regexp.MustCompile(`\n\d+ slow requests? explained \(those over the slow-request threshold\); the slowest[^,]*, ` +
		`(` + strings.Join(patterns, "|") + `), took \d+ms \(trace [0-9a-f]{32} span [0-9a-f]{16}\):\n` +
		`((?:  \S+ +\d+% +(?:on_cpu|off_cpu|runnable|untraced)[^\n]*\n)+)` +
		`  \(its time by goroutine state and wait reason, in the application's function and the call it waited in\)\n`)
	if !re.MatchString(out) {
		t.Errorf("the output explains no slow request:\n%s", out)
	}
}
