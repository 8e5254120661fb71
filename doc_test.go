package profiler

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/pprofotel/profiler/internal/collect"
)

// TestPackageDocListsEveryVariable checks that doc.go names every
// environment variable the configuration reads.
func TestPackageDocListsEveryVariable(t *testing.T) {
	docText, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	vars := variablesInConfigSource(t)
	if len(vars) < 15 {
		t.Fatalf("found only %d variables: %q", len(vars), vars)
	}
	for _, v := range vars {
		if strings.HasSuffix(v, "_") {
			continue // a prefix
		}
		if !regexp.MustCompile(`\b` + v + `\b`).Match(docText) {
			t.Errorf("doc.go does not list %s", v)
		}
	}
}

// variablesInConfigSource lists the environment variables the
// configuration reads: env.go's constants and the runtime rates'. (Each
// exporter package lists and tests its own.)
func variablesInConfigSource(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("env.go")
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`"((?:OTEL|PPROFOTEL|SPLUNK)_[A-Z_]*[A-Z])"`).FindAllStringSubmatch(string(src), -1)
	var vars []string
	for _, m := range names {
		vars = append(vars, m[1])
	}
	for _, d := range collect.Profiles {
		if d.Rate != nil {
			vars = append(vars, d.Rate.Env)
		}
		if d.Interval != nil {
			vars = append(vars, d.Interval.Env)
		}
	}
	return vars
}

// TestDocsNameEveryProfileType checks that the package documentation and
// README describe every entry of the profile table.
func TestDocsNameEveryProfileType(t *testing.T) {
	docText, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	prose := strings.ReplaceAll(string(docText), "\n// ", " ")
	if list := collect.NameList(); !strings.Contains(prose, list) {
		t.Errorf("doc.go does not list the profile types as %q", list)
	}
	for _, d := range collect.Profiles {
		if row := "| `" + d.Name + "` |"; !strings.Contains(string(readme), row) {
			t.Errorf("README's table of runtime profiles has no row %s", row)
		}
	}
}
