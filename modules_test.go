package profiler_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// heavy are the modules the SDK keeps out of its users' builds: remote
// control's client and what its module requires for its own tests.
var heavy = []string{
	"github.com/open-telemetry/opamp-go",
	"github.com/gorilla/websocket",
	"github.com/stretchr/testify",
	"go.yaml.in/yaml/v3",
	"gopkg.in/yaml.v3",
}

// goCmd runs the go command in the SDK's module alone, outside any
// workspace, as a user's build sees it.
func goCmd(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

// TestSDKRequiresNoRemoteControl checks that remote control lives in a
// module of its own: the SDK's go.mod requires none of the heavy modules,
// opamp-go and websocket are not in its module graph (testify and yaml
// are, through otel-go's own go.mod, but no package of theirs is built),
// and a program of the SDK and its exporters links none of their
// packages, nor the standard library's testing.
func TestSDKRequiresNoRemoteControl(t *testing.T) {
	var mod struct{ Require []struct{ Path string } }
	if err := json.Unmarshal(goCmd(t, "mod", "edit", "-json"), &mod); err != nil {
		t.Fatal(err)
	}
	for _, r := range mod.Require {
		for _, h := range heavy {
			if r.Path == h {
				t.Errorf("go.mod requires %s", h)
			}
		}
	}
	for _, m := range strings.Fields(string(goCmd(t, "list", "-m", "-f", "{{.Path}}", "all"))) {
		if m == heavy[0] || m == heavy[1] || m == "github.com/pprofotel/profiler/opamp" {
			t.Errorf("the module graph holds %s", m)
		}
	}
	deps := strings.Fields(string(goCmd(t, "list", "-deps", "-f", "{{.ImportPath}}",
		".", "./exporters/...", "./labels", "./offcpu")))
	if len(deps) < 50 {
		t.Fatalf("go list -deps gave %d packages, want the SDK's whole graph", len(deps))
	}
	for _, p := range deps {
		if p == "testing" || strings.HasPrefix(p, "github.com/pprofotel/profiler/opamp") {
			t.Errorf("the SDK links %s", p)
		}
		for _, h := range heavy {
			if p == h || strings.HasPrefix(p, h+"/") {
				t.Errorf("the SDK links %s", p)
			}
		}
	}
}
