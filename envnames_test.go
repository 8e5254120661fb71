package profiler

import (
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/envconfig"
)

// TestUnknownVariablesAreWarned checks that every PPROFOTEL_ variable the
// module does not read is warned about once, by name, a misspelling with
// the name it resembles, an old name with the one that replaced it; that
// an old name still read applies; and that the module's own variables,
// other prefixes and the repository's test variables are not warned about.
func TestUnknownVariablesAreWarned(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		// want are the warnings, each a list of the substrings it holds,
		// in order; nil for none.
		want [][]string
		// check inspects the configuration, if not nil.
		check func(c *config) error
	}{
		{"misspelt", map[string]string{"PPROFOTEL_CPU_DUTYCYCLE": "100"},
			[][]string{{"PPROFOTEL_CPU_DUTYCYCLE is not a variable the profiler reads; ignored", "did you mean PPROFOTEL_CPU_DUTY_CYCLE?"}},
			func(c *config) error { return wantEqual("cpu duty", c.cpuDuty, defaultCPUDuty) }},
		{"singular", map[string]string{"PPROFOTEL_PROFILE": "cpu"},
			[][]string{{"PPROFOTEL_PROFILE is not", "did you mean PPROFOTEL_PROFILES?"}}, nil},
		{"lower case", map[string]string{"pprofotel_window": "5s"},
			[][]string{{"pprofotel_window is not", "did you mean PPROFOTEL_WINDOW?"}},
			func(c *config) error { return wantEqual("window", c.window, defaultWindow) }},
		{"nothing close", map[string]string{"PPROFOTEL_COLOUR": "blue"},
			[][]string{{"PPROFOTEL_COLOUR is not a variable the profiler reads; ignored (`go doc github.com/pprofotel/profiler` lists them)"}}, nil},
		{"older rename, not read", map[string]string{"PPROFOTEL_PERIOD": "5s"},
			[][]string{{"PPROFOTEL_PERIOD was renamed PPROFOTEL_WINDOW", "ignored"}},
			func(c *config) error { return wantEqual("window", c.window, defaultWindow) }},
		{"older rename, another unit", map[string]string{"PPROFOTEL_CPU_DURATION": "30s"},
			[][]string{{"PPROFOTEL_CPU_DURATION was renamed PPROFOTEL_CPU_DUTY_CYCLE, which may mean another unit"}},
			func(c *config) error { return wantEqual("cpu duty", c.cpuDuty, defaultCPUDuty) }},
		{"renamed, read", map[string]string{"PPROFOTEL_CPU_DUTY": "50"},
			[][]string{{"PPROFOTEL_CPU_DUTY was renamed PPROFOTEL_CPU_DUTY_CYCLE; read in its place until release 0.2.0"}},
			func(c *config) error { return wantEqual("cpu duty", c.cpuDuty, 50) }},
		{"renamed, new one set", map[string]string{"PPROFOTEL_CPU_DUTY": "50", "PPROFOTEL_CPU_DUTY_CYCLE": "40"},
			[][]string{{"PPROFOTEL_CPU_DUTY was renamed PPROFOTEL_CPU_DUTY_CYCLE; ignored, since PPROFOTEL_CPU_DUTY_CYCLE is set"}},
			func(c *config) error { return wantEqual("cpu duty", c.cpuDuty, 40) }},
		{"renamed, read, invalid", map[string]string{"PPROFOTEL_MUTEX_FRACTION": "0"},
			[][]string{
				{"PPROFOTEL_MUTEX_FRACTION was renamed PPROFOTEL_MUTEX_PROFILE_FRACTION; read"},
				{`PPROFOTEL_MUTEX_FRACTION="0": fraction must be a positive integer`},
			},
			func(c *config) error { return wantEqual("mutex fraction", c.rates[MutexProfile], 10) }},
		{"renamed off-CPU and block, read", map[string]string{"PPROFOTEL_OFFCPU_DUTY": "30", "PPROFOTEL_BLOCK_RATE": "500"},
			[][]string{{"PPROFOTEL_BLOCK_RATE was renamed PPROFOTEL_BLOCK_PROFILE_RATE"}, {"PPROFOTEL_OFFCPU_DUTY was renamed PPROFOTEL_OFFCPU_DUTY_CYCLE"}},
			func(c *config) error {
				return cmpErrs(wantEqual("off-CPU duty", c.rates[OffCPUProfile], 30), wantEqual("block rate", c.rates[BlockProfile], 500))
			}},
		{"other packages' and tests' variables", map[string]string{
			"PPROFOTEL_FILE_DIR": "/tmp/x", "PPROFOTEL_OPAMP_ENDPOINT": "ws://localhost:4320/v1/opamp",
			"PPROFOTEL_OPAMP_HEADERS": "a=b", "PPROFOTEL_OTELCOL": "/bin/otelcol", "PPROFOTEL_INTEGRATION_LOAD": "1",
		}, nil, nil},
		{"other prefixes", map[string]string{"OTEL_CONFIG_FILE_X": "1", "PPROFOTELX": "1", "MY_PPROFOTEL_WINDOW": "1"}, nil, nil},
		{"renamed variables", map[string]string{
			"PPROFOTEL_CPU_DUTY_CYCLE": "40", "PPROFOTEL_OFFCPU_DUTY_CYCLE": "20",
			"PPROFOTEL_MUTEX_PROFILE_FRACTION": "7", "PPROFOTEL_BLOCK_PROFILE_RATE": "900",
		}, nil, func(c *config) error {
			return cmpErrs(wantEqual("cpu duty", c.cpuDuty, 40), wantEqual("off-CPU duty", c.rates[OffCPUProfile], 20),
				wantEqual("mutex fraction", c.rates[MutexProfile], 7), wantEqual("block rate", c.rates[BlockProfile], 900))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var environ []string
			for k, v := range tt.env {
				environ = append(environ, k+"="+v)
			}
			slices.Sort(environ)
			c, err := newConfigEnv(nil, envOf(tt.env), environ)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.shutdownOwnExporter)
			if len(c.warnings) != len(tt.want) {
				t.Fatalf("warnings %q, want %d", c.warnings, len(tt.want))
			}
			for i, parts := range tt.want {
				for _, p := range parts {
					if !strings.Contains(c.warnings[i].Error(), p) {
						t.Errorf("warning %d %q lacks %q", i, c.warnings[i], p)
					}
				}
			}
			if tt.check != nil {
				if err := tt.check(c); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestStartLogsEnvironmentWarnings checks that Start reads the process's
// environment for unknown names and logs each warning once, and that a
// variable that is valid but not read (OTEL_CONFIG_FILE) is not called
// invalid.
func TestStartLogsEnvironmentWarnings(t *testing.T) {
	tests := []struct {
		variable, value string
		want            string
	}{
		{"PPROFOTEL_WINDOWS", "30s", "PPROFOTEL_WINDOWS is not a variable the profiler reads; ignored (did you mean PPROFOTEL_WINDOW?)"},
		{"OTEL_CONFIG_FILE", "/etc/otel.yaml", `OTEL_CONFIG_FILE=\"/etc/otel.yaml\": the profiler does not read the configuration file`},
	}
	for _, tt := range tests {
		t.Run(tt.variable, func(t *testing.T) {
			t.Setenv(tt.variable, tt.value)
			var logs syncBuffer
			p, err := Start(WithExporter(noneExporter{}), WithProfileTypes(GoroutineProfile), WithProcessContext(false),
				WithWindow(time.Hour), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Stop(t.Context()); err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(logs.String(), tt.want); n != 1 {
				t.Errorf("%q is logged %d times, want once:\n%s", tt.want, n, logs.String())
			}
			if strings.Contains(strings.ToLower(logs.String()), "invalid") {
				t.Errorf("the log calls it invalid:\n%s", logs.String())
			}
		})
	}
}

// TestKnownVariablesAreTheModules checks the list of known names against
// the module's source: every PPROFOTEL_ name written in a Go file of the
// repository is known, a test or tool variable, or an old name; and every
// name of otherVariables is in the source of another package.
func TestKnownVariablesAreTheModules(t *testing.T) {
	known := map[string]bool{}
	for _, n := range knownVariables() {
		known[n] = true
	}
	for _, n := range devVariables {
		known[n] = true
	}
	for _, rn := range envconfig.Renames {
		known[rn.Old] = true
	}
	name := regexp.MustCompile(`"(PPROFOTEL_[A-Z0-9_]*[A-Z0-9])"`)
	seenElsewhere := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		if path == "envnames_test.go" || path == filepath.Join("internal", "envconfig", "names_test.go") {
			return nil // they name unknown variables on purpose
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range name.FindAllStringSubmatch(string(src), -1) {
			if !known[m[1]] {
				t.Errorf("%s names %s, which the list of known variables lacks", path, m[1])
			}
			if filepath.Dir(path) != "." && !strings.HasSuffix(path, "_test.go") {
				seenElsewhere[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range otherVariables {
		if !seenElsewhere[n] {
			t.Errorf("otherVariables lists %s, which no other package reads", n)
		}
	}
}
