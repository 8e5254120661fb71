package otlpconfig

import (
	"strings"
	"testing"

	"github.com/pprofotel/profiler/internal/testutil/testcert"
)

// TestVariablesFollowTheSpecification sets each variable, in both forms,
// to a valid, an invalid and an empty value, and checks that an invalid
// value is warned about once, naming the variable, and that no value makes
// Resolve fail: the environment never stops an exporter from being built.
func TestVariablesFollowTheSpecification(t *testing.T) {
	pki := testcert.New(t)
	type valueCase struct {
		value string
		warn  bool
	}
	cases := map[string][]valueCase{
		"ENDPOINT":           {{"http://c:4318", false}, {"ftp://c:1", true}, {" ", false}},
		"INSECURE":           {{"true", false}, {"yes", true}, {"", false}},
		"HEADERS":            {{"a=b,c=d%20e", false}, {"a", true}, {"", false}},
		"TIMEOUT":            {{"1500", false}, {"1.5s", true}, {"", false}},
		"COMPRESSION":        {{"gzip", false}, {"zstd", true}, {"", false}},
		"CERTIFICATE":        {{pki.CAFile, false}, {pki.CAFile + ".missing", true}, {"", false}},
		"CLIENT_CERTIFICATE": {{pki.ClientCertFile, true /* without its key */}, {"", false}},
		"CLIENT_KEY":         {{pki.ClientKeyFile, true /* without its certificate */}, {"", false}},
	}
	for suffix, values := range cases {
		for _, name := range otlpVar(suffix) {
			for _, vc := range values {
				for _, transport := range []Transport{HTTP, GRPC} {
					t.Run(name+"="+vc.value, func(t *testing.T) {
						s := New("test", transport)
						if suffix == "INSECURE" {
							// INSECURE is read for host:port endpoints only.
							s.SetEndpoint("c:4317")
						}
						_, warnings, err := s.Resolve(env(map[string]string{name: vc.value}))
						if err != nil {
							t.Fatalf("Resolve failed on a variable: %v", err)
						}
						want := 0
						if vc.warn {
							want = 1
						}
						n := 0
						for _, w := range warnings {
							if strings.Contains(w.Error(), name) {
								n++
							}
						}
						if n != want || len(warnings) != want {
							t.Errorf("warnings %v, want %d naming %s", warnings, want, name)
						}
					})
				}
			}
		}
	}
}
