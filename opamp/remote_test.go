package opamp

import (
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/pprofotel/profiler/internal/control"
)

var testLocal = control.Settings{
	Enabled: true, ProfileTypes: []string{"cpu", "heap", "goroutine"}, Window: time.Minute,
	CPUDuty: 17, OffCPUDuty: 10, MutexFraction: 10, BlockRate: 10000, MaxGoroutines: 10000, LeakInterval: 5 * time.Minute,
}

func configMap(files map[string]string) *protobufs.AgentConfigMap {
	cm := &protobufs.AgentConfigMap{ConfigMap: map[string]*protobufs.AgentConfigFile{}}
	for name, body := range files {
		cm.ConfigMap[name] = &protobufs.AgentConfigFile{Body: []byte(body), ContentType: "application/json"}
	}
	return cm
}

// TestParseRemote: what a remote configuration asks for, over the local
// settings, and why one is refused whole.
func TestParseRemote(t *testing.T) {
	incident := testLocal
	incident.ProfileTypes = []string{"cpu", "heap", "goroutine", "offcpu"}
	incident.OffCPUDuty = 50
	paused := testLocal
	paused.Enabled = false
	every := control.Settings{
		Enabled: true, ProfileTypes: []string{"heap", "mutex", "block", "goroutineleak"}, Window: 30 * time.Second,
		CPUDuty: 50, OffCPUDuty: 1, MutexFraction: 5, BlockRate: 1000, MaxGoroutines: 500, LeakInterval: 2 * time.Minute,
	}
	for _, tt := range []struct {
		name    string
		files   map[string]string
		ctype   string
		want    control.Settings
		expires time.Duration
		err     string
	}{
		{name: "no file: local", want: testLocal},
		{name: "empty file: local", files: map[string]string{"pprofotel": " \n"}, want: testLocal},
		{name: "off-CPU at 50% for 10s",
			files: map[string]string{"pprofotel": `{"profiles":["cpu","heap","goroutine","offcpu"],"offcpu_duty_cycle":50,"expires_in":"10s"}`},
			want:  incident, expires: 10 * time.Second},
		{name: "pause", files: map[string]string{"pprofotel": `{"enabled":false}`}, want: paused},
		{name: "the unnamed file", files: map[string]string{"": `{"enabled":false}`}, want: paused},
		{name: "both files", files: map[string]string{"": `{}`, "pprofotel": `{}`}, err: "two configuration files"},
		{name: "every key at its bound", files: map[string]string{"pprofotel": `{"enabled":true,"profiles":["heap","mutex","block","goroutineleak"],
			"window":"30s","cpu_duty_cycle":50,"offcpu_duty_cycle":1,"mutex_profile_fraction":5,"block_profile_rate":1000,
			"max_goroutines":500,"goroutineleak_interval":"2m","expires_in":"24h"}`}, want: every, expires: 24 * time.Hour},
		{name: "unknown key", files: map[string]string{"pprofotel": `{"offcpu_duty":50}`}, err: `unknown field "offcpu_duty"`},
		{name: "another file", files: map[string]string{"pprofotel": `{}`, "collector.yaml": "receivers: {}"},
			err: `unknown configuration file "collector.yaml"`},
		{name: "not JSON", files: map[string]string{"pprofotel": "window: 10s"}, err: "not a configuration of the profiler"},
		{name: "two objects", files: map[string]string{"pprofotel": `{} {}`}, err: "more than one JSON value"},
		{name: "YAML content type", files: map[string]string{"pprofotel": `{}`}, ctype: "application/yaml", err: `content type "application/yaml"`},
		{name: "too large", files: map[string]string{"pprofotel": `{"profiles":["` + strings.Repeat("x", MaxConfigBytes) + `"]}`},
			err: "the profiler accepts at most 65536"},
		{name: "duration as a number", files: map[string]string{"pprofotel": `{"window":10}`}, err: `want a duration such as "10s"`},
		{name: "bad duration", files: map[string]string{"pprofotel": `{"window":"10 parsecs"}`}, err: `want a duration such as "10s"`},
		{name: "window 1ns", files: map[string]string{"pprofotel": `{"window":"1ns"}`},
			err: "window 1ns is below 10s, the local bound (opamp.WithMinWindow)"},
		{name: "CPU duty above the bound", files: map[string]string{"pprofotel": `{"cpu_duty_cycle":51}`},
			err: "cpu_duty_cycle 51 is above 50, the local bound (opamp.WithMaxCPUDutyCycle)"},
		{name: "off-CPU duty above the bound", files: map[string]string{"pprofotel": `{"offcpu_duty_cycle":80}`},
			err: "offcpu_duty_cycle 80 is above 50, the local bound (opamp.WithMaxOffCPUDutyCycle)"},
		{name: "mutex fraction below the bound", files: map[string]string{"pprofotel": `{"mutex_profile_fraction":1}`},
			err: "mutex_profile_fraction 1 is below 5"},
		{name: "block rate below the bound", files: map[string]string{"pprofotel": `{"block_profile_rate":1}`},
			err: "block_profile_rate 1 is below 1000"},
		{name: "no goroutine guard", files: map[string]string{"pprofotel": `{"max_goroutines":0}`},
			err: "max_goroutines 0 is beyond 10000"},
		{name: "goroutine guard above the bound", files: map[string]string{"pprofotel": `{"max_goroutines":20000}`},
			err: "max_goroutines 20000 is beyond 10000"},
		{name: "leak interval below the bound", files: map[string]string{"pprofotel": `{"goroutineleak_interval":"1s"}`},
			err: "goroutineleak_interval 1s is below 1m0s"},
		{name: "window above the bound", files: map[string]string{"pprofotel": `{"window":"1000h","expires_in":"2s"}`},
			err: "window 1000h0m0s is above 5m0s, the local bound (opamp.WithMaxWindow)"},
		{name: "CPU duty 0", files: map[string]string{"pprofotel": `{"cpu_duty_cycle":0}`},
			err: "cpu_duty_cycle 0 is below 1, the remote configuration's limit"},
		{name: "off-CPU duty negative", files: map[string]string{"pprofotel": `{"offcpu_duty_cycle":-5}`},
			err: "offcpu_duty_cycle -5 is below 1"},
		{name: "negative goroutine guard", files: map[string]string{"pprofotel": `{"max_goroutines":-1}`},
			err: "max_goroutines -1 is beyond 10000"},
		{name: "mutex fraction above the limit", files: map[string]string{"pprofotel": `{"mutex_profile_fraction":1000000000}`},
			err: "mutex_profile_fraction 1000000000 is above 1000000, the remote configuration's limit"},
		{name: "block rate above the limit", files: map[string]string{"pprofotel": `{"block_profile_rate":10000000000}`},
			err: "block_profile_rate 10000000000 is above 1000000000"},
		{name: "leak interval above the limit", files: map[string]string{"pprofotel": `{"goroutineleak_interval":"48h"}`},
			err: "goroutineleak_interval 48h0m0s is above 24h0m0s"},
		{name: "expiry too long", files: map[string]string{"pprofotel": `{"expires_in":"48h"}`},
			err: "expires_in 48h0m0s is not positive or above 24h0m0s"},
		{name: "negative expiry", files: map[string]string{"pprofotel": `{"expires_in":"-1s"}`}, err: "expires_in -1s"},
		{name: "every bound exceeded is named", files: map[string]string{"pprofotel": `{"cpu_duty_cycle":90,"window":"2s"}`},
			err: "cpu_duty_cycle 90 is above 50, the local bound (opamp.WithMaxCPUDutyCycle); window 2s is below 10s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var cm *protobufs.AgentConfigMap
			if tt.files != nil {
				cm = configMap(tt.files)
				if tt.ctype != "" {
					cm.ConfigMap["pprofotel"].ContentType = tt.ctype
				}
			}
			got, err := parseRemote(cm, testLocal, defaultBounds)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !sameSettings(got.settings, tt.want) || got.expiresIn != tt.expires {
				t.Errorf("got %+v expiring in %s, want %+v expiring in %s", got.settings, got.expiresIn, tt.want, tt.expires)
			}
		})
	}
}

