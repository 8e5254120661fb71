package opamp

import (
	"testing"

	"github.com/open-telemetry/opamp-go/protobufs"
)

// FuzzParseRemote feeds parseRemote what a server may send: any file name,
// content type and body. It must never panic, and whatever it accepts
// stays within the local bounds: a hostile server gets a refusal, never
// more CPU than the application allowed.
func FuzzParseRemote(f *testing.F) {
	f.Add("pprofotel", "application/json", `{"profiles":["cpu","offcpu"],"offcpu_duty_cycle":50,"expires_in":"10s"}`)
	f.Add("", "", `{"enabled":false}`)
	f.Add("pprofotel", "application/json", `{"window":"1ns"}`)
	f.Add("pprofotel", "application/json", `{"cpu_duty_cycle":80,"unknown":1}`)
	f.Add("other", "text/yaml", "window: 10s")
	f.Add("pprofotel", "application/json", `{"max_goroutines":0} {}`)
	f.Add("pprofotel", "application/json", `{"window":"1000h","expires_in":"2s"}`)
	f.Fuzz(func(t *testing.T, name, contentType, body string) {
		cm := &protobufs.AgentConfigMap{ConfigMap: map[string]*protobufs.AgentConfigFile{
			name: {Body: []byte(body), ContentType: contentType},
		}}
		got, err := parseRemote(cm, testLocal, defaultBounds)
		if err != nil {
			return
		}
		s, b := got.settings, defaultBounds
		if s.CPUDuty > max(b.maxCPUDuty, testLocal.CPUDuty) ||
			s.OffCPUDuty > max(b.maxOffCPUDuty, testLocal.OffCPUDuty) ||
			s.CPUDuty < 1 || s.OffCPUDuty < 1 ||
			s.Window < min(b.minWindow, testLocal.Window) || s.Window > max(b.maxWindow, testLocal.Window) ||
			s.MutexFraction < min(b.minMutexFraction, testLocal.MutexFraction) ||
			s.MutexFraction > max(maxMutexFraction, testLocal.MutexFraction) ||
			s.BlockRate < min(b.minBlockRate, testLocal.BlockRate) || s.BlockRate > max(maxBlockRate, testLocal.BlockRate) ||
			s.MaxGoroutines < 1 || s.MaxGoroutines > max(b.maxGoroutines, testLocal.MaxGoroutines) ||
			s.LeakInterval < min(b.minLeakInterval, testLocal.LeakInterval) ||
			s.LeakInterval > max(maxLeakInterval, testLocal.LeakInterval) {
			t.Fatalf("accepted settings beyond the local bounds: %+v from %q", s, body)
		}
		if got.expiresIn < 0 || got.expiresIn > b.maxExpiry {
			t.Fatalf("accepted expiry %v from %q; the bound is %v", got.expiresIn, body, b.maxExpiry)
		}
	})
}
