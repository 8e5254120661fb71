package otlpattr_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestSDKStaysFreeOfGooglePprof checks that the SDK's package, which
// imports this contract through the encoder, does not link
// github.com/google/pprof: only the converter may.
func TestSDKStaysFreeOfGooglePprof(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/pprofotel/profiler").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := string(out)
	if !strings.Contains(deps, "github.com/pprofotel/profiler/internal/otlpattr\n") {
		t.Fatalf("the SDK does not use the attribute contract:\n%s", deps)
	}
	if strings.Contains(deps, "github.com/google/pprof") {
		t.Error("the SDK links github.com/google/pprof")
	}
}