func sameSettings(a, b control.Settings) bool {
	return strings.Join(a.ProfileTypes, ",") == strings.Join(b.ProfileTypes, ",") && a.Window == b.Window &&
		a.Enabled == b.Enabled && a.CPUDuty == b.CPUDuty && a.OffCPUDuty == b.OffCPUDuty && a.MutexFraction == b.MutexFraction &&
		a.BlockRate == b.BlockRate && a.MaxGoroutines == b.MaxGoroutines && a.LeakInterval == b.LeakInterval
}

// TestEffectiveDocumentRoundTrip: the effective configuration, in the
// remote form, is a valid remote configuration that changes nothing.
func TestEffectiveDocumentRoundTrip(t *testing.T) {
	c := &Client{}
	eff := c.effectiveConfig(testLocal, nil)
	got, err := parseRemote(eff.ConfigMap, control.Settings{}, bounds{
		maxCPUDuty: 100, maxOffCPUDuty: 100, minWindow: 1, maxWindow: time.Hour, minMutexFraction: 1, minBlockRate: 1,
		maxGoroutines: 1 << 30, minLeakInterval: 1, maxExpiry: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !sameSettings(got.settings, testLocal) {
		t.Errorf("round trip gave %+v, want %+v", got.settings, testLocal)
	}
}
